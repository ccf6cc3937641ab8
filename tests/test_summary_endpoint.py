"""Summaries from the operator's endpoint (a stub server on 127.0.0.1), and the placeholder they fall back to."""
from __future__ import annotations

import socket

import pytest

from agents.memory.trimming.summaries import SummaryParams, placeholder_text, summary_text
from tests.summary_stub import StubEndpoint

PROMPT = [{"role": "user", "content": "Summarize: <messages>hello</messages>"}]
ENDPOINT = SummaryParams(summarize_with="endpoint", summary_tokens=321)


def never_built() -> list[dict]:
    raise AssertionError("a placeholder summary never builds the prompt")


def test_it_writes_the_placeholder_without_asking_anything() -> None:
    assert placeholder_text(1) == "[summary of 1 message]"
    assert placeholder_text(7) == "[summary of 7 messages]"
    summary = summary_text(n=7, params=SummaryParams(), prompt=never_built, framework="LangChain")
    assert (summary.text, summary.placeholder, summary.note) == ("[summary of 7 messages]", True, None)


def test_it_asks_the_configured_endpoint_with_the_prompt_and_summary_tokens(summary_endpoint: StubEndpoint) -> None:
    summary = summary_text(n=3, params=ENDPOINT, prompt=lambda: PROMPT, framework="LangChain",
                           shape=lambda text: "Here is a summary:\n\n" + text)
    assert summary.text == "Here is a summary:\n\n" + summary_endpoint.text
    assert not summary.placeholder
    assert "stub-model" in summary.note and "LangChain's own prompt" in summary.note
    [request] = summary_endpoint.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {"model": "stub-model", "messages": PROMPT, "max_tokens": 321}
    assert request["headers"]["Authorization"] == "Bearer sk-test-stub"
    assert "sk-test-stub" not in summary.note and "127.0.0.1" not in summary.note


def test_it_falls_back_to_the_placeholder_when_no_endpoint_is_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORYVIZ_SUMMARY_BASE_URL", raising=False)
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_MODEL", "m")
    summary = summary_text(n=2, params=ENDPOINT, prompt=lambda: PROMPT, framework="MAF")
    assert summary.text == "[summary of 2 messages]" and summary.placeholder
    assert summary.note == ("summarize_with=endpoint: no summary endpoint is configured "
                            "(MEMORYVIZ_SUMMARY_BASE_URL not set); the placeholder summary was used instead.")


@pytest.mark.parametrize(
    ("setup", "why"),
    [
        (lambda s: setattr(s, "status", 500), "answered HTTP 500"),
        (lambda s: setattr(s, "answer", b"<html>not json"), "has no choices[0].message.content"),
        (lambda s: setattr(s, "answer", {"choices": []}), "has no choices[0].message.content"),
        (lambda s: setattr(s, "text", "   "), "answered with an empty summary"),
    ],
)
def test_it_falls_back_to_the_placeholder_when_the_endpoint_fails(
    summary_endpoint: StubEndpoint, setup, why: str
) -> None:
    setup(summary_endpoint)
    summary = summary_text(n=4, params=ENDPOINT, prompt=lambda: PROMPT, framework="Strands")
    assert summary.text == "[summary of 4 messages]" and summary.placeholder
    assert why in summary.note and summary.note.endswith("the placeholder summary was used instead.")
    assert len(summary_endpoint.requests) == 1


def test_it_gives_up_on_an_endpoint_slower_than_its_timeout(
    summary_endpoint: StubEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_TIMEOUT", "0.2")
    summary_endpoint.delay = 1.0
    summary = summary_text(n=4, params=ENDPOINT, prompt=lambda: PROMPT, framework="ADK")
    assert summary.text == "[summary of 4 messages]"
    assert "within 0.2 s" in summary.note or "could not be reached" in summary.note


def test_it_falls_back_when_nothing_listens_at_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago, on loopback
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("MEMORYVIZ_SUMMARY_MODEL", "m")
    summary = summary_text(n=1, params=ENDPOINT, prompt=lambda: PROMPT, framework="ADK")
    assert summary.text == "[summary of 1 message]"
    assert "could not be reached" in summary.note


@pytest.mark.parametrize(
    ("name", "value", "why"),
    [
        ("MEMORYVIZ_SUMMARY_BASE_URL", "file:///etc/passwd", "must start with http:// or https://"),
        ("MEMORYVIZ_SUMMARY_TIMEOUT", "soon", "is not a number of seconds"),
        ("MEMORYVIZ_SUMMARY_TIMEOUT", "0", "must be more than 0 seconds"),
    ],
)
def test_it_refuses_a_misconfigured_endpoint(
    summary_endpoint: StubEndpoint, monkeypatch: pytest.MonkeyPatch, name: str, value: str, why: str
) -> None:
    monkeypatch.setenv(name, value)
    summary = summary_text(n=2, params=ENDPOINT, prompt=lambda: PROMPT, framework="MAF")
    assert summary.text == "[summary of 2 messages]" and why in summary.note
    assert summary_endpoint.requests == []
