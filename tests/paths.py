"""Where the tests find their sample files: ``tests/samples/``, files written by the libraries themselves (each
folder's README, and ``tests/samples/README.md``, say which library and version wrote them). Nothing in the project
reads a path outside the repository (``tests/test_repository_stands_alone.py``)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the checkout
SAMPLES = ROOT / "tests" / "samples"
MEMORY_SAMPLES = SAMPLES / "memory"
SAMPLE_FILES = sorted(SAMPLES.glob("*/travel.*"))
