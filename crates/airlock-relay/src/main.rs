//! `airlock-relay`, the in-sandbox half of the egress relay (see the
//! library's docs).
//!
//! ```text
//! airlock-relay vm PORT_DEVICE ADDR...
//! airlock-relay exec --unix SOCKET --listen ADDR [--listen ADDR]... -- CMD [ARG]...
//! airlock-relay scope -- CMD [ARG]...
//! ```
//!
//! `vm`: run by a microVM guest's init as root before the command starts;
//! prints [`READY`] once every listener is bound and exits when the host
//! closes the port (the VM is going down anyway).
//!
//! `exec`: the first program of a gVisor sandbox or container, so its PID 1.
//! It binds the listeners and starts the copying relay on a thread of its own,
//! then runs CMD as its child and, as an init does, reaps every process
//! orphaned to it until CMD ends; it then exits with CMD's status (128 + N
//! for a command killed by signal N, as the runtimes report it), which ends
//! the sandbox. The command therefore never has the relay as a child (a
//! program that waits for all of its children finds only its own), and
//! orphans never pile up as zombies against `limits.pids`. Failures before
//! the command runs exit 126 (127: CMD not found) with a line naming what
//! failed; the command never runs without its relay.
//!
//! `scope`: the first program of a container that shares the host's network
//! namespace (network mode open on the Docker API), where the host's abstract
//! unix sockets live. It restricts itself with a landlock ruleset that scopes
//! abstract unix sockets (ABI 6) and nothing else, then becomes CMD (exec):
//! the command cannot connect to an abstract socket made outside the
//! container. No seccomp filter can do this: it sees no socket address.
//! Exits 126 (127: CMD not found) without running CMD when either step fails.

use airlock_relay::copy::Relay;
use airlock_relay::mux::{Local, Mux, Role};
use airlock_relay::READY;
use rustix::io::Errno;
use rustix::process::{WaitOptions, WaitStatus};
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

const USAGE: &str = "usage: airlock-relay vm PORT_DEVICE ADDR...\n       \
     airlock-relay exec --unix SOCKET --listen ADDR [--listen ADDR]... -- CMD [ARG]...\n       \
     airlock-relay scope -- CMD [ARG]...";
/// The command's own exit statuses for "could not run it" (as shells use them).
const SETUP_FAILED: u8 = 126;
const NOT_FOUND: u8 = 127;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("vm") => vm(&args[1..]),
        Some("exec") => exec(&args[1..]),
        Some("scope") => scope(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}

/// `scope -- CMD [ARG]...`: see the module's docs.
fn scope(args: &[String]) -> ExitCode {
    use landlock::{CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetStatus, Scope};
    use std::os::unix::process::CommandExt;
    let Some(("--", command)) = args.split_first().map(|(a, rest)| (a.as_str(), rest)) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let Some((program, rest)) = command.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let restricted = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::AbstractUnixSocket)
        .and_then(|r| r.create())
        .and_then(|r| r.restrict_self());
    match restricted {
        Ok(status) if status.ruleset == RulesetStatus::FullyEnforced => {}
        Ok(status) => {
            eprintln!(
                "airlock-relay: abstract unix sockets not scoped (landlock: {:?})",
                status.ruleset
            );
            return ExitCode::from(SETUP_FAILED);
        }
        Err(e) => {
            eprintln!("airlock-relay: could not scope abstract unix sockets: {e}");
            return ExitCode::from(SETUP_FAILED);
        }
    }
    let e = Command::new(program).args(rest).exec();
    eprintln!("airlock-relay: {program}: {e}");
    ExitCode::from(if e.kind() == std::io::ErrorKind::NotFound {
        NOT_FOUND
    } else {
        SETUP_FAILED
    })
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
    // Bound before the command exists, so its first connect finds them.
    let started = Relay::bind(&parsed.socket, &parsed.listen).and_then(Relay::serve);
    if let Err(e) = started {
        return fail(e.to_string(), SETUP_FAILED);
    }
    let child = Command::new(&parsed.command[0])
        .args(&parsed.command[1..])
        .spawn();
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            let code = if e.kind() == std::io::ErrorKind::NotFound {
                NOT_FOUND
            } else {
                SETUP_FAILED
            };
            return fail(format!("{}: {e}", parsed.command[0]), code);
        }
    };
    let command = child.id();
    // Reaped below with every other child; std's handle must not wait too.
    std::mem::forget(child);
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get().unsigned_abs() == command => {
                return ExitCode::from(exit_code(status));
            }
            // An orphan of the command's, reaped as an init must.
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => {
                return fail(
                    format!("waiting for {}: {e}", parsed.command[0]),
                    SETUP_FAILED,
                )
            }
        }
    }
}

/// The status a shell (and the container runtimes) would report.
fn exit_code(status: WaitStatus) -> u8 {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        (None, None) => SETUP_FAILED,
    }
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
