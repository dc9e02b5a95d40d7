//! The guest's half of the microVM egress relay (see the library's docs).
//!
//! Usage: `airlock-vmrelay PORT_DEVICE ADDR...`, e.g.
//! `airlock-vmrelay /dev/vport0p1 127.0.0.1:3128 127.0.0.1:1080`. Run by the
//! guest's init as root before the command starts; it prints
//! [`airlock_vmrelay::READY`] once every listener is bound, and exits when
//! the host closes the port (the VM is going down anyway).

use airlock_vmrelay::{Local, Mux, Role, READY};
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [device, addrs @ ..] = &args[..] else {
        eprintln!("usage: airlock-vmrelay PORT_DEVICE ADDR...");
        return ExitCode::from(2);
    };
    if addrs.is_empty() {
        eprintln!("usage: airlock-vmrelay PORT_DEVICE ADDR...");
        return ExitCode::from(2);
    }
    let port = match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(device)
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("airlock-vmrelay: open {device}: {e}");
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
                eprintln!("airlock-vmrelay: listen on {a}: {e}");
                return ExitCode::from(1);
            }
        }
    }
    let writer = match port.try_clone() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("airlock-vmrelay: {device}: {e}");
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
            eprintln!("airlock-vmrelay: the port failed: {e}");
            ExitCode::from(1)
        }
    }
}
