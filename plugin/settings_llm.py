"""The LLM and verification fields of the one ``plugin.settings.Settings`` (a section of it, split
out for size: ``Settings`` inherits them; nothing builds this class on its own)."""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, SecretStr


class LLMSettings(BaseModel):
    """``FACTSIEVE_LLM_*``, ``FACTSIEVE_VERIFY_*``, the verdict model (read through ``Settings``)."""

    # -- LLM for verification (plugin.llm) ------------------------------------------------------
    #: Base URL of an OpenAI-compatible server, up to and including ``/v1`` (vLLM, Ollama,
    #: llama.cpp's server, a hosted API); ``POST {llm_url}/chat/completions`` is called.
    #: Unset means no LLM: verification raises ``LLMNotConfigured`` instead of guessing.
    #: The local one from ``scripts/services.sh up`` is ``http://127.0.0.1:8089/v1``.
    llm_url: str | None = None
    #: The ``model`` sent with each request; "" omits it (a single-model llama.cpp server).
    llm_model: str = ""
    #: Sent as ``Authorization: Bearer …`` only when set.
    llm_api_key: SecretStr | None = None
    #: Read timeout of one request (connecting gives up after at most 5 s).
    llm_timeout_s: float = Field(default=120.0, gt=0)
    #: Most requests in flight at once per process (API threads, worker threads share it).
    llm_concurrency: int = Field(default=2, ge=1, le=256)
    #: Default completion budget of one call.
    llm_max_tokens: int = Field(default=512, ge=1)
    llm_temperature: float = Field(default=0.0, ge=0.0, le=2.0)

    # -- verification (plugin.verify) ------------------------------------------------------------
    #: The named verification configuration used when a request names none (the file's default
    #: when unset): ``lookup``, ``qa-loop``, ``single-call``, ``head`` or ``cited``.
    verify_config: str | None = None
    #: A JSON Lines pool of solved claims for few-shot examples (the packaged AVeriTeC tuning
    #: slice, CC BY-NC 4.0, when unset).
    verify_fewshot: Path | None = None
    #: nltk's data folder holding WordNet for the AVeriTeC scorer (``scripts/wordnet.sh`` fills
    #: ``.cache/nltk_data`` of the working directory, the default).
    nltk_data_dir: Path = Path(".cache/nltk_data")
    #: The verdict head's weights (``factsieve train-verdict``; the packaged artifact when unset).
    verdict_head_path: Path | None = None
    #: The verdict model without an LLM (the ``head`` and ``cited`` strategies, the blend with an
    #: LLM's ratings and the fallback after invalid LLM output): ``head`` (the logistic head on
    #: frozen features) or the name of a committed fine-tuned verdict model
    #: (``plugin/artefacts/verdict/<name>.npz``, ``factsieve train-verdict --kind cross-encoder``).
    #: The default is the one that measured best on retrieved evidence, what the no-LLM
    #: strategies read (docs/reports/2026-11-27-verdict-model.md).
    verdict_model: str = "verdict-xenc"

