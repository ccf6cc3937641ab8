"""The data model of DESIGN.md: projects, agents, sessions and their messages, and what serves them (reviews,
keys, captures, presets, jobs); the memory layers' models are in ``agents.models.memory``, imported here so that
``agents.models`` names every model."""
from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

if TYPE_CHECKING:
    from django.contrib.auth.models import User


class Role(models.TextChoices):
    SYSTEM = "system"
    DEVELOPER = "developer"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class Project(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    members: models.ManyToManyField[User, Membership] = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="projects"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Level(models.TextChoices):
        VIEWER = "viewer"
        ANNOTATOR = "annotator"
        EDITOR = "editor"
        ADMIN = "admin"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Level.choices, default=Level.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique_project_user"),
            models.CheckConstraint(
                condition=Q(role__in=["viewer", "annotator", "editor", "admin"]), name="membership_role_known"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"

    # Each role may do what the one before it may, and more: a viewer reads; an annotator also labels,
    # comments and sets review status; an editor also imports, deletes sessions and edits agents; an admin also
    # manages members, labels and API keys. The policy itself lives in access.py (``roles_for``, ``require_role``).
    ORDER = (Level.VIEWER, Level.ANNOTATOR, Level.EDITOR, Level.ADMIN)
    # The roles that may change a project's data (import, edit agents); ADMIN alone manages its members.
    EDIT_ROLES = (Level.EDITOR, Level.ADMIN)
    ADMIN_ROLES = (Level.ADMIN,)


class Agent(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100)
    description = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True, help_text="Model name, e.g. gpt-4o.")
    context_window = models.PositiveIntegerField(default=128_000, help_text="Tokens the model accepts.")
    token_counter = models.CharField(
        max_length=40, blank=True,
        help_text="The counter its new sessions are counted with; empty: the one its model counts with.",
    )

    class Meta:
        ordering = ["project__name", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "slug"], name="agent_unique_project_slug")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("agents:agent_detail", args=[self.pk])

    @property
    def counter(self) -> str:
        """The counter its sessions count with: the one chosen for it, else the one its model counts with (the
        core's table: gpt-4o and later with o200k, gpt-4 and gpt-3.5 with cl100k), else the default."""
        from agents.memory.tokens import counter_for_model

        return self.token_counter or counter_for_model(self.model)


class ReviewStatus(models.TextChoices):
    UNREVIEWED = "unreviewed"
    IN_REVIEW = "in_review", "in review"
    DONE = "done"


class Session(models.Model):
    class State(models.TextChoices):
        # Rows are still being written by an import (in committed batches): no reader sees the session until
        # the import flips it to ready, and a failed or killed import removes it (``imports.imports_cleanup``).
        IMPORTING = "importing"
        READY = "ready"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=255, help_text="The id the agent's framework gave the session.")
    title = models.CharField(max_length=500, blank=True)
    source_format = models.CharField(max_length=40, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    imported_at = models.DateTimeField(auto_now_add=True)
    # Summaries kept on the row so that lists never aggregate messages.
    message_count = models.PositiveIntegerField(default=0)
    token_total = models.PositiveBigIntegerField(default=0)
    violation_count = models.PositiveIntegerField(default=0)
    has_errors = models.BooleanField(default=False)
    # Which counter produced Message.token_count, so that a trim under the same counter reuses the counts.
    token_counter = models.CharField(max_length=40, default="cl100k")
    # The protocol violations found at import (Violation.to_dict() plus "seq"), so that no page view has to
    # re-check a session of 10,000 messages. violation_count counts the errors among them.
    violations = models.JSONField(default=list, blank=True)
    # Tool schemas sent with the messages, where the format carried them (kept for a lossless export).
    tools = models.JSONField(null=True, blank=True)
    # When messages last arrived (import, API or live capture): the list sorts by it, the page shows "live".
    last_activity_at = models.DateTimeField(null=True, blank=True)
    state = models.CharField(max_length=20, choices=State.choices, default=State.READY)
    # While importing: who writes it (``host:pid``) and when it last committed a batch, so that a session left
    # by a killed import can be told from one still being written.
    import_owner = models.CharField(max_length=100, blank=True)
    import_heartbeat = models.DateTimeField(null=True, blank=True)
    # While importing new messages into a stored session: the session they go to when the import completes.
    append_to = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # QA review: where the session stands and who looks at it.
    review_status = models.CharField(max_length=20, choices=ReviewStatus.choices, default=ReviewStatus.UNREVIEWED)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="assigned_sessions"
    )
    # Bumped by every change of its messages (store.writing.session_changed: the row writer, a recount, live capture's
    # rewrite): part of the key of what a trim of it computed (lab.trimming.session_trim's cache).
    content_version = models.PositiveBigIntegerField(default=0)
    # The content_version of its last change that was not an append at the end (an edit, a recount, a rewrite): what
    # was computed from its first messages at this version or later still holds for them (SessionStructure).
    rewritten_version = models.PositiveBigIntegerField(default=0)
    # Memory findings (MemoryFinding rows of this session: its recalls', DESIGN's kinds), counted so that the list's
    # "has memory findings" filter reads no other row; and what they were computed from (``ledger.findings``: the
    # session's content version, its recalls, the stores they read), so that a reader can tell they still hold.
    memory_finding_count = models.PositiveIntegerField(default=0)
    memory_findings_key = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "external_id"],
                name="session_unique_agent_external_id",
                violation_error_message="This agent already has a session with this external id.",
            ),
            models.CheckConstraint(
                condition=Q(review_status__in=["unreviewed", "in_review", "done"]), name="session_review_status_known"
            ),
        ]
        indexes = [
            models.Index(fields=["agent", "-started_at"], name="session_agent_started"),
            models.Index(fields=["-started_at", "-id"], name="session_started"),
            models.Index(fields=["violation_count"], name="session_violations"),
            models.Index(fields=["has_errors"], name="session_has_errors"),
            models.Index(fields=["token_total"], name="session_tokens"),
            models.Index(fields=["-last_activity_at", "-id"], name="session_last_activity"),
            models.Index(fields=["state", "import_heartbeat"], name="session_state_heartbeat"),
            models.Index(fields=["review_status"], name="session_review_status"),
            models.Index(fields=["memory_finding_count"], name="session_memory_findings"),
        ]

    def __str__(self) -> str:
        return self.title or self.external_id

    def get_absolute_url(self) -> str:
        return reverse("agents:session_detail", args=[self.pk])

    # A session whose messages arrived this recently is shown as receiving: its page polls for more.
    LIVE_FOR = dt.timedelta(minutes=2)

    @property
    def is_live(self) -> bool:
        return self.last_activity_at is not None and timezone.now() - self.last_activity_at < self.LIVE_FOR


class Message(models.Model):
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField(help_text="Position in the conversation, 0-based.")
    role = models.CharField(max_length=20, choices=Role.choices)
    # NULL keeps "no content" (an assistant message that only calls tools) apart from an empty string.
    content = models.TextField(null=True, blank=True, help_text="The text of the message (text parts joined).")  # noqa: DJ001
    content_parts = models.JSONField(null=True, blank=True, help_text="Content as a list of parts, when it was one.")
    name = models.CharField(max_length=255, blank=True)
    tool_call_id = models.CharField(max_length=255, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    is_error = models.BooleanField(null=True, blank=True)
    reasoning = models.TextField(blank=True)
    external_id = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(null=True, blank=True)
    token_count = models.PositiveIntegerField(default=0)
    # Stored at import so that any page of a long session knows the running total before it from its own first
    # row, without summing every earlier message (a page deep in a 10,000-message session would read thousands).
    token_running = models.PositiveBigIntegerField(
        default=0,
        help_text="Sum of token_count of this message and all before it in the session (the list up to here).",
    )
    usage = models.JSONField(null=True, blank=True, help_text="Token usage the provider reported, where kept.")
    marks = models.JSONField(default=list, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    # memory.stitch.message_key, for sessions captured live: finds the stored copy of a message a call resends
    # with one indexed lookup instead of reading the session.
    content_key = models.CharField(max_length=32, blank=True)
    # Whether it has content as the protocol checker counts it (memory.stored.has_content: a non-blank text or a
    # non-text part): with it, a trim decides from the light columns and reads no text (memory/stored.py). The row
    # writer always sets it; nullable only so that SQLite adds the column in place (a default would remake the
    # table, and its full-text search triggers with it).
    has_content = models.BooleanField(null=True, blank=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "seq"],
                name="message_unique_session_seq",
                violation_error_message="This session already has a message at this seq.",
            ),
            models.UniqueConstraint(
                fields=["session", "external_id"],
                condition=~Q(external_id=""),
                name="message_unique_session_external_id",
                violation_error_message="This session already has a message with this external id.",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["system", "developer", "user", "assistant", "tool"]),
                name="message_role_known",
                violation_error_message="Unknown role; expected one of system, developer, user, assistant, tool.",
            ),
            models.CheckConstraint(
                condition=~Q(role="tool") | ~Q(tool_call_id=""),
                name="message_tool_has_call_id",
                violation_error_message="A tool message must name the tool_call_id it answers.",
            ),
        ]
        # The unique (session, seq) index serves reading a session in order.
        indexes = [
            models.Index(fields=["session", "role"], name="message_session_role"),
            models.Index(fields=["session", "content_key"], name="message_session_content_key"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.role}"

    def clean(self) -> None:
        if self.role not in Role.values:
            raise ValidationError({"role": f"Unknown role {self.role!r}; expected one of {', '.join(Role.values)}."})
        if self.role == Role.TOOL and not self.tool_call_id:
            raise ValidationError({"tool_call_id": "A tool message must name the tool_call_id it answers."})


class SessionStructure(models.Model):
    """A session's structure in one value (``memory.structure``): each message's role, name, call ids, tool calls,
    flags and stored count, no text. What every trim of the session reads (the lab, compare, the trim API, trimmed
    exports) instead of one row per message; written by the first trim after the session changed
    (``store.outlines.session_structure``), and used only while the session's ``content_version``, ``token_counter``
    and ``message_count`` are still the ones it was read at."""

    session = models.OneToOneField(Session, primary_key=True, on_delete=models.CASCADE, related_name="+")
    content_version = models.PositiveBigIntegerField()
    token_counter = models.CharField(max_length=40)
    message_count = models.PositiveIntegerField()
    value = models.BinaryField()

    def __str__(self) -> str:
        return f"structure of session {self.session_id} ({self.message_count} messages)"


class ToolCall(models.Model):
    """One call of an assistant message, for "sessions that used tool X"."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="tool_call_rows")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="tool_call_rows")
    call_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    arguments = models.TextField(blank=True)
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["message", "position"]
        indexes = [
            models.Index(fields=["name", "session"], name="toolcall_name_session"),
            models.Index(fields=["session", "call_id"], name="toolcall_session_call"),
        ]

    def __str__(self) -> str:
        return f"{self.name}({self.call_id})"


class ToolName(models.Model):
    """A tool name some call in the project uses: the session list's tool filter suggests these, so that a render
    never runs a DISTINCT over every tool call. Written by the row writer (``store.writing.messages_append``) as calls
    are stored; never removed (a suggestion that matches nothing any more finds nothing)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="tool_names")
    name = models.CharField(max_length=255)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="toolname_unique_project_name")]

    def __str__(self) -> str:
        return self.name


class Label(models.Model):
    """One label of a project's label set (managed by the project's admins)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=60)
    color = models.CharField(max_length=7, default="#6b7280", help_text="A CSS colour as #rrggbb.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"], name="label_unique_project_name",
                violation_error_message="This project already has a label with this name.",
            ),
            models.CheckConstraint(condition=Q(color__regex=r"^#[0-9a-fA-F]{6}$"), name="label_color_hex"),
        ]

    def __str__(self) -> str:
        return self.name


class Annotation(models.Model):
    """What a reviewer wrote down: a label, a comment or both, on one message or (message NULL) the session."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="annotations")
    message = models.ForeignKey(Message, null=True, blank=True, on_delete=models.CASCADE, related_name="annotations")
    label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotations")
    comment = models.TextField(blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="annotations"
    )
    # Who wrote it when the author is not a user here: an imported annotation, a deleted user, an API key.
    author_name = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "created_at", "id"]
        indexes = [
            models.Index(fields=["session", "message"], name="annotation_session_message"),
            models.Index(fields=["label", "session"], name="annotation_label_session"),
        ]

    def __str__(self) -> str:
        return f"{self.label or 'comment'} on {self.session_id}#{self.message_id or 'session'}"


class ExportRecord(models.Model):
    """Who exported what and when (written by agents.transfer.exports for the pages and the command line)."""

    # NULL for the command line, which runs without a logged-in user.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="export_records"
    )
    # NULL when the exported sessions span several projects.
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="export_records"
    )
    format = models.CharField(max_length=40)
    scope = models.CharField(max_length=500, help_text="What was exported, in words (a session, a filtered list).")
    filters = models.JSONField(default=dict, blank=True, help_text="The list filters or session ids of the export.")
    session_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveBigIntegerField(default=0)
    strategy = models.CharField(max_length=60, blank=True, help_text="The trimming strategy, when trimmed.")
    params = models.JSONField(default=dict, blank=True, help_text="The strategy's parameters, when trimmed.")
    dropped = models.JSONField(default=list, blank=True, help_text="What the target format could not hold.")
    skipped = models.JSONField(default=list, blank=True, help_text="Conversations left out as invalid, and why.")
    interface = models.CharField(max_length=20, default="web", help_text="web, api or command.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "-created_at"], name="exportrecord_user_created")]

    def __str__(self) -> str:
        return f"{self.format} export of {self.scope}"

    @property
    def params_json(self) -> str:
        """The parameters as the JSON the command line and the API take (true, null, "..."), not as a Python dict."""
        return json.dumps(self.params, ensure_ascii=False, sort_keys=True) if self.params else ""


class ApiKey(models.Model):
    """A project's key for scripts and OpenTelemetry exporters. It acts as an editor of its one project.

    The key is shown once; only its prefix (to find it) and a SHA-256 of the whole key (to check it) are kept.
    A plain hash suffices: the secret is 32 random bytes, not a password that a dictionary could guess.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=16, unique=True)
    hashed_secret = models.CharField(max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="api_keys"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["project", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class LlmCall(models.Model):
    """One model call seen live: which stored messages it was sent (``sent``, seqs in the order it received
    them) and which message it produced (``reply_seq``)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="llm_calls")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    convention = models.CharField(
        max_length=40, blank=True, help_text="How the call was described: genai, openinference, ..."
    )
    model = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    duration = models.DurationField(null=True, blank=True)
    usage = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # Where the call stands among the session's calls (its start, in ns): calls are stitched in this order.
    order_ns = models.BigIntegerField(default=0)
    placed = models.BooleanField(default=False, help_text="False while only the span came, without its content.")
    sent = models.JSONField(default=list, blank=True)
    # The protocol violations of the list this call was sent (index: position in that list; seq: the message).
    sent_violations = models.JSONField(default=list, blank=True)
    reply_seq = models.PositiveIntegerField(null=True, blank=True)
    # Where the chain stood before this call's new messages: rolling back to it undoes this call and later ones.
    chain_start = models.PositiveIntegerField(default=0)
    # Log events only: when each input was emitted, to join a call whose events came in two batches.
    input_times = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "order_ns", "trace_id", "span_id"]
        constraints = [
            models.UniqueConstraint(fields=["session", "trace_id", "span_id"], name="llmcall_unique_session_span"),
        ]
        indexes = [
            models.Index(fields=["session", "order_ns"], name="llmcall_session_order"),
            models.Index(fields=["session", "reply_seq"], name="llmcall_session_reply"),
            models.Index(fields=["trace_id", "span_id"], name="llmcall_trace_span"),
        ]

    def __str__(self) -> str:
        return f"{self.model or 'call'} {self.span_id}"


class CapturedTrace(models.Model):
    """Which session a trace's calls belong to, once a span of the trace named one (an agent span may arrive
    after the calls under it: they wait in the trace's own session and move when it comes)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="captured_traces")
    trace_id = models.CharField(max_length=32)
    session_external_id = models.CharField(max_length=255, blank=True)
    agent_name = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "trace_id"], name="capturedtrace_unique_project_trace"),
        ]

    def __str__(self) -> str:
        return f"{self.trace_id} -> {self.session_external_id or '?'}"


class LoginFailure(models.Model):
    """A failed password check (login page, admin login, HTTP Basic), kept while it counts against the username and
    the client address (see agents.auth). In the database, so that every application server sees every attempt."""

    username = models.CharField(max_length=150)
    address = models.CharField(max_length=64, help_text="The client's IP address.")
    at = models.DateTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["username", "at"], name="loginfailure_username_at"),
            models.Index(fields=["address", "at"], name="loginfailure_address_at"),
            models.Index(fields=["at"], name="loginfailure_at"),
        ]

    def __str__(self) -> str:
        return f"{self.username} from {self.address} at {self.at:%Y-%m-%d %H:%M:%S}"


class Preset(models.Model):
    """A named strategy with its parameters and counter, saved in a project: the lab, compare, report, export and
    the API take it as ``?preset=NAME``. ``params`` holds every parameter as validated when saved (defaults
    included), so a preset trims the same way after a default changes."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="presets")
    name = models.CharField(max_length=100)
    strategy = models.CharField(max_length=60)
    params = models.JSONField(default=dict, blank=True)
    counter = models.CharField(max_length=40)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="presets"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project__name", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="preset_unique_project_name")]

    def __str__(self) -> str:
        return f"{self.name} ({self.strategy})"


class BackgroundJob(models.Model):
    """Long work run by a worker (django-tasks' database backend) for a user: a big report, export or import.

    Its page shows ``done`` of ``total`` as it goes, survives a reload, and links the result when finished. A job
    whose worker died is queued again (``jobs.jobs_recover``)."""

    class Kind(models.TextChoices):
        REPORT = "report"
        EXPORT = "export"
        IMPORT = "import"

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="background_jobs")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.QUEUED)
    title = models.CharField(max_length=500)
    params = models.JSONField(default=dict, blank=True, help_text="What to do: the request's query, a file, ...")
    done = models.PositiveBigIntegerField(default=0)
    total = models.PositiveBigIntegerField(default=0)
    unit = models.CharField(max_length=20, default="messages")
    message = models.TextField(blank=True, help_text="Why it failed, in one line.")
    result = models.JSONField(null=True, blank=True)
    file_name = models.CharField(max_length=255, blank=True, help_text="The result file in MEMORYVIZ_JOB_DIR.")
    download_name = models.CharField(max_length=255, blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    worker = models.CharField(max_length=100, blank=True, help_text="host:pid of the worker running it.")
    heartbeat = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="backgroundjob_user_created"),
            models.Index(fields=["status", "heartbeat"], name="backgroundjob_status_beat"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.pk}: {self.title}"

    def get_absolute_url(self) -> str:
        return reverse("agents:job_detail", args=[self.pk])

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.done / self.total)) if self.total else (100 if self.finished else 0)


# The memory layers (DESIGN.md, "Memory beyond the message list"): their own module, every model named here too.
from agents.models.memory import (  # noqa: E402  (they refer to the models above)
    CapturedMemorySpan,
    CapturedSpan,
    Compaction,
    MemoryFinding,
    MemoryRecord,
    MemoryStore,
    Recall,
    RecallItem,
    RecallItemMark,
    RecallJudgement,
    RecordVersion,
    Snapshot,
)

__all__ = [
    "Role", "Project", "Membership", "Agent", "ReviewStatus", "Session", "Message", "SessionStructure",
    "ToolCall", "ToolName", "Label", "Annotation", "ExportRecord", "ApiKey", "LlmCall", "CapturedTrace",
    "LoginFailure", "Preset", "BackgroundJob", "MemoryStore", "MemoryRecord", "RecordVersion", "Recall",
    "RecallItem", "RecallItemMark", "RecallJudgement", "MemoryFinding", "Snapshot", "Compaction", "CapturedSpan",
    "CapturedMemorySpan",
]
