"""What the commands of DESIGN.md's command-line contract share.

They print JSON on standard output; on bad input they print one line on standard error, naming the place, and
exit 2 — never a traceback (``--traceback`` shows one for a fault of ours).
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO, cast

from django.core.management.base import BaseCommand, OutputWrapper

from agents.memory import formats
from agents.memory.formats import FormatError
from agents.memory.schema import Message
from agents.memory.tokens import TokenCounter, TokenizerFileError, get_counter
from agents.memory.trimming import StrategyError, StrategySpec, spec_from_pairs

EXIT_UNREADABLE = 2


def raw_stream(wrapper: OutputWrapper) -> TextIO:
    """The stream under a command's stdout or stderr: OutputWrapper.write would add a newline after every piece that
    a writer or a progress bar emits. (Its ``_out`` is not in django-stubs, whose ``__getattr__`` says Callable.)"""
    return cast(TextIO, wrapper._out)


class ContractCommand(BaseCommand):
    def fail(self, message: str) -> NoReturn:
        name = self.__module__.rsplit(".", 1)[-1]
        self.stderr.write(f"{name}: {message}")
        sys.exit(EXIT_UNREADABLE)

    def check_format(self, name: str | None) -> str | None:
        if name and name not in formats.ALL_FORMATS:
            self.fail(f"--format: unknown format {name!r}; valid: {', '.join(sorted(formats.ALL_FORMATS))}")
        return name

    def check_counter(self, name: str) -> TokenCounter:
        try:
            counter = get_counter(name)
            # A counter loads its tokenizer on first use: a missing or corrupt file is reported now, as what it is,
            # not later as a failure to read the input.
            counter.count(Message(role="user", content=""))
        except ValueError as exc:
            self.fail(f"--counter: {exc}")
        except TokenizerFileError as exc:
            self.fail(str(exc))
        return counter

    def strategy_options(self, options: dict[str, Any], *, prefer: Any = None) -> tuple[StrategySpec | None, Any]:
        """``--strategy`` with its ``--set`` pairs (None without a strategy), or ``--preset NAME`` (``--project SLUG``
        when several projects have one of that name): the spec, and the preset (its counter) or None. ``prefer``:
        the project whose preset wins when several have one of that name and --project is not given (that of the
        sessions asked for by id)."""
        if not options["preset"]:
            try:
                return spec_from_pairs(options["strategy"], options["params"]), None
            except StrategyError as exc:
                self.fail(exc.text(flag="--set "))
        if options["strategy"] or options["params"]:
            self.fail("--preset: give a preset, or --strategy with --set, not both")
        from agents import models
        from agents.lab import presets

        project = None
        if options["project"]:
            project = models.Project.objects.filter(slug=options["project"]).first()
            if project is None:
                self.fail(f"--project: no project {options['project']!r}")
        try:
            preset = presets.preset_by_name(user=None, name=options["preset"], project=project,
                                            prefer=prefer if project is None else None)
            return presets.preset_spec(preset), preset
        except presets.PresetError as exc:
            self.fail(f"--preset: {exc}")

    @contextmanager
    def reading(self, path: str, options: dict[str, Any]) -> Iterator[None]:
        """Turns whatever reading ``path`` raises into a clear line and exit 2."""
        try:
            yield
        except (FormatError, OSError, UnicodeError, RecursionError) as exc:
            self.fail(read_error(exc, path))
        except Exception as exc:
            # A reader bug met by odd input: still no traceback for the user, but say it is ours to fix.
            if options.get("traceback"):
                raise
            self.fail(
                f"{path}: could not be read: internal error ({type(exc).__name__}: {exc}); please report it, "
                "with --traceback to show where"
            )


# Where a command names the format, for an error that says to name it (FormatError.choose_format).
CHOOSE_FORMAT = " with --format"


def read_error(exc: BaseException, path: str) -> str:
    """What is wrong, naming the file when the error does not already."""
    if isinstance(exc, FormatError):
        text = str(exc) + (CHOOSE_FORMAT if exc.choose_format else "")
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
