"""``LLMClient`` against the real local llama.cpp server that ``scripts/services.sh up`` starts
(SmolLM2-135M-Instruct), or the one ``FACTSIEVE_LLM_URL`` names.

A 135M model's verdicts are often wrong: these tests check structure, token accounting, the
one schema retry and the errors — never whether the answer is right.
"""
from __future__ import annotations

import enum
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from pydantic import BaseModel, Field

from plugin.errors import LLMError, LLMNotConfigured, LLMOutputInvalid, LLMUnavailable
from plugin.llm import LLMClient
from plugin.settings import Settings

pytestmark = pytest.mark.integration

LOCAL_LLM_URL = "http://127.0.0.1:8089/v1"
MESSAGES = [
    {"role": "system", "content": "You are a fact-checker. Answer with a JSON object."},
    {"role": "user", "content": "Claim: The Eiffel Tower is in Berlin.\n"
                                "Evidence: The Eiffel Tower is a landmark in Paris, France.\n"
                                "Give a verdict and a one-sentence justification."},
]


class Label(str, enum.Enum):
    supported = "supported"
    refuted = "refuted"
    not_enough_evidence = "not enough evidence"


class Verdict(BaseModel):
    """The grammar caps the string at 120 characters, so even a 135M model stuck repeating
    itself closes the JSON within max_tokens=200 (uncapped, it sometimes loops until cut)."""

    verdict: Label
    justification: str = Field(max_length=120)


class LabelOnly(BaseModel):
    """A few tokens of output: for tests that need many calls."""

    verdict: Label


class Essay(BaseModel):
    """Cannot be satisfied in a few tokens: the grammar forces a 400-character string."""

    verdict: Label
    essay: str = Field(min_length=400)


@pytest.fixture(scope="session")
def llm_settings(settings: Settings) -> Settings:
    s = settings.model_copy(update={"llm_url": settings.llm_url or LOCAL_LLM_URL})
    try:
        requests.get(f"{s.llm_url.rstrip('/')}/models", timeout=5).raise_for_status()
    except requests.RequestException as exc:
        pytest.fail(f"no LLM server answers at {s.llm_url} ({type(exc).__name__}): run `make up` "
                    "(scripts/services.sh up), or set FACTSIEVE_LLM_URL", pytrace=False)
    return s


@pytest.fixture
def llm(llm_settings):
    with LLMClient(llm_settings) as client:
        yield client


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_structured_call_returns_a_valid_object_and_counts_tokens(llm):
    reply = llm.chat(MESSAGES, schema=Verdict, max_tokens=200)
    assert isinstance(reply.parsed, Verdict)
    assert reply.parsed == Verdict.model_validate_json(reply.text)  # grammar-constrained: bare JSON
    assert reply.finish_reason == "stop" and reply.attempts in (1, 2)
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0 and reply.seconds > 0
    totals = llm.token_totals
    assert (totals.requests, totals.prompt_tokens, totals.completion_tokens) == (
        reply.attempts, reply.prompt_tokens, reply.completion_tokens)


def test_plain_chat_returns_text(llm):
    reply = llm.chat([{"role": "user", "content": "Say hello."}], max_tokens=16)
    assert reply.parsed is None and reply.text.strip()
    assert 0 < reply.completion_tokens <= 16


def test_truncated_answer_is_retried_once_then_invalid(llm):
    with pytest.raises(LLMOutputInvalid) as err:
        llm.chat(MESSAGES, schema=Essay, max_tokens=12)
    assert llm.token_totals.requests == 2  # the first answer and exactly one retry
    assert err.value.raw.startswith("{") and 0 < len(err.value.raw) <= 200
    assert err.value.status == 502
    message = str(err.value)
    assert "Essay" in message and "max_tokens=12" in message and err.value.raw in message


def test_concurrency_is_capped(llm_settings):
    """Four threads, two slots: never more than two requests in flight, all answered."""
    client = LLMClient(llm_settings.model_copy(update={"llm_concurrency": 2}))
    in_flight, peak, lock = 0, 0, threading.Lock()
    post = client.session.post

    def counting_post(*args, **kwargs):
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            return post(*args, **kwargs)
        finally:
            with lock:
                in_flight -= 1

    client.session.post = counting_post
    with ThreadPoolExecutor(4) as pool:
        replies = list(pool.map(lambda _: client.chat(MESSAGES, schema=LabelOnly, max_tokens=32),
                                range(4)))
    assert all(isinstance(r.parsed, LabelOnly) for r in replies)
    assert peak <= 2
    totals = client.token_totals
    assert totals.requests == 4
    assert totals.completion_tokens == sum(r.completion_tokens for r in replies)


def test_server_down_names_the_url(llm_settings):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = LLMClient(llm_settings.model_copy(update={"llm_url": url}))
    with pytest.raises(LLMUnavailable, match="not reachable") as err:
        client.chat(MESSAGES, schema=Verdict)
    assert url in str(err.value) and "FACTSIEVE_LLM_URL" in str(err.value)
    assert err.value.status == 503 and err.value.retry_after
    assert client.token_totals.requests == 0


def test_wrong_path_names_the_setting(llm_settings):
    url = llm_settings.llm_url.rstrip("/").removesuffix("/v1") + "/not-v1"
    client = LLMClient(llm_settings.model_copy(update={"llm_url": url}))
    with pytest.raises(LLMError, match="404") as err:
        client.chat(MESSAGES)
    assert "FACTSIEVE_LLM_URL" in str(err.value)


def test_not_configured_names_the_settings(llm_settings):
    client = LLMClient(llm_settings.model_copy(update={"llm_url": None}))
    with pytest.raises(LLMNotConfigured) as err:
        client.chat(MESSAGES, schema=Verdict)
    assert isinstance(err.value, LLMUnavailable)
    assert "FACTSIEVE_LLM_URL" in str(err.value) and "FACTSIEVE_LLM_MODEL" in str(err.value)
