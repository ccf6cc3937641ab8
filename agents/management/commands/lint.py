"""python manage.py lint FILE [--provider openai|anthropic] [--format NAME]

Checks a history (any format memoryviz reads, a path or - for standard input) against the tool-calling protocol
and prints ``{"violations": [{"kind", "index", "tool_call_id", "message", "severity", "provider_error"}]}``;
when the file holds several conversations each violation also says which (``"conversation"``, 0-based).
Messages are checked while they are read, so a big file never sits in memory.

Exit status: 0 when there is no error (warnings such as pending_tool_call alone do not fail), 1 when violations
were found, 2 when the input cannot be read (the reason on stderr, naming the place; nothing on stdout).
"""
from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import CommandParser

from agents.management.cli import ContractCommand
from agents.memory import formats
from agents.memory.chain import PROVIDERS, ProtocolChecker, Violation

EXIT_CLEAN, EXIT_VIOLATIONS = 0, 1


def lint_source(source: Any, *, provider: str = "openai", format: str | None = None) -> list[list[Violation]]:
    """The violations of each conversation in ``source``, reading and checking one message at a time."""
    found: list[list[Violation]] = []
    for stream in formats.open_stream(source, format):
        checker = ProtocolChecker(provider)
        for message in stream.messages:
            checker.feed(message)
        found.append(checker.finish())
    return found


class Command(ContractCommand):
    help = (
        "Check a history against the tool-calling protocol; JSON on stdout; exit 0 clean, 1 violations, 2 unreadable."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="A file path, or - for standard input.")
        parser.add_argument(
            "--provider", default="openai", help=f"Whose rules: {', '.join(PROVIDERS)} (default openai)."
        )
        parser.add_argument("--format", help="The input format, when detection should not guess.")

    def handle(self, *args: Any, **options: Any) -> None:
        provider = options["provider"]
        if provider not in PROVIDERS:
            self.fail(f"--provider: unknown provider {provider!r}; valid: {', '.join(PROVIDERS)}")
        fmt = self.check_format(options["format"])
        with self.reading(options["file"], options):
            per_conversation = lint_source(options["file"], provider=provider, format=fmt)
        several = len(per_conversation) > 1
        rows: list[dict[str, Any]] = []
        for number, violations in enumerate(per_conversation):
            for v in violations:
                row = v.to_dict()
                if several:
                    row["conversation"] = number
                rows.append(row)
        self.stdout.write(json.dumps({"violations": rows}, indent=2, ensure_ascii=False))
        if any(row["severity"] == "error" for row in rows):
            sys.exit(EXIT_VIOLATIONS)
