"""Where the tests find the project's shared material: ``shared/`` lies beside the checkout (CI copies it there)."""
from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
SAMPLES = SHARED / "samples"
SAMPLE_FILES = sorted(SAMPLES.glob("*/travel.*"))
