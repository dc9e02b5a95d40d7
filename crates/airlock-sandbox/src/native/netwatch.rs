//! Seeing the network attempts that bypass the egress proxy, and refusing them.
//!
//! In allowlist mode the sandbox has an empty network namespace and its seccomp
//! layer lets AF_INET/AF_INET6 sockets exist (the relay and proxy-aware programs
//! need them). This module stacks one more seccomp filter that turns `connect`,
//! `sendmsg`, `sendmmsg`, `sendto` with a destination, and the creation of raw or
//! packet sockets into user notifications. A supervisor thread reads each
//! notification, reads the destination sockaddr from the caller's memory, records
//! a [`Violation`] naming it, and answers `EACCES` — unless the destination is the
//! relay's own loopback port (or a unix/netlink socket), which continues.
//!
//! Why this is safe to get wrong: the empty namespace is the wall; this filter is
//! the camera. If the supervisor dies, its listener closes and every watched call
//! fails with `ENOSYS` (a refusal, never an opening). A `CONTINUE` is subject to
//! the usual time-of-check race on user memory, but the only thing a raced
//! address can reach is another loopback port inside the same empty namespace.
//!
//! Lifecycle: [`install`] runs in the sandbox's PID 1 before it forks the command
//! (the filter is inherited), then [`Supervisor::spawn`] starts the thread that
//! owns the listener. PID 1's own relay threads are watched too: their
//! `connect()` to the proxy's unix socket continues.

use super::seccomp::assembler::{Action, Asm, Filter, Target, Verdict};
use crate::outcome::Violation;
use crate::Layer;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum NetwatchError {
    #[error("netwatch seccomp filter could not be installed: {0}")]
    Install(#[source] io::Error),
    #[error("netwatch supervisor could not start: {0}")]
    Supervisor(#[source] io::Error),
    #[error("netwatch is not built for this architecture")]
    Unsupported,
}

impl From<NetwatchError> for crate::SandboxError {
    fn from(e: NetwatchError) -> Self {
        crate::SandboxError::Layer {
            layer: Layer::Netwatch,
            detail: e.to_string(),
        }
    }
}

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7;

/// The filter program, built by the sandbox's one assembler. Everything not
/// listed is ALLOW here: the sandbox's main seccomp layer decides those, and
/// the strictest action of stacked filters wins. A separate filter (not part
/// of the main one) because it is installed in PID 1, whose relay threads it
/// watches too, and its listener belongs to PID 1's supervisor.
pub(crate) fn program() -> Result<Vec<libc::sock_filter>, crate::SandboxError> {
    let nr = |n: libc::c_long| n as u32;
    // Foreign architectures: ALLOW here, the main layer kills them.
    let mut f = Filter::new(AUDIT_ARCH, Action::Allow, Action::Allow);
    for n in [libc::SYS_connect, libc::SYS_sendmsg, libc::SYS_sendmmsg] {
        f.set(nr(n), Verdict::Always(Action::UserNotif));
    }
    // sendto with a NULL destination writes to a connected socket, judged at connect.
    f.set(
        nr(libc::SYS_sendto),
        Verdict::Args(Box::new(|asm: &mut Asm| {
            let notify = asm.label();
            asm.load_arg_low(4);
            asm.jeq(0, Target::Next, Target::Label(notify));
            asm.load_arg_high(4);
            asm.jeq(0, Target::Next, Target::Label(notify));
            asm.ret(Action::Allow);
            asm.bind(notify);
            asm.ret(Action::UserNotif);
        })),
    );
    // socket(domain, type, protocol): packet and raw sockets are watched.
    f.set(
        nr(libc::SYS_socket),
        Verdict::Args(Box::new(|asm: &mut Asm| {
            let notify = asm.label();
            asm.load_arg_low(0);
            asm.jeq(libc::AF_PACKET as u32, Target::Label(notify), Target::Next);
            asm.load_arg_low(1);
            asm.and(0xf);
            asm.jeq(libc::SOCK_RAW as u32, Target::Label(notify), Target::Next);
            asm.ret(Action::Allow);
            asm.bind(notify);
            asm.ret(Action::UserNotif);
        })),
    );
    f.assemble()
}

/// Install the watching filter on the calling thread (inherited by every thread
/// and process it creates afterwards) and return the notification listener.
///
/// The caller must hold `CAP_SYS_ADMIN` in its user namespace or have set
/// `no_new_privs`. Call it before any other thread exists.
pub fn install() -> Result<OwnedFd, NetwatchError> {
    if !cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        return Err(NetwatchError::Unsupported);
    }
    let program = program().map_err(|e| NetwatchError::Install(io::Error::other(e.to_string())))?;
    let fd = super::seccomp::load(
        &program,
        libc::SECCOMP_FILTER_FLAG_NEW_LISTENER as libc::c_uint,
    )
    .map_err(NetwatchError::Install)?;
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// What the supervisor lets through.
#[derive(Debug, Clone, Default)]
pub struct WatchRules {
    /// Exact destinations that continue (the relay's loopback ports).
    pub pass: Vec<SocketAddr>,
    /// Let every loopback destination continue (servers the command runs itself).
    /// Off by default: only the relay is reachable.
    pub pass_loopback: bool,
}

/// At most this many distinct violations are kept; repeats only bump a count.
const MAX_VIOLATIONS: usize = 256;

/// The thread that answers notifications. Dropping it (or [`Supervisor::stop`])
/// closes the listener: watched calls fail with `ENOSYS` from then on.
pub struct Supervisor {
    violations: Arc<Mutex<Vec<Violation>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Supervisor {
    pub fn spawn(listener: OwnedFd, rules: WatchRules) -> Result<Supervisor, NetwatchError> {
        let violations = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (v, s) = (violations.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("airlock-netwatch".into())
            .stack_size(256 * 1024)
            .spawn(move || supervise(listener, &rules, &v, &s))
            .map_err(NetwatchError::Supervisor)?;
        Ok(Supervisor {
            violations,
            stop,
            thread: Some(thread),
        })
    }

    pub fn violations(&self) -> Vec<Violation> {
        self.violations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn stop(mut self) -> Vec<Violation> {
        self.halt();
        self.violations()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.halt();
    }
}

fn notif_buffer_len() -> usize {
    let mut sizes = libc::seccomp_notif_sizes {
        seccomp_notif: 0,
        seccomp_notif_resp: 0,
        seccomp_data: 0,
    };
    // SAFETY: SECCOMP_GET_NOTIF_SIZES writes one seccomp_notif_sizes into `sizes`.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_GET_NOTIF_SIZES,
            0,
            &mut sizes as *mut libc::seccomp_notif_sizes,
        )
    };
    let ours = std::mem::size_of::<libc::seccomp_notif>();
    if rc == 0 {
        ours.max(sizes.seccomp_notif as usize)
    } else {
        ours
    }
}

fn supervise(
    listener: OwnedFd,
    rules: &WatchRules,
    violations: &Mutex<Vec<Violation>>,
    stop: &AtomicBool,
) {
    let fd = listener.as_raw_fd();
    // u64 words keep the buffer aligned for seccomp_notif.
    let mut buf = vec![0u64; notif_buffer_len().div_ceil(8)];
    while !stop.load(Ordering::SeqCst) {
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, count 1.
        let ready = unsafe { libc::poll(&mut pfd, 1, 100) };
        if ready <= 0 {
            continue;
        }
        if pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
            && pfd.revents & libc::POLLIN == 0
        {
            break; // every watched task is gone
        }
        buf.iter_mut().for_each(|w| *w = 0);
        // SAFETY: `buf` is zeroed, aligned and at least as large as the kernel's
        // seccomp_notif (checked with SECCOMP_GET_NOTIF_SIZES).
        let rc = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, buf.as_mut_ptr()) };
        if rc != 0 {
            continue; // EINTR, or the caller died before we read it (ENOENT)
        }
        // SAFETY: the kernel filled a seccomp_notif at the start of `buf`.
        let req: libc::seccomp_notif =
            unsafe { std::ptr::read(buf.as_ptr() as *const libc::seccomp_notif) };
        let (answer, seen) = judge(&req, rules);
        // The memory we read belonged to this notification only if it is still pending.
        // SAFETY: ID_VALID reads one u64 from the pointer.
        let valid = unsafe {
            libc::ioctl(
                fd,
                libc::SECCOMP_IOCTL_NOTIF_ID_VALID,
                &req.id as *const u64,
            )
        } == 0;
        if !valid {
            continue;
        }
        if let Some(seen) = seen {
            record(violations, seen);
        }
        let mut resp = libc::seccomp_notif_resp {
            id: req.id,
            val: 0,
            error: 0,
            flags: 0,
        };
        match answer {
            Answer::Continue => resp.flags = libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
            Answer::Refuse(errno) => resp.error = -errno,
        }
        // SAFETY: one seccomp_notif_resp; failure means the caller is gone.
        let _ = unsafe {
            libc::ioctl(
                fd,
                libc::SECCOMP_IOCTL_NOTIF_SEND,
                &mut resp as *mut libc::seccomp_notif_resp,
            )
        };
    }
    drop(listener);
}

enum Answer {
    Continue,
    Refuse(i32),
}

/// What one blocked attempt was.
struct Seen {
    syscall: &'static str,
    destination: Option<SocketAddr>,
    what: String,
    pid: u32,
}

fn record(violations: &Mutex<Vec<Violation>>, seen: Seen) {
    let mut list = violations.lock().unwrap_or_else(|e| e.into_inner());
    let detail = format!("blocked: {} (not via proxy)", seen.what);
    if let Some(v) = list.iter_mut().find(|v| v.detail == detail) {
        let count = v.data.get("count").and_then(|c| c.as_u64()).unwrap_or(1) + 1;
        v.data["count"] = serde_json::json!(count);
        return;
    }
    if list.len() >= MAX_VIOLATIONS {
        return;
    }
    list.push(Violation {
        kind: crate::ViolationKind::Network,
        detail,
        data: serde_json::json!({
            "source": "netwatch",
            "syscall": seen.syscall,
            "destination": seen.destination.map(|d| d.to_string()),
            "pid": seen.pid,
            "count": 1,
        }),
    });
}

fn judge(req: &libc::seccomp_notif, rules: &WatchRules) -> (Answer, Option<Seen>) {
    let args = req.data.args;
    let pid = req.pid;
    let nr = req.data.nr as libc::c_long;
    let refuse = |syscall: &'static str, destination: Option<SocketAddr>, what: String| {
        (
            Answer::Refuse(libc::EACCES),
            Some(Seen {
                syscall,
                destination,
                what,
                pid,
            }),
        )
    };
    if nr == libc::SYS_socket {
        let family = args[0] as i32;
        let what = match family {
            libc::AF_PACKET => "packet socket".to_string(),
            libc::AF_INET => "raw socket (AF_INET)".to_string(),
            libc::AF_INET6 => "raw socket (AF_INET6)".to_string(),
            other => format!("raw socket (family {other})"),
        };
        return refuse("socket", None, what);
    }
    let (syscall, dests): (&'static str, Vec<Option<Dest>>) = if nr == libc::SYS_connect {
        (
            "connect",
            vec![read_sockaddr(pid, args[1], args[2] as usize)],
        )
    } else if nr == libc::SYS_sendto {
        (
            "sendto",
            vec![read_sockaddr(pid, args[4], args[5] as usize)],
        )
    } else if nr == libc::SYS_sendmsg {
        ("sendmsg", vec![read_msg_name(pid, args[1])])
    } else if nr == libc::SYS_sendmmsg {
        let count = (args[2] as usize).min(1024);
        let stride = std::mem::size_of::<libc::mmsghdr>() as u64;
        (
            "sendmmsg",
            (0..count as u64)
                .map(|i| read_msg_name(pid, args[1] + i * stride))
                .collect(),
        )
    } else {
        return (Answer::Continue, None);
    };
    for dest in dests {
        match dest {
            Some(Dest::None) | Some(Dest::Local) => {}
            Some(Dest::Inet(addr)) if passes(addr, rules) => {}
            Some(Dest::Inet(addr)) => {
                let what = if syscall == "connect" {
                    format!("connect to {addr}")
                } else if addr.port() == 53 {
                    format!("DNS query to {addr}")
                } else {
                    format!("send to {addr}")
                };
                return refuse(syscall, Some(addr), what);
            }
            Some(Dest::Other(family)) => {
                return refuse(
                    syscall,
                    None,
                    format!("{syscall} on address family {family}"),
                )
            }
            // Unreadable memory: refuse without naming a destination.
            None => return refuse(syscall, None, format!("{syscall} to an unreadable address")),
        }
    }
    (Answer::Continue, None)
}

fn passes(addr: SocketAddr, rules: &WatchRules) -> bool {
    let ip = match addr.ip() {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    let addr = SocketAddr::new(ip, addr.port());
    rules.pass.contains(&addr) || (rules.pass_loopback && ip.is_loopback())
}

enum Dest {
    /// No address (connected socket) or AF_UNSPEC (disconnect).
    None,
    /// Unix or netlink: stays on this machine's kernel.
    Local,
    Inet(SocketAddr),
    Other(u16),
}

fn read_msg_name(pid: u32, msghdr_addr: u64) -> Option<Dest> {
    let raw = read_remote(pid, msghdr_addr, std::mem::size_of::<libc::msghdr>())?;
    // SAFETY: `raw` holds exactly size_of::<msghdr>() bytes; read_unaligned copes
    // with the Vec's alignment.
    let hdr: libc::msghdr = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    read_sockaddr(pid, hdr.msg_name as u64, hdr.msg_namelen as usize)
}

fn read_sockaddr(pid: u32, addr: u64, len: usize) -> Option<Dest> {
    if addr == 0 || len == 0 {
        return Some(Dest::None);
    }
    let raw = read_remote(pid, addr, len.min(128))?;
    if raw.len() < 2 {
        return None;
    }
    let family = u16::from_ne_bytes([raw[0], raw[1]]);
    let port = |r: &[u8]| u16::from_be_bytes([r[2], r[3]]);
    Some(match family as i32 {
        libc::AF_UNSPEC => Dest::None,
        libc::AF_UNIX | libc::AF_NETLINK => Dest::Local,
        libc::AF_INET if raw.len() >= 8 => Dest::Inet(SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(raw[4], raw[5], raw[6], raw[7])),
            port(&raw),
        )),
        libc::AF_INET6 if raw.len() >= 24 => {
            let mut a = [0u8; 16];
            a.copy_from_slice(&raw[8..24]);
            Dest::Inet(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port(&raw)))
        }
        libc::AF_INET | libc::AF_INET6 => return None,
        other => Dest::Other(other as u16),
    })
}

/// Read `len` bytes at `addr` in process `pid`: process_vm_readv, then /proc/pid/mem.
fn read_remote(pid: u32, addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: len,
    };
    // SAFETY: `local` describes `buf` (len bytes, writable); the kernel checks `remote`.
    let n = unsafe { libc::process_vm_readv(pid as libc::pid_t, &local, 1, &remote, 1, 0) };
    if n == len as isize {
        return Some(buf);
    }
    use std::os::unix::fs::FileExt;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    mem.read_exact_at(&mut buf, addr).ok()?;
    Some(buf)
}

/// Poll interval is short; this is only here so that tests can wait for a
/// notification to be answered before reading the log.
pub const SUPERVISOR_TICK: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;
    use std::process::Command;

    const INNER_ENV: &str = "AIRLOCK_NETWATCH_INNER";

    /// What the filter hands to the supervisor (the escape corpus and the
    /// namespace test below show the supervisor's answers).
    #[test]
    fn filter_notifies_exactly_the_watched_calls() {
        use crate::native::seccomp::assembler::interp::{run, Data};
        let prog = program().unwrap();
        let ask = |n: libc::c_long, args: [u64; 6]| {
            run(
                &prog,
                &Data {
                    nr: n as u32,
                    arch: AUDIT_ARCH,
                    args,
                },
            )
            .ret
        };
        let notify = libc::SECCOMP_RET_USER_NOTIF;
        let allow = libc::SECCOMP_RET_ALLOW;
        assert_eq!(ask(libc::SYS_connect, [0; 6]), notify);
        assert_eq!(ask(libc::SYS_sendmsg, [0; 6]), notify);
        assert_eq!(ask(libc::SYS_sendmmsg, [0; 6]), notify);
        assert_eq!(ask(libc::SYS_sendto, [0; 6]), allow);
        assert_eq!(ask(libc::SYS_sendto, [0, 0, 0, 0, 0x1000, 0]), notify);
        assert_eq!(ask(libc::SYS_sendto, [0, 0, 0, 0, 1 << 32, 0]), notify);
        let packet = libc::AF_PACKET as u64;
        let raw = libc::SOCK_RAW as u64;
        assert_eq!(ask(libc::SYS_socket, [packet, 3, 0, 0, 0, 0]), notify);
        assert_eq!(
            ask(libc::SYS_socket, [2, raw | 0x80000, 0, 0, 0, 0]),
            notify
        );
        assert_eq!(ask(libc::SYS_socket, [2, 1, 0, 0, 0, 0]), allow);
        assert_eq!(ask(libc::SYS_read, [0; 6]), allow);
        let foreign = Data {
            nr: libc::SYS_connect as u32,
            arch: 0x4000_0003,
            args: [0; 6],
        };
        assert_eq!(run(&prog, &foreign).ret, allow);
    }

    /// Runs in a fresh user + network namespace (started by the test below):
    /// installs the filter, runs real programs that try to leave, prints what the
    /// supervisor saw. Ignored on its own: it is meaningful only inside that namespace.
    #[test]
    #[ignore]
    fn inner_supervised_attempts() {
        if std::env::var_os(INNER_ENV).is_none() {
            return;
        }
        let relay = TcpListener::bind("127.0.0.1:0").unwrap();
        let canary = TcpListener::bind("127.0.0.1:0").unwrap();
        canary.set_nonblocking(true).unwrap();
        let relay_addr = relay.local_addr().unwrap();
        let canary_addr = canary.local_addr().unwrap();
        let listener = install().expect("install netwatch filter");
        let sup = Supervisor::spawn(
            listener,
            WatchRules {
                pass: vec![relay_addr],
                pass_loopback: false,
            },
        )
        .unwrap();
        let script = format!(
            r#"
import socket, json, errno
out = {{}}
def attempt(name, fn):
    try:
        fn(); out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
def tcp(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM); s.settimeout(3); s.connect(addr); s.sendall(b"hi"); s.close()
def udp_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"\x12\x34" + b"\0"*10, ("192.0.2.53", 53))
def udp_sendmsg():
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.sendmsg([b"x"], [], 0, ("2001:db8::53", 53))
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0x0300)
attempt("direct", lambda: tcp(("192.0.2.1", 443)))
attempt("dns", udp_dns)
attempt("sendmsg6", udp_sendmsg)
attempt("canary", lambda: tcp(("127.0.0.1", {cport})))
attempt("raw", raw)
attempt("packet", packet)
attempt("relay", lambda: tcp(("127.0.0.1", {rport})))
print(json.dumps(out))
"#,
            cport = canary_addr.port(),
            rport = relay_addr.port()
        );
        let out = Command::new("python3")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("run python3");
        let (mut relay_conn, _) = relay.accept().unwrap();
        let mut got = Vec::new();
        relay_conn.read_to_end(&mut got).unwrap();
        let canary_got = match canary.accept() {
            Ok(_) => "connection",
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => "nothing",
            Err(_) => "error",
        };
        let violations = sup.stop();
        let result = serde_json::json!({
            "python": String::from_utf8_lossy(&out.stdout).trim(),
            "python_stderr": String::from_utf8_lossy(&out.stderr),
            "relay_received": String::from_utf8_lossy(&got),
            "canary": canary_got,
            "canary_port": canary_addr.port(),
            "violations": violations,
        });
        println!("NETWATCH-RESULT {result}");
    }

    #[test]
    fn direct_attempts_are_refused_and_logged() {
        let exe = std::env::current_exe().unwrap();
        let out = Command::new("unshare")
            .args([
                "-Urn",
                "sh",
                "-c",
                "ip link set lo up && exec \"$0\" \"$@\"",
            ])
            .arg(&exe)
            .args([
                "--exact",
                "native::netwatch::tests::inner_supervised_attempts",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(INNER_ENV, "1")
            .output()
            .expect("unshare must exist (util-linux)");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("NETWATCH-RESULT ").map(|(_, j)| j.to_string()))
            .unwrap_or_else(|| {
                panic!(
                    "no result; stdout={stdout} stderr={}",
                    String::from_utf8_lossy(&out.stderr)
                )
            });
        let r: serde_json::Value = serde_json::from_str(&line).unwrap();
        let py: serde_json::Value = serde_json::from_str(r["python"].as_str().unwrap())
            .unwrap_or_else(|_| panic!("python output: {r}"));
        assert_eq!(py["direct"], "EACCES", "{r}");
        assert_eq!(py["dns"], "EACCES", "{r}");
        assert_eq!(py["sendmsg6"], "EACCES", "{r}");
        assert_eq!(py["canary"], "EACCES", "{r}");
        assert_eq!(py["relay"], "ok", "{r}");
        // Root of this user namespace owns its network namespace, so the kernel
        // would open raw and packet sockets: the refusals are netwatch's.
        assert_eq!(py["raw"], "EACCES", "{r}");
        assert_eq!(py["packet"], "EACCES", "{r}");
        assert_eq!(r["relay_received"], "hi", "the relay port stays reachable");
        assert_eq!(
            r["canary"], "nothing",
            "a refused loopback connect must not arrive"
        );
        let details: Vec<String> = r["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["detail"].as_str().unwrap().to_string())
            .collect();
        let cport = r["canary_port"].as_u64().unwrap();
        for want in [
            "blocked: connect to 192.0.2.1:443 (not via proxy)".to_string(),
            "blocked: DNS query to 192.0.2.53:53 (not via proxy)".to_string(),
            "blocked: DNS query to [2001:db8::53]:53 (not via proxy)".to_string(),
            format!("blocked: connect to 127.0.0.1:{cport} (not via proxy)"),
        ] {
            assert!(details.contains(&want), "missing {want:?} in {details:?}");
        }
        for want in [
            "blocked: raw socket (AF_INET) (not via proxy)",
            "blocked: packet socket (not via proxy)",
        ] {
            assert!(
                details.contains(&want.to_string()),
                "{want:?} not in {details:?}"
            );
        }
        assert!(
            !details
                .iter()
                .any(|d| d.contains("127.0.0.1") && !d.contains(&cport.to_string())),
            "{details:?}"
        );
    }
}
