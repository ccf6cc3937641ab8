from __future__ import annotations

from tests.paths import SAMPLE_FILES, SAMPLES


def test_it_finds_every_sample():
    # Tests parametrized over the samples would silently shrink to nothing without them.
    assert SAMPLES.is_dir(), f"{SAMPLES} is missing: the samples are part of the repository"
    assert {p.parent.name for p in SAMPLE_FILES} == {
        "openai", "openai_jsonl", "openai_responses", "anthropic", "autogen", "langchain", "agentscope", "openmanus",
    }
