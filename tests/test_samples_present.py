from __future__ import annotations

from tests.paths import SAMPLE_FILES, SAMPLES


def test_it_finds_every_shared_sample():
    # Tests parametrized over the samples would silently shrink to nothing without them.
    assert SAMPLES.is_dir(), f"{SAMPLES} is missing: shared/ must lie beside the checkout"
    assert {p.parent.name for p in SAMPLE_FILES} == {
        "openai", "openai_jsonl", "openai_responses", "anthropic", "autogen", "langchain", "agentscope", "openmanus",
    }
