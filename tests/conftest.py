from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from agents.models import Agent, Membership, Project
from tests.summary_stub import summary_endpoint  # noqa: F401 (a fixture, for the tests that ask a summarizer)


@pytest.fixture
def alice(db) -> User:
    return User.objects.create_user("alice", password="pw-alice-123")


@pytest.fixture
def project(db, alice) -> Project:
    proj = Project.objects.create(name="Alpha", slug="alpha")
    Membership.objects.create(project=proj, user=alice, role=Membership.Level.ADMIN)
    return proj


@pytest.fixture
def agent(project) -> Agent:
    # Its sessions count with cl100k, as the tests' token figures were written for (a gpt-4o agent would otherwise
    # count with o200k: test_counters.py covers that).
    return Agent.objects.create(project=project, name="Travel bot", slug="travel-bot", model="gpt-4o",
                                context_window=128_000, token_counter="cl100k")


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


# --- a second project that alice is not in, and stored sessions -----------------------------------------------


@pytest.fixture
def bob(db) -> User:
    return User.objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def other_project(db, bob) -> Project:
    proj = Project.objects.create(name="Beta", slug="beta")
    Membership.objects.create(project=proj, user=bob, role=Membership.Level.VIEWER)
    return proj


@pytest.fixture
def other_agent(other_project) -> Agent:
    return Agent.objects.create(project=other_project, name="Beta bot", slug="beta-bot")


@pytest.fixture
def make_session(agent):
    """Store a conversation (OpenAI-shaped message dicts) through store.writing.session_store."""
    from agents.memory.schema import Conversation, parse_messages
    from agents.store.writing import session_store

    counter = {"n": 0}

    def make(messages: list[dict], *, agent: Agent = agent, external_id: str | None = None, **fields):
        counter["n"] += 1
        conversation = Conversation(
            messages=parse_messages(messages), external_id=external_id or f"session-{counter['n']}", **fields
        )
        return session_store(agent=agent, conversation=conversation)

    return make


@pytest.fixture(autouse=True)
def _fresh_request_budget():
    """Each test starts with the whole per-user budget of expensive requests (agents.throttling): user ids come
    back from test to test, and their histories would carry over in the process's cache. And with every slot
    free: the test client never closes a streamed response it did not read, which a server always does."""
    from django.core.cache import caches

    from agents import throttling

    caches["throttle"].clear()
    throttling.SLOTS.running = 0
    yield


@pytest.fixture(autouse=True)
def _private_upload_dir(settings, tmp_path_factory):
    """Each test keeps its pending uploads in a folder of its own, so that runs side by side never see each
    other's files."""
    settings.MEMORYVIZ_UPLOAD_DIR = str(tmp_path_factory.mktemp("uploads"))


@pytest.fixture(autouse=True)
def _test_process_priority(settings):
    """An import command run in the test process (call_command) leaves its niceness alone: batch_priority would
    lower the whole test process's priority for the rest of the run. tests/test_batch_priority.py runs the commands
    in processes of their own."""
    settings.MEMORYVIZ_BATCH_NICE = 0


@pytest.fixture(autouse=True)
def _private_job_dir(settings, tmp_path_factory):
    """Finished background exports go to a folder of each test's own, not into the checkout's job-files/."""
    settings.MEMORYVIZ_JOB_DIR = str(tmp_path_factory.mktemp("jobs"))


@pytest.fixture(autouse=True)
def _fresh_trim_cache():
    """What a trim computed is kept per session version (lab.trimming.session_trim): no test sees another's."""
    from django.core.cache import caches

    caches["trims"].clear()
    yield
    caches["trims"].clear()


# Fixtures through which a test reaches the database (pytest-django refuses any other access); `database_url`
# (test_import_hidden.py) gives subprocesses a database of their own on the same server.
_DATABASE_FIXTURES = frozenset(
    {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback", "live_server",
     "database_url"}
)


def pytest_addoption(parser):
    parser.addoption(
        "--database-tests-only", action="store_true",
        help="run only the tests that reach the database (CI's second pass, on PostgreSQL: the others do not "
             "depend on the database and ran in the first pass); the rest are reported as deselected",
    )


def uses_database(item) -> bool:
    return item.get_closest_marker("django_db") is not None or not _DATABASE_FIXTURES.isdisjoint(
        getattr(item, "fixturenames", ())
    )


def pytest_collection_modifyitems(config, items):
    """Browser tests run last: Playwright's sync API keeps an event loop running in the main thread while its
    browser is open, and tests that call ``asyncio.run`` (the autogen-core references) cannot run under it.
    With --database-tests-only, the tests that never reach the database are deselected."""
    if config.getoption("--database-tests-only"):
        without = [item for item in items if not uses_database(item)]
        if without:
            config.hook.pytest_deselected(items=without)
            items[:] = [item for item in items if uses_database(item)]
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)


# --- files the memory libraries write in this run (tests/memory_libs) -------------------------------------------


@pytest.fixture(scope="session")
def library_files(tmp_path_factory):
    """``library_files(venv, script)``: the folder of files that ``tests/memory_libs/<script>`` wrote with the real
    library in ``venv`` (see tests/memory_libs/runner.py); each script runs once per test process."""
    from tests.memory_libs.runner import ensure_venvs, run_script

    made: dict[tuple[str, str], object] = {}

    def files(venv: str, script: str):
        if (venv, script) not in made:
            if not made:
                ensure_venvs()
            out = tmp_path_factory.mktemp(script.removesuffix(".py"))
            run_script(venv, script, out)
            made[(venv, script)] = out
        return made[(venv, script)]

    return files
