"""Typed results of the airlock HTTP API (plain dataclasses)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Optional

# The server's names for a changed entry's type (its Rust enum `EntryType`).
FileType = Literal["file", "dir", "symlink", "fifo", "socket", "char_device", "block_device"]
# A violation's `kind` (its Rust enum `ViolationKind`).
ViolationKind = Literal["network", "network_connection", "filesystem"]
# The gate's verdicts (the Rust enum `Verdict`) and a run's statuses (`RunStatus`).
VERDICTS = ("allow", "deny", "approval_required")
RUN_STATUSES = ("ran", "denied", "approval_pending", "approval_denied", "approval_refused")
# The decision each status goes with; anything else is a contradiction.
_STATUS_DECISIONS = {
    "ran": ("allow", "approval_required"),  # approval_required: it ran under an approved approval
    "denied": ("deny",),
    "approval_pending": ("approval_required",),
    "approval_denied": ("approval_required",),
    "approval_refused": ("approval_required",),
}


class AirlockError(Exception):
    """An error answer from the server: ``code`` is the server's stable code
    (``queue_full``, ``unauthorized``, ``command_too_large``, ...), or one of
    the client's own: ``bad_response`` (an answer that is not a valid airlock
    answer: not JSON, a missing field, an unknown status, a status and a
    decision that contradict each other), ``incomplete_stream`` (a stream that
    ended without its result) and ``http_error`` (an error answer without an
    airlock error body)."""

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
        try:
            if d["decision"] not in VERDICTS:
                raise AirlockError("bad_response", f"unknown decision {d['decision']!r} in a check answer")
            return cls._parse(d)
        except (KeyError, TypeError, AttributeError) as e:
            raise AirlockError("bad_response", f"not a check answer: {type(e).__name__}: {e}") from None

    @classmethod
    def _parse(cls, d: Dict[str, Any]) -> "CheckResult":
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
    decision: str  # allow | deny | approval_required
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
        """It ran (whatever its exit code): ``outcome`` fields are set."""
        return self.status == "ran"

    @property
    def ok(self) -> bool:
        """Ran to completion with exit code 0. This is the only success test:
        ``not r.denied`` is not success (the run may be waiting for approval,
        or have failed or been stopped)."""
        return self.ran and self.killed_by is None and self.exit_code == 0

    @property
    def denied(self) -> bool:
        """Refused: by the policy (``denied``) or by a person (``approval_denied``)."""
        return self.status in ("denied", "approval_denied")

    @property
    def needs_approval(self) -> bool:
        """Not run because it needs a person's approval: one is pending
        (``approval_pending``, ``approval_id`` names it), or the approval
        presented could not be used (``approval_refused``, ``raw["refusal"]``
        says why). Exactly one of ``ran``, ``denied`` and ``needs_approval``
        is true."""
        return self.status in ("approval_pending", "approval_refused")

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "RunResult":
        """Parse a run answer; raise ``AirlockError("bad_response")`` for one
        that is malformed or contradicts itself (an unknown status or decision,
        ``ran`` with ``deny``, ``ran`` without an outcome, an outcome without
        ``ran``), rather than guess what happened."""
        try:
            status, decision = d["status"], d["decision"]
            if status not in RUN_STATUSES:
                raise AirlockError("bad_response", f"unknown run status {status!r}")
            if decision not in _STATUS_DECISIONS[status]:
                raise AirlockError("bad_response", f"run status {status!r} contradicts decision {decision!r}")
            if (status == "ran") != isinstance(d.get("outcome"), dict):
                raise AirlockError("bad_response", f"run status {status!r} with "
                                   + ("no outcome" if status == "ran" else "an outcome"))
            return cls._parse(d)
        except (KeyError, TypeError, AttributeError) as e:
            raise AirlockError("bad_response", f"not a run answer: {type(e).__name__}: {e}") from None

    @classmethod
    def _parse(cls, d: Dict[str, Any]) -> "RunResult":
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
