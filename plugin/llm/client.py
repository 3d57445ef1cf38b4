"""The one module that talks to an LLM: an OpenAI-compatible chat client with structured output.

Local llama.cpp (``scripts/services.sh up``), vLLM, Ollama and hosted APIs all speak
``POST {base}/chat/completions``, so this is the single seam for timeouts, retries, the
concurrency cap and the translation of failures into FactSieve's errors: an unreachable server
becomes ``LLMUnavailable`` naming the URL, an answer that does not fit the schema becomes
``LLMOutputInvalid`` carrying the start of what the model said. It never invents an answer.
"""
from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import requests
from pydantic import BaseModel, ValidationError
from requests import exceptions as rx
from requests.adapters import HTTPAdapter

from plugin.errors import LLMError, LLMNotConfigured, LLMOutputInvalid, LLMUnavailable
from plugin.settings import Settings
from plugin.urls import redact_url, split_credentials

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

#: Statuses worth another try: overloaded or restarting servers, rate limits, gateways.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Transport retries after the first try; the waits are ``BACKOFF_S * 2**i`` (0.5 s, 1 s).
RETRIES = 2
BACKOFF_S = 0.5
#: How much of a bad answer goes into ``LLMOutputInvalid``.
RAW_CHARS = 200

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)


@dataclass(frozen=True)
class LLMReply(Generic[M]):
    """One answer. Token counts and ``seconds`` cover every attempt it took (a schema retry
    included), so summing replies gives what a claim really cost."""

    text: str
    parsed: M | None
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    attempts: int = 1
    #: ``stop`` normally, ``length`` when ``max_tokens`` cut the answer.
    finish_reason: str | None = None


@dataclass(frozen=True)
class TokenTotals:
    """What a client has spent so far, failed attempts included (they cost tokens too)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0


# -- pure helpers ----------------------------------------------------------------------------------
def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with every local ``#/$defs/…`` reference replaced by its definition.

    pydantic puts nested models and enums under ``$defs``; servers turn the schema into a
    sampling grammar, and not all of their converters follow references (llama.cpp's
    llguidance does, older converters and some Ollama versions do not). Keys beside a ``$ref``
    win over the definition's. A recursive model cannot be inlined: it is returned unchanged.
    """
    defs = schema.get("$defs", {})

    def resolve(node: Any, chain: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [resolve(v, chain) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix("#/$defs/")
            if name == ref or name not in defs:
                raise ValueError(f"cannot inline $ref {ref!r}: only local #/$defs/ references")
            if name in chain:
                raise _RecursiveRef(name)
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**resolve(defs[name], chain | {name}), **resolve(siblings, chain)}
        return {k: resolve(v, chain) for k, v in node.items() if k != "$defs"}

    try:
        return resolve(schema, frozenset())
    except _RecursiveRef:
        return schema


class _RecursiveRef(Exception):
    pass


def json_schema_format(schema: type[BaseModel]) -> dict[str, Any]:
    """The OpenAI ``response_format`` that constrains the answer to ``schema``'s JSON schema."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", schema.__name__)[:64] or "answer"
    return {"type": "json_schema",
            "json_schema": {"name": name, "schema": inline_refs(schema.model_json_schema())}}


def extract_json(text: str) -> Any:
    """The JSON value in a model's answer: bare, in a ```json fence, or after some prose.

    Grammar-constrained servers return bare JSON; servers that ignore ``response_format`` (and
    reasoning models, whose ``<think>`` block is dropped here) wrap it. Raises ``ValueError``
    when there is none.
    """
    s = _THINK.sub("", text).strip()
    fenced = _FENCE.search(s)
    if fenced:
        s = fenced.group(1).strip()
    try:
        return json.loads(s)
    except json.JSONDecodeError as exc:
        first_error = exc
    decoder = json.JSONDecoder()
    for start in re.finditer(r"[{\[]", s):  # the first place a whole JSON value starts
        try:
            return decoder.raw_decode(s, start.start())[0]
        except json.JSONDecodeError:
            continue
    raise ValueError(f"no JSON value in the answer ({first_error})")


def parse_reply(text: str, schema: type[M]) -> M:
    """Extract and validate; raises ``ValueError`` (pydantic's ``ValidationError`` is one)."""
    return schema.model_validate(extract_json(text))


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the answer"
        return f"{exc.error_count()} schema error(s), first at {where}: {first['msg']}"
    return str(exc)


# -- the client ------------------------------------------------------------------------------------
class LLMClient:
    """Chat completions against ``settings.llm_url``, at most ``llm_concurrency`` at a time.

    Build one per process and share it: its ``requests.Session`` pools connections and its
    semaphore caps what this process sends the server, whatever the number of threads.
    """

    def __init__(self, settings: Settings) -> None:
        # credentials in the URL go out as basic auth and nowhere else: ``url`` (what requests
        # are sent to) holds none, and ``shown_url`` (what messages and logs name) no query either
        url, credentials = split_credentials((settings.llm_url or "").rstrip("/"))
        self.url = url or None
        self.shown_url = redact_url(url) if url else None
        self.model = settings.llm_model
        self.max_tokens = settings.llm_max_tokens
        self.temperature = settings.llm_temperature
        self.timeout = (min(5.0, settings.llm_timeout_s), settings.llm_timeout_s)
        self._slots = threading.BoundedSemaphore(settings.llm_concurrency)
        self.session = requests.Session()
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=settings.llm_concurrency)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        if settings.llm_api_key is not None:
            key = settings.llm_api_key.get_secret_value()
            self.session.headers["Authorization"] = f"Bearer {key}"
        if credentials is not None:  # as requests did with them in the URL: basic auth wins
            self.session.auth = credentials
        self._lock = threading.Lock()
        self._totals = TokenTotals()

    def __repr__(self) -> str:  # never the key
        return f"LLMClient(url={self.shown_url!r}, model={self.model!r})"

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def token_totals(self) -> TokenTotals:
        with self._lock:
            return self._totals

    def chat(self, messages: Sequence[Mapping[str, Any]], *, schema: type[M] | None = None,
             max_tokens: int | None = None, temperature: float | None = None) -> LLMReply[M]:
        """One chat completion; with ``schema``, a validated instance of it in ``.parsed``.

        A malformed structured answer is retried exactly once, with the bad answer and the
        reason shown to the model; a second failure raises ``LLMOutputInvalid``.
        """
        if self.url is None:
            raise LLMNotConfigured(
                "no LLM is configured: set FACTSIEVE_LLM_URL to an OpenAI-compatible base URL "
                "(e.g. http://127.0.0.1:8089/v1, the local server `scripts/services.sh up` starts) "
                "and FACTSIEVE_LLM_MODEL to the model it serves")
        body: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "max_tokens": self.max_tokens if max_tokens is None else max_tokens,
            "temperature": self.temperature if temperature is None else temperature,
        }
        if self.model:
            body["model"] = self.model
        if schema is not None:
            body["response_format"] = json_schema_format(schema)

        t0 = time.perf_counter()
        answers = [self._complete(body)]
        parsed: M | None = None
        if schema is not None:
            try:
                parsed = parse_reply(answers[0].text, schema)
            except ValueError as exc:
                log.info("LLM answer did not fit %s (%s); retrying once", schema.__name__,
                         _why(exc))
                retry = {**body, "messages": [*body["messages"],
                                              {"role": "assistant", "content": answers[0].text},
                                              {"role": "user", "content": _repair_prompt(exc)}]}
                answers.append(self._complete(retry))
                try:
                    parsed = parse_reply(answers[1].text, schema)
                except ValueError as exc2:
                    err = self._invalid(schema, answers[1], body["max_tokens"], exc2)
                    err.prompt_tokens = sum(a.prompt_tokens for a in answers)
                    err.completion_tokens = sum(a.completion_tokens for a in answers)
                    raise err from exc2
        last = answers[-1]
        return LLMReply(text=last.text, parsed=parsed,
                        prompt_tokens=sum(a.prompt_tokens for a in answers),
                        completion_tokens=sum(a.completion_tokens for a in answers),
                        seconds=time.perf_counter() - t0, attempts=len(answers),
                        finish_reason=last.finish_reason)

    # -- internals ---------------------------------------------------------------------------------
    def _invalid(self, schema: type[BaseModel], answer: _Answer, max_tokens: int,
                 exc: Exception) -> LLMOutputInvalid:
        raw = answer.text[:RAW_CHARS]
        hint = ""
        if answer.finish_reason == "length":
            hint = (f"; the answer was cut at max_tokens={max_tokens}: raise it "
                    f"(FACTSIEVE_LLM_MAX_TOKENS) or ask for less")
        return LLMOutputInvalid(
            f"the LLM at {self.shown_url} answered with no valid {schema.__name__} after one retry "
            f"({_why(exc)}){hint}; the answer began: {raw!r}", raw=raw)

    def _complete(self, body: dict[str, Any]) -> _Answer:
        """POST one request, retrying connection failures and ``RETRY_STATUSES`` with backoff."""
        url = f"{self.url}/chat/completions"
        shown = f"{self.shown_url}/chat/completions"  # the URL every message and log line names
        problem = ""
        for attempt in range(RETRIES + 1):
            if attempt:
                time.sleep(BACKOFF_S * 2 ** (attempt - 1))
            t0 = time.perf_counter()
            try:
                with self._slots:
                    resp = self.session.post(url, json=body, timeout=self.timeout)
            except rx.ReadTimeout as exc:  # the server is generating; another try waits as long
                raise LLMUnavailable(
                    f"the LLM at {shown} did not answer within {self.timeout[1]:g} s: raise "
                    f"FACTSIEVE_LLM_TIMEOUT_S, lower FACTSIEVE_LLM_MAX_TOKENS or "
                    f"FACTSIEVE_LLM_CONCURRENCY") from exc
            except rx.ConnectionError as exc:  # refused, reset, DNS, connect timeout
                problem = f"not reachable ({type(exc).__name__})"
                continue
            if resp.status_code in RETRY_STATUSES:
                problem = f"failing ({resp.status_code}: {_server_message(resp)})"
                continue
            if resp.status_code >= 400:
                raise LLMError(f"the LLM at {shown} rejected the request ({resp.status_code}: "
                               f"{_server_message(resp)}){_hint(resp.status_code)}")
            answer = _Answer.from_response(resp, shown, time.perf_counter() - t0)
            with self._lock:
                t = self._totals
                self._totals = TokenTotals(t.requests + 1, t.prompt_tokens + answer.prompt_tokens,
                                           t.completion_tokens + answer.completion_tokens,
                                           t.seconds + answer.seconds)
            log.debug("LLM %s: %d+%d tokens in %.2f s (%s)", shown, answer.prompt_tokens,
                      answer.completion_tokens, answer.seconds, answer.finish_reason)
            return answer
        raise LLMUnavailable(
            f"the LLM at {shown} is {problem} after {RETRIES + 1} tries: start the local one with "
            f"`make up` (scripts/services.sh up), or set FACTSIEVE_LLM_URL")


@dataclass(frozen=True)
class _Answer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    finish_reason: str | None

    @classmethod
    def from_response(cls, resp: requests.Response, url: str, seconds: float) -> _Answer:
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise LLMError(f"the LLM at {url} answered {resp.status_code} with something that is "
                           f"not a chat completion: {resp.text[:RAW_CHARS]!r}") from exc
        usage = data.get("usage") or {}
        return cls(text=text, prompt_tokens=int(usage.get("prompt_tokens") or 0),
                   completion_tokens=int(usage.get("completion_tokens") or 0), seconds=seconds,
                   finish_reason=choice.get("finish_reason"))


def _repair_prompt(exc: Exception) -> str:
    return (f"That answer is not valid ({_why(exc)}). Reply again with only the JSON object "
            f"that matches the requested schema, and nothing else.")


def _server_message(resp: requests.Response) -> str:
    """The server's own error text (OpenAI style ``{"error": {"message": …}}`` or plain)."""
    try:
        err = resp.json().get("error")
    except (ValueError, AttributeError):
        err = None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:RAW_CHARS]
    if isinstance(err, str):
        return err[:RAW_CHARS]
    return resp.text[:RAW_CHARS].strip() or resp.reason or "no body"


def _hint(status: int) -> str:
    if status in (401, 403):
        return ": check FACTSIEVE_LLM_API_KEY"
    if status == 404:
        return (": check FACTSIEVE_LLM_URL (the base URL, usually ending in /v1) and "
                "FACTSIEVE_LLM_MODEL")
    return ""
