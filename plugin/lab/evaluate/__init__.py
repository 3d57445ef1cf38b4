"""Evaluation: pure metrics (``metrics``) and the driver that runs named configurations."""
from plugin.lab.evaluate.metrics import (METRICS, average_precision_at_k, evaluate_run, percentile,
                                         recall_at_k, reciprocal_rank_at_k, success_at_k)

__all__ = ["METRICS", "average_precision_at_k", "evaluate_run", "percentile", "recall_at_k",
           "reciprocal_rank_at_k", "success_at_k"]
