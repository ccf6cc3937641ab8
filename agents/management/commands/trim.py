"""python manage.py trim FILE --strategy NAME [--set key=value ...] [--counter NAME] [--format NAME] [--conversation N]

Trims a history (any format memoryviz reads, a path or - for standard input) with a named strategy and prints
DESIGN.md's JSON: ``{"strategy", "params", "counter", "kept", "dropped", "inserted", "messages", "tokens_before",
"tokens_after", "violations"}`` plus ``notes`` (framework bugs that show in this result), ``budget_exceeded`` and
``explanation`` (each input message, kept or dropped, and why). ``messages`` is the trimmed list in OpenAI format.

A file with several conversations: the first is trimmed (said on stderr) unless ``--conversation N`` (0-based).
Exit status: 0, or 2 for an unreadable input, an unknown strategy, counter or parameter, or an invalid value
(the reason on stderr, listing what is valid; nothing on stdout).
"""
from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandParser

from agents.management.commands.lint import EXIT_UNREADABLE, _reason
from agents.memory import formats
from agents.memory.formats import FormatError
from agents.memory.tokens import COUNTERS, DEFAULT_COUNTER, get_counter
from agents.memory.trimming import STRATEGIES, StrategyError, get_strategy, parse_param_pairs, resolve_params, trim


class Command(BaseCommand):
    help = "Trim a history with a named strategy, exactly as its framework would; JSON on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="A file path, or - for standard input.")
        parser.add_argument("--strategy", required=True, help=f"Strategy name: {', '.join(STRATEGIES)}.")
        parser.add_argument(
            "--set", action="append", default=[], metavar="KEY=VALUE", dest="params",
            help="A strategy parameter (repeatable); values are JSON when they parse (5, true, [\"human\",\"ai\"]).",
        )
        parser.add_argument(
            "--counter", default=DEFAULT_COUNTER,
            help=f"Counter name: {', '.join(sorted(COUNTERS))} (default {DEFAULT_COUNTER}).",
        )
        parser.add_argument("--format", help="The input format, when detection should not guess.")
        parser.add_argument("--conversation", type=int, help="Which conversation of the file to trim (0-based).")

    def handle(self, *args: Any, **options: Any) -> None:
        # Check the cheap things first, so a typo never waits for a big file to be read.
        try:
            strategy = get_strategy(options["strategy"])
            params = resolve_params(strategy, parse_param_pairs(options["params"])).model_dump()
        except StrategyError as exc:
            self._fail(str(exc))
        try:
            counter = get_counter(options["counter"])
        except ValueError as exc:
            self._fail(f"--counter: {exc}")
        fmt = options["format"]
        if fmt and fmt not in formats.FORMATS:
            self._fail(f"--format: unknown format {fmt!r}; valid: {', '.join(sorted(formats.FORMATS))}")
        try:
            conversations = formats.read_input(options["file"], fmt)
        except (FormatError, OSError, UnicodeError, RecursionError) as exc:
            self._fail(_reason(exc, options["file"]))
        if not conversations:
            self._fail(f"{options['file']}: holds no conversation")
        number = options["conversation"]
        if number is None:
            number = 0
            if len(conversations) > 1:
                self.stderr.write(
                    f"trim: {options['file']} holds {len(conversations)} conversations; trimming the first "
                    "(choose with --conversation N)"
                )
        elif not 0 <= number < len(conversations):
            self._fail(f"--conversation {number}: the file holds {len(conversations)} (0 to {len(conversations) - 1})")
        result = trim(conversations[number].messages, strategy.name, params, counter=counter.name)
        self.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))

    def _fail(self, message: str) -> NoReturn:
        self.stderr.write(f"trim: {message}")
        sys.exit(EXIT_UNREADABLE)
