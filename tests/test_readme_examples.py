"""The README's examples run as written on a fresh install: every `curl -u demo:memoryviz-demo ...` against the demo
data that `make run` seeds, and every `python manage.py ... tests/samples/...` command on the samples it names."""
from __future__ import annotations

import base64
import io
import re
import shlex

import pytest
from django.core.management import call_command
from django.test import Client

from tests.paths import ROOT

README = (ROOT / "README.md").read_text()
# Shell lines as written, a trailing backslash joining the next one.
LINES = [line.strip() for line in README.replace("\\\n", " ").splitlines()]
CURLS = [line for line in LINES if line.startswith("curl -u demo:memoryviz-demo")]
COMMANDS = [line.split("#")[0].strip() for line in LINES
            if line.startswith("python manage.py") and "tests/samples/" in line]


def _curl(line: str) -> tuple[str, str, str | None]:
    """The method, the path and the JSON body of a README curl line."""
    words = shlex.split(line.split(" #")[0])
    method, body, url = "GET", None, ""
    for i, word in enumerate(words):
        if word == "-X":
            method = words[i + 1]
        elif word == "-d":
            body = words[i + 1]
        elif word.startswith("http://127.0.0.1:8000/"):
            url = word.removeprefix("http://127.0.0.1:8000")
    if body is not None and method == "GET":
        method = "POST"
    return method, url, body


def test_the_readme_has_the_examples_this_test_runs():
    assert len(CURLS) >= 15
    assert any("/memory/" in line for line in CURLS) and any("snapshots" in line for line in CURLS)
    assert len(COMMANDS) >= 3


@pytest.mark.django_db(transaction=True, reset_sequences=True)
def test_every_curl_example_answers_on_the_demo_data():
    # reset_sequences: the ids the examples name are those of the demo on a fresh database (PostgreSQL's sequences
    # are not rolled back between tests).
    call_command("seed_demo", stdout=io.StringIO())
    client = Client(HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"demo:memoryviz-demo").decode())
    for line in CURLS:
        method, url, body = _curl(line)
        assert url.startswith("/api/"), line
        response = client.generic(method, url, body or "", content_type="application/json")
        assert 200 <= response.status_code < 300, (line, response.status_code, response.content[:300])
        if response.get("Content-Type", "").startswith("application/json") and not response.streaming:
            data = response.json()
            # Not an empty answer: each example shows something of the demo.
            listed = data.get("results", data.get("stores", data.get("recalls", data.get("changes"))))
            assert listed is None or listed, (line, data)


@pytest.mark.django_db
@pytest.mark.parametrize("line", COMMANDS)
def test_every_command_example_on_the_samples_runs(line, django_user_model):
    django_user_model.objects.create_user("demo")  # the login make run made
    words = shlex.split(line)[2:]
    out = io.StringIO()
    try:
        call_command(*words, stdout=out, stderr=io.StringIO())
    except SystemExit as exc:
        # lint says 1 when it finds something: what the example is there to show.
        assert words[0] == "lint" and exc.code == 1, (line, exc.code)
    assert out.getvalue().strip().startswith("{"), line


def test_no_example_names_a_file_the_repository_lacks():
    named = set(re.findall(r"tests/samples/[\w./-]+\w", README))
    assert named
    missing = [path for path in named if not (ROOT / path).exists()]
    assert missing == []
