"""python manage.py run_worker [db_worker's options]

The background worker (django-tasks' ``db_worker``) for memoryviz's long jobs, which first, and then every little
while, queues again the jobs of workers that died (``queue.jobs_recover``), removes what killed imports left hidden
and expired job files (``queue.jobs_expire``). Run one or more, on one machine or several (with PostgreSQL they share
the queue); ``make run`` starts one beside the server.
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django.db import connection
from django_tasks_db.management.commands import db_worker

from agents.jobs import queue
from agents.transfer import staging

logger = logging.getLogger(__name__)


def _housekeeping() -> None:
    try:
        staging.imports_cleanup()
        queue.jobs_recover()
        queue.jobs_expire()
    finally:
        connection.close()


class Command(db_worker.Command):
    help = "Run background jobs (reports, exports, imports), recovering those of workers that died."

    def handle(self, *args: Any, **options: Any) -> None:
        queue.batch_priority()  # the server's requests first (MEMORYVIZ_BATCH_NICE)
        _housekeeping()
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(max(5, settings.MEMORYVIZ_JOB_STALE_SECONDS // 2)):
                try:
                    _housekeeping()
                except Exception:  # a locked database now and then: said, and the next round tries again
                    logger.exception("run_worker: housekeeping failed; trying again in a while")

        threading.Thread(target=loop, name="memoryviz-housekeeping", daemon=True).start()
        try:
            super().handle(*args, **options)
        finally:
            stop.set()
