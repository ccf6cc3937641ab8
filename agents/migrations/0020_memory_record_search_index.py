"""A trigram index over memory records' texts, for a store's record search, the same kind as the session list's
(0011_message_search_index): an FTS5 table with the trigram tokenizer on SQLite, kept in step by triggers, and
``pg_trgm`` with a GIN index on ``UPPER(text)`` on PostgreSQL."""
from django.db import migrations

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE agents_memoryrecord_fts USING fts5("
    "text, content='agents_memoryrecord', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER agents_memoryrecord_fts_insert AFTER INSERT ON agents_memoryrecord BEGIN "
    "INSERT INTO agents_memoryrecord_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER agents_memoryrecord_fts_delete AFTER DELETE ON agents_memoryrecord BEGIN "
    "INSERT INTO agents_memoryrecord_fts(agents_memoryrecord_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER agents_memoryrecord_fts_update AFTER UPDATE OF text ON agents_memoryrecord BEGIN "
    "INSERT INTO agents_memoryrecord_fts(agents_memoryrecord_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO agents_memoryrecord_fts(rowid, text) VALUES (new.id, new.text); END",
    "INSERT INTO agents_memoryrecord_fts(rowid, text) SELECT id, text FROM agents_memoryrecord",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS agents_memoryrecord_fts_update",
    "DROP TRIGGER IF EXISTS agents_memoryrecord_fts_delete",
    "DROP TRIGGER IF EXISTS agents_memoryrecord_fts_insert",
    "DROP TABLE IF EXISTS agents_memoryrecord_fts",
]
POSTGRESQL_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS agents_memoryrecord_text_trgm ON agents_memoryrecord "
    "USING gin (UPPER(text) gin_trgm_ops)",
]
POSTGRESQL_BACKWARD = ["DROP INDEX IF EXISTS agents_memoryrecord_text_trgm"]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0019_memory_ledger"),
    ]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRESQL_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRESQL_BACKWARD}),
        ),
    ]
