"""LlamaIndex's ChatMemoryBuffer.get() (llama-index-core 0.14), which counts message content only.
"""
from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from agents.memory.schema import Message
from agents.memory.tokens import cl100k_encoding
from agents.memory.trimming.registry import (
    Outcome,
    StrategyParams,
    View,
    keep_all,
    leading_tool_note,
    outcome,
    pin_field,
    register,
)


class LlamaIndexParams(StrategyParams):
    pin_system: bool = pin_field(True)
    token_limit: int = Field(
        default=3000, ge=1,
        description="Budget in LlamaIndex's own units: cl100k tokens of the message contents joined with spaces "
        "(roles, tool calls and per-message overhead are not counted).",
    )


# ---------------------------------------------------------------------------------------------------------------
# LlamaIndex


def _llamaindex_text(m: Message) -> str:
    # LlamaIndex counts str(message.content): a tool-call message without text is the string "None".
    if m.content is None:
        return "None"
    if isinstance(m.content, str):
        return m.content
    text = m.text
    return text if text or any(isinstance(p, dict) and p.get("type") == "text" for p in m.content) else "None"


class LlamaIndexContentCount:
    """LlamaIndex's count of a window: cl100k tokens of ``" ".join(contents of history[s:])``, for any start s.

    LlamaIndex re-tokenizes the joined text at every step (quadratic, run-llama/llama_index#12264). Here the text
    is cut where cl100k's pre-tokenizer is known to split anyway, so each piece is tokenized once and a window's
    count is its first piece plus a suffix sum. A cut before message j (whose piece is ``" " + text``) is safe when
    the text before it ends in a non-space character (no pre-token crosses from a word or symbol into the
    following space), or when message j's text starts with a non-space character other than a special token's
    ``<|`` (the joining space then opens message j's first pre-token, and any whitespace before it stays a
    pre-token of its own, as it would at the end of the text). Elsewhere messages are tokenized together.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = list(texts)
        self._encode = cl100k_encoding().encode  # LlamaIndex's default tokenizer (gpt-3.5-turbo: cl100k_base)
        n = len(self._texts)
        safe = [False] * (n + 1)  # safe[j]: the cut before message j is safe (j = n: the end)
        safe[n] = True
        for j in range(1, n):
            before, text = self._texts[j - 1], self._texts[j]
            safe[j] = (bool(before) and not before[-1].isspace()) or (
                bool(text) and not text[0].isspace() and not text.startswith("<|")
            )
        self._next_cut = [n] * (n + 1)
        for j in range(n - 1, -1, -1):
            self._next_cut[j] = j + 1 if safe[j + 1] else self._next_cut[j + 1]
        # Tokens from each safe cut to the end, every message with its joining space in front.
        self._suffix: dict[int, int] = {n: 0}
        starts = [j for j in range(1, n) if safe[j]]
        for j in reversed(starts):
            end = self._next_cut[j]
            self._suffix[j] = self._tokens(" " + " ".join(self._texts[j:end])) + self._suffix[end]

    def _tokens(self, text: str) -> int:
        return len(self._encode(text, allowed_special="all")) if text else 0

    def window(self, start: int) -> int:
        """Tokens of the contents of messages ``start`` to the end, joined with spaces."""
        end = self._next_cut[start]
        return self._tokens(" ".join(self._texts[start:end])) + self._suffix[end]


@register(
    "llamaindex_buffer", LlamaIndexParams,
    "Keeps the newest messages whose contents fit token_limit, never starting on an assistant or tool message.",
    "LlamaIndex ChatMemoryBuffer.get() (llama-index-core 0.14), which counts message content only",
)
def _llamaindex_buffer(view: View, p: LlamaIndexParams) -> Outcome:
    msgs = view.messages
    total = len(msgs)
    if not total:
        return keep_all(view, "")
    contents = LlamaIndexContentCount([_llamaindex_text(m) for m in msgs])

    def count(n: int) -> int:  # tokens of the last n contents joined with spaces
        return contents.window(total - n)

    limit = p.token_limit
    n = total
    reasons: dict[int, str] = {}
    current = count(n)
    outside = f"outside the newest messages whose content fits {limit:,} tokens (LlamaIndex counts content only)"
    skipped = "dropped so the window does not start on an assistant or tool message (LlamaIndex skips those)"
    pending: list[int] = []  # skipped in the last round
    while current > limit and n > 1:
        # The window after the messages skipped last round did not fit, so a window starting at them (longer)
        # would not have fitted either: they are outside the budget, not merely skipped. Only the last round's
        # skips are "skipped"; this also keeps a long session's dropped messages in few runs.
        for i in pending:
            reasons[i] = outside
        pending = []
        reasons[total - n] = outside
        n -= 1
        while n > 1 and msgs[total - n].role in ("tool", "assistant"):
            reasons[total - n] = skipped
            pending.append(total - n)
            n -= 1
        current = count(n)
    out_notes: list[str] = []
    if current > limit or n <= 0:
        n = 1
        for i in range(total - 1):
            reasons.setdefault(i, outside)
        out_notes.append(
            f"Nothing fits in {limit:,} tokens: LlamaIndex returns the last message alone "
            f"({current:,} content tokens), whatever its role."
        )
    kept = list(range(total - n, total))
    out = outcome(view, kept, reasons.__getitem__, f"newest messages whose content fits {limit:,} tokens")
    out.notes = out_notes + leading_tool_note(view, kept, "LlamaIndex", "its fallback returns the last message")
    return out
