//! Issue 6's throughput target as a program in the sandbox meets it: a 100 MB
//! download from a loopback server, through the proxy, against a direct
//! download outside the sandbox.
//!
//! The client is curl and the server nginx, each downloading in three places:
//! * direct: on the host, straight to nginx on 127.0.0.x (the reference);
//! * host via proxy: on the host, through the relay and the egress proxy (the
//!   proxy's own cost);
//! * sandbox via proxy: inside a real native sandbox in allowlist mode (empty
//!   network namespace, relay and netwatch in its PID 1, the execution's proxy
//!   socket bound in, the default policy's limits), through its relay and the
//!   proxy (what a program in the sandbox gets).
//!
//! The proxied ways are plain HTTP through CONNECT, plain HTTP forwarded, SOCKS5
//! (`socks5h`) and HTTPS through CONNECT. The figure is curl's own `time_total`:
//! the transfer, not the sandbox's start-up (which `bench/run.sh` measures).
//! Every round runs the direct ways, the proxied ways on the host and in one
//! sandbox, and the direct ways again; each proxied time is set against the mean
//! of the direct times around it, so that a change of load between rounds moves
//! both sides of a ratio. Reported: median times, and the median (and range)
//! over rounds of the throughput ratio, direct time / proxied time. The target is
//! ≥ 80 %.
//!
//! Run: `cargo bench -p airlock-netproxy --bench sandbox_download` (as root, with
//! nginx and curl installed; `ROUNDS=N`, default 15; `ONLY=https` runs only the
//! proxied ways whose label contains that text). The in-process view of the
//! proxy alone, with a client that does nothing but read, is the `netproxy` bench.
//!
//! Own harness: this binary is also the sandbox helper (the native backend
//! re-executes it). Nothing here talks to any address outside 127.0.0.0/8.

#[path = "../tests/common/mod.rs"]
mod common;
mod peers;

use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::Backend;
use common::{proxy_sandbox_spec, routes_with, World};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const SIZE: u64 = 100 * 1024 * 1024;

/// One way of downloading, run by curl: a label and curl's arguments.
/// `{plain}` and `{tls}` become the servers' ports, `{http_proxy}` and
/// `{socks_proxy}` the relay's address where curl runs.
struct Way {
    label: &'static str,
    args: &'static [&'static str],
}

/// Straight to nginx (`--resolve` instead of the proxy's hosts map).
const DIRECT: &[Way] = &[
    Way {
        label: "http",
        args: &[
            "--resolve",
            "plain.test:{plain}:127.0.0.3",
            "http://plain.test:{plain}/big",
        ],
    },
    Way {
        label: "https",
        args: &[
            "--resolve",
            "pypi.test:{tls}:127.0.0.2",
            "https://pypi.test:{tls}/big",
        ],
    },
];

/// Through the relay and the proxy; names are resolved by the proxy.
const PROXIED: &[Way] = &[
    Way {
        label: "http via CONNECT",
        args: &[
            "--proxytunnel",
            "--proxy",
            "http://{http_proxy}",
            "http://plain.test:{plain}/big",
        ],
    },
    Way {
        label: "http via forward",
        args: &[
            "--proxy",
            "http://{http_proxy}",
            "http://plain.test:{plain}/big",
        ],
    },
    Way {
        label: "http via SOCKS5",
        args: &[
            "--proxy",
            "socks5h://{socks_proxy}",
            "http://plain.test:{plain}/big",
        ],
    },
    Way {
        label: "https via CONNECT",
        args: &[
            "--proxy",
            "http://{http_proxy}",
            "https://pypi.test:{tls}/big",
        ],
    },
];

/// Where curl runs.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Host,
    Sandbox,
}

/// The direct way each proxied way is compared with (same scheme).
fn direct_index(proxied: &Way) -> usize {
    let scheme = if proxied.label.starts_with("https") {
        "https"
    } else {
        "http"
    };
    DIRECT
        .iter()
        .position(|d| d.label == scheme)
        .expect("a direct way per scheme")
}

/// The proxied ways to run: all, or those whose label contains `$ONLY`.
fn proxied_ways() -> Vec<&'static Way> {
    let only = std::env::var("ONLY").unwrap_or_default();
    PROXIED.iter().filter(|w| w.label.contains(&only)).collect()
}

/// What the placeholders of a way's arguments become.
struct Ports {
    plain: u16,
    tls: u16,
    http_proxy: String,
    socks_proxy: String,
}

impl Ports {
    fn fill(&self, arg: &str) -> String {
        arg.replace("{plain}", &self.plain.to_string())
            .replace("{tls}", &self.tls.to_string())
            .replace("{http_proxy}", &self.http_proxy)
            .replace("{socks_proxy}", &self.socks_proxy)
    }
}

const CURL_FORMAT: &str = "%{size_download} %{time_total}\\n";

/// `size time` from curl's `-w`; the size must be the whole body.
fn parse_curl_line(label: &str, line: &str) -> f64 {
    let mut it = line.split_whitespace();
    let size: u64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let secs: f64 = it.next().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
    assert_eq!(
        size, SIZE,
        "{label}: curl downloaded {size} bytes ({line:?})"
    );
    secs
}

/// One download by curl on the host.
fn host_download(way: &Way, ports: &Ports, ca: &Path) -> f64 {
    let mut cmd = Command::new("curl");
    // No proxy variables from the caller's environment.
    cmd.env_clear().env("PATH", "/usr/bin:/bin");
    cmd.args(["-sS", "-o", "/dev/null", "--cacert"]).arg(ca);
    cmd.args(["-w", CURL_FORMAT]);
    cmd.args(way.args.iter().map(|a| ports.fill(a)));
    let out = cmd.output().expect("curl runs");
    assert!(
        out.status.success(),
        "host {}: {}",
        way.label,
        String::from_utf8_lossy(&out.stderr)
    );
    parse_curl_line(way.label, String::from_utf8_lossy(&out.stdout).trim())
}

/// The shell script run in the sandbox: every proxied way once, one line each.
fn sandbox_script(ports: &Ports) -> String {
    let mut script = String::from("set -e\n");
    for way in proxied_ways() {
        let args: Vec<String> = way
            .args
            .iter()
            .map(|a| format!("'{}'", ports.fill(a)))
            .collect();
        script += &format!(
            "printf '%s ' '{}'; curl -sS -o /dev/null --cacert ca.pem -w '{CURL_FORMAT}' {}\n",
            way.label,
            args.join(" ")
        );
    }
    script
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One proxied way in one place, over the rounds: its times, and each time's
/// throughput ratio against the direct downloads around it.
#[derive(Default)]
struct Series {
    times: Vec<f64>,
    ratios: Vec<f64>,
}

#[derive(Default)]
struct Figures {
    direct: Vec<Vec<f64>>,
    proxied: BTreeMap<(Place, &'static str), Series>,
}

impl Figures {
    fn add(&mut self, place: Place, way: &'static Way, secs: f64, direct_secs: f64) {
        let series = self.proxied.entry((place, way.label)).or_default();
        series.times.push(secs);
        series.ratios.push(direct_secs / secs);
    }

    fn print(&mut self, rounds: usize) {
        let mib = SIZE as f64 / (1024.0 * 1024.0);
        println!(
            "sandbox_download: {rounds} rounds, 100 MiB from nginx on loopback, curl's time_total"
        );
        println!(
            "| way | where | median time | MiB/s | throughput against direct: median (min–max) |"
        );
        println!("| --- | --- | --- | --- | --- |");
        for (d, times) in DIRECT.iter().zip(self.direct.iter_mut()) {
            let t = median(times);
            println!(
                "| {} direct | host | {:.1} ms | {:.0} | |",
                d.label,
                t * 1e3,
                mib / t
            );
        }
        for way in proxied_ways() {
            for (place, name) in [(Place::Host, "host"), (Place::Sandbox, "sandbox")] {
                let Series { times, ratios } =
                    self.proxied.get_mut(&(place, way.label)).expect("measured");
                let t = median(times);
                let r = median(ratios);
                println!(
                    "| {} | {name} | {:.1} ms | {:.0} | {:.0} % ({:.0}–{:.0} %) |",
                    way.label,
                    t * 1e3,
                    mib / t,
                    100.0 * r,
                    100.0 * ratios[0],
                    100.0 * ratios[ratios.len() - 1]
                );
            }
        }
    }
}

fn main() {
    // Re-executed by the native backend as its helper: this never returns then.
    airlock_sandbox::native::maybe_run_helper();
    // `cargo bench` passes `--bench`; nothing else is taken from the command line.
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15);
    for (program, why) in [("nginx", "the loopback server"), ("curl", "the client")] {
        if Command::new(program).arg("-V").output().is_err() {
            eprintln!("sandbox_download: {program} ({why}) is not installed; nothing measured");
            return;
        }
    }

    let world = World::new(&["plain.test", "pypi.test"], &[], routes_with(vec![]));
    let plain_nginx = peers::start_nginx("127.0.0.3", SIZE, None).expect("nginx (http) starts");
    let tls_nginx = peers::start_nginx(
        "127.0.0.2",
        SIZE,
        Some((
            &world.tls.server_chain_pem_path,
            &world.tls.server_key_pem_path,
        )),
    )
    .expect("nginx (https) starts");
    let host_ports = Ports {
        plain: plain_nginx.addr.port(),
        tls: tls_nginx.addr.port(),
        // The relay the test world runs on the host serves HTTP and SOCKS5 alike.
        http_proxy: world.relay.to_string(),
        socks_proxy: world.relay.to_string(),
    };
    let sandbox_ports = Ports {
        http_proxy: "127.0.0.1:3128".into(),
        socks_proxy: "127.0.0.1:1080".into(),
        ..host_ports
    };
    let ca = &world.tls.ca_pem_path;

    let backend = NativeBackend::new(
        std::env::current_exe().expect("own path"),
        world.dir.path().join("runs"),
    );
    let ws = world.dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("workspace");
    // The CA is read inside the sandbox from the workspace.
    std::fs::copy(ca, ws.join("ca.pem")).expect("CA copied");

    let mut figures = Figures {
        direct: vec![Vec::new(); DIRECT.len()],
        ..Figures::default()
    };
    let direct_round = || -> Vec<f64> {
        DIRECT
            .iter()
            .map(|d| host_download(d, &host_ports, ca))
            .collect()
    };
    for round in 0..rounds {
        let before = direct_round();
        let on_host: Vec<(&'static Way, f64)> = proxied_ways()
            .into_iter()
            .map(|w| (w, host_download(w, &host_ports, ca)))
            .collect();
        let spec = proxy_sandbox_spec(
            &format!("r-bench-{round}"),
            &ws,
            world.ctx().socket_path(),
            &sandbox_script(&sandbox_ports),
            &[],
        );
        let outcome = backend
            .run(&spec, &mut airlock_sandbox::backend::Discard)
            .expect("sandbox runs");
        assert_eq!(
            outcome.exit_code,
            Some(0),
            "round {round}: {}\n{}",
            outcome.stdout,
            outcome.stderr
        );
        let after = direct_round();
        let reference = |way: &Way| {
            let d = direct_index(way);
            (before[d] + after[d]) / 2.0
        };
        for (way, secs) in on_host {
            figures.add(Place::Host, way, secs, reference(way));
        }
        for line in outcome.stdout.lines() {
            let way = PROXIED
                .iter()
                .find(|w| line.starts_with(w.label))
                .unwrap_or_else(|| panic!("unexpected line {line:?}"));
            let secs = parse_curl_line(way.label, &line[way.label.len()..]);
            figures.add(Place::Sandbox, way, secs, reference(way));
        }
        for (d, times) in figures.direct.iter_mut().enumerate() {
            times.extend([before[d], after[d]]);
        }
    }
    figures.print(rounds);

    let allowed = world
        .ctx()
        .entries()
        .iter()
        .filter(|e| e.decision == airlock_netproxy::Decision::Allowed)
        .count();
    assert_eq!(
        allowed,
        2 * rounds * proxied_ways().len(),
        "every proxied download is one allowed entry in the proxy's log"
    );
}
