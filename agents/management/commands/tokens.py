"""python manage.py tokens FILE --counter NAME [--format NAME]

Counts a history's tokens with a named counter (see agents.memory.tokens) and prints
``{"counter", "per_message": [int, ...], "total": int}`` (total = the messages plus the counter's per-list tokens).
A file holding several conversations keeps those keys (``per_message`` lists every conversation's messages in
order, ``total`` sums each conversation's total, reply priming included once per conversation) and adds the
breakdown ``"conversations": [{"per_message", "total"}, ...]``.

Exit status: 0, or 2 when the input cannot be read or the counter is unknown (the reason on stderr).
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from agents.management.cli import ContractCommand
from agents.memory import formats
from agents.memory.tokens import COUNTERS, DEFAULT_COUNTER, TokenCounter, total_tokens


def count_source(source: Any, counter: TokenCounter, *, format: str | None = None) -> list[list[int]]:
    """Per-message counts of each conversation in ``source``, counted as the messages are read."""
    count = counter.count
    with formats.open_layers(source, format) as layers:
        return [[count(m) for m in stream.messages] for stream in layers.streams]


class Command(ContractCommand):
    help = "Count a history's tokens with a named counter; JSON on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="A file path, or - for standard input.")
        parser.add_argument(
            "--counter", default=DEFAULT_COUNTER,
            help=f"Counter name: {', '.join(sorted(COUNTERS))} (default {DEFAULT_COUNTER}).",
        )
        parser.add_argument("--format", help="The input format, when detection should not guess.")

    def handle(self, *args: Any, **options: Any) -> None:
        counter = self.check_counter(options["counter"])
        fmt = self.check_format(options["format"])
        with self.reading(options["file"], options):
            per_conversation = count_source(options["file"], counter, format=fmt)
        if len(per_conversation) == 1:
            per_message = per_conversation[0]
            out: dict[str, Any] = {
                "counter": counter.name, "per_message": per_message, "total": total_tokens(per_message, counter)
            }
        else:
            # The contract's keys stay (scripts read per_message and total whatever the file holds); the
            # breakdown says where each conversation starts and what it costs on its own.
            convs = [{"per_message": pm, "total": total_tokens(pm, counter)} for pm in per_conversation]
            out = {
                "counter": counter.name,
                "per_message": [n for pm in per_conversation for n in pm],
                "total": sum(c["total"] for c in convs),
                "conversations": convs,
            }
        self.stdout.write(json.dumps(out, ensure_ascii=False))
