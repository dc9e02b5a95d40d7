#!/usr/bin/env python3
"""Escape corpus runner (Python 3.11+ standard library only).

Runs every attack program listed in tests/escape/manifest.toml through
`airlock run --policy <test policy> --json -- <program>` in a fresh temporary
workspace, and judges containment by OBSERVED HOST STATE, not by exit codes:

  * a secret canary in the caller's environment (and in a host process's
    environ) never appears in any output;
  * canary files in the caller's $HOME (a fake home with ~/.ssh/id_rsa,
    ~/.aws/credentials, ...) and in /tmp outside the workspace are never seen in
    output, and are unchanged afterwards (sha256, size, mtime);
  * TCP/UDP listeners on 127.0.0.1 and ::1, a fake DNS server, a host abstract
    unix socket and a host path unix socket (also $SSH_AUTH_SOCK) receive
    nothing;
  * a host "sentinel" process survives, untraced and unstopped;
  * nothing is left after the run: no process carrying the session marker, no
    new mount in the host's mountinfo, no new airlock cgroup, nothing new in
    the state directory, no key, SysV IPC object, hostname, loopback address or
    file planted on the host;
  * the host copy of the workspace is unchanged (overlay mode);
  * the attack itself reports each attempt (BLOCKED/ESCAPED lines), and the
    manifest adds per-case expectations (killed_by, exit status, errno, ...).

`--backend-tier wasm` runs the same corpus on the WebAssembly backend
(`[sandbox] backend = "wasm"` in every generated policy); a case that cannot
run there is listed as not applicable, with its reason, in tiers/wasm.toml.

`--backend-tier oci|gvisor|docker|podman|microvm` does the same for those backends
(tiers/NAME.toml: cases not applicable, `[override.CASE]` judged differently,
`[targets]`, and `[runner]`: the microVM's boot allowance and VM process).
A per-case watchdog (the case's deadline plus the tier's boot allowance, or
--watchdog SECONDS) kills airlock's whole process group and fails the case,
so that one stuck run never hangs the corpus.

Run as an ordinary user (not root), the corpus checks airlock's rootless
mode (docs/sandbox.md, "Running unprivileged"). The generated policies then
say `[limits] enforcement = "best_effort"` when the user has no cgroup to
manage (a cgroup v1 host), since every case sets memory and cpus. The cases
listed in tiers/rootless.toml need a cgroup for what they assert (a memory
or pids kill reported as such): for each, the runner first checks that
`airlock run` refuses the case's policy as written (exit 125, naming
`limits.enforcement`), then runs it with best effort and judges containment
without the cgroup-only expectations (killed_by, peak memory).

`--via-server` sends every case through `airlock run --server` instead: per
case, a fresh `airlock serve --pool 1` on the case's policy and state
directory, one run that teaches the pool its spec, then the case, which must
take the warm sandbox (`airlock_pool_warm_runs`); the server is stopped before
the host is judged. A case whose client is killed mid-run must leave no
process of its program 3 s later, while the server still runs. Cases that
cannot go this way are listed as not applicable with the reason (host-side
drivers, a state directory inside the workspace).

`--backend none` runs the programs directly on the host (with only a safety
net of a pids/memory cgroup and a deadline, so that bombs cannot hurt the
machine): it exists to prove that the checks can fail. Most attacks must then
be reported as FAILED.

The last line printed is always `N passed, N failed`; the exit status is
non-zero if any case failed.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import hashlib
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import termios
import threading
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYENV_ROOT = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv"))
REPO = HERE.parent.parent
ATTACKS = HERE / "attacks"
PEERS = HERE / "peers"
LIB = HERE / "lib"

SIZE_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "k": 1000, "m": 1000**2}


def parse_size(text: str | int) -> int:
    if isinstance(text, int):
        return text
    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not m:
        raise ValueError(f"bad size {text!r}")
    return int(m.group(1)) * SIZE_UNITS[m.group(2).lower()]


def parse_duration(text: str | int | float) -> float:
    if isinstance(text, (int, float)):
        return float(text)
    m = re.fullmatch(r"\s*([\d.]+)\s*(ms|s|m)\s*", text)
    if not m:
        raise ValueError(f"bad duration {text!r}")
    return float(m.group(1)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(2)]


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------- listeners


class Listeners:
    """Loopback listeners on the host. Anything they receive is an escape."""

    def __init__(self, marker: str, unix_path: Path):
        self.events: list[str] = []
        self.lock = threading.Lock()
        self.socks: list[socket.socket] = []
        self.tcp4 = self._tcp(socket.AF_INET, "127.0.0.1")
        self.tcp6 = self._tcp(socket.AF_INET6, "::1")
        self.udp4 = self._udp(socket.AF_INET, "127.0.0.1", "udp4")
        self.udp6 = self._udp(socket.AF_INET6, "::1", "udp6")
        self.dns = self._udp(socket.AF_INET, "127.0.0.1", "dns")
        self.abstract = f"airlock-escape-{marker}"
        self._unix("\0" + self.abstract, "abstract-unix")
        self.unix_path = unix_path
        self._unix(str(unix_path), "path-unix")
        os.chmod(unix_path, 0o777)  # only the sandbox may stop a connect, not DAC

    def record(self, what: str) -> None:
        with self.lock:
            self.events.append(what)

    def mark(self) -> int:
        with self.lock:
            return len(self.events)

    def since(self, idx: int) -> list[str]:
        with self.lock:
            return self.events[idx:]

    def _thread(self, fn) -> None:
        threading.Thread(target=fn, daemon=True).start()

    def _tcp(self, fam, addr) -> int:
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, 0))
        s.listen(64)
        self.socks.append(s)
        name = f"tcp {addr}"

        def loop():
            while True:
                try:
                    c, peer = s.accept()
                except OSError:
                    return
                c.settimeout(0.5)
                try:
                    data = c.recv(200)
                except OSError:
                    data = b""
                c.close()
                self.record(f"{name}:{s.getsockname()[1]} accepted a connection from {peer}: {data[:80]!r}")

        self._thread(loop)
        return s.getsockname()[1]

    def _udp(self, fam, addr, label) -> int:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        s.bind((addr, 0))
        self.socks.append(s)

        def loop():
            while True:
                try:
                    data, peer = s.recvfrom(2048)
                except OSError:
                    return
                self.record(f"{label} {addr}:{s.getsockname()[1]} received a datagram from {peer}: {data[:80]!r}")

        self._thread(loop)
        return s.getsockname()[1]

    def _unix(self, addr, label) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(addr)
        s.listen(16)
        self.socks.append(s)

        def loop():
            while True:
                try:
                    c, _ = s.accept()
                except OSError:
                    return
                c.settimeout(0.5)
                try:
                    data = c.recv(200)
                except OSError:
                    data = b""
                c.close()
                self.record(f"{label} {addr!r} accepted a connection: {data[:80]!r}")

        self._thread(loop)

    def close(self) -> None:
        for s in self.socks:
            try:
                s.close()
            except OSError:
                pass


# --------------------------------------------------------------------- host state


def proc_cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def proc_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return line.split()[1]
    except OSError:
        pass
    return "gone"


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def vmm_processes(prefix: str) -> dict[int, str]:
    """Live processes whose name (comm) starts with `prefix`: a tier's VMM
    (tiers/NAME.toml [runner] vmm), where the program's processes run inside
    a guest kernel and never show up on the host under the session marker."""
    out = {}
    if not prefix:
        return out
    for pid in all_pids():
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm.startswith(prefix[:15]) and proc_state(pid) not in ("Z", "gone"):
            out[pid] = proc_cmdline(pid)[:160]
    return out


def marker_processes(marker: str, exclude: set[int]) -> dict[int, str]:
    """Processes of this session: the marker (in every workspace path) or the
    session's numeric key (which attacks that exec away from their script put in
    their arguments) appears in their command line."""
    key = str(int(marker[:7], 16))
    out = {}
    for pid in all_pids():
        if pid in exclude:
            continue
        cmd = proc_cmdline(pid)
        if (marker in cmd or key in cmd) and proc_state(pid) not in ("Z", "gone"):
            out[pid] = cmd[:160]
    return out


def airlock_mounts(marker: str) -> set[str]:
    out = set()
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                # drop the mount id and parent id, which are unique per mount
                rest = line.split(" ", 2)[2].strip()
                if marker in rest or "airlock" in rest:
                    out.add(rest)
    except OSError:
        pass
    return out


# /run/<base>/<request id>: where the tiers that stage a run's files on the host
# put them.
STAGE_BASES = {"oci": "airlock-oci", "gvisor": "airlock-oci", "docker": "airlock-docker",
               "podman": "airlock-docker", "microvm": "airlock-microvm"}


def others_mount(line: str, own_base: str | None) -> bool:
    """Whether a mount (a mountinfo line without its two ids) was made by something
    running beside this corpus (scripts/test's lanes): a stage under another tier's
    base (no two lanes run tiers of one base at once, so every stage under this
    tier's own base counts, a peer case's too) or a test's private tree (dockerd's
    and podman's roots live in directories named airlock-test-*)."""
    point = line.split(" ")[2]
    if "/airlock-test-" in point:
        return True
    parts = point.split("/")
    return (len(parts) > 3 and parts[1] == "run" and parts[2] in STAGE_BASES.values()
            and parts[2] != own_base)


def airlock_cgroups() -> set[str]:
    out = set()
    base = Path("/sys/fs/cgroup")
    if not base.is_dir():
        return out
    for ctrl in base.iterdir():
        stack = [(ctrl, 0)]
        while stack:
            d, depth = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if "airlock" in e.name and "escape-corpus-safety" not in e.name:
                        out.add(e.path)
                    if depth < 3:
                        stack.append((Path(e.path), depth + 1))
    return out


def occupied_free_slots() -> dict[str, tuple[list[str], list[str]]]:
    """cgroup v1 slots (airlock/slot-<n>, reused from run to run) that no run
    holds (their lock file is free) but that still have members, or groups
    below them (an OCI runtime's): a run's teardown must leave its slot an
    empty leaf. Slot name -> (member pids, groups below it)."""
    out = {}
    parent = Path("/sys/fs/cgroup/pids/airlock")
    try:
        names = [n for n in os.listdir(parent) if n.startswith("slot-")]
    except OSError:
        return out
    for name in names:
        try:
            lock = os.open(f"/run/airlock/cgroup-slots/{name}.lock", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a run holds it
            procs, nested = [], []
            for d, _dirs, _files in os.walk(parent / name):
                if Path(d) != parent / name:
                    nested.append(os.path.basename(d))
                try:
                    procs += (Path(d) / "cgroup.procs").read_text().split()
                except OSError:
                    pass
            if procs or nested:
                out[name] = (procs, nested)
        finally:
            os.close(lock)
    return out


def tree_listing(root: Path, with_hash: bool = True) -> dict[str, tuple]:
    """path -> (kind, size, sha256 or link target, mtime_ns) for everything under root."""
    out: dict[str, tuple] = {}
    if not root.exists():
        return out
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            try:
                st = p.lstat()
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                out[str(p)] = ("symlink", 0, os.readlink(p), st.st_mtime_ns)
            elif stat.S_ISDIR(st.st_mode):
                out[str(p)] = ("dir", 0, "", 0)
            elif stat.S_ISREG(st.st_mode):
                h = sha256_file(p) if with_hash and st.st_size <= (8 << 20) else f"size:{st.st_size}"
                out[str(p)] = ("file", st.st_size, h, st.st_mtime_ns)
            else:
                out[str(p)] = ("other", 0, "", st.st_mtime_ns)
    return out


def diff_trees(before: dict, after: dict, label: str, limit: int = 8) -> list[str]:
    problems = []
    for p in sorted(set(before) | set(after)):
        if p not in after:
            problems.append(f"{label}: {p} was deleted")
        elif p not in before:
            problems.append(f"{label}: {p} was created ({after[p][0]})")
        elif before[p] != after[p]:
            problems.append(f"{label}: {p} was modified ({before[p][0]}: {before[p][1]}->{after[p][1]} bytes)")
    if len(problems) > limit:
        problems = problems[:limit] + [f"{label}: ... and {len(problems) - limit} more"]
    return problems


def keys_with(marker: str) -> list[str]:
    try:
        with open("/proc/keys") as f:
            return [line.strip() for line in f if marker in line]
    except OSError:
        return []


def sysv_objects(key: int) -> list[str]:
    out = []
    for kind in ("shm", "sem", "msg"):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols and int(cols[0]) == key:
                        out.append(f"{kind} key={key} id={cols[1]}")
        except (OSError, StopIteration, ValueError):
            pass
    return out


LO_MARK_ADDR = "127.77.7.7"


def lo_marked() -> bool:
    try:
        r = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True, timeout=5)
        return LO_MARK_ADDR + "/" in r.stdout
    except (OSError, subprocess.TimeoutExpired):
        return False


PWNED_DIRS = ["/", "/tmp", "/root", "/etc", "/usr/bin", "/usr/local/bin", "/var/tmp", "/dev/shm", "/run"]


def pwned_files(extra_dirs: list[Path], recursive_dirs: list[Path]) -> list[str]:
    found = []
    for d in PWNED_DIRS + [str(x) for x in extra_dirs]:
        try:
            for name in os.listdir(d):
                if name.startswith("airlock-escape-pwned"):
                    found.append(os.path.join(d, name))
        except OSError:
            pass
    for root in recursive_dirs:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                if name.startswith("airlock-escape-pwned"):
                    found.append(os.path.join(dirpath, name))
    return found


def file_handle_of(path: Path) -> tuple[int, str]:
    """(handle_type, hex bytes) from name_to_handle_at: what open_by_handle_at needs."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(8 + 128)
    ctypes.c_uint.from_buffer(buf, 0).value = 128
    mount_id = ctypes.c_int()
    AT_FDCWD = -100
    if libc.name_to_handle_at(AT_FDCWD, str(path).encode(), buf, ctypes.byref(mount_id), 0) != 0:
        return (0, "")
    nbytes = ctypes.c_uint.from_buffer(buf, 0).value
    htype = ctypes.c_int.from_buffer(buf, 4).value
    return (htype, buf.raw[8 : 8 + nbytes].hex())


# --------------------------------------------------------------------- results


@dataclass
class RunResult:
    outcome: dict | None = None
    raw_stdout: bytes = b""
    raw_stderr: bytes = b""
    stdout_total: int = 0
    wall: float = 0.0
    exit_status: int | None = None
    runner_killed: str | None = None
    tty_echo: bytes = b""
    running_at_kill: int = 0
    peer_outcome: dict | None = None
    notes: list[str] = field(default_factory=list)
    # --via-server: the run did not take the server's warm sandbox, or went on
    # after its client was killed (the notes say which)
    via_server_failed: bool = False


class CaseServer:
    """One case's `airlock serve` (--via-server), asked over its unix socket."""

    def __init__(self, proc: subprocess.Popen, socket_path: Path, log_path: Path):
        self.proc, self.socket, self.log_path = proc, socket_path, log_path

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def metric(self, name: str) -> int:
        """A /metrics value, or -1 when the server does not answer."""
        import socket as sk
        try:
            with sk.socket(sk.AF_UNIX, sk.SOCK_STREAM) as c:
                c.settimeout(5)
                c.connect(str(self.socket))
                c.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while chunk := c.recv(65536):
                    data += chunk
        except OSError:
            return -1
        for line in data.decode("utf-8", "replace").splitlines():
            if line.startswith(name + " "):
                return int(float(line.split()[1]))
        return -1


@dataclass
class Case:
    name: str
    file: str
    category: str
    expect: str
    what: str
    spec: dict

    @property
    def kind(self) -> str:
        return Path(self.file).suffix.lstrip(".")


# --------------------------------------------------------------------- session


class Session:
    def __init__(self, args):
        self.args = args
        self.backend = args.backend
        self.case_server: CaseServer | None = None
        self.marker = secrets.token_hex(5)
        self.root = Path(f"/var/tmp/airlock-escape.{self.marker}")
        self.root.mkdir(mode=0o755)
        self.home = self.root / "home"
        self.state_dir = self.root / "state"
        self.state_dir.mkdir(mode=0o700)
        # what a command planted in git metadata writes when host git runs it
        self.git_canary = self.root / "git-canary"
        self.defaults: dict = {}
        # tiers/NAME.toml [runner]: what the tier changes in how cases are timed
        # and torn down (boot_allowance, vmm); empty for the native tier.
        self.tier_runner: dict = {}
        self.build = self.root / "build"
        self.build.mkdir()
        self.tmp_canary_dir = Path(f"/tmp/airlock-escape-canary.{self.marker}")
        self.secret = "ALSECRET" + secrets.token_hex(16)
        self.ipc_key = int(self.marker[:7], 16)
        self.canaries: dict[str, Path] = {}
        self.canary_tokens: list[str] = []
        self.hostname = socket.gethostname()
        self.airlock = None
        self.companions: list[Path] = []
        if args.airlock:
            # a private copy: other people rebuilding target/ must not swap the binary
            # under a run, and the hash check below then means "changed by an attack"
            self.airlock = self.root / "airlock-under-test"
            shutil.copy2(Path(args.airlock).resolve(), self.airlock)
            # the wasm backend's helper and the server (`airlock mcp`, `airlock
            # serve`: airlock-serve) are looked for next to the binary
            for name in ("airlock-wasm", "airlock-serve"):
                built = Path(args.airlock).resolve().with_name(name)
                if built.exists():
                    shutil.copy2(built, self.root / name)
                    self.companions.append(self.root / name)
        self._plant_canaries()
        self.listeners = Listeners(self.marker, Path(f"/tmp/airlock-escape-sock.{self.marker}"))
        self.env = self._caller_env()
        if getattr(args, "return_path_off", False):
            # debug builds only: the change-set policy, mode normalisation and the
            # hole-keeping copy are switched off, to show the return-path cases fail
            self.env["AIRLOCK_TEST_RETURN_PATH_OFF"] = "1"
        if getattr(args, "prefork_scrub_off", False):
            # debug builds only: a helper forked in advance keeps the caller's
            # argv and environment strings, to show sec_proc_cmdline failing
            self.env["AIRLOCK_TEST_PREFORK_SCRUB_OFF"] = "1"
        if getattr(args, "cgroup_attach_late", False):
            # debug builds only: init may fork the command before the helper
            # has moved it into its cgroup (v1), to show that case failing
            self.env["AIRLOCK_TEST_CGROUP_ATTACH_LATE"] = "1"
        self.sentinel = self._start_sentinel()
        self.leak_fd = os.open(self.home, os.O_RDONLY | os.O_DIRECTORY)
        self.cgroup_safety: list[Path] = []
        if self.backend == "none":
            self._make_safety_cgroups()
        self.airlock_sig = self._binary_sig(with_hash=True)
        self.handle_type, self.handle_hex = file_handle_of(self.canaries["CANARY_HOME"])

    # ---- setup
    def _plant_canaries(self) -> None:
        files = {
            "CANARY_HOME": "canary.txt",
            "CANARY_SSH": ".ssh/id_rsa",
            "CANARY_AWS": ".aws/credentials",
            "CANARY_GCLOUD": ".config/gcloud/application_default_credentials.json",
            "CANARY_NETRC": ".netrc",
            "CANARY_DOCKER": ".docker/config.json",
            "CANARY_KUBE": ".kube/config",
            "CANARY_GITCRED": ".git-credentials",
            "CANARY_HISTORY": ".bash_history",
        }
        for key, rel in files.items():
            p = self.home / rel
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            token = f"CANARY{key[7:]}{secrets.token_hex(12)}"
            p.write_text(f"{token}\n")
            # world-readable and writable on purpose: DAC must not be what stops a
            # read or a write, the sandbox must.
            os.chmod(p, 0o666)
            self.canaries[key] = p
            self.canary_tokens.append(token)
        for d in [self.home] + [p for p in self.home.rglob("*") if p.is_dir()]:
            os.chmod(d, 0o777)
        self.tmp_canary_dir.mkdir(mode=0o777)
        os.chmod(self.tmp_canary_dir, 0o777)
        p = self.tmp_canary_dir / "secret.txt"
        token = f"CANARYTMP{secrets.token_hex(12)}"
        p.write_text(f"{token}\n")
        os.chmod(p, 0o666)
        self.canaries["CANARY_TMP"] = p
        self.canary_tokens.append(token)
        self.canary_original = {k: p.read_bytes() for k, p in self.canaries.items()}

    def _caller_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                "HOME": str(self.home),
                "AIRLOCK_ESCAPE_SECRET": self.secret,
                "AWS_SECRET_ACCESS_KEY": self.secret,
                "GITHUB_TOKEN": self.secret,
                "OPENAI_API_KEY": self.secret,
                "SSH_AUTH_SOCK": str(self.listeners.unix_path),
                "AIRLOCK_STATE_DIR": str(self.state_dir),
                # the shims of pyenv find their root from $HOME otherwise
                "PYENV_ROOT": str(PYENV_ROOT),
            }
        )
        env.pop("AIRLOCK_POLICY", None)
        # precompiled wasm modules outlive the session (compiling CPython takes a while)
        env["AIRLOCK_WASM_CACHE"] = os.environ.get("AIRLOCK_WASM_CACHE", str(REPO / "target/wasm-cache"))
        return env

    def _start_sentinel(self) -> subprocess.Popen:
        return subprocess.Popen(
            [f"airlock-escape-sentinel-{self.marker}", "100000"],
            executable="/bin/sleep",
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def _make_safety_cgroups(self) -> None:
        # --backend none runs attacks on the bare host: these cgroups are the
        # safety net that keeps bombs from hurting the machine (and other users
        # of it), and the freezer lets cleanup stop a fork bomb before killing it.
        wanted = (
            ("pids", {"pids.max": "128"}),
            ("memory", {"memory.limit_in_bytes": str(1 << 30)}),
            ("cpu", {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}),
            ("freezer", {}),
        )
        for ctrl, files in wanted:
            d = Path(f"/sys/fs/cgroup/{ctrl}/escape-corpus-safety-{self.marker}")
            try:
                d.mkdir()
                for k, v in files.items():
                    (d / k).write_text(v)
                self.cgroup_safety.append(d)
            except OSError as e:
                raise SystemExit(f"--backend none needs a {ctrl} safety cgroup: {e}")

    def kill_safety_cgroup(self) -> None:
        """Freeze the safety cgroup, SIGKILL every member, thaw: nothing forks in between."""
        fr = next((d for d in self.cgroup_safety if "/freezer/" in str(d)), None)
        if fr is None:
            return
        for _ in range(100):
            procs = [int(x) for x in (fr / "cgroup.procs").read_text().split()]
            if not procs:
                return
            (fr / "freezer.state").write_text("FROZEN")
            t = time.monotonic()
            while (fr / "freezer.state").read_text().strip() != "FROZEN" and time.monotonic() - t < 2:
                time.sleep(0.01)
            for pid in [int(x) for x in (fr / "cgroup.procs").read_text().split()]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            (fr / "freezer.state").write_text("THAWED")
            time.sleep(0.05)

    def _binary_sig(self, with_hash: bool) -> tuple:
        if not self.airlock or not self.airlock.exists():
            return ()
        sig = []
        for binary in [self.airlock, *self.companions]:
            st = binary.stat()
            sig.append((binary.name, st.st_size, st.st_mtime_ns, sha256_file(binary) if with_hash else ""))
        return tuple(sig)

    def targets(self, ws: Path) -> str:
        t = {
            "MARKER": self.marker,
            "WS": str(ws),
            "HOST_MODE": "1" if self.backend == "none" else "0",
            # the runner's uid: non-zero in rootless mode, where root inside is the caller
            "CALLER_UID": os.getuid(),
            "TCP_PORT": self.listeners.tcp4,
            "TCP6_PORT": self.listeners.tcp6,
            "UDP_PORT": self.listeners.udp4,
            "UDP6_PORT": self.listeners.udp6,
            "DNS_PORT": self.listeners.dns,
            "ABSTRACT_NAME": self.listeners.abstract,
            "UNIX_PATH": self.listeners.unix_path,
            "SENTINEL_PID": self.sentinel.pid,
            "RUNNER_PID": os.getpid(),
            "FAKE_HOME": self.home,
            "TMP_CANARY_DIR": self.tmp_canary_dir,
            "PWNED": f"airlock-escape-pwned-{self.marker}",
            "IPC_KEY": self.ipc_key,
            "LO_MARK_ADDR": LO_MARK_ADDR,
            "HANDLE_TYPE": self.handle_type,
            "HANDLE_HEX": self.handle_hex,
            "AIRLOCK_BIN": self.airlock or "",
            "STATE_DIR": self.state_dir,
            "ROOT_DEV_MAJOR": os.major(os.stat("/").st_dev),
            "ROOT_DEV_MINOR": os.minor(os.stat("/").st_dev),
            "GIT_CANARY": self.git_canary,
        }
        for k, p in self.canaries.items():
            t[k] = p
        # The tier's own facts (tiers/NAME.toml [targets]), e.g. DENY_ERRNO.
        t.update(getattr(self, "tier_targets", {}))
        return "".join(f"{k}={v}\n" for k, v in t.items())

    # ---- build
    def compile_c(self, cases: list[Case]) -> dict[str, str]:
        errors = {}
        for c in cases:
            if c.kind != "c":
                continue
            out = self.build / Path(c.file).stem
            r = subprocess.run(
                ["gcc", "-O1", "-pthread", "-I", str(LIB), "-o", str(out), str(ATTACKS / c.file)],
                capture_output=True,
                text=True,
            )
            if r.returncode != 0:
                errors[c.name] = r.stderr[-2000:]
        return errors

    # ---- snapshots
    def snapshot(self, ws: Path) -> dict:
        return {
            "home": tree_listing(self.home),
            "tmpcanary": tree_listing(self.tmp_canary_dir),
            "ws": tree_listing(ws),
            "mounts": airlock_mounts(self.marker),
            "cgroups": airlock_cgroups(),
            "state": tree_listing(self.state_dir, with_hash=False),
            "runtime": self._runtime_entries(),
            "listen": self.listeners.mark(),
            "airlock": self._binary_sig(with_hash=False),
            "vmm": set(vmm_processes(self.tier_runner.get("vmm", ""))),
        }

    def _runtime_entries(self) -> set[str]:
        out = set()
        for d in ("/run", "/tmp", "/var/tmp", "/dev/shm"):
            try:
                for name in os.listdir(d):
                    # other helpers' test and bench artifacts share these dirs;
                    # the OCI, Docker-API and microVM backends' stage bases stay
                    # once made, and the parts that run those backends beside this
                    # corpus (scripts/test's lanes) check that they are left empty
                    if d == "/run" and name in STAGE_BASES.values():
                        continue
                    if "airlock" in name and "airlock-escape" not in name and not re.search(r"test|bench", name):
                        out.add(os.path.join(d, name))
            except OSError:
                pass
        return out

    def close(self) -> None:
        if self.case_server is not None:
            # a case that failed before its server was stopped (--via-server)
            try:
                os.killpg(self.case_server.proc.pid, signal.SIGKILL)
                self.case_server.proc.wait()
            except OSError:
                pass
            self.case_server = None
        try:
            self.sentinel.kill()
            self.sentinel.wait()
        except OSError:
            pass
        self.listeners.close()
        os.close(self.leak_fd)
        self.kill_safety_cgroup()
        for d in self.cgroup_safety:
            try:
                d.rmdir()
            except OSError:
                pass
        if not self.args.keep:
            shutil.rmtree(self.root, ignore_errors=True)
            shutil.rmtree(self.tmp_canary_dir, ignore_errors=True)
            try:
                self.listeners.unix_path.unlink()
            except OSError:
                pass

    # ---- per-case
    def prepare_ws(self, case: Case) -> Path:
        ws = self.root / f"ws-{case.name}"
        ws.mkdir(mode=0o755)
        src = ATTACKS / case.file
        if case.kind == "c":
            shutil.copy2(self.build / Path(case.file).stem, ws / Path(case.file).stem)
        else:
            shutil.copy2(src, ws / src.name)
        for lib in ("escape_lib.py", "escape_lib.sh") + (("mcp_driver.py",) if case.spec.get("driver") else ()):
            shutil.copy2(LIB / lib, ws / lib)
        # The case's own targets (manifest `targets`) after the session's.
        own = "".join(f"{k}={v}\n" for k, v in case.spec.get("targets", {}).items())
        (ws / "targets.env").write_text(self.targets(ws) + own)
        (ws / "readme.txt").write_text(f"workspace-token-{self.marker}\n")
        setup = case.spec.get("setup", "")
        if setup == "links_to_tmp_canary":
            os.symlink(self.canaries["CANARY_TMP"], ws / "linkfile")
            os.symlink(self.tmp_canary_dir, ws / "linkdir")
        elif setup == "victim_dirs":
            # same file names as the host canaries, so that a delete that follows a
            # symlink lands on them
            for d, name in (("victimdir", "secret.txt"), ("victimdir2", "canary.txt")):
                (ws / d).mkdir()
                (ws / d / name).write_text("workspace copy\n")
        elif setup == "git_repo":
            (ws / ".git/hooks").mkdir(parents=True)
            (ws / ".git/config").write_text("[core]\n\trepositoryformatversion = 0\n")
            (ws / ".git/hooks/pre-commit.sample").write_text("#!/bin/sh\nexit 0\n")
            (ws / ".git/HEAD").write_text("ref: refs/heads/main\n")
        elif setup == "git_init":
            # a real repository made by host git, as a user's checkout would be
            subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True, env=self.git_env())
        elif setup == "git_commit":
            # the same with history: two commits touching src/main.py
            subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True, env=self.git_env())
            (ws / "src").mkdir()
            for i, text in enumerate(("print(1)\n", "print(2)\n")):
                (ws / "src/main.py").write_text(text)
                for cmd in (["add", "-A"], ["commit", "-q", "-m", f"commit {i}"]):
                    subprocess.run(["git", "-C", str(ws)] + cmd, check=True, env=self.git_env(),
                                   capture_output=True)
        elif setup == "git_config_names":
            # a checkout whose own config runs work-tree files: hooks from
            # .hooks/ (core.hooksPath) and a clean filter's script for *.dat
            git = lambda *a: subprocess.run(["git", "-C", str(ws)] + list(a), check=True,
                                            env=self.git_env(), capture_output=True)
            subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True, env=self.git_env())
            git("config", "core.hooksPath", ".hooks")
            git("config", "filter.strip.clean", "./scripts/clean.sh")
            git("config", "filter.strip.smudge", "cat")
            (ws / ".hooks").mkdir()
            (ws / "scripts").mkdir()
            (ws / "scripts/clean.sh").write_text("#!/bin/sh\ncat\n")
            os.chmod(ws / "scripts/clean.sh", 0o755)
            (ws / ".gitattributes").write_text("*.dat filter=strip\n")
            (ws / "x.dat").write_text("one\n")
            git("add", "-A")
            git("commit", "-q", "-m", "setup")
        elif setup == "envrc_names":
            # a checkout whose .envrc (allowed by the user's direnv) puts bin/
            # on PATH and loads .env: the user's shell, entering it, runs
            # whatever bin/ holds before /usr/bin
            subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True, env=self.git_env())
            (ws / ".envrc").write_text("PATH_add bin\ndotenv_if_exists\n")
            # a service directory of its own, whose .envrc direnv loads there
            (ws / "svc").mkdir()
            (ws / "svc/.envrc").write_text("layout node\nPATH_add bin\n")
            (ws / "README.md").write_text("project\n")
            for cmd in (["add", "-A"], ["commit", "-q", "-m", "setup"]):
                subprocess.run(["git", "-C", str(ws)] + cmd, check=True, env=self.git_env(),
                               capture_output=True)
        elif setup == "envrc_unresolved":
            # a checkout whose .envrc (allowed) puts a directory on PATH through
            # a command substitution, as monorepos do: the gate cannot tell
            # which directory, so it cannot name the paths it must hold
            subprocess.run(["git", "init", "-q", "-b", "main", str(ws)], check=True, env=self.git_env())
            (ws / ".envrc").write_text('PATH_add "$(git rev-parse --show-toplevel)/tools"\n')
            (ws / "README.md").write_text("project\n")
            for cmd in (["add", "-A"], ["commit", "-q", "-m", "setup"]):
                subprocess.run(["git", "-C", str(ws)] + cmd, check=True, env=self.git_env(),
                               capture_output=True)
        elif setup == "nested_repo":
            # a repository vendored inside the workspace, with a commit of its own
            lib = ws / "vendor" / "lib"
            lib.mkdir(parents=True)
            subprocess.run(["git", "init", "-q", "-b", "main", str(lib)], check=True, env=self.git_env())
            (lib / "lib.py").write_text("x = 1\n")
            for cmd in (["add", "-A"], ["commit", "-q", "-m", "lib"]):
                subprocess.run(["git", "-C", str(lib)] + cmd, check=True, env=self.git_env(),
                               capture_output=True)
        elif setup == "pyenv_version_abs":
            # a workspace .python-version naming a host dir laid out like a Python
            # install (pyenv's shims on the caller's PATH are followed to it)
            victim = self._plant_victim(ws, case)
            (ws / ".python-version").write_text(f"{victim}/.local\n")
        elif setup == "venv_home_outside":
            # workspace venvs whose pyvenv.cfg `home` names host dirs: one that does
            # not exist, one whose python3 is a link to the system's
            victim = self._plant_victim(ws, case)
            for venv, home in ((".venv", victim / "nonexistent"), ("venv2", victim / ".local/bin")):
                (ws / venv / "bin").mkdir(parents=True)
                (ws / venv / "pyvenv.cfg").write_text(f"home = {home}\ninclude-system-site-packages = false\n")
        elif setup == "cargo_credentials":
            # cargo's home in the caller's $HOME, with `cargo login`'s token files
            cargo = self.home / ".cargo"
            (cargo / "bin").mkdir(parents=True, exist_ok=True)
            (cargo / "config.toml").write_text("[net]\nretry = 2\n")
            for name in ("credentials.toml", "credentials"):
                token = f"CANARYCARGO{secrets.token_hex(12)}"
                (cargo / name).write_text(f'[registry]\ntoken = "{token}"\n')
                os.chmod(cargo / name, 0o644)
                self.canary_tokens.append(token)
        elif setup:
            raise ValueError(f"unknown setup {setup!r}")
        if case.spec.get("policy_in_workspace"):
            # the active policy file lies in the workspace (airlock.toml next to the code)
            (ws / "airlock.toml").write_text(self.policy_text(case, ws, self.defaults))
        for p in [ws] + list(ws.rglob("*")):
            if not p.is_symlink():
                os.chmod(p, 0o755 if p.is_dir() or os.access(p, os.X_OK) else 0o644)
        if case.spec.get("driver"):
            # a host-side driver lays out its workspace itself, before the host
            # state is recorded (git repositories, hidden files, FIFOs, ...)
            r = subprocess.run([sys.executable, str(ws / src.name), "--setup"], cwd=ws, env=self.env,
                               capture_output=True, timeout=60)
            if r.returncode != 0:
                raise RuntimeError(f"driver setup failed: {r.stderr.decode('utf-8', 'replace')[-400:]}")
        return ws

    def _plant_victim(self, ws: Path, case: Case) -> Path:
        """A host dir outside the workspace holding a secret, in a 0700 parent:
        a ~/.local whose bin/python3 links to the system's and lib/python3.11 exists,
        and a secret beside it. Its path is told to the attack as VICTIM_DIR."""
        parent = self.root / f"victim-{case.name}"
        victim = parent / "user"
        for d in (".local/bin", ".local/lib/python3.11", ".local/share/secrets"):
            (victim / d).mkdir(parents=True, mode=0o755)
        os.symlink(shutil.which("python3", path="/usr/bin:/bin") or "/usr/bin/python3",
                   victim / ".local/bin/python3")
        for rel in (".local/share/secrets/token", "secret.txt"):
            token = f"CANARYVICTIM{secrets.token_hex(12)}"
            (victim / rel).write_text(f"{token}\n")
            os.chmod(victim / rel, 0o644)
            self.canary_tokens.append(token)
        for d in [victim] + [p for p in victim.rglob("*") if p.is_dir()]:
            os.chmod(d, 0o755)
        os.chmod(parent, 0o700)
        with open(ws / "targets.env", "a") as f:
            f.write(f"VICTIM_DIR={victim}\n")
        return victim

    def _start_peer(self, case: Case, defaults: dict):
        """A second sandbox, started first, whose token the attack must not reach."""
        pws = self.root / f"ws-{case.name}-peer"
        pws.mkdir(mode=0o755)
        src = PEERS / case.spec["peer"]
        shutil.copy2(src, pws / src.name)
        shutil.copy2(LIB / "escape_lib.py", pws / "escape_lib.py")
        self.peer_token = f"PEERTOKEN{secrets.token_hex(12)}"
        (pws / "targets.env").write_text(self.targets(pws) + f"PEER_TOKEN={self.peer_token}\nPEER_WAIT=4\n")
        for p in pws.iterdir():
            os.chmod(p, 0o644)
        peer_case = Case(case.name + "-peer", src.name, "control", "works", "", {})
        policy = self.root / f"policy-{case.name}-peer.toml"
        policy.write_text(self.policy_text(peer_case, pws, defaults))
        cmd = [str(self.airlock), "run", "--policy", str(policy), "--cwd", str(pws), "--json", "--",
               "python3", str(pws / src.name)]
        return subprocess.Popen(cmd, cwd=pws, env=self.env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE), pws

    def policy_text(self, case: Case, ws: Path, defaults: dict) -> str:
        limits = dict(defaults.get("limits", {}))
        limits.update(case.spec.get("limits", {}))
        allow = ["sh", "bash", "python3"]
        if case.kind == "c":
            allow.append(Path(case.file).stem)
        lines = [
            "# generated by tests/escape/run.py for one escape-corpus case",
            "[workspace]",
            f'root = "{ws}"',
            f'mode = "{case.spec.get("mode", "overlay")}"',
        ]
        if case.spec.get("apply"):
            lines.append('apply = "auto"')
        # --network allowlist (netproxy, issue 6): the same attacks with an egress proxy in front.
        if getattr(self.args, "network", "none") == "allowlist":
            lines += ["", "[network]", 'mode = "allowlist"', 'allow = ["pypi.test"]', "", "[commands]"]
        else:
            lines += ["", "[network]", 'mode = "none"', "", "[commands]"]
        lines.append("allow = [" + ", ".join(json.dumps(a) for a in allow) + "]")
        lines += ['on_unknown = "deny"', "", "[limits]"]
        tier = getattr(self.args, "backend_tier", "native")
        for k, v in limits.items():
            lines.append(f"{k} = {json.dumps(v)}")
        if ROOTLESS_BEST_EFFORT and not case.spec.get("_strict_limits") and "enforcement" not in limits:
            lines.append('enforcement = "best_effort"')
        lines += ["", "[env]", 'pass = ["LANG", "TERM"]', ""]
        if case.spec.get("toolchains"):
            lines += ["[toolchains]", "use = " + json.dumps(case.spec["toolchains"]), ""]
        if case.spec.get("state_write_path"):
            # a policy whose filesystem.write holds the state dir (its parent;
            # one naming the state dir itself, or a path inside it, is refused)
            lines += ["[filesystem]", f'write = ["{ws}/.local/state"]', ""]
        if tier != "native":
            lines += ["[sandbox]", f'backend = "{tier_backend(tier)}"', ""]
        return "\n".join(lines)

    def argv(self, case: Case, ws: Path) -> list[str]:
        if case.kind == "py":
            return ["python3", str(ws / Path(case.file).name)]
        if case.kind == "sh":
            return [case.spec.get("shell", "sh"), str(ws / Path(case.file).name)]
        return [str(ws / Path(case.file).stem)]

    def _start_server(self, case: Case, ws: Path, policy: Path, env: dict) -> "CaseServer":
        """`airlock serve --pool 1` on the case's policy, its one warm sandbox
        built before the case's run is sent (--via-server)."""
        sock = self.root / f"serve-{case.name}.sock"
        log = open(self.root / f"serve-{case.name}.log", "wb")
        proc = subprocess.Popen([str(self.airlock), "serve", "--socket", str(sock), "--policy", str(policy),
                                 "--pool", "1"], cwd=ws, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        log.close()
        server = CaseServer(proc, sock, self.root / f"serve-{case.name}.log")
        self.case_server = server
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None and not sock.exists():
            time.sleep(0.02)
        # The pool learns its spec from a first run (built cold): one that does nothing.
        subprocess.run([str(self.airlock), "run", f"--server={sock}", "--cwd", str(ws), "--", "python3", "-c", "pass"],
                       cwd=ws, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        while time.monotonic() < deadline and proc.poll() is None:
            if server.metric("airlock_pool_ready") >= 1:
                return server
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        self.case_server = None
        raise RuntimeError(f"airlock serve for {case.name} never had a warm sandbox ready: {server.log()}")

    def _program_processes(self, procs: dict[int, str]) -> dict[int, str]:
        """Leave out the case's server and its warm sandboxes' helpers, whose
        command lines name the session's copy of airlock."""
        ours = str(Path(self.airlock).parent)
        return {p: c for p, c in procs.items() if not c.startswith(ours + "/airlock")}

    def _stop_server(self, res: "RunResult") -> None:
        """Stop the case's server before the host is judged; its run must have
        taken the warm sandbox."""
        server, self.case_server = self.case_server, None
        if server is None:
            return
        if res.running_at_kill:
            # The client was killed mid-run: the server must kill the run too,
            # while it goes on serving (stopping it would kill it anyway).
            deadline = time.monotonic() + 3
            left = {}
            while time.monotonic() < deadline:
                left = self._program_processes(
                    marker_processes(self.marker, {os.getpid(), self.sentinel.pid, server.proc.pid}))
                if not left:
                    break
                time.sleep(0.05)
            if left:
                res.notes.append(f"VIA-SERVER: 3 s after its client was killed, the run still had "
                                 f"{len(left)} process(es): {sorted(left.values())[:3]}")
                res.via_server_failed = True
        warm = server.metric("airlock_pool_warm_runs")
        if warm != 1 and res.runner_killed is None:
            res.notes.append(f"VIA-SERVER: the run took {warm} warm sandbox(es), not 1: {server.log()[-400:]}")
            res.via_server_failed = True
        server.proc.send_signal(signal.SIGTERM)
        try:
            server.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait()
            res.notes.append("VIA-SERVER: airlock serve did not stop within 30 s of SIGTERM; killed")
        if server.proc.returncode not in (0, None):
            res.notes.append(f"VIA-SERVER: airlock serve exited {server.proc.returncode}: {server.log()[-400:]}")

    def execute(self, case: Case, ws: Path, defaults: dict, before: dict) -> RunResult:
        res = RunResult()
        argv = self.argv(case, ws)
        limits = dict(defaults.get("limits", {}))
        limits.update(case.spec.get("limits", {}))
        driver = bool(case.spec.get("driver"))
        if driver and self.backend == "airlock":
            # a host-side driver: it starts airlock (mcp, approvals) itself
            cmd = [sys.executable, str(ws / Path(case.file).name)]
        elif self.backend == "airlock":
            policy = self.root / f"policy-{case.name}.toml"
            if case.spec.get("policy_in_workspace"):
                policy = ws / "airlock.toml"
            else:
                policy.write_text(self.policy_text(case, ws, defaults))
            json_flag = ["--json"] if case.spec.get("json", True) else []
            cmd = [str(self.airlock), "run", "--policy", str(policy), "--cwd", str(ws)] + json_flag + ["--"] + argv
        else:
            # safety net only (not a sandbox): a pids+memory cgroup so that bombs
            # cannot take the machine down while we prove that the checks fail.
            joins = "".join(f'echo $$ > {d}/cgroup.procs; ' for d in self.cgroup_safety)
            cmd = ["sh", "-c", joins + 'exec "$@"', "safety"] + argv
        tty_master = tty_slave = None
        if case.spec.get("tty"):
            tty_master, tty_slave = os.openpty()
            # the pty becomes the controlling terminal (session leader opens it);
            # in streaming mode (json = false) it is stdout and stderr as well
            redirect = 'exec 0<>"$0"; exec "$@"' if case.spec.get("json", True) else 'exec 0<>"$0" 1>&0 2>&0; exec "$@"'
            cmd = ["sh", "-c", redirect, os.ttyname(tty_slave)] + cmd
        deadline = parse_duration(case.spec.get("deadline", defaults.get("deadline", "60s")))
        if self.backend == "none":
            deadline = min(deadline, parse_duration(limits.get("timeout", "10s")) + 2)
        deadline += self.boot_allowance()
        if getattr(self.args, "watchdog", None):
            deadline = self.args.watchdog
        peer = None
        if case.spec.get("peer") and self.backend == "airlock":
            peer = self._start_peer(case, defaults)
            time.sleep(1.5)  # let the peer sandbox come up and plant its token
        env = self.env
        if case.spec.get("state_in_workspace") and self.backend == "airlock":
            # this case's state dir lies inside the workspace; one run first puts
            # records in its audit log
            env = dict(self.env, AIRLOCK_STATE_DIR=str(ws / ".local/state/airlock"))
            subprocess.run([str(self.airlock), "run", "--policy", str(self.root / f"policy-{case.name}.toml"),
                            "--cwd", str(ws), "--json", "--", "sh", str(ws / "escape_lib.sh")],
                           env=env, capture_output=True, timeout=60)
            before["ws"] = tree_listing(ws)
        elif case.spec.get("state_in_workspace"):
            # no airlock: lay out what it would have written, so the check can fail
            audit = ws / ".local/state/airlock/audit"
            audit.mkdir(parents=True)
            (audit / "log.jsonl").write_text('{"record": "stand-in for an audit record"}\n')
            before["ws"] = tree_listing(ws)
        if case.spec.get("pyenv_shell"):
            # airlock started from a shell set up for pyenv: its shims first on
            # PATH. The runner itself may run under `pyenv exec`, which puts the
            # version's bin first and exports PYENV_VERSION; a shell has neither.
            env = {k: v for k, v in env.items() if k != "PYENV_VERSION"}
            env["PATH"] = f"{PYENV_ROOT}/shims:/usr/local/bin:/usr/bin:/bin"
        if self.args.via_server and self.backend == "airlock" and not driver:
            # the same command, handed to a server on the case's policy (and state directory)
            server = self._start_server(case, ws, Path(cmd[cmd.index("--policy") + 1]), env)
            at = cmd.index(str(self.airlock))
            cmd[at + 1:at + 6] = ["run", f"--server={server.socket}", "--cwd", str(ws)]
        stdin = subprocess.DEVNULL if tty_master is None else None
        if case.spec.get("stdin_canary"):
            # airlock's stdin is a host file (a canary, world-writable on purpose)
            stdin = open(self.canaries[case.spec["stdin_canary"]], "rb")
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd,
            cwd=ws,
            env=env,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(self.leak_fd,),
            start_new_session=True,
        )
        cap = 64 << 20
        bufs = {"out": bytearray(), "err": bytearray()}
        totals = {"out": 0, "err": 0}

        def reader(stream, key):
            while True:
                chunk = stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16)
                if not chunk:
                    return
                totals[key] += len(chunk)
                if len(bufs[key]) < cap:
                    bufs[key] += chunk[: cap - len(bufs[key])]

        threads = [
            threading.Thread(target=reader, args=(proc.stdout, "out"), daemon=True),
            threading.Thread(target=reader, args=(proc.stderr, "err"), daemon=True),
        ]
        echo = bytearray()
        if tty_master is not None:
            os.set_blocking(tty_master, False)
        for t in threads:
            t.start()
        kill_after = case.spec.get("kill_airlock_after")
        killed_midrun = False
        while True:
            if tty_master is not None:
                try:
                    echo += os.read(tty_master, 4096)
                except (BlockingIOError, OSError):
                    pass
            if proc.poll() is not None:
                break
            elapsed = time.monotonic() - t0
            if kill_after and not killed_midrun and elapsed >= parse_duration(kill_after):
                running = marker_processes(self.marker, {os.getpid(), self.sentinel.pid, proc.pid})
                if self.case_server:
                    running = self._program_processes(running)
                # under a VMM the program runs in the guest: its VM is what runs
                running.update({p: c for p, c in vmm_processes(self.tier_runner.get("vmm", "")).items()
                                if p not in before["vmm"]})
                res.notes.append(f"{len(running)} process(es) of the program were running when airlock was killed")
                res.running_at_kill = len(running)
                os.kill(proc.pid, signal.SIGKILL)
                killed_midrun = True
                res.notes.append(f"runner SIGKILLed the airlock process (pid {proc.pid}) after {elapsed:.1f}s")
            if elapsed > deadline:
                # The watchdog: airlock and everything it started in its process
                # group (a helper, a VMM) go, so that one stuck case never hangs
                # the corpus; the case fails.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    os.kill(proc.pid, signal.SIGKILL)
                res.runner_killed = (f"watchdog: did not finish within the runner's deadline of {deadline:.0f}s; "
                                     "its process group was killed")
                proc.wait()
                break
            time.sleep(0.02)
        res.wall = time.monotonic() - t0
        res.exit_status = proc.returncode
        for t in threads:
            t.join(timeout=5)
        if tty_master is not None:
            # anything typed into the caller's terminal by the sandbox shows up as echo
            try:
                n = ctypes.c_int()
                fcntl.ioctl(tty_slave, termios.FIONREAD, n)
                if n.value:
                    echo += b"[queued input]" + os.read(tty_slave, n.value)
            except OSError:
                pass
            try:
                echo += os.read(tty_master, 4096)
            except OSError:
                pass
            res.tty_echo = bytes(echo)
            os.close(tty_master)
            os.close(tty_slave)
        res.raw_stdout, res.raw_stderr = bytes(bufs["out"]), bytes(bufs["err"])
        self._stop_server(res)
        if peer is not None:
            pproc, pws = peer
            try:
                pout, perr = pproc.communicate(timeout=60)
                res.peer_outcome = json.loads(pout.decode("utf-8", "replace"))
            except (subprocess.TimeoutExpired, ValueError) as e:
                pproc.kill()
                pproc.wait()
                res.notes.append(f"the peer sandbox gave no outcome: {e}")
            shutil.rmtree(pws, ignore_errors=True)
        if self.backend == "airlock" and not case.spec.get("json", True):
            # streaming mode: what reached the terminal is the output
            text = res.tty_echo.decode("utf-8", "replace") + res.raw_stdout.decode("utf-8", "replace")
            code = proc.returncode
            res.outcome = {"exit_code": code if code is not None and code >= 0 else None,
                           "signal": -code if code is not None and code < 0 else None,
                           "killed_by": None, "stdout": text, "stderr": res.raw_stderr.decode("utf-8", "replace"),
                           "changes": [], "decision": None}
        elif self.backend == "airlock" and not driver:
            res.stdout_total = totals["out"]
            if not killed_midrun and res.runner_killed is None:
                try:
                    res.outcome = json.loads(res.raw_stdout.decode("utf-8", "replace"))
                except ValueError:
                    res.notes.append("airlock printed no JSON outcome")
        else:
            sig = -proc.returncode if proc.returncode is not None and proc.returncode < 0 else None
            res.stdout_total = totals["out"]
            res.outcome = {
                "decision": "allow",
                "exit_code": None if sig else proc.returncode,
                "signal": sig,
                "killed_by": None,
                "stdout": res.raw_stdout.decode("utf-8", "replace"),
                "stderr": res.raw_stderr.decode("utf-8", "replace"),
                "truncated": False,
                "changes": [],
                "duration_ms": int(res.wall * 1000),
                "peak_memory_bytes": None,
            }
        return res

    # ---- judging
    def judge(self, case: Case, ws: Path, before: dict, res: RunResult) -> list[str]:
        f: list[str] = []
        spec = case.spec
        out = res.outcome or {}
        stdout = str(out.get("stdout") or "")
        stderr = str(out.get("stderr") or "")
        raw = res.raw_stdout + res.raw_stderr
        every_output = raw.decode("utf-8", "replace") + stdout + stderr

        if res.via_server_failed:
            f.append("--via-server: " + "; ".join(n for n in res.notes if n.startswith("VIA-SERVER")))
        # --- containment, always
        if self.secret in every_output:
            f.append("the caller's secret environment value appeared in the output")
        for tok in self.canary_tokens:
            if tok in every_output:
                f.append(f"canary file content {tok[:14]}... appeared in the output")
        for key, p in self.canaries.items():
            try:
                if p.read_bytes() != self.canary_original[key]:
                    f.append(f"canary file {p} was modified")
            except OSError as e:
                f.append(f"canary file {p} is gone: {e}")
        after_home = tree_listing(self.home)
        f += diff_trees(before["home"], after_home, "caller's $HOME")
        f += diff_trees(before["tmpcanary"], tree_listing(self.tmp_canary_dir), "/tmp canary dir")
        for ev in self.listeners.since(before["listen"]):
            f.append(f"host listener: {ev}")
        if self.sentinel.poll() is not None:
            f.append(f"host sentinel process {self.sentinel.pid} was killed (status {self.sentinel.returncode})")
        else:
            st = proc_state(self.sentinel.pid)
            if st not in ("S", "R", "D"):
                f.append(f"host sentinel process {self.sentinel.pid} is in state {st}")
        pw = pwned_files([self.root, self.tmp_canary_dir], [self.home, self.tmp_canary_dir])
        if pw:
            f.append(f"files planted on the host: {pw[:5]}")
        if keys_with(self.marker):
            f.append(f"a key with the marker is in the host's /proc/keys: {keys_with(self.marker)[:2]}")
        if sysv_objects(self.ipc_key):
            f.append(f"SysV IPC object visible on the host: {sysv_objects(self.ipc_key)}")
        if socket.gethostname() != self.hostname:
            f.append(f"host name changed to {socket.gethostname()!r}")
        if lo_marked():
            f.append(f"address {LO_MARK_ADDR} was added to the host's loopback")
        if self._binary_sig(with_hash=False) != before["airlock"]:
            f.append("an airlock binary on the host (airlock, airlock-serve, airlock-wasm) was modified")
        if res.tty_echo and b"INJECTED-" + self.marker.encode() in res.tty_echo.replace(b"\r", b""):
            f.append(f"input was injected into the caller's terminal: {res.tty_echo[:80]!r}")

        # --- teardown, always
        exclude = {os.getpid(), self.sentinel.pid}
        left = marker_processes(self.marker, exclude)
        # Teardown is bounded but not instant: a helper whose caller was killed
        # still kills and deletes its container (runsc's kill and delete take
        # seconds on the ptrace platform of a loaded host).
        deadline = time.monotonic() + 5.0
        while left and time.monotonic() < deadline:
            time.sleep(0.1)
            left = marker_processes(self.marker, exclude)
        if left:
            f.append(f"{len(left)} process(es) left after the run: " + "; ".join(f"{p}: {c}" for p, c in list(left.items())[:3]))
        vmm = self.tier_runner.get("vmm", "")
        if vmm:
            new_vmm = lambda: {p: c for p, c in vmm_processes(vmm).items() if p not in before["vmm"]}
            left_vmm = new_vmm()
            t_end = time.monotonic() + 5.0
            while left_vmm and time.monotonic() < t_end:
                time.sleep(0.1)
                left_vmm = new_vmm()
            if left_vmm:
                f.append(f"{len(left_vmm)} VM process(es) ({vmm}) left after the run: "
                         + "; ".join(f"{p}: {c}" for p, c in list(left_vmm.items())[:2]))
        own_base = STAGE_BASES.get(getattr(self.args, "backend_tier", "native"))
        new_mounts = {m for m in airlock_mounts(self.marker) - before["mounts"]
                      if self.marker in m or not others_mount(m, own_base)}
        if new_mounts:
            f.append(f"mounts left in the host's mountinfo: {sorted(new_mounts)[:3]}")
        new_cg = airlock_cgroups() - before["cgroups"]
        rid = str((res.outcome or {}).get("request_id") or "")
        if rid:
            # other people's airlock runs on this machine make cgroups too: with a
            # request id, only this run's count
            new_cg = {c for c in new_cg if rid in c}
        t_end = time.monotonic() + 2.0
        while new_cg and time.monotonic() < t_end:
            time.sleep(0.2)
            new_cg = {c for c in new_cg if os.path.exists(c)}
        if new_cg:
            f.append(f"cgroups left: {sorted(new_cg)[:4]}")
        busy = self._slot_leftovers()
        if busy:
            f.append(f"processes or groups left in cgroup slots no run holds: {busy[:3]}")
        state_after = tree_listing(self.state_dir, with_hash=False)
        if spec.get("kill_airlock_after") and self.backend == "airlock":
            left_state = self._state_leftovers(before["state"], state_after)
            if left_state:
                # "stale state from a crashed run is cleaned at the next start":
                # start airlock once more, then look again
                res.notes.append(f"right after the kill, the state directory held {len(left_state)} new entries, "
                                 f"e.g. {left_state[0]}; checking again after the next start")
                self._next_start(case, ws)
                state_after = tree_listing(self.state_dir, with_hash=False)
                for p in self._state_leftovers(before["state"], state_after):
                    f.append(f"left in the state directory even after the next airlock start: {p}")
            state_after = before["state"]  # judged above
        for p in self._state_leftovers(before["state"], state_after):
            f.append(f"left in the state directory: {p} ({state_after[p][0]})")
        new_rt = self._runtime_entries() - before["runtime"]
        new_rt = {p for p in new_rt if os.path.lexists(p)}
        if new_rt:
            f.append(f"left on the host: {sorted(new_rt)[:4]}")

        # --- the workspace's host copy
        after_ws = tree_listing(ws)
        if spec.get("state_in_workspace"):
            # airlock itself writes its audit log and run state there: judge the
            # rest of the workspace, and look for a planted file in the state dir
            sd = str(ws / ".local/state/airlock")
            keep = lambda t: {p: v for p, v in t.items() if not (p == sd or p.startswith(sd + "/"))}
            f += diff_trees(keep(before["ws"]), keep(after_ws), "host workspace")
            planted = [p for p in after_ws if p.startswith(sd + "/") and "airlock-escape-pwned" in p]
            if planted:
                f.append(f"the command wrote into airlock's state dir on the host: {planted[:2]}")
        elif not spec.get("apply") and spec.get("mode", "overlay") != "rw":
            f += diff_trees(before["ws"], after_ws, "host workspace")
        for rel in _as_list(spec.get("protected_unchanged")):
            root = str(ws / rel)
            sub_b = {p: v for p, v in before["ws"].items() if p == root or p.startswith(root + "/")}
            sub_a = {p: v for p, v in after_ws.items() if p == root or p.startswith(root + "/")}
            f += diff_trees(sub_b, sub_a, f"protected {rel} in the host workspace")
        for rel in _as_list(spec.get("host_ws_has")):
            if not (ws / rel).exists():
                f.append(f"{rel} is not in the host workspace: the write-back/write-through did not happen, "
                         "so this case tested nothing")
        if spec.get("apply") or spec.get("mode") == "rw":
            for p, v in after_ws.items():
                st_ = os.lstat(p)
                if v[0] in ("file", "dir") and st_.st_mode & (stat.S_ISUID | stat.S_ISGID) and p not in before["ws"]:
                    f.append(f"a set-id {v[0]} reached the host workspace: {p} "
                             f"(mode {stat.filemode(st_.st_mode)}, owner uid {st_.st_uid})")
        if spec.get("apply") or spec.get("mode") == "rw":
            for p, v in after_ws.items():
                st_ = os.lstat(p)
                if v[0] in ("file", "dir") and st_.st_mode & stat.S_IWOTH and p not in before["ws"]:
                    f.append(f"a world-writable {v[0]} reached the host workspace: {p} ({stat.filemode(st_.st_mode)})")
        f += self._return_path_checks(case, ws, res)
        if spec.get("peer"):
            po = res.peer_outcome or {}
            if self.backend == "airlock":
                if "CONTROL-OK" not in str(po.get("stdout", "")) or po.get("exit_code") != 0:
                    f.append(f"the peer sandbox was disturbed or did not run: exit {po.get('exit_code')}, "
                             f"stdout {str(po.get('stdout', ''))[-200:]!r}")
            if getattr(self, "peer_token", None) and self.peer_token in every_output:
                f.append("the peer sandbox's token appeared in this sandbox's output")

        # --- did it run at all, and what did it report
        if res.runner_killed:
            f.append(f"airlock {res.runner_killed}")
        if spec.get("kill_airlock_after"):
            # no outcome and no output exist; the program's processes seen on the
            # host just before the kill are the proof that something ran
            if res.running_at_kill == 0:
                f.append("no process of the program was running when airlock was killed: nothing was tested")
        elif res.outcome is None:
            f.append("; ".join(res.notes) or "no outcome")
            if res.raw_stderr:
                f.append("airlock stderr: " + res.raw_stderr.decode("utf-8", "replace")[-400:].strip())
            return f
        elif out.get("decision") not in (None, "allow"):
            f.append(f"the gate refused the run ({out.get('decision')}: {out.get('reason')}), so nothing was tested")
        started = "CONTROL-START" if case.expect == "works" else "ATTACK-START"
        text = stdout if res.outcome is not None else res.raw_stdout.decode("utf-8", "replace")
        if spec.get("require_start", True) and not spec.get("kill_airlock_after") and started not in text and "ATTACK-START" not in text:
            f.append("the program did not report that it started (no ATTACK-START line): nothing was tested")
            if stderr.strip():
                f.append("its stderr: " + stderr.strip()[-300:])
        # A tier's override may name attempts that succeed only against a kernel
        # that is not the host's (a microVM's guest): those ESCAPED lines are
        # noted, and the case is judged on host state like every other.
        guest_only = _as_list(spec.get("guest_only"))
        for line in text.splitlines():
            if line.startswith("ESCAPED"):
                if any(g in line for g in guest_only):
                    res.notes.append(f"in the guest kernel only: {line[:200]}")
                else:
                    f.append(line[:300])
        if case.expect == "contained" and spec.get("require_blocked", case.category not in ("resources", "teardown")):
            if not any(line.startswith("BLOCKED") for line in text.splitlines()):
                f.append("no BLOCKED line: the attack's attempts were not observed to be stopped")
        if case.expect == "works":
            if "CONTROL-OK" not in text:
                f.append("control case did not print CONTROL-OK")
            if out.get("exit_code") != 0:
                f.append(f"control case exited with {out.get('exit_code')} (signal {out.get('signal')}); stderr: {stderr[-200:]!r}")
            if out.get("killed_by"):
                f.append(f"control case was killed ({out.get('killed_by')})")

        # --- per-case expectations
        for s in _as_list(spec.get("stdout_contains")):
            if s not in text:
                f.append(f"stdout lacks {s!r}")
        for s in _as_list(spec.get("stdout_not_contains")):
            if s in text:
                f.append(f"stdout contains {s!r}")
        if "killed_by" in spec:
            want = _as_list(spec["killed_by"])
            # `or_guest_refused`: on a backend whose limit lives in a guest
            # kernel (gVisor's Sentry), a refusal there is invisible to the
            # host; the program's own report of it stands in for the kill.
            refused = [s for s in _as_list(spec.get("or_guest_refused")) if s in text or s in stderr]
            if out.get("killed_by") in want:
                pass
            elif refused:
                res.notes.append(f"killed_by {out.get('killed_by')!r}: the guest's own limit refused "
                                 f"({refused[0]!r} in the program's output)")
            else:
                f.append(f"killed_by is {out.get('killed_by')!r}, expected {' or '.join(map(str, want))}")
        if spec.get("exit_nonzero") and out.get("exit_code") == 0:
            f.append("exit code 0, expected non-zero or a signal")
        if "duration_under" in spec and res.wall > parse_duration(spec["duration_under"]) + self.boot_allowance():
            extra = f" plus the tier's boot allowance of {self.boot_allowance():.0f}s" if self.boot_allowance() else ""
            f.append(f"took {res.wall:.1f}s, more than {spec['duration_under']}{extra}")
        if "truncated" in spec and bool(out.get("truncated")) != spec["truncated"]:
            f.append(f"truncated is {out.get('truncated')!r}, expected {spec['truncated']}")
        if "stdout_max_bytes" in spec:
            cap = parse_size(spec["stdout_max_bytes"])
            if len(stdout.encode()) > cap:
                f.append(f"captured stdout is {len(stdout.encode())} bytes, more than {cap}")
            if res.stdout_total > cap * 4 + (1 << 20):
                f.append(f"airlock wrote {res.stdout_total} bytes of output")
        if "peak_memory_under" in spec:
            cap = parse_size(spec["peak_memory_under"])
            pm = out.get("peak_memory_bytes")
            if not isinstance(pm, int) or pm > cap or pm <= 0:
                f.append(f"peak_memory_bytes is {pm!r}, expected between 1 and {cap}")
        for key, cap in (spec.get("reported_max") or {}).items():
            vals = re.findall(rf"\b{re.escape(key)}=(\d+)", text)
            if not vals:
                f.append(f"the program never reported {key}=")
            elif int(vals[-1]) > cap:
                f.append(f"{key}={vals[-1]}, more than the bound {cap}")
        for rel in _as_list(spec.get("changes_include")):
            paths = [str(c.get("path", "")) for c in (out.get("changes") or []) if isinstance(c, dict)]
            if not any(p == str(ws / rel) or p == rel or p.endswith("/" + rel) for p in paths):
                f.append(f"changes lacks {rel} (got {paths[:5]})")
        return f

    def _slot_leftovers(self) -> list[str]:
        """What free cgroup slots still hold, as this session left it. A member
        that carries this session's marker or key is this case's leftover at
        once. Others may be another part's (tests run two at a time: a run
        whose helper that part killed leaves its container in the slot for an
        instant, until its caller empties it, or until that part's next run
        takes the slot); they count only if they are still there two seconds
        later, which no run of this session can change meanwhile."""
        key = str(int(self.marker[:7], 16))
        left = occupied_free_slots()
        ours = any(self.marker in proc_cmdline(int(p)) or key in proc_cmdline(int(p))
                   for pids, _ in left.values() for p in pids if p.isdigit())
        deadline = time.monotonic() + 2.0
        while left and not ours and time.monotonic() < deadline:
            time.sleep(0.2)
            now = occupied_free_slots()
            left = {n: v for n, v in now.items()
                    if n in left and (set(v[0]) & set(left[n][0]) or set(v[1]) & set(left[n][1]))}
        return [f"{n}: pids {pids[:5]}, groups below it {nested[:3]}" for n, (pids, nested) in left.items()]

    def git_env(self) -> dict:
        """Host git as the user would run it: the fake home, no system config."""
        return dict(os.environ, HOME=str(self.home), GIT_CONFIG_NOSYSTEM="1",
                    GIT_CONFIG_GLOBAL=str(Path(self.home) / ".gitconfig"), GIT_TERMINAL_PROMPT="0",
                    GIT_AUTHOR_NAME="user", GIT_AUTHOR_EMAIL="user@host",
                    GIT_COMMITTER_NAME="user", GIT_COMMITTER_EMAIL="user@host")

    def _return_path_checks(self, case: Case, ws: Path, res: RunResult) -> list[str]:
        """What came back to the host (issue 11): judged on the host's files and
        by running host git, never by what the program says."""
        f: list[str] = []
        spec = case.spec
        out = res.outcome or {}
        for rel in _as_list(spec.get("host_ws_absent")):
            if os.path.lexists(ws / rel):
                f.append(f"{rel} reached the host workspace ({os.lstat(ws / rel).st_mode:o})")
        for rel in _as_list(spec.get("host_git_status")):
            d = ws / rel
            if not d.is_dir():
                continue
            try:
                self.git_canary.unlink()
            except OSError:
                pass
            subprocess.run(["git", "-C", str(d), "status", "--porcelain"], env=self.git_env(),
                           capture_output=True, timeout=30)
            subprocess.run(["git", "-C", str(d), "diff", "--stat"], env=self.git_env(),
                           capture_output=True, timeout=30)
            if self.git_canary.exists():
                f.append(f"host `git status` in {rel or '.'} ran a command planted by the sandbox "
                         f"(canary {self.git_canary} written: {self.git_canary.read_text()[:80]!r})")
                self.git_canary.unlink()
        # Host git commands a user runs after the apply (`restore .` to throw
        # away the agent's changes, `commit --amend`, `-C src diff ...`), in
        # order; then the canary.
        runs = _as_list(spec.get("host_git_run"))
        if runs:
            try:
                self.git_canary.unlink()
            except OSError:
                pass
            for line in runs:
                subprocess.run(["git", "-C", str(ws)] + shlex.split(line), env=self.git_env(),
                               capture_output=True, timeout=30)
            if self.git_canary.exists():
                f.append(f"host `git {' ; git '.join(runs)}` ran a command planted by the sandbox "
                         f"(canary {self.git_canary} written: {self.git_canary.read_text()[:80]!r})")
                self.git_canary.unlink()
            for rel in _as_list(spec.get("host_absent_after_git")):
                if os.path.lexists(ws / rel):
                    f.append(f"after host `git {' ; git '.join(runs)}` the host workspace has {rel}, "
                             "which the sandbox staged or committed and the return path should have held")
            if spec.get("host_repo_survives"):
                # What those commands did to the repository itself: it must
                # still be one, with its history.
                head = subprocess.run(["git", "-C", str(ws), "rev-parse", "--verify", "-q", "HEAD"],
                                      env=self.git_env(), capture_output=True, timeout=30)
                if not (ws / ".git").is_dir() or head.returncode != 0:
                    f.append(f"after host `git {' ; git '.join(runs)}` the repository is gone "
                             f"(.git is {'a directory' if (ws / '.git').is_dir() else 'not a directory'}, "
                             f"HEAD {'resolves' if head.returncode == 0 else 'does not resolve'})")
        # Commands the user runs in the workspace from a shell with direnv
        # hooked in (`direnv exec` loads the workspace's .envrc, allowed first,
        # as the shell hook would on entering it); then the canary.
        direnv_runs = _as_list(spec.get("host_direnv_run"))
        if direnv_runs:
            if not shutil.which("direnv"):
                f.append("host_direnv_run needs direnv on the host (scripts/test.d/50-escape.sh installs it)")
            else:
                env = dict(self.git_env(), XDG_DATA_HOME=str(Path(self.home) / ".local/share"),
                           XDG_CONFIG_HOME=str(Path(self.home) / ".config"), DIRENV_LOG_FORMAT="")
                where = ws / spec.get("host_direnv_dir", ".")
                subprocess.run(["direnv", "allow", str(where)], env=env, capture_output=True, timeout=30)
                for line in direnv_runs:
                    subprocess.run(["direnv", "exec", str(where)] + shlex.split(line), cwd=where, env=env,
                                   capture_output=True, timeout=30)
                if self.git_canary.exists():
                    f.append(f"host `{' ; '.join(direnv_runs)}` in a direnv shell ran a command planted "
                             f"by the sandbox (canary {self.git_canary} written: "
                             f"{self.git_canary.read_text()[:80]!r})")
                    self.git_canary.unlink()
        if "host_ws_max_bytes" in spec:
            cap = parse_size(spec["host_ws_max_bytes"])
            used = 0
            for dirpath, dirnames, filenames in os.walk(ws):
                for name in filenames:
                    try:
                        used += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
                    except OSError:
                        pass
            if used > cap:
                f.append(f"the host workspace now uses {used} bytes of disk, more than {cap}")
        if spec.get("changes_escaped"):
            changes = [c for c in (out.get("changes") or []) if isinstance(c, dict)]
            paths = [str(c.get("path", "")) for c in changes]
            if len(paths) < int(spec.get("changes_min", 1)):
                f.append(f"only {len(paths)} changes reported, expected at least {spec.get('changes_min', 1)}")
            for p in paths + [str(c.get("target") or "") for c in changes]:
                if any(ord(ch) < 0x20 or ord(ch) == 0x7f or 0x80 <= ord(ch) < 0xa0 for ch in p):
                    f.append(f"a change is reported with a raw control character: {p!r}")
                if "\ufffd" in p:
                    f.append(f"a name was reported lossily (U+FFFD): {p!r}")
            if len(set(paths)) != len(paths):
                f.append(f"two different changes are reported under the same name: {sorted(paths)[:6]}")
        if "audit_max_bytes" in spec and self.backend == "airlock":
            cap = parse_size(spec["audit_max_bytes"])
            biggest = 0
            for p in Path(self.state_dir, "audit").rglob("*"):
                if p.is_file():
                    with open(p, "rb") as fh:
                        for line in fh:
                            if out.get("request_id") and str(out.get("request_id")).encode() in line:
                                biggest = max(biggest, len(line))
            if biggest > cap:
                f.append(f"an audit record of this run is {biggest} bytes, more than {cap}")
        if "json_max_bytes" in spec and len(res.raw_stdout) > parse_size(spec["json_max_bytes"]):
            f.append(f"airlock's JSON answer is {len(res.raw_stdout)} bytes, more than {spec['json_max_bytes']}")
        if "summary_min" in spec and self.backend == "airlock":
            summ = out.get("change_summary") or {}
            for k, want in spec["summary_min"].items():
                if not isinstance(summ.get(k), int) or summ[k] < want:
                    f.append(f"change_summary.{k} is {summ.get(k)!r}, expected at least {want}")
        return f

    def boot_allowance(self) -> float:
        """Seconds a tier adds to every case's deadline and duration_under: the
        time a run takes before the program starts (a VM's boot)."""
        return parse_duration(self.tier_runner.get("boot_allowance", 0))

    def warm_up(self) -> None:
        """One harmless run first: airlock lays out its state directory (audit/,
        runs/ and their permanent entries) on first use; after this, anything new
        that stays in it after a run belongs to that run."""
        if self.backend != "airlock":
            return
        ws = self.root / "ws-warm-up"
        ws.mkdir(mode=0o755)
        shutil.copy2(LIB / "escape_lib.sh", ws / "escape_lib.sh")
        os.chmod(ws / "escape_lib.sh", 0o644)
        case = Case("warm-up", "escape_lib.sh", "control", "works", "", {})
        policy = self.root / "policy-warm-up.toml"
        text = self.policy_text(case, ws, {})
        texts = [text]
        if os.geteuid() != 0 and getattr(self.args, "backend_tier", "native") != "native":
            # Driver cases run some commands on the native backend, whose
            # rootless mode lays out its permanent mount points (run/mnt) on
            # first use: lay them out here too.
            texts.append(re.sub(r'\[sandbox\]\nbackend = "[^"]*"\n', "", text))
        for t in texts:
            policy.write_text(t)
            subprocess.run([str(self.airlock), "run", "--policy", str(policy), "--cwd", str(ws), "--json", "--",
                            "sh", str(ws / "escape_lib.sh")], env=self.env, capture_output=True, timeout=120)
        shutil.rmtree(ws, ignore_errors=True)

    def _state_leftovers(self, before: dict, after: dict) -> list[str]:
        out = []
        for p in sorted(set(after) - set(before)):
            rel = os.path.relpath(p, self.state_dir)
            if os.sep not in rel:
                continue
            # kept change sets (kept/<run id>/): an unapplied change set kept on
            # purpose for `airlock apply RUN_ID`, bounded by [changes] keep_for/keep_bytes
            if rel.split(os.sep)[0] == "kept":
                continue
            # a long change set's full list (changes/<request id>.list), part of the audit
            # trail, bound by its record's hash; and the audit log's space reserve
            parts = rel.split(os.sep)
            if parts[0] == "changes" and len(parts) == 2 and re.fullmatch(r"r[0-9a-f-]+\.list", parts[1]):
                continue
            if parts == ["audit", "reserve"]:
                continue
            # the prepared /etc (cache/etc/etc-<hash>/...): one directory per input hash, reused by
            # every run, renamed when a host file or the policy changes (native/prepared_etc.rs)
            parts = rel.split(os.sep)
            if parts[:2] == ["cache", "etc"] and (len(parts) == 2 or re.fullmatch(r"etc-[0-9a-f]{32}", parts[2])):
                continue
            # lock files and logs anywhere; a state file (audit/head.json) one level down
            if after[p][0] == "file" and (os.path.basename(p) == "lock" or re.search(r"\.(jsonl|log|lock)$", p)):
                continue
            if after[p][0] == "file" and rel.count(os.sep) == 1 and p.endswith(".json"):
                continue
            out.append(p)
        return out

    def _next_start(self, case: Case, ws: Path) -> None:
        policy = self.root / f"policy-{case.name}.toml"
        subprocess.run([str(self.airlock), "run", "--policy", str(policy), "--cwd", str(ws), "--json", "--",
                        "sh", str(ws / "escape_lib.sh")], env=self.env, capture_output=True, timeout=60)

    def cleanup_case(self, ws: Path, keep: bool) -> None:
        # processes carrying the marker, and members of the safety cgroup of
        # --backend none, all descend from processes this runner started.
        # Stop them first (a stopped process cannot fork), then kill them.
        self.kill_safety_cgroup()
        stopped: set[int] = set()
        for _ in range(100):
            pids = set(marker_processes(self.marker, {os.getpid(), self.sentinel.pid})) - stopped
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGSTOP)
                except OSError:
                    pass
            stopped |= pids
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for p in pwned_files([self.root, self.tmp_canary_dir], [self.home, self.tmp_canary_dir]):
            try:
                if os.path.isdir(p) and not os.path.islink(p):
                    shutil.rmtree(p)
                else:
                    os.unlink(p)
            except OSError:
                pass
        for line in keys_with(self.marker):
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                libc.syscall(250, 21, int(line.split()[0], 16))  # keyctl(KEYCTL_INVALIDATE)
            except (OSError, ValueError):
                pass
        for obj in sysv_objects(self.ipc_key):
            kind = obj.split()[0]
            flag = {"shm": "-M", "sem": "-S", "msg": "-Q"}[kind]
            subprocess.run(["ipcrm", flag, str(self.ipc_key)], capture_output=True)
        if socket.gethostname() != self.hostname:
            libc = ctypes.CDLL(None, use_errno=True)
            name = self.hostname.encode()
            libc.sethostname(name, len(name))
        if lo_marked():
            subprocess.run(["ip", "addr", "del", LO_MARK_ADDR + "/32", "dev", "lo"], capture_output=True)
        for key, p in self.canaries.items():
            try:
                if p.read_bytes() != self.canary_original[key]:
                    p.write_bytes(self.canary_original[key])
            except OSError:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(self.canary_original[key])
        if self.sentinel.poll() is not None or proc_state(self.sentinel.pid) not in ("S", "R", "D"):
            try:
                self.sentinel.kill()
            except OSError:
                pass
            self.sentinel.wait()
            self.sentinel = self._start_sentinel()
        if not keep:
            shutil.rmtree(ws, ignore_errors=True)


def _as_list(v) -> list:
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def load_manifest() -> tuple[dict, list[Case]]:
    with open(HERE / "manifest.toml", "rb") as f:
        data = tomllib.load(f)
    cases = []
    seen = set()
    for entry in data.get("case", []):
        file = entry["file"]
        name = Path(file).stem
        if name in seen:
            raise SystemExit(f"manifest: duplicate case {name}")
        seen.add(name)
        if not (ATTACKS / file).exists():
            raise SystemExit(f"manifest: {file} does not exist in {ATTACKS}")
        if entry.get("expect") not in ("contained", "works"):
            raise SystemExit(f"manifest: {name}: expect must be contained or works")
        spec = {k: v for k, v in entry.items() if k not in ("file", "category", "expect", "what")}
        cases.append(Case(name, file, entry["category"], entry["expect"], entry.get("what", ""), spec))
    listed = {c.file for c in cases}
    unlisted = [p.name for p in ATTACKS.iterdir() if p.is_file() and p.name not in listed]
    if unlisted:
        raise SystemExit(f"manifest: programs without an expected outcome: {unlisted}")
    return data.get("defaults", {}), cases


def read_tier(name: str) -> dict:
    """tiers/NAME.toml, on top of the tier it `extends` (its tables merged key by
    key, this file's entries winning): a daemon that speaks another's API, such
    as podman's service for the docker backend, lists only what differs."""
    with open(HERE / "tiers" / f"{name}.toml", "rb") as f:
        data = tomllib.load(f)
    base = data.pop("extends", None)
    if base is None:
        return data
    merged = read_tier(base)
    merged.pop("backend", None)
    for k, v in data.items():
        merged[k] = {**merged.get(k, {}), **v} if isinstance(v, dict) else v
    return merged


def tier_backend(name: str) -> str:
    """The `[sandbox] backend` a tier runs on: its file's `backend`, else its name."""
    return name if name == "native" else read_tier(name).get("backend", name)


def load_tier_overrides(name: str, cases: list[Case], all_cases: list[Case]) -> tuple[list[Case], dict]:
    """A tier's `[override.CASE]` tables (tiers/NAME.toml): the same attack judged
    on what stops it on that backend. Each names its `reason`; its other keys
    replace the manifest's, and `drop` lists keys to remove; `guest_only` lists
    attempts (substrings of ESCAPED lines) that only reach a guest kernel, not
    the host's: noted, and the case judged on host state; `or_guest_refused`
    lists what the program prints when a limit inside a guest kernel refused
    it, which stands in for a `killed_by` the host cannot see. Also the tier's
    `[targets]`, added to every case's targets file."""
    if name == "native":
        return cases, {}
    data = read_tier(name)
    over = data.get("override", {})
    unknown = sorted(set(over) - {c.name for c in all_cases})
    if unknown:
        raise SystemExit(f"tiers/{name}.toml overrides cases that do not exist: {unknown}")
    out = []
    for c in cases:
        o = over.get(c.name)
        if o is None:
            out.append(c)
            continue
        if not o.get("reason"):
            raise SystemExit(f"tiers/{name}.toml: override.{c.name} needs a reason")
        print(f"tier {name}: {c.name} judged as overridden: {o['reason']}")
        out.append(overridden(c, o))
    return out, data.get("targets", {})


def overridden(c: Case, o: dict) -> Case:
    """Case c with an override table's keys: they replace the case's, `limits`
    is merged key by key, `drop` lists keys to remove, `reason` is not a key."""
    spec = {k: v for k, v in c.spec.items() if k not in o.get("drop", [])}
    spec.update({k: v for k, v in o.items() if k not in ("reason", "drop")})
    if "limits" in o:
        spec["limits"] = {**c.spec.get("limits", {}), **o["limits"]}
    return Case(c.name, c.file, c.category, c.expect, c.what, spec)


def apply_elsewhere(cases: list[Case]) -> list[Case]:
    """A case's `elsewhere` table: how it runs on every run but the reference
    one (native backend, as root, `airlock run` itself), typically smaller. What
    such a case proves at full size is tier-independent code, proved once; the
    other runs check that their backend feeds that code. It is applied as a
    tier's override is, and names its `reason`."""
    out = []
    for c in cases:
        e = c.spec.get("elsewhere")
        if e is None:
            out.append(c)
            continue
        if not e.get("reason"):
            raise SystemExit(f"manifest: {c.name}: elsewhere needs a reason")
        print(f"{c.name} runs as elsewhere: {e['reason']}")
        out.append(overridden(c, {**e, "drop": ["elsewhere", *e.get("drop", [])]}))
    return out


def load_tier_runner(name: str) -> dict:
    """A tier's `[runner]` table (tiers/NAME.toml): `boot_allowance`, added to
    every case's deadline and duration_under, and `vmm`, the name of the
    process the program runs inside (counted as the run's at a mid-run kill,
    and none may be left after a run). It names its `reason`."""
    if name == "native":
        return {}
    runner = read_tier(name).get("runner", {})
    if runner and not runner.get("reason"):
        raise SystemExit(f"tiers/{name}.toml: [runner] needs a reason")
    unknown = sorted(set(runner) - {"reason", "boot_allowance", "vmm"})
    if unknown:
        raise SystemExit(f"tiers/{name}.toml: [runner] has unknown keys {unknown}")
    if runner:
        parse_duration(runner.get("boot_allowance", 0))
        print(f"tier {name}: runner: boot allowance {runner.get('boot_allowance', '0s')}, "
              f"VM process {runner.get('vmm', '-')}: {runner['reason']}")
    return runner


def load_tier(name: str, cases: list[Case], all_cases: list[Case]) -> dict[str, str]:
    """Cases that do not apply to a backend tier, with the reason (tiers/NAME.toml)."""
    if name == "native":
        return {}
    data = read_tier(name)
    kinds = data.get("kinds", {})
    named = data.get("not_applicable", {})
    unknown = sorted(set(named) - {c.name for c in all_cases})
    if unknown:
        raise SystemExit(f"tiers/{name}.toml names cases that do not exist: {unknown}")
    out = {}
    for c in cases:
        if c.name in named:
            out[c.name] = named[c.name]
        elif c.kind in kinds:
            out[c.name] = kinds[c.kind]
    return out


# Rootless (an ordinary user) without a cgroup this user may manage: the
# generated policies accept rlimits in place of a cgroup (set in main()).
ROOTLESS_BEST_EFFORT = False
# What only a cgroup can show, dropped from a rootless case's expectations.
CGROUP_ONLY_KEYS = ("killed_by", "peak_memory_under")


def rootless_has_cgroup() -> bool:
    """A delegated cgroup v2 subtree with memory, pids and cpu, writable by this user."""
    try:
        own = next(l[3:] for l in Path("/proc/self/cgroup").read_text().splitlines() if l.startswith("0::"))
    except (OSError, StopIteration):
        return False
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        if post.split()[:1] != ["cgroup2"]:
            continue
        cur = Path(pre.split()[4])
        for comp in Path(own.strip().lstrip("/")).parts:
            cur = cur / comp
            try:
                ctl = (cur / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            if {"memory", "pids", "cpu"} <= set(ctl) and all(
                    os.access(x, os.W_OK) for x in (cur, cur / "cgroup.procs", cur / "cgroup.subtree_control")):
                return True
    return False


def load_rootless(tier: str, cases: list[Case], all_cases: list[Case]) -> dict[str, str]:
    """Cases whose assertions need a cgroup, with the reason: tiers/rootless.toml
    for the native backend, the tier's own `[needs_cgroup]` for another
    backend's rootless tier (gvisor-rootless)."""
    name = "rootless" if tier == "native" else tier
    named = read_tier(name).get("needs_cgroup", {})
    unknown = sorted(set(named) - {c.name for c in all_cases})
    if unknown:
        raise SystemExit(f"tiers/{name}.toml names cases that do not exist: {unknown}")
    return {c.name: named[c.name] for c in cases if c.name in named}


def check_refused(sess: "Session", case: Case, defaults: dict) -> list[str]:
    """The case's policy as written (no best effort) must be refused before anything runs."""
    ws = sess.prepare_ws(case)
    strict = Case(case.name, case.file, case.category, case.expect, case.what,
                  dict(case.spec, _strict_limits=True))
    policy = sess.root / f"policy-{case.name}-strict.toml"
    policy.write_text(sess.policy_text(strict, ws, defaults))
    cmd = [str(sess.airlock), "run", "--policy", str(policy), "--cwd", str(ws), "--json", "--"] + sess.argv(case, ws)
    p = subprocess.run(cmd, cwd=ws, env=sess.env, stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
    sess.cleanup_case(ws, False)
    out = p.stdout.decode(errors="replace")
    f = []
    if p.returncode != 125:
        f.append(f"rootless without a cgroup: expected a refusal (exit 125), got exit {p.returncode}: {out[-300:]!r}")
    elif "enforcement" not in out or "ATTACK-START" in out:
        f.append(f"the refusal does not name limits.enforcement, or the program ran: {out[-300:]!r}")
    return f


def default_airlock() -> str:
    for p in (REPO / "target/release/airlock", REPO / "target/debug/airlock"):
        if p.exists():
            return str(p)
    return str(REPO / "target/release/airlock")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--airlock", default=None, help="the airlock binary (default: target/release, then target/debug)")
    ap.add_argument("--backend", choices=["airlock", "none"], default="airlock",
                    help="none: run the programs on the host with no sandbox, to prove the checks fail")
    ap.add_argument("--only", action="append", default=[], help="run only cases whose name contains this (repeatable)")
    ap.add_argument("--category", action="append", default=[], help="run only these categories")
    ap.add_argument("--backend-tier", choices=["native", "wasm", "oci", "gvisor", "gvisor-rootless", "docker", "podman", "microvm"],
                    default="native",
                    help="the sandbox backend every generated policy names ([sandbox] backend); gvisor "
                         "run by an ordinary user is the gvisor-rootless tier")
    ap.add_argument("--network", choices=["none", "allowlist"], default="none",
                    help="network.mode of the generated policies (allowlist: egress proxy, issue 6)")
    ap.add_argument("--host-resources", action="store_true",
                    help="with --backend none, also run the resource attacks on the host (inside a "
                    "pids/memory/cpu/freezer safety cgroup); skipped by default so as not to load a shared machine")
    ap.add_argument("--return-path-off", action="store_true",
                    help="with a debug build of airlock only: switch the return path's checks off "
                         "(AIRLOCK_TEST_RETURN_PATH_OFF=1) to prove that its cases can fail")
    ap.add_argument("--prefork-scrub-off", action="store_true",
                    help="with a debug build of airlock only: a helper forked in advance keeps "
                         "the caller's argv and environment (AIRLOCK_TEST_PREFORK_SCRUB_OFF=1) to "
                         "prove that sec_proc_cmdline can fail")
    ap.add_argument("--cgroup-attach-late", action="store_true",
                    help="with a debug build of airlock only: let init fork the command before it "
                         "is in its cgroup (AIRLOCK_TEST_CGROUP_ATTACH_LATE=1; cgroup v1) to prove "
                         "that res_memory_first_instruction can fail")
    ap.add_argument("--via-server", action="store_true",
                    help="send each case through `airlock run --server` to a fresh `airlock serve --pool 1` "
                         "on the case's policy: the command runs in a sandbox built ahead of demand")
    ap.add_argument("--watchdog", type=float, default=None, metavar="SECONDS",
                    help="kill airlock's process group after this many seconds of one case and fail the case "
                         "(default: the case's deadline, 60 s unless the manifest says otherwise, plus the "
                         "tier's [runner] boot_allowance)")
    ap.add_argument("--report", help="write a JSON report here")
    ap.add_argument("--keep", action="store_true", help="keep the session directory")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each case's output on failure")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    args = ap.parse_args()
    global ROOTLESS_BEST_EFFORT
    if os.geteuid() != 0 and args.backend_tier == "gvisor":
        # An ordinary user's gVisor runs in the backend's rootless mode, which
        # has a tier file of its own.
        args.backend_tier = "gvisor-rootless"
        print("gvisor as an ordinary user: tier gvisor-rootless (tiers/gvisor-rootless.toml)")
    rootless = (os.geteuid() != 0 and args.backend == "airlock"
                and args.backend_tier in ("native", "gvisor-rootless"))
    if rootless:
        ROOTLESS_BEST_EFFORT = not rootless_has_cgroup()
        print(f"rootless mode (uid {os.geteuid()}): "
              + ("no cgroup for this user: policies say enforcement = \"best_effort\"; "
                 f"tiers/{'rootless' if args.backend_tier == 'native' else args.backend_tier}.toml "
                 "lists the cases checked for refusal first" if ROOTLESS_BEST_EFFORT
                 else "a delegated cgroup v2 subtree holds the limits"))
    elif os.geteuid() != 0:
        print("the escape corpus runs as root (it needs cgroups, listeners and host checks)", file=sys.stderr)
    defaults, cases = load_manifest()
    all_cases = list(cases)
    if args.list:
        for c in cases:
            print(f"{c.name:36} {c.category:12} {c.expect:10} {c.what}")
        print(f"{len(cases)} cases")
        return 0
    if args.only:
        cases = [c for c in cases if any(o in c.name for o in args.only)]
    if args.category:
        cases = [c for c in cases if c.category in args.category]
    if args.backend == "none" and not args.host_resources:
        skipped = [c.name for c in cases if c.category == "resources"]
        cases = [c for c in cases if c.category != "resources"]
        if skipped:
            print(f"--backend none: {len(skipped)} resource cases skipped (--host-resources runs them)")
    if args.backend == "airlock":
        args.airlock = args.airlock or default_airlock()
        if not Path(args.airlock).exists():
            print(f"airlock binary not found: {args.airlock}", file=sys.stderr)
            print(f"0 passed, {len(cases)} failed")
            return 1
    not_applicable = load_tier(args.backend_tier, cases, all_cases) if args.backend == "airlock" else {}
    if args.via_server and args.backend == "airlock":
        for c in cases:
            if c.spec.get("driver"):
                not_applicable[c.name] = "--via-server: a host-side driver starts airlock itself"
            elif c.spec.get("state_in_workspace"):
                not_applicable[c.name] = ("--via-server: airlock serve refuses to start with its state directory "
                                          "inside a workspace it serves (crates/airlock/tests/serve_http.rs)")
    tier_targets = {}
    if args.backend == "airlock":
        reference = args.backend_tier == "native" and os.geteuid() == 0 and not args.via_server
        if not reference:
            cases = apply_elsewhere(cases)
        cases, tier_targets = load_tier_overrides(args.backend_tier, cases, all_cases)
    needs_cgroup = load_rootless(args.backend_tier, cases, all_cases) if ROOTLESS_BEST_EFFORT else {}
    sess = Session(args)
    sess.defaults = defaults
    sess.tier_targets = tier_targets
    sess.tier_runner = load_tier_runner(args.backend_tier) if args.backend == "airlock" else {}
    report = []
    passed = failed = 0
    t_all = time.monotonic()
    try:
        build_errors = sess.compile_c(cases)
        sess.warm_up()
        for case in cases:
            if case.name in not_applicable:
                print(f"n/a  {case.name} [{case.category}] {not_applicable[case.name]}")
                report.append({"name": case.name, "category": case.category, "passed": None,
                               "not_applicable": not_applicable[case.name]})
                continue
            if case.name in build_errors:
                failed += 1
                print(f"FAIL {case.name}: does not compile:\n{build_errors[case.name]}")
                report.append({"name": case.name, "passed": False, "failures": ["does not compile"]})
                continue
            refused: list[str] = []
            if case.name in needs_cgroup:
                refused = check_refused(sess, case, defaults)
                print(f"     rootless: {'REFUSAL MISSING' if refused else 'refused as written'}; "
                      f"then run with best effort: {needs_cgroup[case.name]}")
                case = Case(case.name, case.file, case.category, case.expect, case.what,
                            {k: v for k, v in case.spec.items() if k not in CGROUP_ONLY_KEYS})
            ws = sess.prepare_ws(case)
            before = sess.snapshot(ws)
            res = sess.execute(case, ws, defaults, before)
            failures = refused + sess.judge(case, ws, before, res)
            out = res.outcome or {}
            summary = f"{res.wall:5.2f}s exit={out.get('exit_code')} sig={out.get('signal')} killed_by={out.get('killed_by')}"
            if failures:
                failed += 1
                print(f"FAIL {case.name} [{case.category}] {summary}")
                for x in failures:
                    print(f"     - {x}")
                if args.verbose:
                    print("     stdout: " + str(out.get("stdout", res.raw_stdout[:2000]))[:2000].replace("\n", "\n             "))
                    print("     stderr: " + str(out.get("stderr", res.raw_stderr[:2000]))[:1500].replace("\n", "\n             "))
            else:
                passed += 1
                print(f"ok   {case.name} [{case.category}] {summary}")
            for note in res.notes:
                print(f"     note: {note}")
            sys.stdout.flush()
            report.append({
                "name": case.name, "category": case.category, "expect": case.expect, "passed": not failures,
                "failures": failures, "wall_s": round(res.wall, 3), "exit_code": out.get("exit_code"),
                "signal": out.get("signal"), "killed_by": out.get("killed_by"),
                "stdout": str(out.get("stdout", ""))[:4000], "stderr": str(out.get("stderr", ""))[:2000],
                "notes": res.notes,
            })
            sess.cleanup_case(ws, args.keep)
    finally:
        if sess.airlock and sess._binary_sig(with_hash=True) != sess.airlock_sig:
            print("FAIL the airlock binary changed during the corpus run")
            failed += 1
        sess.close()
    if args.report:
        Path(args.report).write_text(json.dumps({"backend": args.backend, "tier": args.backend_tier,
                                                 "passed": passed, "failed": failed,
                                                 "not_applicable": len(not_applicable), "cases": report}, indent=1))
    print(f"corpus took {time.monotonic() - t_all:.0f}s with backend {args.backend} (tier {args.backend_tier})")
    if not_applicable:
        print(f"{passed} passed, {failed} failed, {len(not_applicable)} skipped")
    else:
        print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
