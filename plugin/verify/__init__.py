"""Claim verification: the previously-fact-checked lookup, and (growing) the evidence path."""
from plugin.verify.lookup import previously_fact_checked

__all__ = ["previously_fact_checked"]
