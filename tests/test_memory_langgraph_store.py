"""The LangGraph store reader (agents/memory/formats/langgraph_store.py): store items as JSON, on the sample
LangGraph 1.2.24 wrote (tests/samples/memory/langgraph/store_items.json), on items its stores give in this test run
(tests/memory_libs/langgraph_store_files.py), and what it writes back, which InMemoryStore takes with put."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agents.memory.formats import langgraph_store, mem0
from agents.memory.formats.base import FormatError, WriteReport
from agents.memory.formats.memory_files import detect_memory
from agents.memory.ledger import MemoryDocument, RecordIn, parse_time
from tests.paths import MEMORY_SAMPLES, SAMPLES

SAMPLE = json.loads((MEMORY_SAMPLES / "langgraph" / "store_items.json").read_text())
U42 = "users.u-42.memories"


def versions(record: RecordIn) -> list[tuple[int | None, str, str | None, str | None]]:
    return [(v.number, v.op, v.text, v.at.isoformat() if v.at else None) for v in record.versions]


def records_of(document: MemoryDocument, store: str) -> dict[str, RecordIn]:
    return {record.external_id: record for key, record in document.all_records() if key == store}


def item(key: str, value: dict[str, Any], updated: str, namespace: tuple[str, ...] = ("users", "u-1"),
         **more: Any) -> dict[str, Any]:
    return {"namespace": list(namespace), "key": key, "value": value, "created_at": updated, "updated_at": updated,
            **more}


def at(clock: str) -> str:
    return f"2026-12-06T00:52:{clock}+00:00"


# --- the sample -------------------------------------------------------------------------------------------------


def test_it_reads_the_sample_as_one_store_of_its_namespace_with_a_record_per_item() -> None:
    assert detect_memory(SAMPLE) == ["langgraph_store"]
    document = langgraph_store.read(SAMPLE)
    [store] = document.stores
    assert (store.key, store.name, store.kind, store.source_format, store.scope, store.external_id, store.agent) == (
        U42, U42, "records", "langgraph_store", {"namespace": ["users", "u-42", "memories"]}, U42, None)
    records = records_of(document, U42)
    assert list(records) == ["m2", "m1"]  # in the order first met
    assert versions(records["m2"]) == [(1, "ADD", "Is travelling to Lisbon in May", at("32.093382"))]
    # Met twice (the search and the get) with the same body: one version.
    assert versions(records["m1"]) == [(1, "ADD", "Prefers carry-on luggage only, never checks bags",
                                        at("32.093405"))]
    assert records["m1"].value == {"text": "Prefers carry-on luggage only, never checks bags", "kind": "preference"}
    assert records["m1"].text == "Prefers carry-on luggage only, never checks bags"
    assert records["m1"].created_at == records["m1"].updated_at == parse_time(at("32.093405"))
    assert records["m1"].state == "active" and records["m1"].metadata == {}
    assert document.notes == []  # the one namespace listed has its items in the file


def test_it_reads_the_sample_s_search_as_a_recall_of_the_namespace() -> None:
    [recall] = langgraph_store.read(SAMPLE).recalls
    assert (recall.external_id, recall.store, recall.query, recall.session, recall.seq) == (
        "search_lisbon", U42, None, None, None)
    ref = {"namespace": ["users", "u-42", "memories"]}
    assert [(i.rank, i.record, i.version, i.score, i.text, i.ref) for i in recall.items] == [
        (1, "m2", 1, 0.912870929175277, "Is travelling to Lisbon in May", {**ref, "key": "m2"}),
        (2, "m1", 1, 0.3849001794597505, "Prefers carry-on luggage only, never checks bags", {**ref, "key": "m1"}),
    ]


# --- the rules --------------------------------------------------------------------------------------------------


def test_it_keeps_each_body_one_file_shows_of_an_item_as_a_version() -> None:
    later = item("k", {"text": "b"}, at("09.100000"))
    earlier = item("k", {"text": "a"}, at("01.100000"))
    document = langgraph_store.read({"after": later, "before": earlier})
    record = records_of(document, "users.u-1")["k"]
    assert versions(record) == [(1, "ADD", "a", at("01.100000")), (2, "UPDATE", "b", at("09.100000"))]
    assert record.text == "b" and record.value == {"text": "b"}


def test_it_takes_the_text_a_node_would_put_into_the_prompt() -> None:
    cases = {"t": {"text": "plain", "content": "not this"}, "c": {"content": "content"},
             "lm": {"kind": "Memory", "content": {"content": "LangMem's"}}, "m": {"memory": "memory"},
             "d": {"data": "data"}, "j": {"name": "Ana", "age": 41}}
    document = langgraph_store.read([item(key, value, at("01.100000")) for key, value in cases.items()])
    records = records_of(document, "users.u-1")
    assert {key: r.text for key, r in records.items()} == {
        "t": "plain", "c": "content", "lm": "LangMem's", "m": "memory", "d": "data", "j": '{"name": "Ana", "age": 41}'}


def test_it_reads_a_search_over_several_namespaces_as_a_recall_of_no_one_store() -> None:
    found = [item("a", {"text": "x"}, at("01.100000"), ("users", "u-1"), score=0.9),
             item("b", {"text": "y"}, at("01.100000"), ("users", "u-2"), score=0.5)]
    document = langgraph_store.read(found)
    assert [s.key for s in document.stores] == ["users.u-1", "users.u-2"]
    [recall] = document.recalls
    assert recall.store is None
    assert [(i.record, i.ref) for i in recall.items] == [(None, {"namespace": ["users", "u-1"], "key": "a"}),
                                                         (None, {"namespace": ["users", "u-2"], "key": "b"})]
    assert document.notes == ["input: a search over several namespaces (several stores): its items name their "
                              "namespace and key"]


def test_it_keeps_namespaces_apart_whose_labels_hold_dots() -> None:
    document = langgraph_store.read([item("a", {"text": "x"}, at("01.100000"), ("a.b",)),
                                     item("a", {"text": "y"}, at("01.100000"), ("a", "b"))])
    assert [(s.key, s.scope) for s in document.stores] == [('["a.b"]', {"namespace": ["a.b"]}),
                                                           ("a.b", {"namespace": ["a", "b"]})]


def test_it_notes_a_listed_namespace_the_file_holds_no_item_of() -> None:
    document = langgraph_store.read({"get": item("a", {"text": "x"}, at("01.100000")),
                                     "list_namespaces": [["users", "u-1"], ["users", "u-9"]]})
    assert document.notes == ["list_namespaces: the namespace users.u-9 is listed, but no item of it is in the file"]


def _json_samples(skip: set[str]) -> list[tuple[str, Any]]:
    out = []
    for path in sorted(SAMPLES.rglob("*")):
        if path.suffix not in (".json", ".af", ".jsonl") or path.name in skip:
            continue
        texts = path.read_text().splitlines() if path.suffix == ".jsonl" else [path.read_text()]
        for text in texts:
            value = json.loads(text)
            if isinstance(value, str):  # a Letta file encoded twice
                value = json.loads(value)
            out.append((str(path.relative_to(SAMPLES)), value))
    return out


def test_it_detects_store_items_and_no_other_format_s_sample() -> None:
    assert langgraph_store.detect(SAMPLE["get_m1"]) and langgraph_store.detect(SAMPLE["search_lisbon"])
    others = _json_samples({"store_items.json"})
    assert len(others) > 30
    assert [name for name, value in others if langgraph_store.detect(value)] == []
    assert not langgraph_store.detect({"list_namespaces": SAMPLE["list_namespaces"]})  # no item in it
    assert not langgraph_store.detect([{**SAMPLE["get_m1"], "extra": 1}])


# --- bad input --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "place", "detail"), [
    ({**SAMPLE["get_m1"], "namespace": "users"}, "input.namespace", "expected a non-empty array of strings"),
    ([SAMPLE["get_m1"], {**SAMPLE["get_m1"], "value": "text"}], "input[1].value", "expected an object, got a string"),
    ({"search": [{**SAMPLE["get_m1"], "score": "high"}]}, "search[0].score", "expected a number or null"),
    ({"get": {**SAMPLE["get_m1"], "updated_at": "noon"}}, "get.updated_at", "not a time: 'noon'"),
    ({"get": SAMPLE["get_m1"], "count": 3}, "count", "expected a store item, a list of items or of namespaces"),
    ({"get": SAMPLE["get_m1"], "list_namespaces": [["users"], []]}, "list_namespaces[1]", "expected a namespace"),
    ([], "input", "no store item in the file"),
    ({}, "input", "expected store items, got an empty object"),
    (3, "input", "expected store items, got a number"),
])
def test_it_names_the_place_of_a_bad_value(data: Any, place: str, detail: str) -> None:
    with pytest.raises(FormatError) as caught:
        langgraph_store.read(data)
    assert caught.value.place == place and detail in caught.value.detail


def test_it_refuses_deep_nesting_before_reading_it() -> None:
    deep: Any = "x"
    for _ in range(500):
        deep = {"a": deep}
    with pytest.raises(FormatError, match="nested too deeply"):
        langgraph_store.read(item("a", {"text": deep}, at("01.100000")))


# --- writing ----------------------------------------------------------------------------------------------------


def test_it_writes_the_items_as_item_dict_gives_them() -> None:
    report = WriteReport(format="langgraph_store")
    written = langgraph_store.write(langgraph_store.read(SAMPLE), report)
    assert written == [{k: v for k, v in it.items() if k != "score"} for it in SAMPLE["search_lisbon"]]
    assert report.dropped == ["recall on 1 recall: a LangGraph store keeps no record of its reads"]


def test_it_writes_another_library_s_store_under_a_namespace_of_its_scope_and_says_what_it_loses() -> None:
    outputs = json.loads((MEMORY_SAMPLES / "mem0" / "mem0_outputs.json").read_text())
    document = mem0.read({"results": outputs["get_all_after"]["results"],
                          "history": outputs["history_updated"] + outputs["history_deleted"]})
    report = WriteReport(format="langgraph_store")
    written = langgraph_store.write(document, report)
    assert [(i["namespace"], i["key"], i["value"]["text"]) for i in written] == [
        (["user_id=alice"], "6008ddaf-1d5b-4c87-a471-1c73c052cea7", "I am vegan and allergic to peanuts"),
        (["user_id=alice"], "abbacfbf-81cc-45cc-9ce6-6a7b346eeba0", "Alice is training for a half marathon in October"),
        (["user_id=alice"], "ed0f935e-4a7e-4d3b-91be-114d4ae42865", "Alice prefers morning runs"),
    ]
    assert written[0]["value"]["metadata"]["category"] == "diet"
    assert sorted(report.dropped) == [
        "deleted record on 1 record: a LangGraph store keeps only its current items",
        "scope on 1 store: a LangGraph namespace is a list of labels: the store 'mem0 (user_id=alice)' is written "
        "under ['user_id=alice']",
        "value on 3 records: another library's value is written as {text, metadata}",
        "version on 1 version: a LangGraph store keeps only an item's current value",
    ]


# --- items LangGraph's stores give in this run ------------------------------------------------------------------


@pytest.fixture
def store_files(library_files: Any) -> Path:
    return Path(library_files("mem", "langgraph_store_files.py"))


def _load(folder: Path, name: str) -> Any:
    return json.loads((folder / name).read_text())


def test_it_reads_each_namespace_as_the_store_s_own_search_lists_it(store_files: Path) -> None:
    expected = _load(store_files, "expected.json")
    document = langgraph_store.read(expected)
    assert sorted(s.key for s in document.stores) == sorted(expected) == [
        "app.shared", "users.u-42.memories", "users.u-42.profile", "users.u-7.memories"]
    for namespace, items in expected.items():
        records = records_of(document, namespace)
        assert {k: (r.value, r.updated_at, r.created_at) for k, r in records.items()} == {
            i["key"]: (i["value"], parse_time(i["updated_at"]), parse_time(i["created_at"])) for i in items}
    assert sorted(records_of(document, U42)) == ["m1", "m2"]  # m3 was deleted in the store: gone from it
    assert records_of(document, "users.u-42.profile")["name"].text == '{"name": "Ana", "age": 41}'
    assert records_of(document, "users.u-7.memories")["n1"].text == "Works in Lisbon"


def test_it_reads_the_named_dumps_with_every_body_and_search(store_files: Path) -> None:
    items = _load(store_files, "items.json")
    assert langgraph_store.detect(items)
    document = langgraph_store.read(items)
    m1 = records_of(document, U42)["m1"]
    before, after = items["get_m1_before"], items["get_m1"]
    assert versions(m1) == [
        (1, "ADD", "Prefers carry-on luggage only", parse_time(before["updated_at"]).isoformat()),
        (2, "UPDATE", "Prefers carry-on luggage only, never checks bags", parse_time(after["updated_at"]).isoformat())]
    recalls = {r.external_id: r for r in document.recalls}
    assert set(recalls) == {"search_lisbon", "search_users", "profile"}
    lisbon = recalls["search_lisbon"]
    assert lisbon.store == U42
    assert [(i.record, i.version, i.score) for i in lisbon.items] == [
        (it["key"], 2 if it["key"] == "m1" else 1, it["score"]) for it in items["search_lisbon"]]
    over_users = recalls["search_users"]
    assert over_users.store is None
    assert [(i.ref, i.score) for i in over_users.items] == [
        ({"namespace": it["namespace"], "key": it["key"]}, it["score"]) for it in items["search_users"]]
    assert [i.score for i in recalls["profile"].items] == [None]  # a search without a query


def test_it_reads_a_bare_search_list_and_sqlite_store_times(store_files: Path) -> None:
    found = _load(store_files, "search_u7.json")
    [recall] = langgraph_store.read(found).recalls
    assert recall.store == "users.u-7.memories"
    assert [(i.record, i.score) for i in recall.items] == [(it["key"], it["score"]) for it in found]
    sql_items = _load(store_files, "sqlite_items.json")
    records = records_of(langgraph_store.read(sql_items), "app.shared")
    for it in sql_items:
        assert "+" not in it["updated_at"]  # SQLite's CURRENT_TIMESTAMP: no zone, UTC
        assert records[it["key"]].updated_at == parse_time(it["updated_at"] + "+00:00")


def test_langgraph_takes_back_the_items_memoryviz_writes(store_files: Path, tmp_path: Path) -> None:
    from tests.memory_libs.runner import run_script

    expected = _load(store_files, "expected.json")
    report = WriteReport(format="langgraph_store")
    written = langgraph_store.write(langgraph_store.read(expected), report)
    assert report.dropped == [f"recall on {len(expected)} recalls: a LangGraph store keeps no record of its reads"]
    path = tmp_path / "written.json"
    path.write_text(json.dumps(written))
    run_script("mem", "langgraph_store_files.py", tmp_path, "reload", str(path))
    reloaded = _load(tmp_path, "reloaded.json")
    assert sorted(reloaded) == sorted(expected)
    for namespace, items in expected.items():
        assert {i["key"]: i["value"] for i in reloaded[namespace]} == {i["key"]: i["value"] for i in items}
