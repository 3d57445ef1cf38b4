"""What FactSieve learns from the desk's decisions: memory of decided pairs, per-tenant
recalibration of the match confidence, and reranker updates under a champion/challenger gate.
Serving code reaches all of it through ``plugin.learn.steps.Learning``."""
