"""Client for ``airlock serve``: a policy gate, a disposable sandbox and an
audit trail for the commands AI agents run."""

from .client import Airlock, AsyncAirlock, default_socket_path
from .types import AirlockError, CheckResult, FileChange, RunResult, StreamEvent

__all__ = [
    "Airlock",
    "AsyncAirlock",
    "AirlockError",
    "CheckResult",
    "FileChange",
    "RunResult",
    "StreamEvent",
    "default_socket_path",
]
__version__ = "0.1.0"
