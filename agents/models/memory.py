"""The memory layers' models (DESIGN.md, "Memory beyond the message list"): stores, records with every version,
recalls with their items, QA's marks and judgements of recalls, memory findings, snapshots, compactions, and the
captured memory spans a live trace's ledger is built from again."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from agents.memory.snapshot_diff import snapshot_digest
from agents.models import Agent, LlmCall, Project, Session


class MemoryStore(models.Model):
    """Where an agent's (or, shared, a project's) memory records live: mem0 records, Letta blocks, an AutoGen
    ``ListMemory``, a LangGraph store namespace, a knowledge base's chunks."""

    class Kind(models.TextChoices):
        RECORDS = "records"
        BLOCKS = "blocks"
        LIST = "list"
        KNOWLEDGE = "knowledge"

    class State(models.TextChoices):
        # As Session.State: a store an import is still writing in batches is seen by no reader until it is done.
        IMPORTING = "importing"
        READY = "ready"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memory_stores")
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_stores")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    source_format = models.CharField(max_length=40, blank=True)
    scope = models.JSONField(default=dict, blank=True, help_text="user_id, agent_id, run_id, a namespace, ...")
    # The scope as canonical JSON (sorted keys): what two files of one store share, so a second import joins it.
    scope_key = models.CharField(max_length=500, blank=True)
    external_id = models.CharField(max_length=255, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.READY)
    import_owner = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Summaries kept on the row so that the memory page never aggregates records, versions or reads.
    record_count = models.PositiveIntegerField(default=0)
    version_count = models.PositiveBigIntegerField(default=0)
    read_count = models.PositiveBigIntegerField(default=0)
    last_write_at = models.DateTimeField(null=True, blank=True)
    last_read_at = models.DateTimeField(null=True, blank=True)
    # Its records' memory findings (MemoryFinding rows of the store), and what they were computed from, as a
    # session's.
    finding_count = models.PositiveIntegerField(default=0)
    findings_key = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=["records", "blocks", "list", "knowledge"]),
                                   name="memorystore_kind_known"),
        ]
        indexes = [
            models.Index(fields=["project", "agent"], name="memorystore_project_agent"),
            models.Index(fields=["project", "source_format", "scope_key"], name="memorystore_project_scope"),
            models.Index(fields=["agent", "name"], name="memorystore_agent_name"),
            models.Index(fields=["state", "import_owner"], name="memorystore_state_owner"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"


class MemoryRecord(models.Model):
    """One item of a store as it stands now; its history is its versions."""

    class State(models.TextChoices):
        ACTIVE = "active"
        DELETED = "deleted"
        INVALIDATED = "invalidated"

    store = models.ForeignKey(MemoryStore, on_delete=models.CASCADE, related_name="records")
    external_id = models.CharField(max_length=255, help_text="The record's id in the library.")
    text = models.TextField(blank=True, help_text="The text the model reads.")
    value = models.JSONField(null=True, blank=True, help_text="The raw value, where the library keeps more.")
    metadata = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.ACTIVE)
    content_hash = models.CharField(max_length=32, blank=True, help_text="md5 of the text, as mem0's hash.")
    char_limit = models.PositiveIntegerField(null=True, blank=True, help_text="A block's limit in characters.")
    created_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    version_count = models.PositiveIntegerField(default=0)
    read_count = models.PositiveIntegerField(default=0)
    last_read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["store", "external_id"]
        constraints = [
            models.UniqueConstraint(fields=["store", "external_id"], name="memoryrecord_unique_store_external_id"),
            models.CheckConstraint(condition=Q(state__in=["active", "deleted", "invalidated"]),
                                   name="memoryrecord_state_known"),
        ]
        indexes = [
            models.Index(fields=["store", "state", "id"], name="memoryrecord_store_state"),
            # On PostgreSQL NULLS LAST (0022_memoryrecord_sort_indexes), as the list orders: SQLite has no such
            # clause in an index and puts NULLs last of a DESC order anyway.
            models.Index(fields=["store", "-updated_at", "-id"], name="memoryrecord_store_updated"),
            models.Index(fields=["store", "read_count", "id"], name="memoryrecord_store_reads"),
            models.Index(fields=["store", "version_count", "id"], name="memoryrecord_store_versions"),
            models.Index(fields=["store", "content_hash"], name="memoryrecord_store_hash"),
        ]

    def __str__(self) -> str:
        return self.external_id


class RecordVersion(models.Model):
    """One write of a record, with its whole new body (a diff is derived from two versions, never stored)."""

    record = models.ForeignKey(MemoryRecord, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField(help_text="1 for the first write.")
    op = models.CharField(max_length=40, help_text="As the library wrote it: ADD, UPDATE, DELETE, NONE, ...")
    text = models.TextField(null=True, blank=True)  # noqa: DJ001 (None: the write left no text, a delete)
    value = models.JSONField(null=True, blank=True)
    at = models.DateTimeField(null=True, blank=True)
    actor = models.CharField(max_length=255, blank=True)
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="The message that caused it.")
    llm_call = models.ForeignKey(LlmCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The library's id of the event (mem0's history row) or a client's id (the write API): a retry never duplicates.
    external_id = models.CharField(max_length=255, blank=True)
    # False: the write was seen without its body (an OpenTelemetry memory span with content capture off, or a body
    # too big to read): text and value are unknown, not empty.
    body_captured = models.BooleanField(default=True)

    class Meta:
        ordering = ["record", "number"]
        constraints = [
            models.UniqueConstraint(fields=["record", "number"], name="recordversion_unique_record_number"),
        ]
        indexes = [
            models.Index(fields=["session", "seq"], name="recordversion_session_seq"),
            models.Index(fields=["record", "external_id"], name="recordversion_record_external"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id} v{self.number} {self.op}"


class Recall(models.Model):
    """One read of a store that fed a model call: the query, the items, and where their text was put."""

    class Placement(models.TextChoices):
        MESSAGE = "message"
        SYSTEM = "system"
        TOOL_RESULT = "tool_result", "tool result"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="recalls")
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="The message carrying the recalled text.")
    llm_call = models.ForeignKey(LlmCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    store = models.ForeignKey(MemoryStore, null=True, blank=True, on_delete=models.SET_NULL, related_name="recalls")
    query = models.TextField(blank=True)
    params = models.JSONField(default=dict, blank=True)
    placement = models.CharField(max_length=20, choices=Placement.choices, default=Placement.MESSAGE)
    persisted = models.BooleanField(default=False, help_text="The carrying message stays and is sent again later.")
    at = models.DateTimeField(null=True, blank=True)
    item_count = models.PositiveIntegerField(default=0)
    external_id = models.CharField(max_length=255, blank=True)
    # Live capture: the position, in ``llm_call``'s input, of the message carrying the recalled text; ``seq`` follows
    # it when the call's messages move (a call that arrived late is placed before later ones).
    call_input = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["session", "seq", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(placement__in=["message", "system", "tool_result"]),
                                   name="recall_placement_known"),
        ]
        indexes = [
            models.Index(fields=["session", "seq", "id"], name="recall_session_seq"),
            models.Index(fields=["store", "-id"], name="recall_store"),
            models.Index(fields=["session", "external_id"], name="recall_session_external"),
        ]

    def __str__(self) -> str:
        return f"recall {self.pk} at {self.session_id}#{self.seq}"


class RecallItem(models.Model):
    recall = models.ForeignKey(Recall, on_delete=models.CASCADE, related_name="items")
    record = models.ForeignKey(MemoryRecord, null=True, blank=True, on_delete=models.SET_NULL, related_name="reads")
    version = models.PositiveIntegerField(null=True, blank=True, help_text="The record's version current then.")
    rank = models.PositiveIntegerField()
    score = models.FloatField(null=True, blank=True)
    text = models.TextField(blank=True, help_text="The text as sent.")
    # What identifies the item in the library: {"id": ...}, or a chunk's {"doc_id": ..., "chunk_id": ...}.
    ref = models.JSONField(default=dict, blank=True)
    # What the library said of the item beside its text: a document's source and page, mem0's categories, AutoGen's
    # MemoryContent metadata; ``{"metadata_text": ...}`` when the span carried metadata that is not a JSON object.
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["recall", "rank"]
        indexes = [
            models.Index(fields=["record", "-recall"], name="recallitem_record_recall"),
            models.Index(fields=["recall", "rank"], name="recallitem_recall_rank"),
        ]

    def __str__(self) -> str:
        return f"{self.recall_id}#{self.rank}"


class RecallItemMark(models.Model):
    """A QA person's word on one recalled item: relevant to the recall's query or not (retrieval quality,
    ``ledger.quality``). One per item and author; the review roles (annotator and up) write them."""

    item = models.ForeignKey(RecallItem, on_delete=models.CASCADE, related_name="marks")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    relevant = models.BooleanField()
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["item", "author"]
        constraints = [
            models.UniqueConstraint(fields=["item", "author"], name="recallitemmark_unique_item_author"),
        ]

    def __str__(self) -> str:
        return f"{self.item_id} {'relevant' if self.relevant else 'not relevant'}"


class RecallJudgement(models.Model):
    """How many records of its store answer a recall's query, as a QA person counted them: what recall (the metric)
    needs beside the marks, known only where someone counted. One per recall and author."""

    recall = models.ForeignKey(Recall, on_delete=models.CASCADE, related_name="judgements")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    relevant_total = models.PositiveIntegerField()
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["recall", "author"]
        constraints = [
            models.UniqueConstraint(fields=["recall", "author"], name="recalljudgement_unique_recall_author"),
        ]

    def __str__(self) -> str:
        return f"recall {self.recall_id}: {self.relevant_total} relevant"


class MemoryFinding(models.Model):
    """One memory finding (``agents.memory.findings``: DESIGN's stable kinds) as the database's rows gave it, stored
    when its session or store changes (``ledger.findings``), so that a page or a list reads them, never computes
    them. Of a session (its recalls': ``seq`` the message carrying the recall) or of a store (its records'), never
    both."""

    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.CASCADE,
                                related_name="memory_findings")
    store = models.ForeignKey(MemoryStore, null=True, blank=True, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=40)
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="The message it is flagged on.")
    recall = models.ForeignKey(Recall, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    record = models.ForeignKey(MemoryRecord, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    version = models.PositiveIntegerField(null=True, blank=True)
    message = models.TextField()
    # When it happened, where known (the version written, the recall made): what a period of store health counts.
    at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "store", "seq", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(session__isnull=True) ^ Q(store__isnull=True),
                                   name="memoryfinding_of_session_or_store"),
        ]
        indexes = [
            models.Index(fields=["session", "seq", "id"], name="memoryfinding_session_seq"),
            models.Index(fields=["store", "kind", "id"], name="memoryfinding_store_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} at {self.session_id or self.store_id}#{self.seq}"


class Snapshot(models.Model):
    """One whole-agent state, kept verbatim (an AgentScope state_dict, a LangGraph checkpoint, a Letta agent)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="snapshots")
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="snapshots")
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="The last message of the session it holds.")
    external_id = models.CharField(max_length=255)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children")
    step = models.IntegerField(null=True, blank=True)
    taken_at = models.DateTimeField(null=True, blank=True)
    source_format = models.CharField(max_length=40, blank=True)
    format_version = models.CharField(max_length=40, blank=True)
    value = models.JSONField(null=True)
    # What the diff of two snapshots reads instead of their values (snapshot_diff.snapshot_digest): written with
    # the value, by ``written`` alone. None: a value it cannot describe; its diffs read the values.
    digest = models.JSONField(null=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent", "taken_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "external_id"], name="snapshot_unique_agent_external_id"),
        ]
        indexes = [
            models.Index(fields=["agent", "taken_at", "id"], name="snapshot_agent_taken"),
            models.Index(fields=["session", "seq"], name="snapshot_session_seq"),
        ]

    def __str__(self) -> str:
        return f"snapshot {self.external_id}"

    @classmethod
    def written(cls, **fields: Any) -> Snapshot:
        """A new snapshot, saved with its value's digest: every place that writes a snapshot writes it here, so
        that a digest is always its value's."""
        return cls.objects.create(**fields, digest=snapshot_digest(fields.get("value")))


class Compaction(models.Model):
    """A framework or provider compacting a session's message list between calls (DESIGN.md, "compaction"): when,
    the summary that came in where the source carries it (None: not captured, or encrypted), and the call that
    carried it first (``seq``: the reply that brought it, or the input message that passed it back)."""

    class Source(models.TextChoices):
        OUTPUT = "output"  # a compaction part in a call's reply
        INPUT = "input"  # a compaction part passed back in a call's input
        FLAG = "flag"  # gen_ai.conversation.compacted on the call
        MARKS = "marks"  # a saved memory's marks (AgentScope's ``compressed`` messages and ``_compressed_summary``)
        SUMMARY = "summary"  # a summary message in the list (LangChain's SummarizationMiddleware)

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="compactions")
    seq = models.PositiveIntegerField(null=True, blank=True)
    llm_call = models.ForeignKey(LlmCall, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    call_input = models.PositiveIntegerField(null=True, blank=True)
    at = models.DateTimeField(null=True, blank=True)
    summary = models.TextField(null=True, blank=True)  # noqa: DJ001 (None: not captured; "" is a summary)
    source = models.CharField(max_length=20, blank=True)
    external_id = models.CharField(max_length=255)
    # What went out, where the file itself says (AgentScope's compressed marks): [[first, last], ...] runs of seqs.
    # None: the file does not say; live capture's compactions say it through the call after them (``sent``).
    went_out = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["session", "at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "external_id"], name="compaction_unique_session_external_id"),
        ]
        indexes = [models.Index(fields=["session", "seq"], name="compaction_session_seq")]

    def __str__(self) -> str:
        return f"compaction {self.external_id}"


class CapturedSpan(models.Model):
    """Which span each captured span is under: the tree that links a memory read to the model call it fed
    (``memory.memory_spans.link_reads``), kept for every span since an agent or chain span between the two may
    arrive in any batch, before or after them."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "trace_id", "span_id"], name="capturedspan_unique_span"),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id}/{self.span_id}"


class CapturedMemorySpan(models.Model):
    """A memory write, read or compaction as its span told it (``memory.memory_spans``' MemoryWrite, MemoryRead, or
    a span's Compaction list, as JSON): everything a trace's ledger is built from again when a later batch of the
    trace arrives. One per span: a batch sent again adds nothing."""

    class Kind(models.TextChoices):
        WRITE = "write"
        WIPE = "wipe"  # a write that empties its store: delete_memory without a record id, delete_memory_store
        READ = "read"
        COMPACTION = "compaction"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    store_id = models.CharField(max_length=255, blank=True, help_text="gen_ai.memory.store.id, for a wipe's store.")
    data = models.JSONField()
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "trace_id", "span_id"], name="capturedmemoryspan_unique_span"),
        ]
        indexes = [models.Index(fields=["project", "kind", "store_id"], name="capturedmemoryspan_store")]

    def __str__(self) -> str:
        return f"{self.kind} {self.trace_id}/{self.span_id}"
