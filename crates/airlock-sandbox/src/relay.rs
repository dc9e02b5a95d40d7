//! The relay of network allowlist mode, shared by the backends.
//!
//! The sandbox has an empty network namespace; its only way out is the host
//! egress proxy's unix socket. Programs speak TCP to a proxy
//! (`HTTP_PROXY=http://127.0.0.1:3128`, `ALL_PROXY=socks5h://127.0.0.1:1080`), so
//! something in that namespace listens there: one thread per port accepts a
//! connection and hands the accepted socket itself to the proxy over the unix
//! socket (`SCM_RIGHTS`, behind one [`HANDOFF_BYTE`]). The relay never copies a
//! byte: the proxy reads the request, judges it and splices the tunnel straight
//! between this socket and the upstream one, so bulk data crosses two loopback
//! legs, as through any proxy. The proxy tells HTTP from SOCKS5 by the first
//! byte, so both ports lead to the same socket.
//!
//! Who runs it: under the native backend the sandbox's PID 1 (the proxy socket
//! bound into the sandbox at [`SOCKET_IN_SANDBOX`]); under the OCI backend
//! (crun, runc) the helper on the host, which makes the empty network namespace,
//! binds the listeners in it and has the container join it (nothing of the
//! relay runs in the container, and the proxy socket is not bound into it).
//! gVisor's own network stack is out of any host namespace's reach, and a
//! Docker-API daemon makes its container's namespace only as it starts it:
//! there the copying relay of `crates/airlock-relay` runs inside
//! ([`exec_args`]). A
//! listening socket stays in the namespace it was made in, so any process that
//! can enter a sandbox's network namespace (`setns`) can bind the relay there
//! and serve it from outside.
//!
//! Bind before the command exists (so its first connect finds a listener) and
//! call [`Relay::start`] after any fork (so no relay thread exists while the
//! process forks).

use rustix::net::{sendmsg, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
use std::io::{self, IoSlice};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::{Layer, SandboxError};

/// Loopback port of the HTTP proxy inside the sandbox.
pub const HTTP_PORT: u16 = 3128;
/// Loopback port of the SOCKS5 proxy inside the sandbox.
pub const SOCKS_PORT: u16 = 1080;
/// Where the proxy socket is bound inside the sandbox.
pub const SOCKET_IN_SANDBOX: &str = "/run/airlock/proxy.sock";
/// Where the in-sandbox relay binary is bound, for the backends that run it
/// inside (see [`relay_binary`]).
pub const BINARY_IN_SANDBOX: &str = "/run/airlock/relay";
/// The variable naming the in-sandbox relay binary, when it is not next to
/// the airlock binary.
pub const BINARY_ENV: &str = "AIRLOCK_RELAY";

/// The byte a handed-over connection travels behind. Must equal
/// `airlock_netproxy::client::HANDOFF_BYTE`; neither HTTP nor SOCKS5 starts with it.
pub const HANDOFF_BYTE: u8 = 0;
const THREAD_STACK: usize = 64 * 1024;

/// The environment that steers curl, pip, git, npm and Python's urllib to the relay.
pub fn proxy_env(http_port: u16, socks_port: u16) -> Vec<(String, String)> {
    let http = format!("http://127.0.0.1:{http_port}");
    let socks = format!("socks5h://127.0.0.1:{socks_port}");
    let no_proxy = "localhost,127.0.0.1,::1".to_string();
    let mut env = Vec::new();
    for (name, value) in [
        ("HTTP_PROXY", &http),
        ("HTTPS_PROXY", &http),
        ("ALL_PROXY", &socks),
        ("NO_PROXY", &no_proxy),
    ] {
        env.push((name.to_string(), value.clone()));
        env.push((name.to_ascii_lowercase(), value.clone()));
    }
    env
}

/// The in-sandbox relay, `airlock-relay` (crates/airlock-relay), for the
/// backends whose sandbox no host-side listener can serve (gVisor's own network
/// stack, a container whose namespace the daemon makes as the command starts):
/// bound into the sandbox at [`BINARY_IN_SANDBOX`] and started by
/// [`exec_args`]. It must be linked statically, since it runs on the sandbox's
/// root filesystem (a container image of any distribution). Looked for in
/// `$AIRLOCK_RELAY`, then next to the running executable.
pub fn relay_binary() -> Result<PathBuf, SandboxError> {
    let missing = |detail: String| SandboxError::Layer {
        layer: Layer::Network,
        detail: format!(
            "{detail}. Hint: build it with `scripts/build-relay --install DIR`, DIR being the \
             directory of the airlock binary, or set {BINARY_ENV} to its path"
        ),
    };
    let path = match std::env::var_os(BINARY_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => {
            let exe = std::env::current_exe()
                .map_err(|e| missing(format!("the in-sandbox relay: locating airlock: {e}")))?;
            exe.with_file_name("airlock-relay")
        }
    };
    check_static(&path)
        .map_err(|e| missing(format!("the in-sandbox relay {}: {e}", path.display())))?;
    Ok(path)
}

/// An executable ELF file without a program interpreter (statically linked).
fn check_static(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err("not an executable file".into());
    }
    let elf = std::fs::read(path).map_err(|e| e.to_string())?;
    match elf_has_interpreter(&elf) {
        Some(false) => Ok(()),
        Some(true) => Err("dynamically linked (it must run on any image's root; \
                           scripts/build-relay links it statically)"
            .into()),
        None => Err("not a 64-bit little-endian ELF executable".into()),
    }
}

/// Whether a 64-bit little-endian ELF image has a PT_INTERP program header;
/// None when it is not such an image.
fn elf_has_interpreter(elf: &[u8]) -> Option<bool> {
    const PT_INTERP: u32 = 3;
    let u16_at = |o: usize| Some(u16::from_le_bytes(elf.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(elf.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(elf.get(o..o + 8)?.try_into().ok()?));
    if elf.get(..6)? != b"\x7fELF\x02\x01" {
        return None;
    }
    let phoff = usize::try_from(u64_at(0x20)?).ok()?;
    let phentsize = usize::from(u16_at(0x36)?);
    let phnum = usize::from(u16_at(0x38)?);
    for i in 0..phnum {
        if u32_at(phoff.checked_add(i.checked_mul(phentsize)?)?)? == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

/// The sandbox's process arguments in the in-sandbox relay's mode: the relay
/// binds the standard ports on the sandbox's loopback, forwards them to the
/// proxy socket bound at [`SOCKET_IN_SANDBOX`], and runs `command` as its
/// child, as the sandbox's PID 1.
pub fn exec_args(command: &[String]) -> Vec<String> {
    let mut args: Vec<String> = [
        BINARY_IN_SANDBOX,
        "exec",
        "--unix",
        SOCKET_IN_SANDBOX,
        "--listen",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("127.0.0.1:{HTTP_PORT}"));
    args.push("--listen".into());
    args.push(format!("127.0.0.1:{SOCKS_PORT}"));
    args.push("--".into());
    args.extend(command.iter().cloned());
    args
}

/// The container's process arguments in network mode open on the Docker API:
/// the relay binary restricts itself with landlock's abstract-unix-socket
/// scope and becomes `command` (`airlock-relay scope`).
pub fn scope_args(command: &[String]) -> Vec<String> {
    let mut args = vec![BINARY_IN_SANDBOX.to_string(), "scope".into(), "--".into()];
    args.extend(command.iter().cloned());
    args
}

/// Bound listeners, not yet accepting.
pub struct Relay {
    listeners: Vec<TcpListener>,
    target: PathBuf,
}

impl Relay {
    /// Listen on each address (normally [`HTTP_PORT`] and [`SOCKS_PORT`] on
    /// 127.0.0.1) and forward to the unix socket at `target`.
    pub fn bind(addrs: &[SocketAddr], target: &Path) -> io::Result<Relay> {
        let listeners = addrs
            .iter()
            .map(TcpListener::bind)
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Relay {
            listeners,
            target: target.to_path_buf(),
        })
    }

    /// The standard pair of ports on 127.0.0.1.
    pub fn bind_standard(target: &Path) -> io::Result<Relay> {
        let at = |port| SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, port));
        Relay::bind(&[at(HTTP_PORT), at(SOCKS_PORT)], target)
    }

    pub fn local_addrs(&self) -> io::Result<Vec<SocketAddr>> {
        self.listeners.iter().map(TcpListener::local_addr).collect()
    }

    /// Start one accept thread per listener. The threads live as long as the
    /// process (the sandbox's PID 1, or the backend's helper, ends with the run).
    pub fn start(self) -> io::Result<()> {
        let target = Arc::new(self.target);
        for listener in self.listeners {
            let target = target.clone();
            std::thread::Builder::new()
                .name("airlock-relay".into())
                .stack_size(THREAD_STACK)
                .spawn(move || accept_loop(listener, &target))?;
        }
        Ok(())
    }
}

fn accept_loop(listener: TcpListener, target: &Path) {
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        // A failed handoff drops the connection: the program sees it closed, and
        // nothing leaves the sandbox another way.
        let _ = hand_over(client, target);
    }
}

/// Pass `client` to the proxy and forget it: the proxy holds the only copy after.
fn hand_over(client: TcpStream, target: &Path) -> io::Result<()> {
    let _ = client.set_nodelay(true);
    let proxy = UnixStream::connect(target)?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [client.as_fd()];
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Err(io::Error::other("no room for the descriptor"));
    }
    sendmsg(
        &proxy,
        &[IoSlice::new(&[HANDOFF_BYTE])],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::Shutdown;
    use std::os::unix::net::UnixListener;

    /// The proxy side of a handoff: the byte and the descriptor behind it.
    fn receive(s: &UnixStream) -> (Vec<u8>, Vec<std::os::fd::OwnedFd>) {
        use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
        let mut byte = [0xffu8; 1];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = recvmsg(
            s,
            &mut [io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .unwrap();
        let mut fds = Vec::new();
        for m in control.drain() {
            if let RecvAncillaryMessage::ScmRights(r) = m {
                fds.extend(r);
            }
        }
        (byte[..got.bytes].to_vec(), fds)
    }

    #[test]
    fn hands_the_accepted_socket_itself_to_the_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("p.sock");
        let proxy = UnixListener::bind(&sock).unwrap();
        let relay = Relay::bind(&["127.0.0.1:0".parse().unwrap()], &sock).unwrap();
        let addr = relay.local_addrs().unwrap()[0];
        relay.start().unwrap();

        let mut program = TcpStream::connect(addr).unwrap();
        let (conn, _) = proxy.accept().unwrap();
        let (bytes, mut fds) = receive(&conn);
        assert_eq!(bytes, [HANDOFF_BYTE]);
        assert_eq!(fds.len(), 1, "exactly one descriptor");
        // The relay kept nothing: the unix connection is closed behind the handoff.
        let mut rest = Vec::new();
        (&conn).read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());

        // The descriptor is the program's connection: both ways, and EOF reaches
        // the program only when the proxy closes it.
        let handed = TcpStream::from(fds.remove(0));
        assert_eq!(handed.local_addr().unwrap(), addr);
        assert_eq!(handed.peer_addr().unwrap(), program.local_addr().unwrap());
        program.write_all(b"CONNECT a.test:443").unwrap();
        program.shutdown(Shutdown::Write).unwrap();
        let mut got = Vec::new();
        (&handed).read_to_end(&mut got).unwrap();
        assert_eq!(got, b"CONNECT a.test:443");
        (&handed).write_all(b"HTTP/1.1 200").unwrap();
        drop(handed);
        let mut back = Vec::new();
        program.read_to_end(&mut back).unwrap();
        assert_eq!(back, b"HTTP/1.1 200");
    }

    #[test]
    fn without_a_proxy_the_program_sees_its_connection_closed() {
        let dir = tempfile::tempdir().unwrap();
        let relay = Relay::bind(
            &["127.0.0.1:0".parse().unwrap()],
            &dir.path().join("absent.sock"),
        )
        .unwrap();
        let addr = relay.local_addrs().unwrap()[0];
        relay.start().unwrap();
        let mut program = TcpStream::connect(addr).unwrap();
        let mut back = Vec::new();
        let closed = program.read_to_end(&mut back);
        assert!(back.is_empty(), "{closed:?}");
    }

    #[test]
    fn the_relay_binary_must_be_a_static_executable() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("script");
        std::fs::write(&text, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&text, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        assert!(check_static(&text).unwrap_err().contains("not a 64-bit"));
        assert!(check_static(&dir.path().join("absent")).is_err());
        // The test binary itself is linked dynamically.
        let me = std::env::current_exe().unwrap();
        assert!(check_static(&me)
            .unwrap_err()
            .contains("dynamically linked"));
        assert_eq!(elf_has_interpreter(b"\x7fELF\x02\x01"), None, "truncated");
    }

    #[test]
    fn exec_args_start_the_relay_then_the_command() {
        let args = exec_args(&["sh".into(), "-c".into(), "-- x".into()]);
        assert_eq!(args[0], BINARY_IN_SANDBOX);
        assert_eq!(args[1], "exec");
        let dash = args.iter().position(|a| a == "--").unwrap();
        assert_eq!(args[dash + 1..], ["sh", "-c", "-- x"]);
        assert!(args.contains(&format!("127.0.0.1:{HTTP_PORT}")));
        assert!(args.contains(&SOCKET_IN_SANDBOX.to_string()));
    }

    #[test]
    fn env_has_both_cases() {
        let env = proxy_env(HTTP_PORT, SOCKS_PORT);
        for name in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "no_proxy"] {
            assert!(env.iter().any(|(k, _)| k == name), "{name}");
        }
        assert!(env.contains(&("all_proxy".into(), "socks5h://127.0.0.1:1080".into())));
    }
}
