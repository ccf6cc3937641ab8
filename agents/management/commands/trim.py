"""python manage.py trim FILE --strategy NAME [--set key=value ...] [--counter NAME] [--format NAME] [--conversation N]
   python manage.py trim FILE --preset NAME [--project SLUG] [--counter NAME] ...

``--preset``: a preset saved in memoryviz instead of ``--strategy`` and ``--set``: its strategy, parameters and
counter (``--counter`` still wins); ``--project`` names its project when several have a preset of that name.

Trims a history (any format memoryviz reads, a path or - for standard input) with a named strategy and prints
DESIGN.md's JSON: ``{"strategy", "params", "counter", "kept", "dropped", "inserted", "messages", "tokens_before",
"tokens_after", "violations"}`` plus ``edited`` (kept messages sent changed: ``{"index", "reason"}``), ``notes``
(framework bugs that show in this result), ``budget_exceeded`` and ``explanation`` (each input message, kept, edited
or dropped, and why). ``messages`` is the trimmed list in OpenAI format; an inserted summary lists the input
indices it ``summarizes``.

A file with several conversations: the first is trimmed (said on stderr) unless ``--conversation N`` (0-based).
Exit status: 0, or 2 for an unreadable input, an unknown strategy, counter or parameter, or an invalid value
(the reason on stderr, listing what is valid; nothing on stdout).
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from agents.management.cli import ContractCommand
from agents.memory import formats
from agents.memory.tokens import COUNTERS, DEFAULT_COUNTER
from agents.memory.trimming import STRATEGIES, trim


class Command(ContractCommand):
    help = "Trim a history with a named strategy, exactly as its framework would; JSON on stdout."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="A file path, or - for standard input.")
        parser.add_argument("--strategy", help=f"Strategy name: {', '.join(STRATEGIES)}.")
        parser.add_argument(
            "--set", action="append", default=[], metavar="KEY=VALUE", dest="params",
            help="A strategy parameter (repeatable); values are JSON when they parse (5, true, [\"human\",\"ai\"]); "
            "a list parameter also takes comma-separated names (end_on=human,ai).",
        )
        parser.add_argument(
            "--preset", metavar="NAME",
            help="A saved preset instead of --strategy and --set: its strategy, parameters and counter.",
        )
        parser.add_argument("--project", metavar="SLUG", help="The project of --preset.")
        parser.add_argument(
            "--counter",
            help=f"Counter name: {', '.join(sorted(COUNTERS))} (default {DEFAULT_COUNTER}, or the preset's).",
        )
        parser.add_argument("--format", help="The input format, when detection should not guess.")
        parser.add_argument("--conversation", type=int, help="Which conversation of the file to trim (0-based).")

    def handle(self, *args: Any, **options: Any) -> None:
        # Check the cheap things first, so a typo never waits for a big file to be read.
        if options["project"] and not options["preset"]:
            self.fail("--project: names the project of --preset, which is not given")
        spec, preset = self.strategy_options(options)
        if spec is None:
            self.fail(f"--strategy: name one of {', '.join(STRATEGIES)} (or --preset NAME)")
        counter = self.check_counter(options["counter"] or (preset.counter if preset else DEFAULT_COUNTER))
        fmt = self.check_format(options["format"])
        with self.reading(options["file"], options):
            conversations = formats.read_input(options["file"], fmt)
        if not conversations:
            self.fail(f"{options['file']}: holds no conversation")
        number = options["conversation"]
        if number is None:
            number = 0
            if len(conversations) > 1:
                self.stderr.write(
                    f"trim: {options['file']} holds {len(conversations)} conversations; trimming the first "
                    "(choose with --conversation N)"
                )
        elif not 0 <= number < len(conversations):
            self.fail(f"--conversation {number}: the file holds {len(conversations)} (0 to {len(conversations) - 1})")
        result = trim(conversations[number].messages, spec, counter=counter.name)
        self.stdout.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
