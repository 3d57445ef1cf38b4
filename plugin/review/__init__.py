"""The review desk's data side: the queue of matched posts, the decision log, and the rules
that connect them (``records``: the typed items and decisions; ``model``: pure rules;
``queries``: pure bodies; ``desk``: ``ReviewDesk``)."""
from plugin.review.records import Action, Decision, Origin, ReviewItem, ReviewStatus

__all__ = ["Action", "Decision", "Origin", "ReviewItem", "ReviewStatus"]
