"""The WSGI entry point loads the app whole, then freezes what it loaded out of the cyclic collector's sight."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wsgi_module_loads_the_views_then_freezes_the_startup_objects():
    script = ("import gc, sys; before = gc.get_freeze_count(); import memoryviz.wsgi; "
              "print(before, gc.get_freeze_count(), 'agents.api' in sys.modules, len(gc.get_objects()))")
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    before, frozen, views_loaded, tracked = done.stdout.split()
    assert before == "0" and int(frozen) > 50_000
    assert views_loaded == "True"  # the URLconf's views are loaded before the freeze, not by the first request
    assert int(tracked) < int(frozen) // 10  # what the collector still scans is what came after
