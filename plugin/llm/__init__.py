"""The LLM behind verification: one OpenAI-compatible client with structured output.

The same client talks to the local llama.cpp server (``scripts/services.sh up``, SmolLM2-135M,
for tests and the demo) and to a production endpoint (vLLM, Ollama, llama.cpp, a hosted API).
"""
from plugin.llm.client import (
    LLMClient,
    LLMReply,
    TokenTotals,
    extract_json,
    inline_refs,
    json_schema_format,
    parse_reply,
)

__all__ = ["LLMClient", "LLMReply", "TokenTotals", "extract_json", "inline_refs",
           "json_schema_format", "parse_reply"]
