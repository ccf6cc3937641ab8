"""What an import tells: ``ImportReport`` (each conversation's ``SessionOutcome``), or ``ImportFailed``, which says
where the file is wrong and that nothing of it was saved."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ImportFailed(Exception):
    """The file could not be imported and nothing of it was saved. ``str(e)`` is ``place: what is wrong``;
    ``choose_format`` as in FormatError (naming the format would let the file be read)."""

    def __init__(self, message: str, *, choose_format: bool = False) -> None:
        super().__init__(message)
        self.choose_format = choose_format

    def naming(self, file: str) -> str:
        """The error naming the file, once (some errors name it already)."""
        text = str(self)
        return text if text.startswith(f"{file}: ") else f"{file}: {text}"


@dataclass
class SessionOutcome:
    """What happened to one conversation of the file."""

    index: int
    external_id: str
    title: str
    agent: str
    status: str  # "imported", "updated" (new messages appended), "already imported"
    session_id: int | None = None
    messages: int = 0  # messages read from the file
    added: int = 0  # messages saved
    skipped: int = 0  # messages not saved because their id is already stored (or repeated in the file)
    violations: list[dict[str, Any]] = field(default_factory=list)
    naive_times: int = 0  # timestamps without a time zone, read as UTC
    agent_name: str = ""  # the agent's name, which the pages show (``agent`` is its slug, for the command and API)
    annotations: int = 0  # reviewers' labels and comments stored with the session (native files carry them)

    @property
    def error_count(self) -> int:
        return sum(1 for v in self.violations if v.get("severity", "error") == "error")

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "session_id": self.session_id,
            "external_id": self.external_id,
            "title": self.title,
            "agent": self.agent,
            "status": self.status,
            "messages": self.messages,
            "added": self.added,
            "skipped": self.skipped,
            "violation_count": self.error_count,
            "violations": self.violations,
            "annotations": self.annotations,
        }


@dataclass
class ImportReport:
    """The report of one file: sessions, messages, violations found, warnings, what was dropped."""

    file: str
    format: str = ""
    project: str = ""
    saved: bool = False  # False for a preview
    sessions: list[SessionOutcome] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    # The file's memory layers beyond its messages (``ledger.storing.MemoryOutcome.to_dict()``), when it has some.
    memory: dict[str, Any] | None = None

    @property
    def sessions_imported(self) -> int:
        return sum(1 for s in self.sessions if s.status != "already imported")

    @property
    def messages_imported(self) -> int:
        return sum(s.added for s in self.sessions)

    @property
    def messages_read(self) -> int:
        return sum(s.messages for s in self.sessions)

    @property
    def violation_count(self) -> int:
        return sum(s.error_count for s in self.sessions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "format": self.format,
            "project": self.project,
            "saved": self.saved,
            "sessions_read": len(self.sessions),
            "sessions_imported": self.sessions_imported,
            "messages_read": self.messages_read,
            "messages_imported": self.messages_imported,
            "violation_count": self.violation_count,
            "sessions": [s.to_dict() for s in self.sessions],
            "warnings": self.warnings,
            "dropped": self.dropped,
            **({"memory": self.memory} if self.memory is not None else {}),
        }
