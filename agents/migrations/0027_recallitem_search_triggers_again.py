"""The triggers that keep the recall items' trigram index in step (0024_recall_search_index) again, on SQLite:
adding ``RecallItem.metadata`` (0025) made Django rebuild the table (a JSON column with a callable default cannot be
added in place on SQLite), and a rebuilt table loses the triggers made on it by hand, so items written since were
not indexed and the list's search no longer found sessions through them. The index is rebuilt from the table, so
that the items written between 0025 and this one are found too. Nothing to do on PostgreSQL (its GIN index is an
index of the table: ALTER TABLE ADD COLUMN keeps it)."""
from django.db import migrations

TABLE, COLUMN = "agents_recallitem", "text"
FTS = f"{TABLE}_fts"

FORWARD = [
    f"DROP TRIGGER IF EXISTS {FTS}_insert",
    f"DROP TRIGGER IF EXISTS {FTS}_delete",
    f"DROP TRIGGER IF EXISTS {FTS}_update",
    f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}(rowid, {COLUMN}) VALUES (new.id, new.{COLUMN}); END",
    f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, {COLUMN}) VALUES ('delete', old.id, old.{COLUMN}); END",
    f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF {COLUMN} ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, {COLUMN}) VALUES ('delete', old.id, old.{COLUMN}); "
    f"INSERT INTO {FTS}(rowid, {COLUMN}) VALUES (new.id, new.{COLUMN}); END",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]


def forward(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    for sql in FORWARD:
        schema_editor.execute(sql)


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0026_compaction_went_out"),
    ]

    operations = [
        migrations.RunPython(forward, migrations.RunPython.noop),
    ]
