"""A trigram index over message contents for the session list's text search (``services.sessions_filtered``).

SQLite: an FTS5 table with the trigram tokenizer over ``agents_message.content`` (external content: the text is
not stored twice), kept in step by triggers on every insert, delete and change of content, whoever writes.
PostgreSQL: ``pg_trgm`` and a GIN index on ``UPPER(content)``, the expression Django's ``icontains`` compares,
so that the very query of a plain scan is answered from the index.
"""
from django.db import migrations

SQLITE_FORWARD = [
    "CREATE VIRTUAL TABLE agents_message_fts USING fts5("
    "content, content='agents_message', content_rowid='id', tokenize='trigram')",
    # NULL contents (an assistant message that only calls tools) are never indexed, so never 'delete'd either.
    "CREATE TRIGGER agents_message_fts_insert AFTER INSERT ON agents_message WHEN new.content IS NOT NULL BEGIN "
    "INSERT INTO agents_message_fts(rowid, content) VALUES (new.id, new.content); END",
    "CREATE TRIGGER agents_message_fts_delete AFTER DELETE ON agents_message WHEN old.content IS NOT NULL BEGIN "
    "INSERT INTO agents_message_fts(agents_message_fts, rowid, content) VALUES ('delete', old.id, old.content); END",
    "CREATE TRIGGER agents_message_fts_update AFTER UPDATE OF content ON agents_message BEGIN "
    "INSERT INTO agents_message_fts(agents_message_fts, rowid, content) "
    "SELECT 'delete', old.id, old.content WHERE old.content IS NOT NULL; "
    "INSERT INTO agents_message_fts(rowid, content) SELECT new.id, new.content WHERE new.content IS NOT NULL; END",
    "INSERT INTO agents_message_fts(rowid, content) SELECT id, content FROM agents_message WHERE content IS NOT NULL",
]
SQLITE_BACKWARD = [
    "DROP TRIGGER IF EXISTS agents_message_fts_update",
    "DROP TRIGGER IF EXISTS agents_message_fts_delete",
    "DROP TRIGGER IF EXISTS agents_message_fts_insert",
    "DROP TABLE IF EXISTS agents_message_fts",
]
POSTGRESQL_FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS agents_message_content_trgm ON agents_message USING gin (UPPER(content) gin_trgm_ops)",
]
POSTGRESQL_BACKWARD = ["DROP INDEX IF EXISTS agents_message_content_trgm"]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0010_session_state_tool_names"),
    ]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRESQL_FORWARD}),
            _run({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRESQL_BACKWARD}),
        ),
    ]
