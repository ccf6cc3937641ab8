"""A memory store exported in a format its library loads (POST /api/memory/stores/<id>/export/ and
``export_history --store``): mem0 takes back the records of an imported mem0 store, AutoGen loads a ListMemory,
LangGraph puts a store's items, native imports again to the same records and versions; every export recorded with
what the format could not hold; and the core's one dispatch, ``formats.write_memory``."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents import models
from agents.memory import formats
from agents.memory.formats import mem0
from agents.memory.formats.base import FormatError, WriteReport
from agents.memory.ledger import MemoryDocument
from agents.projects import keys
from agents.transfer import imports
from tests.commands import run
from tests.paths import MEMORY_SAMPLES

COMPONENT = MEMORY_SAMPLES / "autogen" / "list_memory_component.json"


def export(client: Any, store: models.MemoryStore, format: str | None = None, **headers: Any) -> Any:
    query = f"?format={format}" if format else ""
    return client.post(f"/api/memory/stores/{store.pk}/export/{query}", **headers)


def exported(client: Any, store: models.MemoryStore, format: str) -> tuple[Any, list[str]]:
    response = export(client, store, format)
    assert response.status_code == 200, response.content[:500]
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"].startswith(f'attachment; filename="memoryviz-store-{store.pk}-{format}-')
    return json.loads(response.content), json.loads(response["X-Memoryviz-Dropped"])


def versions_of(store: models.MemoryStore) -> dict[str, Any]:
    out = {}
    for record in store.records.order_by("external_id"):
        out[record.external_id] = (
            record.text, record.state, record.content_hash, record.metadata, record.value, record.char_limit,
            record.created_at, record.updated_at,
            [(v.number, v.op, v.text, v.at, v.actor, v.external_id) for v in record.versions.order_by("number")])
    return out


# --- mem0 -------------------------------------------------------------------------------------------------------


@pytest.fixture
def mem0_files(library_files: Any) -> Path:
    return Path(library_files("mem", "mem0_files.py"))


def test_mem0_takes_back_the_mem0_store_memoryviz_exports(alice_client, project, mem0_files, tmp_path) -> None:
    from tests.memory_libs.runner import run_script

    get_all = json.loads((mem0_files / "get_all.json").read_text())
    history = json.loads((mem0_files / "history.json").read_text())
    listed = {r["id"]: r for output in get_all.values() for r in output["results"]}
    source = tmp_path / "mem0_export.json"
    source.write_text(json.dumps({"results": list(listed.values()), "history": history}))
    imports.import_file(source, project=project)
    store = models.MemoryStore.objects.get()
    written, dropped = exported(alice_client, store, "mem0")
    assert dropped == []
    # Every version a history row, in mem0's order, with mem0's own ids.
    assert sorted(row["id"] for row in written["history"]) == sorted(r["id"] for rows in history.values()
                                                                      for r in rows)
    path = tmp_path / "written.json"
    path.write_text(json.dumps(written))
    run_script("mem", "mem0_files.py", tmp_path / "reload", "reload", str(path))
    reloaded = json.loads((tmp_path / "reload" / "reloaded.json").read_text())
    assert set(reloaded) == set(listed)  # the deleted records are in history only, as mem0 keeps them
    for memory_id, body in listed.items():
        again = reloaded[memory_id]
        assert (again["memory"], again["hash"]) == (body["memory"], body["hash"])
        assert again.get("metadata") == body.get("metadata")
        for key in ("user_id", "agent_id", "run_id", "actor_id", "attributed_to"):
            assert again.get(key) == body.get(key), key


def test_a_mem0_export_reads_back_to_the_same_records_and_versions(alice_client, project) -> None:
    imports.import_file(MEMORY_SAMPLES / "agentscope" / "ltm_mem0_records.json", project=project)
    store = models.MemoryStore.objects.get()
    written, dropped = exported(alice_client, store, "mem0")
    assert dropped == []
    again = {r.external_id: r for _, r in mem0.read(written).all_records()}
    assert {k: (r.text, r.state, [(v.op, v.text, v.at) for v in r.versions]) for k, r in again.items()} == {
        r.external_id: (r.text, r.state, [(v.op, v.text, v.at) for v in r.versions.order_by("number")])
        for r in store.records.all()}


# --- AutoGen's ListMemory and LangGraph's store -----------------------------------------------------------------


def test_autogen_loads_the_list_memory_memoryviz_exports(alice_client, project, library_files, tmp_path) -> None:
    from tests.memory_libs.runner import ensure_venvs, run_script

    component = json.loads(COMPONENT.read_text())
    imports.import_file(COMPONENT, project=project)
    store = models.MemoryStore.objects.get()
    written, dropped = exported(alice_client, store, "autogen_memory")
    assert written == component and dropped == []
    path = tmp_path / "written.json"
    path.write_text(json.dumps(written), encoding="utf-8")
    ensure_venvs()
    loaded = json.loads(run_script("mem", "autogen_files.py", tmp_path / "load", "load-memory", str(path)).stdout)
    assert loaded["name"] == "user_prefs"
    # AutoGen dumps a content's absent metadata as null, and leaves it out of the component.
    assert [{k: v for k, v in c.items() if v is not None} for c in loaded["contents"]] == (
        component["config"]["memory_contents"])


def test_langgraph_puts_the_items_of_a_store_memoryviz_exports(alice_client, project, tmp_path) -> None:
    from tests.memory_libs.runner import ensure_venvs, run_script

    items = json.loads((MEMORY_SAMPLES / "langgraph" / "store_items.json").read_text())
    imports.import_file(MEMORY_SAMPLES / "langgraph" / "store_items.json", project=project)
    store = models.MemoryStore.objects.get(scope={"namespace": ["users", "u-42", "memories"]})
    written, dropped = exported(alice_client, store, "langgraph_store")
    assert dropped == []
    expected = {i["key"]: i["value"] for i in items["search_lisbon"]}
    assert {i["key"]: i["value"] for i in written} == expected
    path = tmp_path / "written.json"
    path.write_text(json.dumps(written))
    ensure_venvs()
    run_script("mem", "langgraph_store_files.py", tmp_path / "reload", "reload", str(path))
    reloaded = json.loads((tmp_path / "reload" / "reloaded.json").read_text())
    assert {i["key"]: i["value"] for i in reloaded["users.u-42.memories"]} == expected


# --- native -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sample", [MEMORY_SAMPLES / "mem0" / "history.db",
                                    MEMORY_SAMPLES / "agentscope" / "ltm_mem0_records.json", COMPONENT])
def test_a_native_export_of_a_store_imports_again_to_the_same_records_and_versions(
        alice_client, project, other_project, sample, tmp_path) -> None:
    imports.import_file(sample, project=project)
    store = models.MemoryStore.objects.get()
    response = export(alice_client, store, "native")
    assert response.status_code == 200 and json.loads(response["X-Memoryviz-Dropped"]) == []
    path = tmp_path / "store.json"
    path.write_bytes(response.content)
    report = imports.import_file(path, project=other_project)
    assert report.sessions == []
    again = models.MemoryStore.objects.get(project=other_project)
    assert (again.name, again.kind, again.source_format, again.scope) == (
        store.name, store.kind, store.source_format, store.scope)
    assert (again.record_count, again.version_count) == (store.record_count, store.version_count)
    assert versions_of(again) == versions_of(store)


def test_an_export_without_a_format_is_native(alice_client, project) -> None:
    imports.import_file(COMPONENT, project=project)
    response = export(alice_client, models.MemoryStore.objects.get())
    assert response.status_code == 200 and json.loads(response.content)["format"] == "memoryviz"


# --- the record, and what is refused ----------------------------------------------------------------------------


def test_each_export_is_recorded_with_what_the_format_could_not_hold(alice_client, alice, project) -> None:
    imports.import_file(MEMORY_SAMPLES / "agentscope" / "ltm_mem0_records.json", project=project)
    store = models.MemoryStore.objects.get()
    response = export(alice_client, store, "autogen_memory")
    lost = ["record history on 1 record: ListMemory keeps the current content only"]
    assert response.status_code == 200 and json.loads(response["X-Memoryviz-Dropped"]) == lost
    record = models.ExportRecord.objects.get()
    assert response["X-Memoryviz-Export"] == str(record.pk)
    assert (record.user, record.project, record.format, record.interface, record.dropped, record.filters) == (
        alice, project, "autogen_memory", "api", lost, {"store": store.pk})
    assert record.scope == f"memory store {store.pk} (mem0 (user_id=user_1, agent_id=Friday))"
    assert (record.session_count, record.message_count) == (0, 0)


@pytest.mark.parametrize("format", ["openai", "letta_af", "nope"])
def test_a_format_memoryviz_does_not_write_memory_in_is_refused(alice_client, project, format) -> None:
    imports.import_file(COMPONENT, project=project)
    response = export(alice_client, models.MemoryStore.objects.get(), format)
    assert response.status_code == 400
    assert response.json() == {"error": f"format: '{format}' is not a memory format memoryviz writes; valid: "
                                        "native, mem0, autogen_memory, langgraph_store"}
    assert not models.ExportRecord.objects.exists()


def test_another_projects_store_is_not_found(alice_client, client, project, other_project) -> None:
    imports.import_file(COMPONENT, project=other_project)
    theirs = models.MemoryStore.objects.get()
    response = export(alice_client, theirs, "autogen_memory")
    assert (response.status_code, response.json()) == (404, {"error": "No such memory store."})
    auth = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=project, name='script').key}"}
    assert export(client, theirs, "native", **auth).status_code == 404
    mine = {"HTTP_AUTHORIZATION": f"Bearer {keys.api_key_create(project=other_project, name='script').key}"}
    answer = export(client, theirs, "native", **mine)
    assert answer.status_code == 200, answer.content
    assert models.ExportRecord.objects.get().interface == "api"


def test_the_formats_say_which_layers_each_reads_and_writes(alice_client) -> None:
    listed = {f["name"]: (f["reads"], f["writes"]) for f in alice_client.get("/api/formats/").json()["formats"]}
    assert listed["native"] == (["messages", "memory"], ["messages", "memory"])
    assert listed["openai"] == (["messages"], ["messages"])
    assert listed["autogen"] == (["messages", "memory"], ["messages"])  # its ListMemory message, a recall
    assert listed["mem0"] == (["messages", "memory"], ["memory"])
    assert listed["autogen_memory"] == (["messages", "memory"], ["memory"])
    assert listed["langgraph_store"] == (["memory"], ["memory"])
    assert listed["letta_af"] == (["messages", "memory"], [])
    assert listed["openai_agents_session"] == (["messages"], [])
    assert set(listed) == set(formats.ALL_FORMATS)
    writers = sorted(name for name, (_, writes) in listed.items() if "memory" in writes)
    assert writers == sorted(formats.MEMORY_WRITE_FORMATS)


# --- the command line -------------------------------------------------------------------------------------------


def test_the_command_exports_a_store_to_a_file_and_reports_on_stderr(alice_client, project, tmp_path) -> None:
    imports.import_file(MEMORY_SAMPLES / "agentscope" / "ltm_mem0_records.json", project=project)
    store = models.MemoryStore.objects.get()
    out = tmp_path / "store.json"
    code, stdout, stderr = run("export_history", "--store", str(store.pk), "--format", "mem0", "-o", str(out))
    assert (code, stdout) == (0, "")
    report = json.loads(stderr)
    record = models.ExportRecord.objects.get()
    assert report == {"export_id": record.pk, "format": "mem0",
                      "scope": f"memory store {store.pk} ({store.name})", "dropped": []}
    assert record.interface == "command" and record.user is None
    api_written, _ = exported(alice_client, store, "mem0")
    assert json.loads(out.read_text()) == api_written
    code, stdout, _ = run("export_history", "--store", str(store.pk), "--format", "autogen_memory")
    assert code == 0 and json.loads(stdout)["config"]["name"] == store.name


@pytest.mark.parametrize(("args", "error"), [
    (["--store", "999", "--format", "mem0"], "export_history: --store: no memory store 999"),
    (["--store", "{store}", "--format", "openai"],
     "export_history: format: 'openai' is not a memory format memoryviz writes; valid: native, mem0, "
     "autogen_memory, langgraph_store"),
    (["--store", "{store}", "--session", "1", "--format", "mem0"],
     "export_history: --store: exports one memory store; --session select sessions"),
])
def test_the_command_refuses_what_it_cannot_export(project, args, error) -> None:
    imports.import_file(COMPONENT, project=project)
    store = models.MemoryStore.objects.get()
    code, stdout, stderr = run("export_history", *[a.format(store=store.pk) for a in args])
    assert (code, stdout, stderr.strip()) == (2, "", error)
    assert not models.ExportRecord.objects.exists()


# --- the core's one dispatch ------------------------------------------------------------------------------------


def test_write_memory_refuses_a_format_it_does_not_write() -> None:
    with pytest.raises(FormatError) as caught:
        formats.write_memory(MemoryDocument(format="mem0"), "letta_af", WriteReport(format="letta_af"))
    assert str(caught.value) == ("format: 'letta_af' is not a memory format memoryviz writes; valid: native, mem0, "
                                 "autogen_memory, langgraph_store")
    with pytest.raises(FormatError):
        formats.write_memory(MemoryDocument(format="x"), "autogen_memory", WriteReport(format="autogen_memory"))


def test_write_memory_writes_what_the_format_module_writes() -> None:
    outputs = json.loads((MEMORY_SAMPLES / "mem0" / "mem0_outputs.json").read_text())
    document = mem0.read({"results": outputs["get_all_after"]["results"]})
    report = WriteReport(format="mem0")
    assert json.loads(formats.write_memory(document, "mem0", report)) == mem0.write(
        mem0.read({"results": outputs["get_all_after"]["results"]}), WriteReport(format="mem0"))
    native = json.loads(formats.write_memory(mem0.read(outputs["get_all_after"]), "native",
                                             WriteReport(format="native")))
    assert native["sessions"] == [] and len(native["memory"]["records"]) == 3
