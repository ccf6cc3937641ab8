"""Two snapshots' diff read from the database (the snapshots page and the snapshot API): from their digests
(``Snapshot.digest``, memory.snapshot_diff's ``diff_digests``), reading of the two values, in one query, only the
parts that changed; from the two whole values, in one query, where a snapshot has no digest.

A part is read by its path inside the stored JSON: SQLite's ``json_extract(value, path, ...)`` parses the value once
per call (in C, some 3 ms for 3.3 MB, where ``json.loads`` of it takes ten times that) and gives the parts asked for;
PostgreSQL's ``value #> path`` reads its stored jsonb. A side asked for many parts, or for a key SQLite's paths cannot
name, is read whole.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import connection

from agents import models
from agents.memory.diff import DEFAULT_BUDGET, path_parts
from agents.memory.snapshot_diff import (
    Fetch,
    Parts,
    Side,
    SnapshotDiff,
    diff_digests,
    diff_snapshots,
    digest_message_id,
    digest_usable,
    message_id,
)

# Parts of one side read by path at most; past that the side's value is read whole.
PARTS_READ = 1000
# Paths per json_extract call (SQLite's functions take 127 arguments at most, by default).
_SQLITE_PATHS = 100
# A key that a SQLite JSON path names as it is stored: printable ASCII, no quote or backslash (Django writes JSON
# with ASCII escapes, which SQLite compares as written).
_PLAIN_KEY = re.compile(r'[ !#-\[\]-~]*')


@dataclass
class PairDiff:
    """The diff of ``left`` and ``right``, and where its message links are read from: the digests (``fetch`` for what
    they do not hold), else the two values (set on ``left.value`` and ``right.value``)."""

    left: models.Snapshot
    right: models.Snapshot
    diff: SnapshotDiff
    digests: dict[Side, Any] | None
    fetch: Fetch | None
    reads: int  # queries of the values' parts (fetch calls) during the diff

    def message_ids(self, wanted: Sequence[tuple[Side, str, int]]) -> list[str]:
        """For each (side, path of a message list, index): the id of the message there (``message_fields``' id),
        "" when it has none or the path leads to no item. From the digests where they say it, else read."""
        out = [""] * len(wanted)
        fetched: dict[Side, list[tuple[int, Parts]]] = {}
        for n, (side, list_path, index) in enumerate(wanted):
            parts: Parts = (*path_parts(list_path), index)
            if self.digests is None:
                out[n] = message_id(_at((self.left if side == "left" else self.right).value, parts))
                continue
            found = digest_message_id(self.digests[side], parts)
            if found is None:
                fetched.setdefault(side, []).append((n, parts))
            else:
                out[n] = found
        if fetched and self.fetch is not None:
            got = self.fetch({side: [parts for _, parts in asked] for side, asked in fetched.items()})
            for side, asked in fetched.items():
                for (n, _), item in zip(asked, got[side], strict=True):
                    out[n] = message_id(item)
        return out


def pair_diff(left: models.Snapshot, right: models.Snapshot, *, limit: int | None,
              budget: int = DEFAULT_BUDGET) -> PairDiff:
    """The diff of two snapshots read without their values (``.defer("value", "digest")``): their digests in one
    query, then the parts that changed; or, without digests, both values in one query."""
    digests = dict(models.Snapshot.objects.filter(pk__in={left.pk, right.pk}).values_list("pk", "digest"))
    pair: dict[Side, Any] = {"left": digests.get(left.pk), "right": digests.get(right.pk)}
    if digest_usable(pair["left"]) and digest_usable(pair["right"]):
        fetch, count = _fetcher({"left": left.pk, "right": right.pk})
        diff = diff_digests(pair["left"], pair["right"], fetch, limit=limit, budget=budget)
        return PairDiff(left, right, diff, pair, fetch, count[0])
    values = dict(models.Snapshot.objects.filter(pk__in={left.pk, right.pk}).values_list("pk", "value"))
    left.value, right.value = values[left.pk], values[right.pk]
    return PairDiff(left, right, diff_snapshots(left.value, right.value, limit=limit, budget=budget), None, None, 0)


def _fetcher(ids: dict[Side, int]) -> tuple[Fetch, list[int]]:
    """A ``Fetch`` reading the parts of both sides in one query; and the count of its queries."""
    count = [0]

    def fetch(wanted: dict[Side, list[Parts]]) -> dict[Side, list[Any]]:
        count[0] += 1
        whole = {side for side, paths in wanted.items() if len(paths) > PARTS_READ or (
            connection.vendor == "sqlite" and not all(_sqlite_path(p) for p in paths))}
        by_path = {side: paths for side, paths in wanted.items() if side not in whole}
        got = _read_paths(ids, by_path, whole)
        out: dict[Side, list[Any]] = {}
        for side, paths in wanted.items():
            if side in whole:
                out[side] = [_at(got[side], parts) for parts in paths]
            else:
                out[side] = got[side]
        return out

    return fetch, count


def _read_paths(ids: dict[Side, int], by_path: dict[Side, list[Parts]], whole: set[Side]) -> dict[Side, Any]:
    """One query: for each side in ``by_path`` the values at its paths (a list), for each in ``whole`` its value."""
    table = models.Snapshot._meta.db_table
    columns: list[str] = []
    params: list[Any] = []
    layout: list[tuple[Side, str]] = []  # what each column holds: a side's chunk of paths, or its whole value
    for side, paths in by_path.items():
        if connection.vendor == "sqlite":
            for start in range(0, len(paths), _SQLITE_PATHS):
                chunk = [_sqlite_path(p) for p in paths[start:start + _SQLITE_PATHS]]
                # Two paths at least: json_extract then always answers a JSON array (one path: an SQL value).
                asked = chunk if len(chunk) > 1 else chunk * 2
                columns.append(f"(SELECT json_extract(value, {', '.join(['%s'] * len(asked))}) FROM {table} "
                               f"WHERE id = %s)")
                params += [*asked, ids[side]]
                layout.append((side, "chunk" if len(chunk) > 1 else "one"))
        else:
            columns.append(
                f"(SELECT jsonb_agg(s.value #> ARRAY(SELECT jsonb_array_elements_text(p.path)) ORDER BY p.n)::text "
                f"FROM {table} s, jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS p(path, n) WHERE s.id = %s)")
            params += [json.dumps([[str(part) for part in parts] for parts in paths]), ids[side]]
            layout.append((side, "chunk"))
    for side in whole:
        cast = "value" if connection.vendor == "sqlite" else "value::text"
        columns.append(f"(SELECT {cast} FROM {table} WHERE id = %s)")
        params.append(ids[side])
        layout.append((side, "whole"))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(columns)}", params)
        row = cursor.fetchone()
    out: dict[Side, Any] = {}
    for (side, kind), text in zip(layout, row, strict=True):
        value = json.loads(text) if isinstance(text, str) else text
        if kind == "whole":
            out[side] = value
        elif kind == "one":
            out.setdefault(side, []).append(value[0])
        else:
            out.setdefault(side, []).extend(value)
    return out


def _sqlite_path(parts: Parts) -> str | None:
    """``parts`` as a SQLite JSON path (``$."memory"[3]``), or None where a key cannot be written in one."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _PLAIN_KEY.fullmatch(part):
            out.append(f'."{part}"')
        else:
            return None
    return "".join(out)


def _at(value: Any, parts: Parts) -> Any:
    for part in parts:
        if isinstance(value, dict) and isinstance(part, str):
            value = value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and 0 <= part < len(value):
            value = value[part]
        else:
            return None
    return value


