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

from django.core.management.base import BaseCommand, CommandParser

from agents.memory import formats
from agents.memory.chain import PROVIDERS, ProtocolChecker, Violation
from agents.memory.formats import FormatError

EXIT_CLEAN, EXIT_VIOLATIONS, EXIT_UNREADABLE = 0, 1, 2


def lint_source(source: Any, *, provider: str = "openai", format: str | None = None) -> list[list[Violation]]:
    """The violations of each conversation in ``source``, reading and checking one message at a time."""
    found: list[list[Violation]] = []
    for stream in formats.open_stream(source, format):
        checker = ProtocolChecker(provider)
        for message in stream.messages:
            checker.feed(message)
        found.append(checker.finish())
    return found


class Command(BaseCommand):
    help = "Check a history against the tool-calling protocol; JSON on stdout; exit 0 clean, 1 violations, 2 unreadable."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="A file path, or - for standard input.")
        parser.add_argument("--provider", default="openai", help=f"Whose rules: {', '.join(PROVIDERS)} (default openai).")
        parser.add_argument("--format", help="The input format, when detection should not guess.")

    def handle(self, *args: Any, **options: Any) -> None:
        provider, fmt = options["provider"], options["format"]
        if provider not in PROVIDERS:
            self._fail(f"--provider: unknown provider {provider!r}; valid: {', '.join(PROVIDERS)}")
        if fmt and fmt not in formats.FORMATS:
            self._fail(f"--format: unknown format {fmt!r}; valid: {', '.join(sorted(formats.FORMATS))}")
        try:
            per_conversation = lint_source(options["file"], provider=provider, format=fmt)
        except (FormatError, OSError, UnicodeError, RecursionError) as exc:
            self._fail(_reason(exc, options["file"]))
        except Exception as exc:
            # A reader bug met by odd input: still no traceback for the user, but say it is ours to fix.
            if options.get("traceback"):
                raise
            self._fail(_internal_error(exc, options["file"]))
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

    def _fail(self, message: str) -> None:
        self.stderr.write(f"lint: {message}")
        sys.exit(EXIT_UNREADABLE)


def _internal_error(exc: BaseException, path: str) -> str:
    return (f"{path}: could not be read: internal error ({type(exc).__name__}: {exc}); please report it, "
            "with --traceback to show where")


def _reason(exc: BaseException, path: str) -> str:
    """What is wrong, naming the file when the error does not already."""
    if isinstance(exc, FormatError):
        text = str(exc)
    elif isinstance(exc, OSError):
        text = f"{path}: {exc.strerror or exc}"
    elif isinstance(exc, RecursionError):
        text = "input: nested too deeply"
    else:
        text = f"input: {exc}"
    if path == "-" or text.startswith(path):
        return text
    # "input" is the reader's name for the whole file: say which file instead.
    return f"{path}: {text.removeprefix('input: ')}"
