//! `airlock-relay`, the in-sandbox half of the egress relay (see the
//! library's docs).
//!
//! ```text
//! airlock-relay vm PORT_DEVICE ADDR...
//! airlock-relay exec --unix SOCKET --listen ADDR [--listen ADDR]... -- CMD [ARG]...
//! ```
//!
//! `vm`: run by a microVM guest's init as root before the command starts;
//! prints [`READY`] once every listener is bound and exits when the host
//! closes the port (the VM is going down anyway).
//!
//! `exec`: the first program of a gVisor sandbox or container. It starts the
//! copying relay as a process of its own (`serve`, below), waits until its
//! listeners are bound, and then executes CMD in its own place, so the command
//! keeps the process the runtime started (its PID, its exit status). The relay
//! process ends with the command: with the sandbox's PID namespace when the
//! command is its PID 1, and otherwise when it sees that its parent is gone.
//! Failures before the command runs exit 126 (127: CMD not found) with a line
//! naming what failed.
//!
//! `serve` (internal, started by `exec`): binds, prints [`READY`] or
//! `error: ...` on stdout, and relays until its parent goes away.

use airlock_relay::copy::Relay;
use airlock_relay::mux::{Local, Mux, Role};
use airlock_relay::READY;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

const USAGE: &str = "usage: airlock-relay vm PORT_DEVICE ADDR...\n       \
     airlock-relay exec --unix SOCKET --listen ADDR [--listen ADDR]... -- CMD [ARG]...";
/// The command's own exit statuses for "could not run it" (as shells use them).
const SETUP_FAILED: u8 = 126;
const NOT_FOUND: u8 = 127;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("vm") => vm(&args[1..]),
        Some("exec") => exec(&args[1..]),
        Some("serve") => serve(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// The copying relay's arguments, and for `exec` the command after `--`.
struct CopyArgs {
    socket: PathBuf,
    listen: Vec<SocketAddr>,
    command: Vec<String>,
}

fn parse_copy(args: &[String]) -> Result<CopyArgs, String> {
    let mut socket = None;
    let mut listen = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--unix" => socket = Some(PathBuf::from(it.next().ok_or("--unix needs a path")?)),
            "--listen" => {
                let v = it.next().ok_or("--listen needs an address")?;
                let addr = v
                    .parse()
                    .map_err(|e| format!("--listen {v}: {e} (expected IP:PORT)"))?;
                listen.push(addr);
            }
            "--" => {
                let command: Vec<String> = it.cloned().collect();
                let socket = socket.ok_or("--unix SOCKET is missing")?;
                if listen.is_empty() {
                    return Err("no --listen ADDR given".into());
                }
                return Ok(CopyArgs {
                    socket,
                    listen,
                    command,
                });
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Err("missing `--` before the command".into())
}

fn exec(args: &[String]) -> ExitCode {
    let fail = |what: String, code: u8| {
        eprintln!("airlock-relay: {what}");
        ExitCode::from(code)
    };
    let parsed = match parse_copy(args) {
        Ok(p) if p.command.is_empty() => return fail("no command after `--`".into(), SETUP_FAILED),
        Ok(p) => p,
        Err(e) => return fail(format!("{e}\n{USAGE}"), SETUP_FAILED),
    };
    // The relay runs as a process of its own: threads would not survive the
    // command's exec.
    let me = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"));
    let mut serve = Command::new(&me);
    serve.arg("serve").arg("--unix").arg(&parsed.socket);
    for a in &parsed.listen {
        serve.arg("--listen").arg(a.to_string());
    }
    serve.arg("--");
    let child = serve
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            return fail(
                format!("starting the relay ({}): {e}", me.display()),
                SETUP_FAILED,
            )
        }
    };
    // The command must find the listeners bound on its first connect.
    let mut line = String::new();
    if let Some(out) = child.stdout.take() {
        let _ = BufReader::new(out).read_line(&mut line);
    }
    match line.trim_end() {
        READY => {}
        "" => return fail("the relay ended before it was ready".into(), SETUP_FAILED),
        other => {
            let msg = other.strip_prefix("error: ").unwrap_or(other);
            return fail(msg.to_string(), SETUP_FAILED);
        }
    }
    // The relay is this process's child until the exec, and the command's
    // afterwards; nothing here waits for it.
    std::mem::forget(child);
    let err = Command::new(&parsed.command[0])
        .args(&parsed.command[1..])
        .exec();
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        NOT_FOUND
    } else {
        SETUP_FAILED
    };
    fail(format!("{}: {err}", parsed.command[0]), code)
}

fn serve(args: &[String]) -> ExitCode {
    let mut out = std::io::stdout();
    let parsed = match parse_copy(args) {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(out, "error: {e}");
            return ExitCode::from(SETUP_FAILED);
        }
    };
    let parent = std::os::unix::process::parent_id();
    let started = Relay::bind(&parsed.socket, &parsed.listen).and_then(Relay::serve);
    if let Err(e) = started {
        let _ = writeln!(out, "error: {e}");
        return ExitCode::from(SETUP_FAILED);
    }
    let _ = writeln!(out, "{READY}");
    let _ = out.flush();
    // Reparented means the command is gone (when it is not the namespace's
    // PID 1, whose end takes this process with it).
    while std::os::unix::process::parent_id() == parent {
        std::thread::sleep(Duration::from_millis(250));
    }
    ExitCode::SUCCESS
}

fn vm(args: &[String]) -> ExitCode {
    let [device, addrs @ ..] = args else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if addrs.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let port = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("airlock-relay: open {device}: {e}");
            return ExitCode::from(1);
        }
    };
    let mut listeners = Vec::new();
    for a in addrs {
        let bound = a
            .parse::<SocketAddr>()
            .map_err(|e| e.to_string())
            .and_then(|sa| TcpListener::bind(sa).map_err(|e| e.to_string()));
        match bound {
            Ok(l) => listeners.push(l),
            Err(e) => {
                eprintln!("airlock-relay: listen on {a}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let writer = match port.try_clone() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("airlock-relay: {device}: {e}");
            return ExitCode::from(1);
        }
    };
    let mux = Mux::new(Box::new(writer));
    for l in listeners {
        let mux = mux.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(conn) = conn else { continue };
                let _ = conn.set_nodelay(true);
                // Refused (too many open, or the port is gone): the program
                // sees its connection closed.
                let _ = mux.open(Local::Tcp(conn));
            }
        });
    }
    println!("{READY}");
    let _ = std::io::stdout().flush();
    match mux.run(port, &Role::Guest) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("airlock-relay: the port failed: {e}");
            ExitCode::from(1)
        }
    }
}
