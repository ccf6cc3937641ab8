"""Memory findings stored (issue 27): MemoryFinding rows of a session (its recalls') or of a store (its records'),
Session.memory_finding_count (the list's "has memory findings" filter, indexed) and MemoryStore.finding_count, each
with the key of what they were computed from; QA marks of recalled items (RecallItemMark) and the number of relevant
records a QA person counted for a recall (RecallJudgement), for retrieval quality. Sessions and stores stored before
have an empty key: their findings are computed when they are first read (``ledger.findings``)."""

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agents', '0022_memoryrecord_sort_indexes'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='MemoryFinding',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(max_length=40)),
                ('seq', models.PositiveIntegerField(blank=True, help_text='The message it is flagged on.', null=True)),
                ('version', models.PositiveIntegerField(blank=True, null=True)),
                ('message', models.TextField()),
                ('at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['session', 'store', 'seq', 'id'],
            },
        ),
        migrations.CreateModel(
            name='RecallItemMark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('relevant', models.BooleanField()),
                ('at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'ordering': ['item', 'author'],
            },
        ),
        migrations.CreateModel(
            name='RecallJudgement',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('relevant_total', models.PositiveIntegerField()),
                ('at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'ordering': ['recall', 'author'],
            },
        ),
        migrations.AddField(
            model_name='memorystore',
            name='finding_count',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='memorystore',
            name='findings_key',
            field=models.CharField(blank=True, max_length=255),
        ),
        migrations.AddField(
            model_name='session',
            name='memory_finding_count',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name='session',
            name='memory_findings_key',
            field=models.CharField(blank=True, max_length=255),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(fields=['memory_finding_count'], name='session_memory_findings'),
        ),
        migrations.AddField(
            model_name='memoryfinding',
            name='recall',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.recall'),
        ),
        migrations.AddField(
            model_name='memoryfinding',
            name='record',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='agents.memoryrecord'),
        ),
        migrations.AddField(
            model_name='memoryfinding',
            name='session',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='memory_findings', to='agents.session'),
        ),
        migrations.AddField(
            model_name='memoryfinding',
            name='store',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='findings', to='agents.memorystore'),
        ),
        migrations.AddField(
            model_name='recallitemmark',
            name='author',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='recallitemmark',
            name='item',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='marks', to='agents.recallitem'),
        ),
        migrations.AddField(
            model_name='recalljudgement',
            name='author',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='recalljudgement',
            name='recall',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='judgements', to='agents.recall'),
        ),
        migrations.AddIndex(
            model_name='memoryfinding',
            index=models.Index(fields=['session', 'seq', 'id'], name='memoryfinding_session_seq'),
        ),
        migrations.AddIndex(
            model_name='memoryfinding',
            index=models.Index(fields=['store', 'kind', 'id'], name='memoryfinding_store_kind'),
        ),
        migrations.AddConstraint(
            model_name='memoryfinding',
            constraint=models.CheckConstraint(condition=models.Q(('session__isnull', True), ('store__isnull', True), _connector='XOR'), name='memoryfinding_of_session_or_store'),
        ),
        migrations.AddConstraint(
            model_name='recallitemmark',
            constraint=models.UniqueConstraint(fields=('item', 'author'), name='recallitemmark_unique_item_author'),
        ),
        migrations.AddConstraint(
            model_name='recalljudgement',
            constraint=models.UniqueConstraint(fields=('recall', 'author'), name='recalljudgement_unique_recall_author'),
        ),
    ]
