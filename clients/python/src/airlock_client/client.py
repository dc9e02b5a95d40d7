"""Synchronous and asynchronous clients for ``airlock serve``."""

from __future__ import annotations

import datetime
import email.utils
import ipaddress
import json
import math
import os
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional

import httpx

from .types import AirlockError, CheckResult, RunResult, StreamEvent

__all__ = ["Airlock", "AsyncAirlock", "default_socket_path"]


def default_socket_path() -> str:
    """Where ``airlock serve`` listens by default: ``$AIRLOCK_SOCKET``, else
    ``<state dir>/airlock.sock`` with the server's state-dir rules."""
    if os.environ.get("AIRLOCK_SOCKET"):
        return os.environ["AIRLOCK_SOCKET"]
    if os.environ.get("AIRLOCK_STATE_DIR"):
        return os.path.join(os.environ["AIRLOCK_STATE_DIR"], "airlock.sock")
    if os.environ.get("XDG_STATE_HOME"):
        return os.path.join(os.environ["XDG_STATE_HOME"], "airlock", "airlock.sock")
    if os.geteuid() == 0:
        return "/var/lib/airlock/airlock.sock"
    return os.path.join(os.path.expanduser("~"), ".local", "state", "airlock", "airlock.sock")


def _run_body(command=None, argv=None, code=None, language=None, cwd=None, timeout_s=None, approval_id=None,
              stdin=None):
    body: Dict[str, Any] = {}
    given = [k for k, v in (("command", command), ("argv", argv), ("code", code)) if v is not None]
    if len(given) != 1:
        raise ValueError("give exactly one of command, argv or code")
    if command is not None:
        body["command"] = command
    if argv is not None:
        body["argv"] = list(argv)
    if code is not None:
        body["code"] = code
        body["language"] = language or "python"
    if cwd is not None:
        body["cwd"] = str(cwd)
    if timeout_s is not None:
        body["timeout_s"] = timeout_s
    if approval_id is not None:
        body["approval_id"] = approval_id
    if stdin is not None:
        if not isinstance(stdin, str):
            raise TypeError("stdin is text (str): the API carries the command's stdin as UTF-8")
        body["stdin"] = stdin
    return body


def _raise_for(response: httpx.Response) -> None:
    if response.status_code < 400:
        return
    try:
        body = response.json()
        code, message = body["code"], body["message"]
    except Exception:  # a proxy or a non-airlock server answered
        code, message = "http_error", response.text[:500]
    raise AirlockError(code, message, response.status_code, _retry_after(response.headers.get("retry-after")))


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds to wait from a ``Retry-After`` header: delay-seconds, or an HTTP
    date (seconds from now, at least 0); None when absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, RFC 5322 says
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, (when - datetime.datetime.now(datetime.timezone.utc)).total_seconds())


_INCOMPLETE = ("the stream ended without a result event: the run's outcome is unknown "
               "(the connection was cut, or the server stopped)")


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise AirlockError("bad_response", f"not JSON: {response.text[:200]!r}", response.status_code) from None


def _event(line: bytes) -> Optional[StreamEvent]:
    if not line.strip():
        return None
    try:
        ev = json.loads(line)
        kind = ev.get("type")
    except (ValueError, AttributeError):
        raise AirlockError("bad_response", f"not a stream event: {line[:200]!r}", 200) from None
    if kind == "error":
        err = ev.get("error", {})
        raise AirlockError(err.get("code", "internal"), err.get("message", ""), 200)
    if kind == "result":
        return StreamEvent(type="result", result=RunResult.from_json(ev.get("result")))
    return StreamEvent(type=kind, data=ev.get("data", ""))


def _is_loopback_host(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _check_base_url(base_url: str, token: Optional[str]) -> None:
    """A token never crosses the network in clear text: plain ``http://`` is for
    loopback only, as ``airlock serve`` itself only listens on loopback."""
    url = httpx.URL(base_url)
    if token and url.scheme == "http" and not _is_loopback_host(url.host):
        raise ValueError(
            f"refusing to send a bearer token over plain http to {url.host!r}: it is not a loopback address, "
            "so the token would cross the network in clear text. airlock serve only listens on loopback; "
            "use the unix socket, http://127.0.0.1:PORT on the server's machine, or an https:// URL of a "
            "TLS-terminating proxy in front of it")


class _Base:
    def __init__(self, socket: Optional[str], base_url: Optional[str], token: Optional[str]):
        if socket is not None and base_url is not None:
            raise ValueError("give socket or base_url, not both")
        if base_url is not None:
            _check_base_url(base_url, token)
        self.socket = socket if (socket is not None or base_url is not None) else default_socket_path()
        self.base_url = base_url.rstrip("/") if base_url else "http://localhost"

    def _run_timeout(self) -> httpx.Timeout:
        # A run's answer may take as long as the policy's limits.timeout, plus
        # the time it waits in the server's queue (or for an approval), and the
        # client knows neither. A read timeout shorter than that would hang up
        # on a run that is still going: the server then cancels it part-way
        # (killed_by "cancelled"), after it may have had effects, and the caller
        # is left not knowing what happened (and tempted to run it again). So
        # run and stream calls wait for the answer without a read timeout: the
        # server bounds the run itself. Connecting, sending and the connection
        # pool keep the client's timeout; check and the other calls keep all of it.
        t = self._http.timeout
        return httpx.Timeout(connect=t.connect, read=None, write=t.write, pool=t.pool)

    @staticmethod
    def _headers(token: Optional[str]) -> Dict[str, str]:
        # The token is kept only in the httpx client's headers (whose repr
        # shows "[secure]"), never in an attribute of this object.
        return {"Authorization": f"Bearer {token}"} if token else {}

    def __repr__(self) -> str:
        where = f"socket={self.socket!r}" if self.socket else f"base_url={self.base_url!r}"
        return f"{type(self).__name__}({where})"


class Airlock(_Base):
    """Talks to ``airlock serve`` over its unix socket (default) or HTTP.

    A denial is a result (``decision == "deny"``), not an exception; server
    errors raise :class:`AirlockError` with the server's ``code``. ``timeout``
    (seconds, or an ``httpx.Timeout``) bounds every call, except that run and
    stream calls wait for their answer without a read timeout (the server's
    policy limits the run).
    """

    def __init__(self, socket: Optional[str] = None, base_url: Optional[str] = None,
                 token: Optional[str] = None, timeout: float = 120.0):
        super().__init__(socket, base_url, token)
        transport = httpx.HTTPTransport(uds=self.socket) if self.socket else None
        # trust_env=False: no HTTP(S)_PROXY/ALL_PROXY from the environment (the
        # bearer token must never go to a proxy, nor a proxy's answer be taken
        # for the server's), and no .netrc.
        self._http = httpx.Client(base_url=self.base_url, transport=transport, headers=self._headers(token),
                                 timeout=timeout, trust_env=False)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Airlock":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, path: str, **kw) -> Any:
        response = self._http.request(method, path, **kw)
        _raise_for(response)
        return _json(response)

    def health(self) -> Dict[str, Any]:
        return self._call("GET", "/healthz")

    def check(self, command: str, *, cwd: Optional[str] = None) -> CheckResult:
        return CheckResult.from_json(self._call("POST", "/v1/check", json=_run_body(command=command, cwd=cwd)))

    def check_code(self, code: str, language: str = "python") -> CheckResult:
        return CheckResult.from_json(self._call("POST", "/v1/check", json=_run_body(code=code, language=language)))

    def run(self, command: str, *, cwd: Optional[str] = None, timeout_s: Optional[float] = None,
            approval_id: Optional[str] = None, stdin: Optional[str] = None) -> RunResult:
        body = _run_body(command=command, cwd=cwd, timeout_s=timeout_s, approval_id=approval_id, stdin=stdin)
        return RunResult.from_json(self._call("POST", "/v1/run", json=body, timeout=self._run_timeout()))

    def run_argv(self, argv: List[str], *, cwd: Optional[str] = None, timeout_s: Optional[float] = None,
                 stdin: Optional[str] = None) -> RunResult:
        body = _run_body(argv=argv, cwd=cwd, timeout_s=timeout_s, stdin=stdin)
        return RunResult.from_json(self._call("POST", "/v1/run", json=body, timeout=self._run_timeout()))

    def run_code(self, code: str, language: str = "python", *, timeout_s: Optional[float] = None,
                 stdin: Optional[str] = None) -> RunResult:
        body = _run_body(code=code, language=language, timeout_s=timeout_s, stdin=stdin)
        return RunResult.from_json(self._call("POST", "/v1/run", json=body, timeout=self._run_timeout()))

    def stream(self, command: Optional[str] = None, *, code: Optional[str] = None, language: Optional[str] = None,
               cwd: Optional[str] = None, timeout_s: Optional[float] = None,
               stdin: Optional[str] = None) -> Iterator[StreamEvent]:
        """Yield ``stdout``/``stderr`` events as they happen, then one ``result``.
        A stream that ends without its ``result`` raises
        ``AirlockError("incomplete_stream")``: the outcome is unknown."""
        body = _run_body(command=command, code=code, language=language, cwd=cwd, timeout_s=timeout_s, stdin=stdin)
        with self._http.stream("POST", "/v1/run/stream", json=body, timeout=self._run_timeout()) as response:
            if response.status_code >= 400:
                response.read()
                _raise_for(response)
            got_result = False
            for line in response.iter_lines():
                ev = _event(line.encode() if isinstance(line, str) else line)
                if ev is not None:
                    got_result = got_result or ev.type == "result"
                    yield ev
            if not got_result:
                raise AirlockError("incomplete_stream", _INCOMPLETE, response.status_code)

    def get_run(self, request_id: str) -> RunResult:
        return RunResult.from_json(self._call("GET", f"/v1/runs/{request_id}"))

    def approvals(self, status: Optional[str] = None) -> List[Dict[str, Any]]:
        params = {"status": status} if status else None
        return self._call("GET", "/v1/approvals", params=params)["approvals"]

    def approval(self, approval_id: str) -> Dict[str, Any]:
        return self._call("GET", f"/v1/approvals/{approval_id}")

    def approve(self, approval_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        return self._call("POST", f"/v1/approvals/{approval_id}/approve", json={"note": note} if note else None)

    def deny(self, approval_id: str, note: Optional[str] = None) -> Dict[str, Any]:
        return self._call("POST", f"/v1/approvals/{approval_id}/deny", json={"note": note} if note else None)

    def grants(self) -> List[Dict[str, Any]]:
        return self._call("GET", "/v1/grants")["grants"]

    def create_grant(self, boundary: Dict[str, Any], for_prefix: str, ttl_s: int, uses: Optional[int] = None,
                     tenant: Optional[str] = None) -> Dict[str, Any]:
        """A grant loosens one tenant's requests under that tenant's policy:
        ``tenant`` is the agent token's name (default: this caller's own)."""
        body: Dict[str, Any] = {"boundary": boundary, "for": for_prefix, "ttl_s": ttl_s}
        if uses is not None:
            body["uses"] = uses
        if tenant is not None:
            body["tenant"] = tenant
        return self._call("POST", "/v1/grants", json=body)

    def revoke_grant(self, grant_id: str) -> Dict[str, Any]:
        return self._call("DELETE", f"/v1/grants/{grant_id}")

    def audit(self, **filters: Any) -> List[Dict[str, Any]]:
        """Filters: decision, since, command_prefix, kind, request_id, caller, limit."""
        params = {k: v for k, v in filters.items() if v is not None}
        return self._call("GET", "/v1/audit", params=params)["records"]


class AsyncAirlock(_Base):
    """The asynchronous twin of :class:`Airlock`."""

    def __init__(self, socket: Optional[str] = None, base_url: Optional[str] = None,
                 token: Optional[str] = None, timeout: float = 120.0):
        super().__init__(socket, base_url, token)
        transport = httpx.AsyncHTTPTransport(uds=self.socket) if self.socket else None
        # trust_env=False: no HTTP(S)_PROXY/ALL_PROXY from the environment (the
        # bearer token must never go to a proxy, nor a proxy's answer be taken
        # for the server's), and no .netrc.
        self._http = httpx.AsyncClient(base_url=self.base_url, transport=transport, headers=self._headers(token),
                                 timeout=timeout, trust_env=False)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncAirlock":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def _call(self, method: str, path: str, **kw) -> Any:
        response = await self._http.request(method, path, **kw)
        _raise_for(response)
        return _json(response)

    async def health(self) -> Dict[str, Any]:
        return await self._call("GET", "/healthz")

    async def check(self, command: str, *, cwd: Optional[str] = None) -> CheckResult:
        return CheckResult.from_json(await self._call("POST", "/v1/check", json=_run_body(command=command, cwd=cwd)))

    async def run(self, command: str, *, cwd: Optional[str] = None, timeout_s: Optional[float] = None,
                  approval_id: Optional[str] = None, stdin: Optional[str] = None) -> RunResult:
        body = _run_body(command=command, cwd=cwd, timeout_s=timeout_s, approval_id=approval_id, stdin=stdin)
        return RunResult.from_json(await self._call("POST", "/v1/run", json=body, timeout=self._run_timeout()))

    async def run_code(self, code: str, language: str = "python", *, timeout_s: Optional[float] = None,
                       stdin: Optional[str] = None) -> RunResult:
        body = _run_body(code=code, language=language, timeout_s=timeout_s, stdin=stdin)
        return RunResult.from_json(await self._call("POST", "/v1/run", json=body, timeout=self._run_timeout()))

    async def stream(self, command: Optional[str] = None, *, code: Optional[str] = None,
                     language: Optional[str] = None, cwd: Optional[str] = None,
                     timeout_s: Optional[float] = None, stdin: Optional[str] = None) -> AsyncIterator[StreamEvent]:
        body = _run_body(command=command, code=code, language=language, cwd=cwd, timeout_s=timeout_s, stdin=stdin)
        async with self._http.stream("POST", "/v1/run/stream", json=body, timeout=self._run_timeout()) as response:
            if response.status_code >= 400:
                await response.aread()
                _raise_for(response)
            got_result = False
            async for line in response.aiter_lines():
                ev = _event(line.encode())
                if ev is not None:
                    got_result = got_result or ev.type == "result"
                    yield ev
            if not got_result:
                raise AirlockError("incomplete_stream", _INCOMPLETE, response.status_code)

    async def get_run(self, request_id: str) -> RunResult:
        return RunResult.from_json(await self._call("GET", f"/v1/runs/{request_id}"))

    async def audit(self, **filters: Any) -> List[Dict[str, Any]]:
        params = {k: v for k, v in filters.items() if v is not None}
        return (await self._call("GET", "/v1/audit", params=params))["records"]
