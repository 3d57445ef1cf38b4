"""The trainer production learning runs (``plugin.learn.reranker_train``, the tenant reranker
update), and the lab reuses: the evaluation datasets, the training groups, the JAX encoder with
LoRA adapters (``tower``) and the cross-encoder trained on it (``lora``).

JAX is imported when a function runs. Serving code never imports this package (the desk, the
API and the workers load what it wrote, built by ``plugin.build``)."""
