//! `airlock serve --pool`: warm sandboxes, each consumed by one command. The
//! real binary, real sandboxes, a real HTTP client over the unix socket.
//!
//! Every run executes `probe.py`, which reports what a reused sandbox could not
//! hide: a marker file it leaves in the sandbox's own `/tmp` and `$HOME`, its
//! mount and PID namespaces and its PID 1's start time. The server's own
//! counters (`/metrics`) say which path each run took.

mod serve_support;

use serve_support::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const PROBE: &str = r#"
import json, os
def ns(n):
    return os.readlink("/proc/self/ns/" + n)
home = os.environ.get("HOME", "/home/airlock")
seen = [p for p in ("/tmp/pool-marker", home + "/pool-marker") if os.path.exists(p)]
start = open("/proc/1/stat").read().rsplit(")", 1)[1].split()[19]
print(json.dumps({"mnt": ns("mnt"), "pid": ns("pid"), "init_start": start, "seen": seen}))
for p in ("/tmp/pool-marker", home + "/pool-marker"):
    open(p, "w").write("used")
"#;

const RUN: &str = r#"{"command":"python3 probe.py"}"#;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
}

fn start(pool: &str, extra: &[&str]) -> Server {
    let dir = layout();
    std::fs::write(dir.path().join("ws/probe.py"), PROBE).unwrap();
    let mut args = vec!["--tokens", "tokens.toml", "--pool", pool];
    args.extend_from_slice(extra);
    Server::start_in(dir, &args)
}

async fn metric(server: &Server, name: &str) -> u64 {
    let m = request(
        Target::Unix(&server.socket),
        "GET",
        "/metrics",
        Some(TOKEN_A),
        None,
    )
    .await;
    let text = String::from_utf8(m.body).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
        .trim()
        .parse::<f64>()
        .unwrap() as u64
}

/// Waits until the pool holds `n` ready sandboxes.
async fn ready(server: &Server, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(server, "airlock_pool_ready").await != n {
        assert!(
            Instant::now() < deadline,
            "pool never reached {n} ready: {}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One run of the probe; its report.
async fn probe(server: &Server, body: &str) -> serde_json::Value {
    let r = request(
        Target::Unix(&server.socket),
        "POST",
        "/v1/run",
        Some(TOKEN_A),
        Some(body),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let r = r.json();
    assert_eq!(r["status"], "ran", "{r}");
    assert_eq!(r["outcome"]["exit_code"], 0, "{r}");
    let out = r["outcome"]["stdout"].as_str().unwrap().trim().to_string();
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("probe said {out:?}: {e}; {r}"))
}

/// A sandbox identity: two runs in one sandbox would share all three.
fn identity(p: &serde_json::Value) -> (String, String, String) {
    (
        p["mnt"].as_str().unwrap().to_string(),
        p["pid"].as_str().unwrap().to_string(),
        p["init_start"].as_str().unwrap().to_string(),
    )
}

#[test]
fn warm_sandboxes_run_one_command_each_and_the_pool_refills() {
    let mut server = start("2", &[]);
    rt().block_on(async {
        // The first request teaches the pool its spec and runs cold.
        let first = probe(&server, RUN).await;
        assert_eq!(first["seen"], serde_json::json!([]), "{first}");
        let mut alive_ids = HashSet::new();
        for i in 0..6 {
            // Refilled after each consumption, up to the size.
            ready(&server, 2).await;
            let p = probe(&server, RUN).await;
            assert_eq!(
                p["seen"],
                serde_json::json!([]),
                "run {i} found a marker of an earlier command: a sandbox was reused"
            );
            alive_ids.insert(identity(&p));
        }
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 6);
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 1);
        assert_eq!(alive_ids.len(), 6, "{alive_ids:?}");
        ready(&server, 2).await;
        // Built: the six consumed and the two ready; never more runs than builds.
        assert_eq!(metric(&server, "airlock_pool_built").await, 8);
    });
    let (status, stderr) = server.stop();
    assert!(status.success(), "{stderr}");
    // Nothing of the warm sandboxes is left: helpers gone, run dirs removed.
    let runs = server.state().join("runs");
    let left: Vec<_> = std::fs::read_dir(&runs)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "run dirs left behind: {left:?}");
}

/// `airlock_pool_ready` counts a sandbox only once its init has built the
/// view: runs that take them the moment the pool is full launch their
/// commands into finished sandboxes, and the sandboxes still being built are
/// counted apart.
#[test]
fn a_sandbox_counts_as_ready_once_its_view_is_built() {
    let dir = layout();
    std::fs::write(dir.path().join("ws/probe.py"), PROBE).unwrap();
    let profile = std::ffi::OsStr::new("1");
    let mut server = Server::start_with_env(
        dir,
        &["--tokens", "tokens.toml", "--pool", "2"],
        &[("AIRLOCK_PROFILE", profile)],
    );
    rt().block_on(async {
        probe(&server, RUN).await;
        for _ in 0..3 {
            // No pause between looks, and two runs at once the moment the
            // pool says it is full: each takes one of the two it counted.
            let deadline = Instant::now() + Duration::from_secs(20);
            while metric(&server, "airlock_pool_ready").await != 2 {
                assert!(Instant::now() < deadline, "{}", server.stderr());
            }
            tokio::join!(probe(&server, RUN), probe(&server, RUN));
        }
        ready(&server, 2).await;
        assert_eq!(metric(&server, "airlock_pool_building").await, 0);
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 6);
    });
    let (status, stderr) = server.stop();
    assert!(status.success(), "{stderr}");
    // The pool's profile line for each take says whether init had said its
    // view was built.
    let taken: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("pool: warm sandbox "))
        .collect();
    assert_eq!(taken.len(), 6, "{stderr}");
    for line in taken {
        assert!(line.ends_with(", built)"), "taken while building: {line}");
    }
}

#[test]
fn a_burst_of_200_runs_loses_none_and_reuses_no_sandbox() {
    let mut server = start(
        "2",
        &[
            "--queue",
            "256",
            "--concurrency",
            "2",
            "--max-connections-per-peer",
            "512",
        ],
    );
    let socket = server.socket.clone();
    let probes = rt().block_on(async {
        probe(&server, RUN).await;
        ready(&server, 2).await;
        let tasks: Vec<_> = (0..200)
            .map(|_| {
                let socket = socket.clone();
                tokio::spawn(async move {
                    request(
                        Target::Unix(&socket),
                        "POST",
                        "/v1/run",
                        Some(TOKEN_A),
                        Some(RUN),
                    )
                    .await
                })
            })
            .collect();
        let mut probes = Vec::new();
        for t in tasks {
            let r = t.await.unwrap();
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
            let r = r.json();
            assert_eq!(r["outcome"]["exit_code"], 0, "{r}");
            let out = r["outcome"]["stdout"].as_str().unwrap().trim().to_string();
            probes.push(serde_json::from_str::<serde_json::Value>(&out).unwrap());
        }
        let warm = metric(&server, "airlock_pool_warm_runs").await;
        let cold = metric(&server, "airlock_pool_cold_runs").await;
        let built = metric(&server, "airlock_pool_built").await;
        assert_eq!(warm + cold, 201, "every run took one path");
        assert!(
            warm >= 2,
            "the burst used the pool: {warm} warm, {cold} cold"
        );
        assert!(built >= warm, "{built} built for {warm} warm runs");
        probes
    });
    assert_eq!(probes.len(), 200);
    for p in &probes {
        assert_eq!(
            p["seen"],
            serde_json::json!([]),
            "a command saw an earlier one's marker: {p}"
        );
    }
    let audit = audit_records(&server.state());
    let executions = audit.iter().filter(|r| r["kind"] == "execution").count();
    let (status, stderr) = server.stop();
    assert!(status.success(), "{stderr}");
    assert_eq!(executions, 201, "one execution record per run");
}

#[test]
fn pool_size_zero_runs_every_request_cold() {
    let mut server = start("0", &[]);
    rt().block_on(async {
        for _ in 0..2 {
            let p = probe(&server, RUN).await;
            assert_eq!(p["seen"], serde_json::json!([]));
        }
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 2);
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 0);
        assert_eq!(metric(&server, "airlock_pool_built").await, 0);
        assert_eq!(metric(&server, "airlock_pool_ready").await, 0);
    });
    server.stop();
}

/// One `true` as agent-b, whose policy is not agent-a's: another template.
async fn run_as_b(server: &Server) {
    let r = request(
        Target::Unix(&server.socket),
        "POST",
        "/v1/run",
        Some(TOKEN_B),
        Some(r#"{"command":"true"}"#),
    )
    .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"], "ran");
}

/// A request's own lower timeout (`timeout_s`) takes a warm sandbox: its
/// time limits come with the launch, so the pool does not drain and rebuild
/// for each new limit (the limit itself is enforced: sandbox_layers,
/// a_warm_sandbox_enforces_the_time_limits_its_request_brings). Another
/// policy's spec, or a view changed since the build, runs cold.
#[test]
fn a_lower_timeout_runs_warm_and_another_spec_or_a_changed_view_runs_cold() {
    let mut server = start("2", &[]);
    rt().block_on(async {
        probe(&server, RUN).await;
        ready(&server, 2).await;
        let body = r#"{"command":"python3 probe.py","timeout_s":7}"#;
        probe(&server, body).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 1);
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 1);
        // agent-b's policy: not the spec the pool was built for.
        ready(&server, 2).await;
        run_as_b(&server).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 1);
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 2);
        // The pool now builds for the new spec, and serves it warm.
        ready(&server, 2).await;
        run_as_b(&server).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 2);
        // A protected path appears after the pool was built: its sandboxes
        // would leave it writable, so they are let go and the run is cold.
        ready(&server, 2).await;
        std::fs::create_dir_all(server.ws().join(".git/hooks")).unwrap();
        run_as_b(&server).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 2);
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 3);
        ready(&server, 2).await;
        run_as_b(&server).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 3);
    });
    server.stop();
}

/// Stdin comes with the request (`stdin`). Every warm sandbox has a stdin
/// pipe: a request with stdin reads its own text there, one without reads
/// `/dev/null`, as in a cold run, and both take the same warm sandboxes (the
/// pool is not rebuilt when they alternate).
#[test]
fn requests_with_and_without_stdin_share_the_warm_sandboxes() {
    let mut server = start("1", &[]);
    // What fd 0 is, and what it holds.
    const READ: &str = "python3 -c 'import os,stat,sys; \
        print(\"chr\" if stat.S_ISCHR(os.fstat(0).st_mode) else \"pipe\", repr(sys.stdin.read()))'";
    rt().block_on(async {
        let run = |stdin: Option<&str>| {
            let mut body = serde_json::json!({ "command": READ });
            if let Some(text) = stdin {
                body["stdin"] = text.into();
            }
            let body = body.to_string();
            let server = &server;
            async move {
                let r = request(
                    Target::Unix(&server.socket),
                    "POST",
                    "/v1/run",
                    Some(TOKEN_A),
                    Some(&body),
                )
                .await
                .json();
                assert_eq!(r["outcome"]["exit_code"], 0, "{r}");
                r["outcome"]["stdout"].as_str().unwrap().to_string()
            }
        };
        // The first request runs cold and teaches the pool its template.
        assert_eq!(run(None).await, "chr ''\n");
        for (i, stdin) in [Some("first\n"), None, Some(""), Some("x"), None]
            .into_iter()
            .enumerate()
        {
            ready(&server, 1).await;
            let expected = match stdin {
                Some(text) => format!("pipe {text:?}\n").replace('"', "'"),
                None => "chr ''\n".to_string(),
            };
            assert_eq!(run(stdin).await, expected, "request {i}");
            assert_eq!(
                metric(&server, "airlock_pool_warm_runs").await,
                i as u64 + 1,
                "request {i} ran warm"
            );
        }
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 1);
    });
    server.stop();
}

/// A run must not see a hidden path because its warm sandbox was built
/// before the path existed: a secret created on the host after the pool
/// filled, then a command reads it. Asserted on what leaves the server.
/// (Overlay mode showed the file as absent even to a stale sandbox, so this
/// run takes the cold path through the view stamp and the older sandbox's
/// behaviour is not what passes it.)
#[test]
fn a_path_hidden_after_the_pool_filled_stays_hidden() {
    const CANARY: &str = "pool-canary-7f3a9c";
    const READ: &str = r#"
try:
    print("READ", open("secret.txt").read())
except OSError as e:
    print("BLOCKED", e)
"#;
    let attempt = || -> String {
        let dir = layout();
        let secret = dir.path().join("ws/secret.txt");
        let policy = format!(
            "{POLICY_A}\n[filesystem]\nhide = [{:?}]\n",
            secret.display().to_string()
        );
        std::fs::write(dir.path().join("policy-a.toml"), policy).unwrap();
        std::fs::write(dir.path().join("ws/probe.py"), PROBE).unwrap();
        std::fs::write(dir.path().join("ws/read.py"), READ).unwrap();
        let mut server = Server::start_in(dir, &["--tokens", "tokens.toml", "--pool", "2"]);
        let said = rt().block_on(async {
            probe(&server, RUN).await;
            ready(&server, 2).await;
            std::fs::write(&secret, CANARY).unwrap();
            let r = request(
                Target::Unix(&server.socket),
                "POST",
                "/v1/run",
                Some(TOKEN_A),
                Some(r#"{"command":"python3 read.py"}"#),
            )
            .await;
            String::from_utf8_lossy(&r.body).into_owned()
        });
        server.stop();
        said
    };
    let said = attempt();
    assert!(
        !said.contains(CANARY),
        "a hidden file leaked through a stale warm sandbox: {said}"
    );
    // The mask reads as an empty file.
    assert!(said.contains("READ") || said.contains("BLOCKED"), "{said}");
}

/// Waits until the ready sandboxes have been measured, and returns what they
/// hold.
async fn measured(server: &Server) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let held = metric(server, "airlock_pool_memory_bytes").await;
        if held > 0 {
            return held;
        }
        assert!(
            Instant::now() < deadline,
            "the pool was never measured: {}",
            server.stderr()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn a_memory_bound_below_one_sandbox_leaves_the_pool_empty() {
    let mut server = start("3", &["--pool-memory", "1"]);
    rt().block_on(async {
        probe(&server, RUN).await;
        // The first sandbox is built and measured (after 300 ms), found over
        // the bound and let go; no other is built.
        let deadline = Instant::now() + Duration::from_secs(20);
        while metric(&server, "airlock_pool_discarded").await == 0 {
            assert!(Instant::now() < deadline, "{}", server.stderr());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(metric(&server, "airlock_pool_built").await, 1);
        assert_eq!(metric(&server, "airlock_pool_ready").await, 0);
        assert_eq!(metric(&server, "airlock_pool_memory_bytes").await, 0);
        probe(&server, RUN).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 0);
        assert_eq!(metric(&server, "airlock_pool_cold_runs").await, 2);
    });
    let (status, stderr) = server.stop();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.contains("more than --pool-memory"),
        "the empty pool is not explained: {stderr}"
    );
}

#[test]
fn a_memory_bound_caps_how_many_sandboxes_wait() {
    // What one warm sandbox holds here, measured by a pool of one.
    let mut server = start("1", &["--pool-memory", "1TiB"]);
    let one = rt().block_on(async {
        probe(&server, RUN).await;
        ready(&server, 1).await;
        measured(&server).await
    });
    server.stop();
    assert!(
        (256 << 10..256 << 20).contains(&one),
        "a warm sandbox measured {one} bytes"
    );

    // Room for one and a half: a pool of three keeps one.
    let bound = (one * 3 / 2).to_string();
    let mut server = start("3", &["--pool-memory", &bound]);
    rt().block_on(async {
        probe(&server, RUN).await;
        ready(&server, 1).await;
        let held = measured(&server).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(metric(&server, "airlock_pool_ready").await, 1);
        assert_eq!(metric(&server, "airlock_pool_built").await, 1);
        assert!(held <= one * 3 / 2, "{held} held, bound {bound}");
        // It still serves warm, and is refilled within the bound.
        probe(&server, RUN).await;
        assert_eq!(metric(&server, "airlock_pool_warm_runs").await, 1);
        ready(&server, 1).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert_eq!(metric(&server, "airlock_pool_ready").await, 1);
    });
    let (status, stderr) = server.stop();
    assert!(status.success(), "{stderr}");
}
