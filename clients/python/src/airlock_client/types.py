"""Typed results of the airlock HTTP API (plain dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

# The server's names for a changed entry's type (its Rust enum `EntryType`).
FileType = Literal["file", "dir", "symlink", "fifo", "socket", "char_device", "block_device"]
# A violation's `kind` (its Rust enum `ViolationKind`).
ViolationKind = Literal["network", "network_connection", "filesystem"]


class AirlockError(Exception):
    """An error answer from the server: ``code`` is the server's stable code
    (``queue_full``, ``unauthorized``, ``command_too_large``, ...)."""

    def __init__(self, code: str, message: str, status: int = 0, retry_after: Optional[float] = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class FileChange:
    path: str
    kind: str  # added | modified | deleted
    size: int = 0
    file_type: FileType = "file"

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "FileChange":
        return cls(path=d["path"], kind=d["kind"], size=d.get("size", 0), file_type=d.get("file_type", "file"))


@dataclass(frozen=True)
class CheckResult:
    """The policy gate's answer; nothing ran."""

    decision: str  # allow | deny | approval_required
    reason: str
    rule: Optional[str]
    step: str
    request_id: str
    segments: List[Dict[str, Any]] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "CheckResult":
        return cls(
            decision=d["decision"],
            reason=d["reason"],
            rule=d.get("rule"),
            step=d.get("step", ""),
            request_id=d.get("request_id", ""),
            segments=d.get("segments", []),
            raw=d,
        )


@dataclass(frozen=True)
class RunResult:
    """A run's answer: the decision and, when it ran, what happened."""

    request_id: str
    status: str  # ran | denied | approval_pending | approval_denied | approval_refused
    decision: str
    reason: str
    message: str
    rule: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    killed_by: Optional[str] = None  # timeout | memory | pids | output | cpu_time | cancelled
    stdout: str = ""
    stderr: str = ""
    truncated: bool = False
    changes: List[FileChange] = field(default_factory=list)
    violations: List[Dict[str, Any]] = field(default_factory=list)  # kind: ViolationKind, detail, data
    duration_ms: Optional[int] = None
    approval_id: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ran(self) -> bool:
        return self.status == "ran"

    @property
    def ok(self) -> bool:
        """Ran to completion with exit code 0."""
        return self.ran and self.killed_by is None and self.exit_code == 0

    @property
    def denied(self) -> bool:
        return self.decision == "deny" or self.status in ("denied", "approval_denied")

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RunResult":
        o = d.get("outcome") or {}
        approval = d.get("approval") or {}
        return cls(
            request_id=d["request_id"],
            status=d["status"],
            decision=d["decision"],
            reason=d["reason"],
            message=d.get("message", ""),
            rule=d.get("rule"),
            exit_code=o.get("exit_code"),
            signal=o.get("signal"),
            killed_by=o.get("killed_by"),
            stdout=o.get("stdout", ""),
            stderr=o.get("stderr", ""),
            truncated=o.get("truncated", False),
            changes=[FileChange.from_json(c) for c in o.get("changes", [])],
            violations=o.get("violations", []),
            duration_ms=o.get("duration_ms"),
            approval_id=approval.get("id"),
            raw=d,
        )


@dataclass(frozen=True)
class StreamEvent:
    """One line of a streaming run: ``stdout``/``stderr`` with ``data``, then
    ``result`` (with ``result``) or ``error`` (raised by the iterator)."""

    type: str
    data: str = ""
    result: Optional[RunResult] = None
