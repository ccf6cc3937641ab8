"""Running a management command in-process, as the command tests do."""
from __future__ import annotations

import io

from django.core.management import call_command


def run(command: str, *args: str) -> tuple[int, str, str]:
    """Run a command in-process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command(command, *args, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()
