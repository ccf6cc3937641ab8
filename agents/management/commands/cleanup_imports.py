"""python manage.py cleanup_imports [--stale-after SECONDS]

Removes the hidden sessions of imports that will never complete: their process on this host is gone (killed with
``kill -9``, crashed), or, written from another host, they committed nothing for ``--stale-after`` seconds
(``MEMORYVIZ_IMPORT_STALE_SECONDS`` by default). Prints ``{"removed": [session ids]}``. ``make run`` runs it at
start; with several application servers, run it from one of them now and then (an import still running is left
alone).
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django.core.management.base import CommandParser

from agents.management.cli import ContractCommand
from agents.transfer import staging


class Command(ContractCommand):
    help = "Remove the hidden sessions of imports that were killed or crashed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--stale-after", type=int, default=None, metavar="SECONDS",
                            help="An import from another host that committed nothing for this long is gone.")

    def handle(self, *args: Any, **options: Any) -> None:
        stale = options["stale_after"]
        if stale is not None and stale < 0:
            self.fail("--stale-after: expected a number of seconds, 0 or more")
        removed = staging.imports_cleanup(stale_after=dt.timedelta(seconds=stale) if stale is not None else None)
        self.stdout.write(json.dumps({"removed": removed}))
