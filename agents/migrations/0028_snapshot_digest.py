"""``Snapshot.digest``: what the diff of two snapshots reads instead of their values (memory.snapshot_diff's
``snapshot_digest``), written with every snapshot from now on (``Snapshot.written``) and computed here for the
snapshots already stored, a batch at a time (the values are read one batch after another, never all at once). A
snapshot left without one (this step not run) is still diffed, from its value."""
from django.db import migrations, models

from agents.memory.snapshot_diff import snapshot_digest

BATCH = 50


def backfill(apps, schema_editor):
    Snapshot = apps.get_model("agents", "Snapshot")
    ids = list(Snapshot.objects.filter(digest__isnull=True).order_by("pk").values_list("pk", flat=True))
    for start in range(0, len(ids), BATCH):
        rows = list(Snapshot.objects.filter(pk__in=ids[start:start + BATCH]).only("pk", "value"))
        for row in rows:
            row.digest = snapshot_digest(row.value)
        Snapshot.objects.bulk_update(rows, ["digest"])


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0027_recallitem_search_triggers_again"),
    ]

    operations = [
        migrations.AddField(
            model_name="snapshot",
            name="digest",
            field=models.JSONField(editable=False, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
