"""Claim verification: named configurations (``config``), prompts as files (``prompts``), the
LLM step schemas (``steps``), few-shot examples (``fewshot``), the ``Verifier`` (lookup, qa-loop,
single-call, head, cited), the no-LLM cited strategy (``cited``), the verdict head (``head``),
and the AVeriTeC scorer (``scoring``, ``wordnet``, ``averitec``).

Import the modules themselves: this package imports nothing, so the scorer does not pull in the
matcher and the verifier does not pull in nltk.
"""
