"""python manage.py import_history FILE... [--project SLUG] [--agent SLUG] [--format NAME]

Prints the import report as JSON on stdout. On bad input: the error on stderr naming the place, exit 2, and
nothing saved (all files are one import run: their sessions stay hidden until every file is read, and are removed
when one fails). Several runs at once all finish, or exit 2 with one line (a lost race for one session id).
Without --project, sessions go to the project the file names (native files carry it), else to the project
``imported``; without --agent, to the agent the file names, else to an agent named after the source format
(``openai``, ``autogen``...). Projects and agents are created when missing. A project is seen only by its members:
``--member USERNAME`` (repeatable) makes those users members (editors) of the projects imported into, and a
project left without members is named on stderr.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandParser
from django.db import DatabaseError

from agents import models
from agents.jobs import queue
from agents.management.cli import CHOOSE_FORMAT, ContractCommand, raw_stream
from agents.management.progress import ProgressBar
from agents.store import writing
from agents.transfer import imports, staging


class Command(ContractCommand):
    help = "Import agent histories (any format memoryviz reads) into a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE", help="A file path, or - for standard input.")
        parser.add_argument("--project", help="Project slug (created when missing).")
        parser.add_argument("--agent", help="Agent slug or name in that project (created when missing).")
        parser.add_argument("--format", help="The input format, when detection should not guess.")
        parser.add_argument(
            "--counter", default=None,
            help="Token counter for the stored counts (default: the agent's, which follows its model: o200k for "
            "gpt-4o and later, cl100k for gpt-4 and gpt-3.5, else cl100k).",
        )
        parser.add_argument(
            "--member",
            action="append",
            default=[],
            metavar="USERNAME",
            help="Make this user a member (editor) of the projects imported into; repeatable.",
        )
        parser.add_argument(
            "--progress", action="store_true", help="Show a progress bar on stderr even when it is not a terminal."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        queue.batch_priority()  # the server's requests first (MEMORYVIZ_BATCH_NICE)
        self.check_format(options["format"])
        if options["counter"] is not None:
            self.check_counter(options["counter"])
        User = get_user_model()
        members = list(User.objects.filter(username__in=options["member"]))
        missing = sorted(set(options["member"]) - {u.get_username() for u in members})
        if missing:
            self.fail(f"--member: no such user: {', '.join(missing)}")
        show = options["progress"] or self.stderr.isatty()
        reports: list[imports.ImportReport] = []
        run = staging.ImportRun()
        try:
            try:
                for path in options["files"]:
                    reports.append(self._import_one(path, options, show, run))
                run.complete()
            except BaseException:
                run.discard()
                raise
        except imports.ImportFailed as exc:
            self.fail(str(exc) + (CHOOSE_FORMAT if exc.choose_format else ""))
        except (DatabaseError, KeyboardInterrupt) as exc:
            self.fail(f"database: {imports.first_line(exc) or type(exc).__name__}; nothing was imported")
        projects = models.Project.objects.filter(slug__in={r.project for r in reports if r.project})
        for project in projects:
            for user in members:
                writing.write_retrying(functools.partial(
                    models.Membership.objects.get_or_create,
                    project=project, user=user, defaults={"role": models.Membership.Level.EDITOR}))
            if not project.memberships.exists():
                self.stderr.write(
                    f"import_history: note: project {project.slug!r} has no members, so no one sees it in "
                    "the dashboard yet: add them with --member USERNAME or in the admin."
                )
        out = {
            "files": [r.to_dict() for r in reports],
            "sessions_imported": sum(r.sessions_imported for r in reports),
            "messages_imported": sum(r.messages_imported for r in reports),
            "violation_count": sum(r.violation_count for r in reports),
        }
        self.stdout.write(json.dumps(out, indent=2, ensure_ascii=False))

    def _import_one(
        self, path: str, options: dict[str, Any], show: bool, run: staging.ImportRun
    ) -> imports.ImportReport:
        if path != "-" and not os.path.exists(path):
            raise imports.ImportFailed(f"{path}: no such file")
        if path != "-" and os.path.isdir(path):
            raise imports.ImportFailed(f"{path}: is a directory")
        # The file is opened here so that the bar can follow how much of it has been read.
        try:
            handle: Any = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise imports.ImportFailed(f"{path}: {exc.strerror or exc}") from None
        size = None if path == "-" else os.path.getsize(path)
        bar = ProgressBar(
            f"importing {'stdin' if path == '-' else os.path.basename(path)}",
            stream=raw_stream(self.stderr),
            total=size,
            enabled=show,
            position=(lambda: handle.tell()) if size else None,
        )
        completed = False
        try:
            report = imports.import_file(
                handle,
                project=options["project"],
                agent=options["agent"],
                format=options["format"],
                counter=options["counter"],
                label=path,
                on_messages=bar.update,
                run=run,
            )
            completed = True
            return report
        except imports.ImportFailed as exc:
            raise imports.ImportFailed(exc.naming(path), choose_format=exc.choose_format) from None
        finally:
            bar.close(completed=completed)
            if path != "-":
                handle.close()
