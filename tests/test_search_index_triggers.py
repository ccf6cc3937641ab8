"""The trigram indexes the searches read stay attached to their tables after every migration: on SQLite each FTS5
table keeps the three triggers that keep it in step (a migration that makes Django rebuild a table, such as adding
a JSON column with a default, drops the triggers made on it by hand: 0027 made them again for the recall items);
on PostgreSQL each GIN index on UPPER(...) exists."""
from __future__ import annotations

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db

INDEXED = {"agents_message": "content", "agents_memoryrecord": "text", "agents_recall": "query",
           "agents_recallitem": "text"}


def test_every_search_index_is_kept_in_step_with_its_table() -> None:
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
            triggers = set(cursor.fetchall())
            assert {(table, f"{table}_fts_{what}") for table in INDEXED
                    for what in ("insert", "delete", "update")} <= triggers
        else:
            cursor.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
            indexes = {row[0] for row in cursor.fetchall()}
            assert {f"{table}_{column}_trgm" for table, column in INDEXED.items()} <= indexes
