from django.db import migrations, models

from agents.memory.stored import has_content

BATCH = 2_000


def fill(apps, schema_editor):
    """Stored messages get the flag from their content (as the row writer sets it for new ones)."""
    Message = apps.get_model("agents", "Message")
    last = 0
    while True:
        rows = list(
            Message.objects.filter(pk__gt=last).order_by("pk").only("pk", "content", "content_parts")[:BATCH]
        )
        if not rows:
            return
        for row in rows:
            row.has_content = has_content(row.content_parts if row.content_parts is not None else row.content)
        Message.objects.bulk_update(rows, ["has_content"])
        last = rows[-1].pk


class Migration(migrations.Migration):

    dependencies = [
        ("agents", "0013_review_labels_annotations"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="has_content",
            field=models.BooleanField(null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
    ]
