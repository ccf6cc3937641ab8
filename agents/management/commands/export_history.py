"""python manage.py export_history [--project SLUG] [--agent SLUG] [--session ID] --format NAME
                                   [--strategy NAME --set key=value ... | --preset NAME] [-o FILE]
   python manage.py export_history --store ID --format mem0|autogen_memory|langgraph_store|native [-o FILE]

``--preset``: a saved preset's strategy, parameters and counter instead of ``--strategy`` and ``--set`` (of
``--project`` when given, else of the ``--session``s' project when several projects have one of that name): the
sessions are counted again with the preset's counter where it is not their own, as the lab and
``trim --preset`` count; ``--strategy`` trims with their stored counts.

``--store``: one memory store with every record and version, in a memory format its library loads (mem0's
``get_all`` output with its history rows, AutoGen's ``ListMemory`` component, LangGraph store items) or in native,
which imports again the same.

Writes the export to FILE (-o) or stdout; the report (what the target format could not hold, conversations
skipped as invalid) goes to stderr as JSON. Exit 2 on a bad argument or when ``--on-invalid stop`` meets an
invalid conversation (nothing is written then).
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import IO, Any

from django.core.management.base import CommandParser
from django.db.models import QuerySet, Sum

from agents import models
from agents.lab import presets
from agents.management.cli import ContractCommand, raw_stream
from agents.management.progress import ProgressBar
from agents.memory import formats
from agents.transfer import exports


class Command(ContractCommand):
    help = "Export stored sessions (whole, filtered, or trimmed by a strategy) in any format."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="Only sessions of this project (slug).")
        parser.add_argument("--agent", help="Only sessions of this agent (slug).")
        parser.add_argument("--session", action="append", type=int, default=[], metavar="ID",
                            help="Only this session (repeatable).")
        parser.add_argument("--store", type=int, metavar="ID",
                            help="Export this memory store instead of sessions (--format "
                                 f"{'|'.join(formats.MEMORY_WRITE_FORMATS)}).")
        parser.add_argument("--format", required=True, help=f"One of: {', '.join(sorted(formats.FORMATS))}; "
                                                            f"with --store: {', '.join(formats.MEMORY_WRITE_FORMATS)}.")
        parser.add_argument("--strategy", help="Export each session as trimmed by this strategy.")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="params",
                            help="A strategy parameter (repeatable).")
        parser.add_argument("--preset", metavar="NAME",
                            help="Trim by a saved preset (of --project when given, else of the --session's project "
                                 "when several have one of that name) instead of --strategy and --set.")
        parser.add_argument("--on-invalid", choices=exports.ON_INVALID, default="skip",
                            help="openai_jsonl: skip conversations that break the protocol, or stop (default skip).")
        parser.add_argument("-o", "--output", help="Write to this file instead of stdout.")
        parser.add_argument("--progress", action="store_true",
                            help="Show a progress bar on stderr even when it is not a terminal.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["store"] is not None:
            self._store(options)
            return
        try:
            if options["output"]:
                _check_output(options["output"])
            spec, preset = self.strategy_options(
                options, prefer=_sessions_project(options["session"]) if options["preset"] else None)
            counter = presets.trim_counter(preset)
            sessions, scope, filters = self._sessions(options)
            plan = exports.export_plan(
                sessions=sessions, format=options["format"], scope=scope, filters=filters, spec=spec,
                counter=counter, on_invalid=options["on_invalid"],
            )
            if plan.format == "openai_jsonl" and plan.on_invalid == "stop":
                invalid = exports.invalid_sessions(plan)
                if invalid:
                    raise exports.ExportFailed(
                        "stopped: conversations that break the protocol (use --on-invalid skip to leave them out): "
                        + "; ".join(invalid)
                    )
            total = plan.sessions.aggregate(n=Sum("message_count"))["n"] or None
            bar = ProgressBar("exporting", unit="messages", total=total,
                              enabled=options["progress"] or self.stderr.isatty(), stream=raw_stream(self.stderr))
            completed = False
            try:
                result = self._write(plan, options["output"], bar)
                completed = True
            finally:
                bar.close(completed=completed)
        except exports.ExportFailed as exc:
            self.fail(str(exc))
        self.stderr.write(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))

    def _sessions(self, options: dict[str, Any]) -> tuple[QuerySet[models.Session], str, dict[str, Any]]:
        qs = models.Session.objects.all()
        words: list[str] = []
        filters: dict[str, Any] = {}
        if options["project"]:
            if not models.Project.objects.filter(slug=options["project"]).exists():
                raise exports.ExportFailed(f"--project: no project {options['project']!r}")
            qs = qs.filter(agent__project__slug=options["project"])
            words.append(f"project {options['project']}")
            filters["project"] = options["project"]
        if options["agent"]:
            agents = models.Agent.objects.filter(slug=options["agent"])
            if options["project"]:
                agents = agents.filter(project__slug=options["project"])
            if not agents.exists():
                raise exports.ExportFailed(f"--agent: no agent {options['agent']!r}")
            qs = qs.filter(agent__in=agents)
            words.append(f"agent {options['agent']}")
            filters["agent"] = options["agent"]
        if options["session"]:
            ids = options["session"]
            missing = sorted(set(ids) - set(qs.filter(pk__in=ids).values_list("pk", flat=True)))
            if missing:
                raise exports.ExportFailed(f"--session: no session {', '.join(map(str, missing))}"
                                           + (" in that project/agent" if words else ""))
            qs = qs.filter(pk__in=ids)
            words.append("session " + ", ".join(map(str, ids)))
            filters["session"] = ids
        if not qs.exists():
            raise exports.ExportFailed("no session matches")
        return qs, ("; ".join(words) or "all sessions"), filters

    def _store(self, options: dict[str, Any]) -> None:
        """One memory store (``--store``): the file, then its record (what the format could not hold) on stderr."""
        try:
            refused = [flag for flag, key in (("--project", "project"), ("--agent", "agent"), ("--session", "session"),
                                              ("--strategy", "strategy"), ("--set", "params"), ("--preset", "preset"))
                       if options[key]]
            if refused:
                raise exports.ExportFailed(f"--store: exports one memory store; {', '.join(refused)} "
                                           "select sessions")
            if options["output"]:
                _check_output(options["output"])
            store = models.MemoryStore.objects.filter(pk=options["store"],
                                                      state=models.MemoryStore.State.READY).first()
            if store is None:
                raise exports.ExportFailed(f"--store: no memory store {options['store']}")
            exported = exports.store_export(store=store, format=options["format"], interface="command")
            _into(options["output"], lambda fh: fh.write(exported.text), raw_stream(self.stdout))
        except exports.ExportFailed as exc:
            self.fail(str(exc))
        self.stderr.write(json.dumps({"export_id": exported.record.pk, "format": exported.record.format,
                                      "scope": exported.record.scope, "dropped": exported.dropped},
                                     indent=2, ensure_ascii=False))

    def _write(self, plan: exports.ExportPlan, output: str | None, bar: ProgressBar) -> exports.ExportResult:
        result: exports.ExportResult = _into(
            output, lambda fh: exports.export_to(plan, fh, interface="command", on_messages=bar.update),
            raw_stream(self.stdout))
        return result


def _into(output: str | None, write: Callable[[IO[str]], Any], stdout: IO[str]) -> Any:
    """``write(fh)`` into stdout, or into the file ``output`` whole or not at all; its result."""
    if not output:
        return write(stdout)
    if os.path.exists(output) and not os.path.isfile(output) and not os.path.isdir(output):
        # A device or a pipe (/dev/stdout, /dev/null, a FIFO): write into it; renaming over it would replace it.
        try:
            with open(output, "w", encoding="utf-8", newline="") as fh:
                return write(fh)
        except OSError as exc:
            raise exports.ExportFailed(f"-o {output}: {exc.strerror or exc}") from None
    # Written next to the target and renamed at the end: a failed export never leaves half a file.
    directory = os.path.dirname(os.path.abspath(output))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".export-", dir=directory)
    except OSError as exc:
        raise exports.ExportFailed(f"-o {output}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            result = write(fh)
        os.replace(tmp, output)
    except OSError as exc:
        # Disk full, the target turned into a folder...: one line naming the file, and no half file left.
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise exports.ExportFailed(f"-o {output}: {exc.strerror or exc}") from None
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return result


def _sessions_project(ids: list[int]) -> models.Project | None:
    """The one project the sessions asked for by id (--session) belong to, if they are all of one: its preset is
    the one a name several projects share means."""
    projects = list(models.Project.objects.filter(agents__sessions__pk__in=ids).distinct()[:2]) if ids else []
    return projects[0] if len(projects) == 1 else None


def _check_output(output: str) -> None:
    """Refuse a target that cannot be written before the export is planned or recorded."""
    path = os.path.abspath(output)
    directory = os.path.dirname(path)
    if os.path.isdir(path):
        raise_for = "is a directory; name a file"
    elif not os.path.isdir(directory):
        raise_for = f"the folder {directory} does not exist"
    elif not os.access(directory, os.W_OK):
        raise_for = f"the folder {directory} is not writable"
    else:
        return
    raise exports.ExportFailed(f"-o {output}: {raise_for}")
