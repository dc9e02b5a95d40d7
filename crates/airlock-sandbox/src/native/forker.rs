//! The helper forker: a multi-threaded caller's way to get a helper without
//! re-executing the airlock binary for every sandbox.
//!
//! A server (`airlock serve`, `airlock mcp`) has many threads, so it cannot
//! fork a helper itself ([`super::prefork`] needs a single-threaded caller);
//! it used to spawn one per sandbox, fork and exec, and each exec paid for
//! loading and relocating the airlock binary again: about 1 ms of CPU per
//! sandbox, more than a third of building a warm one. Instead the backend
//! starts one small process once, the forker: the same binary, exec'd with
//! [`FORKER_ARG`], an empty environment (the helper's, [`protocol::HELPER_ENV`]
//! only) and `/` as its directory, which then only ever does one thing: for
//! each request on its socket, it forks a helper.
//!
//! The request is the new helper's descriptors, passed with `SCM_RIGHTS` in
//! the order the helper expects them (stdin, stdout, stderr, then
//! [`protocol::FD_REQUEST`]…): the forked child puts them at 0, 1, 2, … and
//! closes everything else, and is then exactly what a spawned helper is when
//! `main` starts. The fork uses `CLONE_PARENT`: the helper is the caller's
//! child, not the forker's, so the caller waits for it, reaps it and kills it
//! by pid as it would a spawned one, and the forker has nothing to reap. The
//! answer is the helper's pid.
//!
//! The forker holds no secret and no privilege the caller does not already
//! have, and nothing in a sandbox can reach it: it lives outside every
//! sandbox's pid and user namespaces. When the caller goes, its socket
//! reaches EOF and the forker exits. If it is gone (killed from outside), the
//! caller starts a new one for the next helper, and spawns that helper the
//! old way if even that fails. (A forker killed between its fork and its
//! answer leaves that one helper unknown to the caller: it sees EOF on its
//! request pipe and exits, and stays a zombie until the caller exits.)

use super::helper_process::helper_command;
use super::protocol;
use crate::sys;
use rustix::net::{
    recvmsg, sendmsg, AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags,
    SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;

/// The hidden first argument that turns the airlock binary into the forker.
pub const FORKER_ARG: &str = "__sandbox-forker";

/// Where the forker finds its socket.
const FD_SOCKET: RawFd = 3;

/// A helper's descriptors: stdin, stdout, stderr, request, report, control,
/// and a pooled helper's go and prepared pipes.
const MAX_FDS: usize = 8;

/// The caller's side: the forker, started on first use.
#[derive(Debug)]
pub(crate) struct Forker {
    exe: PathBuf,
    running: Mutex<Option<Running>>,
}

#[derive(Debug)]
struct Running {
    socket: OwnedFd,
    pid: libc::pid_t,
}

impl Running {
    /// Closes its socket (it exits on the EOF) and reaps it; `kill` first
    /// where it stopped answering.
    fn stop(self, kill: bool) {
        drop(self.socket);
        if kill {
            sys::kill(self.pid, libc::SIGKILL);
        }
        let _ = sys::waitpid(self.pid, 0);
    }
}

/// How long a request may wait for the forker's answer (a fork takes well
/// under a millisecond): past it, the forker is killed and replaced.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Forker {
    pub(crate) fn new(exe: PathBuf) -> Forker {
        Forker {
            exe,
            running: Mutex::new(None),
        }
    }

    /// A new helper holding `fds` at 0, 1, 2, …, as this process's child; its
    /// pid. An error means no helper was made (spawn one instead).
    pub(crate) fn fork_helper(&self, fds: &[BorrowedFd<'_>]) -> io::Result<libc::pid_t> {
        let mut running = self
            .running
            .lock()
            .map_err(|_| io::Error::other("the forker's lock is poisoned"))?;
        // A forker that went away since its last helper is replaced once.
        let mut failed = None;
        for _ in 0..2 {
            let forker = match running.take() {
                Some(forker) => forker,
                None => start(&self.exe)?,
            };
            match request(&forker.socket, fds) {
                Ok(pid) => {
                    *running = Some(forker);
                    return Ok(pid);
                }
                Err(e) => {
                    forker.stop(true);
                    failed = Some(e);
                }
            }
        }
        Err(failed.unwrap_or_else(|| io::Error::other("no forker")))
    }
}

impl Drop for Forker {
    fn drop(&mut self) {
        if let Some(running) = self.running.get_mut().ok().and_then(Option::take) {
            running.stop(false);
        }
    }
}

/// Spawns the forker: `exe FORKER_ARG`, its socket at [`FD_SOCKET`].
fn start(exe: &std::path::Path) -> io::Result<Running> {
    let (mine, theirs) = rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?;
    let mut cmd = helper_command(exe, FORKER_ARG, vec![(theirs.as_raw_fd(), FD_SOCKET)]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    rustix::net::sockopt::set_socket_timeout(
        &mine,
        rustix::net::sockopt::Timeout::Recv,
        Some(ANSWER_TIMEOUT),
    )?;
    let child = cmd.spawn()?;
    drop(theirs);
    Ok(Running {
        socket: mine,
        pid: child.id() as libc::pid_t,
    })
}

/// One request and its answer: the fds out, the pid (or the fork's errno) back.
fn request(socket: &OwnedFd, fds: &[BorrowedFd<'_>]) -> io::Result<libc::pid_t> {
    if fds.is_empty() || fds.len() > MAX_FDS {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("no room for the descriptors"));
    }
    sendmsg(
        socket,
        &[IoSlice::new(&[fds.len() as u8])],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    let mut answer = [0u8; 4];
    let got = rustix::io::read(socket, &mut answer)?;
    if got != answer.len() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the forker went away",
        ));
    }
    match i32::from_le_bytes(answer) {
        pid if pid > 0 => Ok(pid),
        errno => Err(io::Error::from_raw_os_error(-errno)),
    }
}

/// Runs the forker and never returns if this process was started as one.
pub fn maybe_run_forker() {
    if std::env::args_os().nth(1).is_some_and(|a| a == FORKER_ARG) {
        forker_main();
    }
}

/// The forker's loop: one helper per request, until its socket's EOF.
fn forker_main() -> ! {
    if !sys::is_socket(FD_SOCKET) {
        eprintln!("airlock: {FORKER_ARG} is internal to airlock's sandbox and is not meant to be run by hand");
        sys::exit_now(2);
    }
    // SAFETY: the caller passed this fd to us and nothing else owns it.
    let socket = unsafe { OwnedFd::from_raw_fd(FD_SOCKET) };
    // A terminal's Ctrl-C reaches the server's whole process group; the
    // server decides when this process ends (its socket's EOF). Helpers set
    // their own dispositions first thing.
    // SAFETY: signal dispositions are process-wide; this process has one thread.
    unsafe {
        for sig in [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP, libc::SIGTERM] {
            libc::signal(sig, libc::SIG_IGN);
        }
    }
    loop {
        let fds = match receive(&socket) {
            Ok(Some(fds)) => fds,
            Ok(None) | Err(_) => sys::exit_now(0),
        };
        // SIGCHLD as exit signal, and the caller as parent (CLONE_PARENT).
        let answer = match sys::clone_process(libc::CLONE_PARENT) {
            Ok(0) => become_helper(&fds),
            Ok(pid) => pid,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        };
        drop(fds);
        if rustix::io::write(&socket, &answer.to_le_bytes()).is_err() {
            sys::exit_now(0);
        }
    }
}

/// One request's descriptors, or `None` at EOF.
fn receive(socket: &OwnedFd) -> io::Result<Option<Vec<OwnedFd>>> {
    let mut count = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let msg = recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut count)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    if msg.bytes == 0 {
        return Ok(None);
    }
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = message {
            fds.extend(rights);
        }
    }
    if fds.len() != usize::from(count[0]) || fds.is_empty() {
        return Err(io::Error::other("a request's descriptors are missing"));
    }
    Ok(Some(fds))
}

/// The forked child: the descriptors to 0, 1, 2, …, nothing else open, then
/// the helper's own `main`.
fn become_helper(fds: &[OwnedFd]) -> ! {
    let mut pairs = [(0, 0); MAX_FDS];
    for (i, fd) in fds.iter().enumerate() {
        pairs[i] = (fd.as_fd().as_raw_fd(), i as RawFd);
    }
    if sys::place_fds(&pairs[..fds.len()]).is_err() {
        sys::exit_now(127);
    }
    sys::close_from(fds.len() as libc::c_uint);
    super::helper::helper_main()
}

/// The order [`become_helper`] places descriptors in is the protocol's.
const _: () = assert!(
    protocol::FD_REQUEST == 3
        && protocol::FD_REPORT == 4
        && protocol::FD_CONTROL == 5
        && protocol::FD_GO == 6
        && protocol::FD_PREPARED == 7
);
