"""python manage.py lint FILE [--provider openai|anthropic] [--format NAME]

Checks a history (any format memoryviz reads, a path or - for standard input) against the tool-calling protocol
and prints ``{"violations": [{"kind", "index", "tool_call_id", "message", "severity", "provider_error"}]}``;
when the file holds several conversations each violation also says which (``"conversation"``, 0-based).
Messages are checked while they are read, so a big file never sits in memory. A file that carries memory layers
(stores, recalls, snapshots: a memory format, or a message format whose messages carry recalls) also gets
``"memory_findings": [{"kind", "index", "record", "message", "advice", ...}]`` (agents/memory/findings.py).

Exit status: 0 when there is no error (warnings such as pending_tool_call alone do not fail), 1 when violations
or memory findings were found, 2 when the input cannot be read (the reason on stderr, naming the place; nothing
on stdout).
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

from django.core.management.base import CommandParser

from agents.management.cli import ContractCommand
from agents.memory import formats
from agents.memory.chain import PROVIDERS, ProtocolChecker, Violation
from agents.memory.findings import Finding, document_findings

EXIT_CLEAN, EXIT_VIOLATIONS = 0, 1


@dataclass
class Linted:
    violations: list[list[Violation]]  # each conversation's
    memory_findings: list[Finding] | None  # None: the file carries no memory layers


def lint_source(source: Any, *, provider: str = "openai", format: str | None = None) -> Linted:
    """The violations of each conversation in ``source``, reading and checking one message at a time, and the
    memory findings of its memory layers."""
    found: list[list[Violation]] = []
    replies: dict[str | None, list[int]] = {}
    with formats.open_layers(source, format) as layers:
        for index, stream in enumerate(layers.streams):
            checker = ProtocolChecker(provider)
            answered: list[int] = []
            for position, message in enumerate(stream.messages):
                checker.feed(message)
                if message.role == "assistant":
                    answered.append(position)
            found.append(checker.finish())
            replies[stream.conversation.external_id or f"#{index}"] = answered
        document = layers.memory()
        if not document.holds_memory():
            return Linted(found, None)
        return Linted(found, document_findings(document.materialized(), replies))


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
            linted = lint_source(options["file"], provider=provider, format=fmt)
        per_conversation = linted.violations
        several = len(per_conversation) > 1
        rows: list[dict[str, Any]] = []
        for number, violations in enumerate(per_conversation):
            for v in violations:
                row = v.to_dict()
                if several:
                    row["conversation"] = number
                rows.append(row)
        answer: dict[str, Any] = {"violations": rows}
        if linted.memory_findings is not None:
            answer["memory_findings"] = [f.to_dict() for f in linted.memory_findings]
        self.stdout.write(json.dumps(answer, indent=2, ensure_ascii=False))
        if any(row["severity"] == "error" for row in rows) or linted.memory_findings:
            sys.exit(EXIT_VIOLATIONS)
