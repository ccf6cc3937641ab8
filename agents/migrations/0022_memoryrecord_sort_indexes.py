"""A store's records are listed by their last write, newest first, records without a time last (``updated_at DESC
NULLS LAST``), or oldest first, those without a time first; and by their number of versions. Each order is read from an
index, so that a page deep in a store of a million records never sorts them all:

- ``memoryrecord_store_updated`` on PostgreSQL is made again with ``NULLS LAST``: PostgreSQL puts NULLs first in a
  DESC index, which then gave neither order (it sorted the whole store: 60 ms a page at 100,000 records). Same name and
  columns, so Django's state is unchanged; SQLite has no NULLS clause in an index and needs none (NULLs sort lowest,
  so last in a DESC index, and first read backwards).
- ``memoryrecord_store_versions``: (store, version_count, id), for ``sort=versions`` and ``-versions``.
"""
from django.db import migrations, models

POSTGRESQL_FORWARD = [
    "DROP INDEX IF EXISTS memoryrecord_store_updated",
    "CREATE INDEX memoryrecord_store_updated ON agents_memoryrecord (store_id, updated_at DESC NULLS LAST, id DESC)",
]
POSTGRESQL_BACKWARD = [
    "DROP INDEX IF EXISTS memoryrecord_store_updated",
    "CREATE INDEX memoryrecord_store_updated ON agents_memoryrecord (store_id, updated_at DESC, id DESC)",
]


def _run(statements: dict[str, list[str]]):
    def run(apps, schema_editor):
        for sql in statements.get(schema_editor.connection.vendor, []):
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0021_live_memory"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="memoryrecord",
            index=models.Index(fields=["store", "version_count", "id"], name="memoryrecord_store_versions"),
        ),
        migrations.RunPython(_run({"postgresql": POSTGRESQL_FORWARD}), _run({"postgresql": POSTGRESQL_BACKWARD})),
    ]
