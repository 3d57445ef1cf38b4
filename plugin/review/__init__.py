"""The review desk's data side: the queue of matched posts, the decision log, and the rules
that connect them (``model``: pure; ``queries``: pure bodies; ``desk``: ``ReviewDesk``)."""
from plugin.review.model import Action, Origin, ReviewStatus

__all__ = ["Action", "Origin", "ReviewStatus"]
