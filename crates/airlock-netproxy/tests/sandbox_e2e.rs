//! Allowlist mode end to end: a real sandbox in front of this crate's proxy,
//! with curl and Python run inside against loopback servers on the host. Under
//! the native backend (empty netns, relay and netwatch in its PID 1, the proxy
//! socket bound in), and under the OCI backend with crun and runc where they
//! are installed (the helper's empty netns joined by the container, the relay
//! in the helper, netwatch through `linux.seccomp.listenerPath`), and under
//! gVisor where runsc is installed (the relay inside the sandbox, copying to
//! the proxy socket bound in; direct attempts fail for want of a route and are
//! not recorded, as gVisor has no seccomp user notification).
//!
//! Own harness: this test binary is also the sandbox helper (the native and
//! OCI backends re-execute it), so `main` hands over to the helper first when
//! asked to. Needs root, user namespaces and seccomp user notification.

#[path = "common/mod.rs"]
mod common;

use airlock_netproxy::{Decision, Reason};
use airlock_sandbox::factory::OpenOptions;
use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::oci::OciBackend;
use airlock_sandbox::{Backend, BackendKind, Outcome};
use common::{proxy_sandbox_spec, routes_with, World};
use std::sync::atomic::Ordering;

/// Where the sandbox runs.
#[derive(Clone, Copy, PartialEq)]
enum Under {
    Native,
    /// The OCI backend with this runtime (crun, runc).
    Oci(&'static str),
    /// The gVisor backend (runsc), its relay inside the sandbox.
    Gvisor,
}

impl Under {
    fn name(self) -> String {
        match self {
            Under::Native => "native".into(),
            Under::Oci(rt) => format!("oci_{rt}"),
            Under::Gvisor => "gvisor".into(),
        }
    }

    /// The runtime this needs, if any.
    fn runtime(self) -> Option<&'static str> {
        match self {
            Under::Native => None,
            Under::Oci(rt) => Some(rt),
            Under::Gvisor => Some("runsc"),
        }
    }

    fn backend(self, world: &World) -> Box<dyn Backend> {
        let runs = world.dir.path().join("runs");
        match self {
            Under::Native => Box::new(NativeBackend::new(std::env::current_exe().unwrap(), runs)),
            Under::Oci(rt) => {
                let mut opts = OpenOptions::new(world.dir.path().join("state"));
                opts.oci_runtime = Some(rt.to_string());
                let mut b = OciBackend::open(BackendKind::Oci, &opts).expect("runtime installed");
                b.runs_dir = runs;
                Box::new(b)
            }
            Under::Gvisor => {
                let opts = OpenOptions::new(world.dir.path().join("state"));
                let mut b = OciBackend::open(BackendKind::Gvisor, &opts).expect("runsc installed");
                b.runs_dir = runs;
                Box::new(b)
            }
        }
    }
}

fn run(world: &World, under: Under, request_id: &str, script: &str) -> Outcome {
    let ws = world.dir.path().join(format!("ws-{request_id}"));
    std::fs::create_dir_all(&ws).unwrap();
    // The CA is read inside the sandbox from the workspace.
    std::fs::copy(&world.tls.ca_pem_path, ws.join("ca.pem")).unwrap();
    let backend = under.backend(world);
    let ca = ws.join("ca.pem").display().to_string();
    let spec = proxy_sandbox_spec(
        request_id,
        &ws,
        world.ctx().socket_path(),
        script,
        &[("CURL_CA_BUNDLE", ca.clone()), ("SSL_CERT_FILE", ca)],
    );
    backend
        .run(&spec, &mut airlock_sandbox::backend::Discard)
        .expect("sandbox runs")
}

/// curl and urllib reach an allowlisted host through the proxy env alone; a
/// host outside the list is refused by the proxy; a direct connect and UDP DNS
/// to hard-coded addresses are refused by netwatch (under gVisor: fail with no
/// route, unrecorded); all of it is logged, and the model gets one summary line.
fn allowlist_mode_in_a_real_sandbox(under: Under) {
    let world = World::new(&["pypi.test"], &[], routes_with(vec![]));
    let port = world.https.addr.port();
    let script = format!(
        r#"
echo "proxy=$HTTPS_PROXY all=$ALL_PROXY"
echo "curl: $(curl -sS --max-time 20 https://pypi.test:{port}/hello 2>&1)"
echo "curl-socks: $(curl -sS --max-time 20 --proxy "$ALL_PROXY" https://pypi.test:{port}/hello 2>&1)"
echo "evil: $(curl -sS --max-time 20 https://evil.test:{port}/hello 2>&1)"
/usr/bin/python3 - <<'EOF'
import socket, urllib.request, errno
print("urllib:", urllib.request.urlopen("https://pypi.test:{port}/hello", timeout=20).read().decode().strip())
def attempt(name, fn):
    try:
        fn(); print(name + ": ok")
    except OSError as e:
        print(name + ":", errno.errorcode.get(e.errno, e.errno))
def direct():
    s = socket.socket(); s.settimeout(5); s.connect(("192.0.2.1", 443))
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04evil\x04test\x00\x00\x01\x00\x01", ("192.0.2.53", 53))
def host_loopback():
    s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.2", {port}))
attempt("direct", direct)
attempt("dns", dns)
attempt("loopback", host_loopback)
EOF
"#
    );
    let before = world.https.seen.tcp_accepted.load(Ordering::SeqCst);
    let o = run(
        &world,
        under,
        &format!("r-e2e-{}", under.name().replace('_', "-")),
        &script,
    );
    let out = &o.stdout;
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert!(
        out.contains("proxy=http://127.0.0.1:3128 all=socks5h://127.0.0.1:1080"),
        "{out}"
    );
    assert!(
        out.contains("curl: hello through airlock"),
        "{out}\n{}",
        o.stderr
    );
    assert!(out.contains("curl-socks: hello through airlock"), "{out}");
    assert!(out.contains("urllib: hello through airlock"), "{out}");
    assert!(
        out.contains("evil: curl: (56) CONNECT tunnel failed, response 403"),
        "{out}"
    );
    if under == Under::Gvisor {
        // The guest's only interface is the Sentry's loopback: no route
        // out, and its 127.0.0.2 has no listener. Nothing watches these.
        assert!(out.contains("direct: EHOSTUNREACH"), "{out}");
        assert!(out.contains("dns: EHOSTUNREACH"), "{out}");
        assert!(out.contains("loopback: ECONNREFUSED"), "{out}");
    } else {
        assert!(out.contains("direct: EACCES"), "{out}");
        assert!(out.contains("dns: EACCES"), "{out}");
        // 127.0.0.2 inside the sandbox is its own (empty) loopback, and netwatch refuses it anyway.
        assert!(out.contains("loopback: EACCES"), "{out}");
    }
    // Three allowed tunnels reached the server; the refused ones did not.
    assert_eq!(
        world.https.seen.tcp_accepted.load(Ordering::SeqCst) - before,
        3
    );

    let details: Vec<&str> = o
        .violations
        .iter()
        .filter(|v| v.kind == airlock_sandbox::ViolationKind::Network)
        .map(|v| v.detail.as_str())
        .collect();
    if under == Under::Gvisor {
        // gVisor has no seccomp user notification: not recorded.
        assert!(details.is_empty(), "{details:?}");
    }
    if under != Under::Gvisor {
        for want in [
            "blocked: connect to 192.0.2.1:443 (not via proxy)",
            "blocked: DNS query to 192.0.2.53:53 (not via proxy)",
        ] {
            assert!(details.contains(&want), "{want} not in {details:?}");
        }
        let direct = o
            .violations
            .iter()
            .find(|v| v.detail.contains("192.0.2.1:443"))
            .unwrap();
        assert_eq!(direct.data["destination"], "192.0.2.1:443");
        assert_eq!(direct.data["syscall"], "connect");
    }

    let entries = world.ctx().entries();
    let decisions: Vec<(&str, Decision, Reason)> = entries
        .iter()
        .map(|e| (e.host.as_str(), e.decision, e.reason))
        .collect();
    assert_eq!(
        decisions,
        vec![
            ("pypi.test", Decision::Allowed, Reason::Allowlisted),
            ("pypi.test", Decision::Allowed, Reason::Allowlisted),
            ("evil.test", Decision::Refused, Reason::NotInAllowlist),
            ("pypi.test", Decision::Allowed, Reason::Allowlisted),
        ],
        "{entries:#?}"
    );
    assert!(entries.iter().all(|e| e.request_id == "r-test-1"));

    // What the model reads: proxy refusals and netwatch refusals, one line.
    let mut lines: Vec<String> = details.iter().map(|d| d.to_string()).collect();
    lines.extend(
        entries
            .iter()
            .filter(|e| e.decision != Decision::Allowed)
            .map(|e| e.summary()),
    );
    let summary = lines.join("; ");
    eprintln!("model summary: {summary}");
    if under != Under::Gvisor {
        assert!(
            summary.contains("blocked: connect to 192.0.2.1:443 (not via proxy)"),
            "{summary}"
        );
    }
    assert!(
        summary.contains(&format!("blocked: evil.test:{port} (not in allowlist)")),
        "{summary}"
    );
}

fn main() {
    // Re-executed by the native backend as its helper: this never returns then.
    airlock_sandbox::native::maybe_run_helper();
    airlock_sandbox::oci::maybe_run_helper();
    // libtest-mimic speaks the libtest command line, so cargo test and nextest
    // can list and run these like any other test.
    let args = libtest_mimic::Arguments::from_args();
    let tests = [
        Under::Native,
        Under::Oci("crun"),
        Under::Oci("runc"),
        Under::Gvisor,
    ]
    .into_iter()
    .map(|under| {
        let name = format!("allowlist_mode_in_a_real_sandbox_{}", under.name());
        let missing = under
            .runtime()
            .filter(|rt| airlock_sandbox::oci::runtime::locate(rt).is_none());
        libtest_mimic::Trial::test(name, move || {
            if !is_root() {
                return Err(
                    "needs root (user namespaces, mounts, seccomp user notification)".into(),
                );
            }
            if let Some(rt) = missing {
                return Err(format!("{rt} is not installed (apt-get install {rt})").into());
            }
            if under == Under::Gvisor {
                // The in-sandbox relay: $AIRLOCK_RELAY, else next to this test binary.
                airlock_sandbox::relay::relay_binary().map_err(|e| e.to_string())?;
            }
            allowlist_mode_in_a_real_sandbox(under);
            Ok(())
        })
        // Listed as ignored where the runtime is missing (scripts/test.d/57-tiers.sh
        // installs them and runs these).
        .with_ignored_flag(missing.is_some())
    })
    .collect();
    libtest_mimic::run(&args, tests).exit();
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}
