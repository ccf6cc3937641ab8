"""The summaries that summarizing strategies insert.

Without an endpoint a summary's text is exactly ``[summary of N messages]`` (N: the input messages it stands for)
and it counts as ``summary_tokens`` under a token counter (1 under ``messages``): what a real summary would cost,
without asking a model. With ``summarize_with=endpoint`` the text comes from an OpenAI-compatible server that only
the operator sets, in the environment (never a URL from a request):

- ``MEMORYVIZ_SUMMARY_BASE_URL``: e.g. ``http://127.0.0.1:8080/v1``; ``{base}/chat/completions`` is asked;
- ``MEMORYVIZ_SUMMARY_MODEL``: the model name sent;
- ``MEMORYVIZ_SUMMARY_API_KEY`` (optional): sent as ``Authorization: Bearer``;
- ``MEMORYVIZ_SUMMARY_TIMEOUT`` (optional, seconds, default 30).

The request carries the framework's own prompt, filled as the framework fills it, and ``max_tokens =
summary_tokens``. Any failure (not configured, unreachable, an HTTP error, an answer without text) falls back to
the placeholder, and a note says why. The prompt is built only when an endpoint is asked, so a placeholder summary
costs nothing beyond the strategy's own pass.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from agents.memory.schema import Message, Role
from agents.memory.trimming.registry import Insert, StrategyParams, View

ENV_BASE_URL = "MEMORYVIZ_SUMMARY_BASE_URL"
ENV_MODEL = "MEMORYVIZ_SUMMARY_MODEL"
ENV_API_KEY = "MEMORYVIZ_SUMMARY_API_KEY"
ENV_TIMEOUT = "MEMORYVIZ_SUMMARY_TIMEOUT"
DEFAULT_TIMEOUT = 30.0
# An answer larger than this is not a summary; it is not read whole.
MAX_ANSWER_BYTES = 1 << 20


SummarizeWith = Literal["placeholder", "endpoint"]


def summarize_with_field() -> Any:
    return Field(
        default="placeholder",
        description="placeholder: the summary reads '[summary of N messages]'; endpoint: a real summary from the "
        "OpenAI-compatible server set in the environment (MEMORYVIZ_SUMMARY_BASE_URL, MEMORYVIZ_SUMMARY_MODEL), "
        "asked with the framework's own prompt. Any failure falls back to the placeholder and says why.",
    )


def summary_tokens_field() -> Any:
    return Field(
        default=500, ge=1,
        description="What a placeholder summary counts under a token counter (1 under 'messages'); also the "
        "max_tokens of a request to the endpoint.",
    )


class SummaryParams(StrategyParams):
    """The two parameters every summarizing strategy adds after its framework's own (declared there with
    ``summarize_with_field()`` and ``summary_tokens_field()``, so that forms list the framework's first)."""

    summarize_with: SummarizeWith = summarize_with_field()
    summary_tokens: int = summary_tokens_field()


def placeholder_text(n: int) -> str:
    return f"[summary of {n} message]" if n == 1 else f"[summary of {n} messages]"


@dataclass(frozen=True)
class EndpointConfig:
    base_url: str
    model: str
    api_key: str | None
    timeout: float


class EndpointUnavailable(Exception):
    """Why no summary could be had from the endpoint (a sentence for the notes)."""


def endpoint_config(environ: Mapping[str, str] | None = None) -> EndpointConfig:
    env = os.environ if environ is None else environ
    base = env.get(ENV_BASE_URL, "").strip()
    model = env.get(ENV_MODEL, "").strip()
    if not base or not model:
        missing = [name for name, value in ((ENV_BASE_URL, base), (ENV_MODEL, model)) if not value]
        raise EndpointUnavailable(f"no summary endpoint is configured ({' and '.join(missing)} not set)")
    if not base.startswith(("http://", "https://")):
        raise EndpointUnavailable(f"{ENV_BASE_URL} must start with http:// or https://")
    raw_timeout = env.get(ENV_TIMEOUT, "").strip()
    try:
        timeout = float(raw_timeout) if raw_timeout else DEFAULT_TIMEOUT
    except ValueError:
        raise EndpointUnavailable(f"{ENV_TIMEOUT}={raw_timeout!r} is not a number of seconds") from None
    if not timeout > 0:
        raise EndpointUnavailable(f"{ENV_TIMEOUT} must be more than 0 seconds")
    return EndpointConfig(base.rstrip("/"), model, env.get(ENV_API_KEY, "").strip() or None, timeout)


def endpoint_complete(prompt: Sequence[dict[str, Any]], *, max_tokens: int, config: EndpointConfig) -> str:
    """``POST {base}/chat/completions`` and the answer's text; EndpointUnavailable on any failure."""
    body = json.dumps({"model": config.model, "messages": list(prompt), "max_tokens": max_tokens}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    request = urllib.request.Request(f"{config.base_url}/chat/completions", data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=config.timeout) as response:
            raw = response.read(MAX_ANSWER_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise EndpointUnavailable(f"the summary endpoint answered HTTP {exc.code}") from None
    except urllib.error.URLError as exc:
        raise EndpointUnavailable(f"the summary endpoint could not be reached ({exc.reason})") from None
    except TimeoutError:
        raise EndpointUnavailable(f"the summary endpoint did not answer within {config.timeout:g} s") from None
    except OSError as exc:
        raise EndpointUnavailable(f"the summary endpoint could not be reached ({exc})") from None
    if len(raw) > MAX_ANSWER_BYTES:
        raise EndpointUnavailable("the summary endpoint's answer is larger than 1 MiB")
    try:
        data = json.loads(raw)
        text = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise EndpointUnavailable("the summary endpoint's answer has no choices[0].message.content") from None
    if not isinstance(text, str) or not text.strip():
        raise EndpointUnavailable("the summary endpoint answered with an empty summary")
    return text


@dataclass(frozen=True)
class SummaryText:
    text: str
    placeholder: bool  # the placeholder text, counted as summary_tokens (False: a real text, counted by the counter)
    note: str | None  # what the notes say about how the text was had (None for a plain placeholder)


def summary_text(
    *,
    n: int,
    params: Any,  # a strategy's parameters with summarize_with and summary_tokens
    prompt: Callable[[], list[dict[str, Any]]],
    framework: str,
    shape: Callable[[str], str] = lambda text: text,
) -> SummaryText:
    """The summary of ``n`` input messages: the placeholder, or the endpoint's answer to ``prompt()`` (built only
    then). ``shape`` wraps a text as the framework wraps its model's answer (LangChain's preamble)."""
    if params.summarize_with != "endpoint":
        return SummaryText(shape(placeholder_text(n)), True, None)
    try:
        config = endpoint_config()
        answer = endpoint_complete(prompt(), max_tokens=params.summary_tokens, config=config)
    except EndpointUnavailable as exc:
        return SummaryText(
            shape(placeholder_text(n)), True,
            f"summarize_with=endpoint: {exc}; the placeholder summary was used instead.",
        )
    return SummaryText(
        shape(answer), False,
        f"The summary was written by {config.model} at the configured summary endpoint, asked with "
        f"{framework}'s own prompt (max_tokens={params.summary_tokens}).",
    )


def summary_insert(
    view: View,
    params: Any,
    *,
    position: int,
    role: Role,
    summary: SummaryText,
    covers: Sequence[int],
    reason: str,
) -> Insert:
    """The Insert of a summary message: a placeholder counts summary_tokens (1 under ``messages``), a real
    summary what the counter says."""
    message = Message(role=role, content=summary.text)
    tokens = params.summary_tokens if summary.placeholder and view.counter.name != "messages" else None
    # A range stays one (a summary of 30,000 messages): trim makes the tuple when the result's inserts are read.
    return Insert(position, message, reason, covers if isinstance(covers, range) else tuple(covers), tokens)

