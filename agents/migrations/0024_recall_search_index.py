"""Trigram indexes over what a recall put before the model, for the session list's search across the memory layers
(issue 25): a recall's query (``agents_recall.query``) and its items' text as sent (``agents_recallitem.text``).
The same kind as the messages' (0011_message_search_index) and the records' (0020_memory_record_search_index): an
FTS5 table with the trigram tokenizer on SQLite, kept in step by triggers, and ``pg_trgm`` with a GIN index on
``UPPER(...)``, the expression Django's ``icontains`` compares, on PostgreSQL. Without them the list's search would
read every recall item of the user's projects at each request."""
from django.db import migrations


def _fts(table: str, column: str) -> list[str]:
    fts = f"{table}_fts"
    return [
        f"CREATE VIRTUAL TABLE {fts} USING fts5({column}, content='{table}', content_rowid='id', tokenize='trigram')",
        f"CREATE TRIGGER {fts}_insert AFTER INSERT ON {table} BEGIN "
        f"INSERT INTO {fts}(rowid, {column}) VALUES (new.id, new.{column}); END",
        f"CREATE TRIGGER {fts}_delete AFTER DELETE ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {column}) VALUES ('delete', old.id, old.{column}); END",
        f"CREATE TRIGGER {fts}_update AFTER UPDATE OF {column} ON {table} BEGIN "
        f"INSERT INTO {fts}({fts}, rowid, {column}) VALUES ('delete', old.id, old.{column}); "
        f"INSERT INTO {fts}(rowid, {column}) VALUES (new.id, new.{column}); END",
        f"INSERT INTO {fts}(rowid, {column}) SELECT id, {column} FROM {table}",
    ]


def _fts_dropped(table: str) -> list[str]:
    fts = f"{table}_fts"
    return [f"DROP TRIGGER IF EXISTS {fts}_{what}" for what in ("update", "delete", "insert")] + [
        f"DROP TABLE IF EXISTS {fts}"]


SQLITE_FORWARD = _fts("agents_recall", "query") + _fts("agents_recallitem", "text")
SQLITE_BACKWARD = _fts_dropped("agents_recallitem") + _fts_dropped("agents_recall")
POSTGRESQL_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS agents_recall_query_trgm ON agents_recall USING gin (UPPER(query) gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS agents_recallitem_text_trgm ON agents_recallitem USING gin (UPPER(text) gin_trgm_ops)",
]
POSTGRESQL_BACKWARD = [
    "DROP INDEX IF EXISTS agents_recallitem_text_trgm",
    "DROP INDEX IF EXISTS agents_recall_query_trgm",
]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0023_memory_findings_and_marks"),
    ]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRESQL_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRESQL_BACKWARD}),
        ),
    ]
