//! `airlock run` and `airlock doctor` end to end: the real binary, the real gate,
//! the real sandbox on this kernel. Each test has its own workspace and state
//! directory.

use std::path::Path;
use std::process::{Command, Output};

const AIRLOCK: &str = env!("CARGO_BIN_EXE_airlock");

struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        std::fs::write(dir.path().join("ws/data.txt"), "workspace data\n").unwrap();
        Env { dir }
    }
    fn ws(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }
    fn airlock(&self, args: &[&str]) -> Output {
        Command::new(AIRLOCK)
            .args(args)
            .current_dir(self.ws())
            .env("AIRLOCK_STATE_DIR", self.dir.path().join("state"))
            .env("AIRLOCK_TEST_SECRET", "canary-5d1f0e")
            .env_remove("AIRLOCK_POLICY")
            .output()
            .unwrap()
    }
    fn policy(&self, extra: &str) -> String {
        let p = self.dir.path().join("policy.toml");
        std::fs::write(
            &p,
            format!(
                "[workspace]\nroot = \"ws\"\n[commands]\nallow = [\"sh\", \"echo\", \"cat\", \"python3\", \"sleep\", \"env\", \"true\", \"exit\"]\n{extra}"
            ),
        )
        .unwrap();
        p.to_string_lossy().into_owned()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn echo_runs_and_streams() {
    let e = Env::new();
    let o = e.airlock(&["run", "--", "/bin/echo", "hi"]);
    assert_eq!(text(&o.stdout), "hi\n", "{}", text(&o.stderr));
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn exit_status_is_the_commands_own() {
    let e = Env::new();
    let p = e.policy("");
    let o = e.airlock(&["run", "--policy", &p, "--", "sh", "-c", "exit 7"]);
    assert_eq!(o.status.code(), Some(7), "{}", text(&o.stderr));
}

#[test]
fn gate_refusal_prints_the_reason_and_runs_nothing() {
    let e = Env::new();
    let marker = e.ws().join("marker");
    let o = e.airlock(&["run", "--", "sudo", "touch", marker.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(77));
    assert!(text(&o.stderr).contains("denied"), "{}", text(&o.stderr));
    assert!(!marker.exists());
    let o = e.airlock(&["run", "--json", "--", "sudo", "true"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["decision"], "deny");
    assert!(v["exit_code"].is_null());
}

#[test]
fn json_outcome_has_every_field_and_no_caller_secret() {
    let e = Env::new();
    let p = e.policy("");
    let o = e.airlock(&[
        "run",
        "--policy",
        &p,
        "--json",
        "-c",
        "cat data.txt; env; python3 -c 'print(open(\"/proc/1/environ\").read())'; echo new > made.txt; echo err >&2",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in [
        "decision",
        "reason",
        "exit_code",
        "signal",
        "killed_by",
        "duration_ms",
        "cpu_ms",
        "peak_memory_bytes",
        "stdout",
        "stderr",
        "truncated",
        "changes",
        "violations",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["exit_code"], 0);
    assert!(v["stdout"]
        .as_str()
        .unwrap()
        .starts_with("workspace data\n"));
    // PID 1's environ is either unreadable (init is not dumpable) or empty.
    assert!(v["stderr"].as_str().unwrap().ends_with("err\n"));
    assert!(
        !text(&o.stdout).contains("canary-5d1f0e"),
        "caller secret leaked"
    );
    let changes = v["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["kind"], "added");
    assert!(changes[0]["path"]
        .as_str()
        .unwrap()
        .ends_with("/ws/made.txt"));
    assert!(
        !e.ws().join("made.txt").exists(),
        "overlay write reached the host without --apply"
    );
}

#[test]
fn apply_flag_copies_changes_back() {
    let e = Env::new();
    let p = e.policy("");
    let o = e.airlock(&[
        "run",
        "--policy",
        &p,
        "--apply",
        "-c",
        "echo kept > kept.txt",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_to_string(e.ws().join("kept.txt")).unwrap(),
        "kept\n"
    );
}

#[test]
fn a_run_whose_every_change_is_denied_says_nothing_was_applied() {
    let e = Env::new();
    std::fs::create_dir_all(e.ws().join(".git/hooks")).unwrap();
    let p = e.policy("");
    let o = e.airlock(&[
        "run",
        "--policy",
        &p,
        "--apply",
        "--",
        "python3",
        "-c",
        "open('.git/hooks/pre-commit', 'w').write('pwned')",
    ]);
    let err = text(&o.stderr);
    assert!(!e.ws().join(".git/hooks/pre-commit").exists(), "{err}");
    assert!(
        err.contains("1 workspace change(s) not applied: every one was denied"),
        "{err}"
    );
    assert!(!err.contains("applied except"), "{err}");
}

#[test]
fn timeout_and_memory_have_their_own_exit_codes() {
    let e = Env::new();
    let p = e.policy("[limits]\ntimeout = \"1s\"\nmemory = \"64MiB\"\n");
    let o = e.airlock(&["run", "--policy", &p, "--", "sleep", "30"]);
    assert_eq!(o.status.code(), Some(124), "{}", text(&o.stderr));
    let o = e.airlock(&[
        "run",
        "--policy",
        &p,
        "--",
        "python3",
        "-c",
        "b = bytearray(512 << 20)",
    ]);
    assert_eq!(o.status.code(), Some(123), "{}", text(&o.stderr));
}

#[test]
fn help_documents_the_exit_codes() {
    let o = Command::new(AIRLOCK)
        .args(["run", "--help"])
        .output()
        .unwrap();
    let h = text(&o.stdout);
    for code in ["77", "75", "124", "123", "125"] {
        assert!(h.contains(code), "exit code {code} not documented");
    }
}

#[test]
fn doctor_passes_here_and_fails_without_a_working_helper() {
    let e = Env::new();
    let o = e.airlock(&["doctor"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    assert!(text(&o.stdout).contains("landlock"));
    let checks =
        airlock_sandbox::doctor::run(Path::new("/nonexistent/helper"), &e.dir.path().join("runs"));
    assert!(!airlock_sandbox::doctor::all_required_ok(&checks));
    let failed: Vec<_> = checks.iter().filter(|c| !c.ok).map(|c| c.layer).collect();
    assert!(failed.contains(&"end_to_end"), "{failed:?}");
}

#[test]
fn doctor_prints_the_backends_own_probe() {
    let e = Env::new();
    // Native: the probe is the layer checks, built for real.
    let o = e.airlock(&["doctor", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["probe"]["backend"], "native");
    assert_eq!(v["probe"]["available"], true, "{v}");
    assert_eq!(v["probe"]["layers"], v["layers"]);
    // A backend this build lacks: not available, saying what would allow it.
    if let Some(kind) = airlock_sandbox::BackendKind::ALL
        .into_iter()
        .find(|k| !k.built())
    {
        let o = e.airlock(&["doctor", "--backend", kind.as_str()]);
        assert_eq!(o.status.code(), Some(1));
        let out = text(&o.stdout);
        assert!(
            out.contains(&format!("backend {kind} (")) && out.contains("NOT AVAILABLE"),
            "{out}"
        );
        assert!(out.contains("Hint:"), "{out}");
    }
    // An OCI runtime found here: named with its version.
    if Path::new("/usr/bin/crun").exists() && rustix::process::geteuid().is_root() {
        let o = e.airlock(&["doctor", "--backend", "oci", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["probe"]["available"], true, "{v}");
        let rt = &v["probe"]["runtime"];
        assert!(rt["name"].is_string() && rt["version"].is_string(), "{v}");
        assert!(!v["probe"]["enforces"].as_array().unwrap().is_empty());
    }
}

/// Runs airlock in the workspace with `input` on its stdin (a pipe).
fn airlock_with_stdin(e: &Env, args: &[&str], input: &[u8]) -> Output {
    airlock_with_stdin_env(e, args, input, &[])
}

fn airlock_with_stdin_env(e: &Env, args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Output {
    use std::io::Write;
    let mut child = Command::new(AIRLOCK)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(e.ws())
        .env("AIRLOCK_STATE_DIR", e.dir.path().join("state"))
        .env_remove("AIRLOCK_POLICY")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // A command that reads nothing lets airlock exit early: EPIPE here is fine.
    let _ = stdin.write_all(input);
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// What a cold run's caller streams in reaches the command, and is in the
/// trail as its output is: length, SHA-256 and the start.
#[test]
fn piped_stdin_reaches_the_command_and_stdin_file_replaces_it() {
    use sha2::Digest;
    let e = Env::new();
    // More than a pipe buffer, so it must be streamed, not written once.
    let big = "line\n".repeat(40_000);
    let o = airlock_with_stdin(&e, &["run", "--", "wc", "-c"], big.as_bytes());
    assert_eq!(text(&o.stdout).trim(), "200000", "{}", text(&o.stderr));
    assert_eq!(o.status.code(), Some(0));
    let record = executions(&e).pop().expect("an execution record");
    let stdin = &record["stdin"];
    assert_eq!(stdin["source"], "caller", "{record}");
    assert_eq!(stdin["bytes"], 200_000, "{record}");
    assert_eq!(
        stdin["sha256"],
        hex::encode(sha2::Sha256::digest(big.as_bytes())),
        "{record}"
    );
    assert_eq!(stdin["truncated"], true, "{record}");
    assert!(stdin["text"].as_str().unwrap().starts_with("line\nline\n"));
    // `cat /dev/stdin` reopens fd 0 by path: it works because fd 0 is a pipe.
    let o = airlock_with_stdin(&e, &["run", "--", "cat", "/dev/stdin"], b"piped\n");
    assert_eq!(text(&o.stdout), "piped\n", "{}", text(&o.stderr));
    let input = e.dir.path().join("input.txt");
    std::fs::write(&input, "from a file\n").unwrap();
    let o = airlock_with_stdin(
        &e,
        &["run", "--stdin", input.to_str().unwrap(), "--", "cat"],
        b"not this\n",
    );
    assert_eq!(text(&o.stdout), "from a file\n", "{}", text(&o.stderr));
    // The command exits without reading: airlock does not wait for stdin's end.
    let o = airlock_with_stdin(&e, &["run", "--", "true"], big.as_bytes());
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// The execution records of `e`'s audit log, oldest first.
fn executions(e: &Env) -> Vec<serde_json::Value> {
    let mut files: Vec<_> = std::fs::read_dir(e.dir.path().join("state/audit"))
        .unwrap()
        .flatten()
        .map(|f| f.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
                .collect::<Vec<_>>()
        })
        .filter(|r| r["kind"] == "execution")
        .collect()
}

/// A `/dev/null` stdin is not handed over at all: the command reads the
/// sandbox's own, and the record has no stdin.
#[test]
fn a_dev_null_stdin_is_the_sandboxs_own_and_not_recorded() {
    let e = Env::new();
    let probe = "[ -c /dev/stdin ] && echo sandbox-null; cat";
    let o = e.airlock(&["run", "--", "sh", "-c", probe]);
    assert_eq!(text(&o.stdout), "sandbox-null\n", "{}", text(&o.stderr));
    let record = executions(&e).pop().expect("an execution record");
    assert!(record.get("stdin").is_none(), "{record}");
}

/// `airlock run` forks its helper when the backend opens (native::prefork),
/// so the profile shows no "helper started" step. Given a pipe for stdin
/// before it knew, the helper still hands a command /dev/null when airlock's
/// stdin is a terminal (nothing to stream), as a spawned helper does.
#[test]
fn a_cli_run_forks_its_helper_in_advance_and_keeps_stdin_null() {
    let e = Env::new();
    let probe = "if [ -c /dev/stdin ]; then echo stdin-is-null; elif [ -p /dev/stdin ]; then echo stdin-is-a-pipe; fi";
    let line = format!("{AIRLOCK} run -- sh -c '{probe}'");
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .current_dir(e.ws())
        .env("AIRLOCK_STATE_DIR", e.dir.path().join("state"))
        .env("AIRLOCK_PROFILE", "1")
        .env_remove("AIRLOCK_POLICY")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` provides the pty");
    let tty = text(&o.stdout);
    assert!(tty.contains("stdin-is-null"), "{tty}");
    assert!(
        tty.contains("helper (forked in advance) has the request"),
        "{tty}"
    );
    assert!(!tty.contains("helper started"), "{tty}");
    let o = airlock_with_stdin(&e, &["run", "--", "sh", "-c", probe], b"");
    assert_eq!(text(&o.stdout), "stdin-is-a-pipe\n", "{}", text(&o.stderr));
}

/// The forked helper prepares on another CPU than airlock's (sys::run_beside_me)
/// and takes airlock's CPU mask back before it clones init: the command may
/// use every CPU airlock may, and nothing else.
#[test]
fn a_cli_runs_command_gets_the_callers_cpus() {
    let e = Env::new();
    // nproc counts the CPUs of the calling process's mask.
    let ours = std::thread::available_parallelism().unwrap().get();
    let o = e.airlock(&["run", "--", "nproc"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), ours.to_string());
    // A caller held to one CPU: its helper cannot move elsewhere, nor the command.
    let o = Command::new("taskset")
        .args(["-c", "0", AIRLOCK, "run", "--", "nproc"])
        .current_dir(e.ws())
        .env("AIRLOCK_STATE_DIR", e.dir.path().join("state"))
        .env_remove("AIRLOCK_POLICY")
        .output()
        .expect("util-linux `taskset`");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout).trim(), "1");
}

/// The forked helper tears its sandbox down while airlock writes the outcome
/// record; airlock still exits only once that is done: neither the run's
/// directory nor its cgroup is left when it returns. (The cgroup goes last,
/// after init's mount namespace, which waits for an RCU grace period: the
/// window a caller that did not wait would show. cgroup v1 as root only.)
#[test]
fn a_cli_run_returns_after_its_sandbox_is_gone() {
    let e = Env::new();
    let runs = e.dir.path().join("state/runs");
    // A forked helper makes its run's cgroup before it knows the request
    // (`run-<helper pid>-forked`): a group left behind is one whose helper
    // has exited. Groups of other tests' live helpers are theirs.
    let stale_groups = || -> Vec<String> {
        let v1 = Path::new("/sys/fs/cgroup/pids/airlock");
        let names: Vec<String> = std::fs::read_dir(v1)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names
            .into_iter()
            .filter(|n| {
                let pid = n.strip_prefix("run-").and_then(|r| r.split('-').next());
                pid.is_some_and(|p| !Path::new("/proc").join(p).exists())
            })
            .collect()
    };
    // Run, and refused (the helper forked in advance is let go unused).
    let cases: [&[&str]; 2] = [
        &["run", "--json", "--", "true"],
        &["run", "--json", "--", "sudo", "true"],
    ];
    for args in cases.iter().cycle().take(10) {
        let o = e.airlock(args);
        let want = if args.contains(&"sudo") { 77 } else { 0 };
        assert_eq!(o.status.code(), Some(want), "{}", text(&o.stderr));
        let left: Vec<_> = std::fs::read_dir(&runs)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            left.is_empty(),
            "left behind in {}: {left:?}",
            runs.display()
        );
        let stale = stale_groups();
        assert!(stale.is_empty(), "cgroups left behind: {stale:?}");
    }
}

#[test]
fn flags_tighten_limits_and_kill_messages_name_the_value_and_key() {
    let e = Env::new();
    let o = e.airlock(&["run", "--timeout", "1s", "--", "sleep", "5"]);
    assert_eq!(o.status.code(), Some(124), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("limits.timeout = \"1s\""), "{err}");
    assert!(err.contains("Hint:"), "{err}");

    let o = e.airlock(&[
        "run",
        "--memory",
        "48MiB",
        "--",
        "python3",
        "-c",
        "x = bytearray(400 << 20); print(len(x))",
    ]);
    assert_eq!(o.status.code(), Some(123), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("limits.memory = \"48MiB\""),
        "{}",
        text(&o.stderr)
    );

    // Looser than the policy: refused before anything runs, naming the key.
    let o = e.airlock(&["run", "--timeout", "2h", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("[limits] timeout = \"2h\""),
        "{}",
        text(&o.stderr)
    );
    let o = e.airlock(&["run", "--network", "open", "--", "true"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("network.mode = \"none\""),
        "{}",
        text(&o.stderr)
    );
    let o = e.airlock(&["run", "--network", "none", "--", "true"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn running_from_the_root_directory_is_refused_with_a_hint() {
    let e = Env::new();
    let o = Command::new(AIRLOCK)
        .args(["run", "--", "true"])
        .current_dir("/")
        .env("AIRLOCK_STATE_DIR", e.dir.path().join("state"))
        .env_remove("AIRLOCK_POLICY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(err.contains("the workspace would be /"), "{err}");
    assert!(
        err.contains("Hint: cd into the project's directory"),
        "{err}"
    );
}

/// The wasm backend runs in `airlock-wasm`, looked for next to `airlock`: an
/// `airlock` copied alone refuses a wasm run with a message naming the missing
/// file and how to install it, and runs nothing; its native runs still work.
#[test]
fn a_wasm_run_without_airlock_wasm_beside_it_is_refused_with_a_hint() {
    let e = Env::new();
    let alone = e.dir.path().join("bin");
    std::fs::create_dir(&alone).unwrap();
    std::fs::copy(AIRLOCK, alone.join("airlock")).unwrap();
    let run = |args: &[&str]| {
        Command::new(alone.join("airlock"))
            .args(args)
            .current_dir(e.ws())
            .env("AIRLOCK_STATE_DIR", e.dir.path().join("state"))
            .env_remove("AIRLOCK_POLICY")
            .output()
            .unwrap()
    };
    let o = run(&[
        "run",
        "--backend",
        "wasm",
        "--",
        "python3",
        "-c",
        "open('ran', 'w')",
    ]);
    let err = text(&o.stderr);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("airlock-wasm, which is not next to"), "{err}");
    assert!(err.contains("Hint: install both binaries"), "{err}");
    assert!(!e.ws().join("ran").exists());
    let o = run(&["run", "--", "/bin/echo", "native"]);
    assert_eq!(text(&o.stdout), "native\n", "{}", text(&o.stderr));
}

/// The state directory is hidden however it is named: through a symlinked
/// parent of the workspace, and when a `filesystem.write` entry names it.
#[test]
fn the_state_dir_is_hidden_through_a_link_and_under_a_write_path() {
    let e = Env::new();
    let link = e.dir.path().join("wsL");
    std::os::unix::fs::symlink(e.ws(), &link).unwrap();
    // The write path holds the state dir (its parent): one naming the state
    // dir itself, or a path inside it, is refused (checked at the end).
    std::fs::create_dir(e.ws().join("var")).unwrap();
    let state = link.join("var/.st");
    let policy = e.policy(&format!(
        "[filesystem]\nwrite = [\"{}\"]\n",
        e.ws().join("var").display()
    ));
    let run = |args: &[&str]| {
        Command::new(AIRLOCK)
            .args(args)
            .current_dir(e.ws())
            .env("AIRLOCK_STATE_DIR", &state)
            .env_remove("AIRLOCK_POLICY")
            .output()
            .unwrap()
    };
    // A first run puts records in the log.
    let o = run(&["run", "--policy", &policy, "--", "echo", "first"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(e.ws().join("var/.st/audit").is_dir());
    let o = run(&[
        "run",
        "--policy",
        &policy,
        "--",
        "sh",
        "-c",
        "cat var/.st/audit/* 2>/dev/null; cat var/.st/approvals/* 2>/dev/null; echo x > var/.st/audit/planted 2>/dev/null; echo done",
    ]);
    let out = text(&o.stdout);
    assert_eq!(
        out,
        "done\n",
        "the state dir showed: {out} {}",
        text(&o.stderr)
    );
    assert!(!e.ws().join("var/.st/audit/planted").exists());
    let o = run(&["audit", "verify"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    // A write path that is the state dir (named through the link's target)
    // would show it unhidden: refused before anything runs.
    let inside = e.policy(&format!(
        "[filesystem]\nwrite = [\"{}\"]\n",
        e.ws().join("var/.st").display()
    ));
    let o = run(&["run", "--policy", &inside, "--", "echo", "never"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(text(&o.stdout).is_empty(), "{}", text(&o.stdout));
    assert!(
        text(&o.stderr).contains("is airlock's state directory"),
        "{}",
        text(&o.stderr)
    );
}

/// A change set longer than its audit record lists keeps its full list
/// beside the log, bound by the record's hash: every applied name is in the
/// trail, and an edited list fails `audit verify`.
#[test]
fn a_long_change_set_keeps_its_full_list_for_the_audit_trail() {
    let e = Env::new();
    let o = e.airlock(&[
        "run",
        "--apply",
        "--json",
        "--",
        "python3",
        "-c",
        "import pathlib\nfor i in range(150): pathlib.Path(f'f{i}').write_text('x')\npathlib.Path('zz-last').write_text('y')",
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    let id = serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["request_id"]
        .as_str()
        .unwrap()
        .to_string();
    let list = e.dir.path().join(format!("state/changes/{id}.list"));
    let body = std::fs::read_to_string(&list).unwrap();
    assert_eq!(body.lines().count(), 151, "{body}");
    assert!(body.contains("zz-last"), "{body}");
    assert!(e.ws().join("zz-last").exists());
    let o = e.airlock(&["audit", "verify"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    // An edited list: verify names it.
    std::fs::write(&list, body.replace("zz-last", "zz-else")).unwrap();
    let o = e.airlock(&["audit", "verify"]);
    assert_ne!(o.status.code(), Some(0));
    let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
    assert!(all.contains("full change list"), "{all}");
    // A short set writes none.
    let o = e.airlock(&["run", "--apply", "--", "sh", "-c", "echo x > one"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        std::fs::read_dir(e.dir.path().join("state/changes"))
            .unwrap()
            .count(),
        1
    );
}

/// `airlock run` streams its own stdin to the command; when the command needs
/// an approval, the stdin is read whole first and the approval covers it: a
/// run under it with other stdin is refused, the asked stdin runs. The
/// person sees the stdin in `approvals show`.
#[test]
fn a_piped_stdin_is_part_of_what_is_approved() {
    let e = Env::new();
    let p = e.dir.path().join("policy.toml");
    std::fs::write(
        &p,
        "[workspace]\nroot = \"ws\"\n[commands]\nallow = [\"echo\"]\napproval = [\"cat\"]\n",
    )
    .unwrap();
    let p = p.to_string_lossy().into_owned();
    let piped = |stdin: &str, args: &[&str]| airlock_with_stdin(&e, args, stdin.as_bytes());
    let o = piped("build\n", &["run", "--json", "--policy", &p, "--", "cat"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "approval_pending", "{v}");
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    let show = e.airlock(&["approvals", "show", &id]);
    let shown = text(&show.stdout);
    assert!(
        shown.contains("stdin") && shown.contains("6 bytes"),
        "{shown}"
    );
    assert!(shown.contains("build\\n"), "{shown}");
    let o = e.airlock(&["approvals", "approve", &id]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let run_with = |stdin: &str| {
        piped(
            stdin,
            &[
                "run",
                "--json",
                "--policy",
                &p,
                "--approval",
                &id,
                "--",
                "cat",
            ],
        )
    };
    let o = run_with("src a.txt\n");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "approval_refused", "{v}");
    assert_eq!(v["refusal"]["code"], "stdin_changed", "{v}");
    // The refusal says what differs: the approved stdin's size and this one's.
    let message = v["refusal"]["message"].as_str().unwrap();
    assert!(
        message.contains("6 bytes of stdin") && message.contains("10 bytes of stdin"),
        "{message}"
    );
    assert!(v["stdout"].is_null(), "{v}");
    let o = run_with("build\n");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ran", "{v}");
    assert_eq!(v["stdout"], "build\n", "{v}");
}

/// `approvals show` lists the files the approval pins, with their hashes, and
/// says that what they import or load is not pinned.
#[test]
fn approvals_show_lists_the_pinned_files() {
    let e = Env::new();
    std::fs::write(e.ws().join("build.sh"), "echo building\n").unwrap();
    let p = e.dir.path().join("policy.toml");
    std::fs::write(
        &p,
        "[workspace]\nroot = \"ws\"\n[commands]\nallow = [\"echo\"]\napproval = [\"sh\"]\n",
    )
    .unwrap();
    let p = p.to_string_lossy().into_owned();
    let o = e.airlock(&["run", "--json", "--policy", &p, "--", "sh", "build.sh"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "approval_pending", "{v}");
    let id = v["approval"]["id"].as_str().unwrap().to_string();
    let shown = text(&e.airlock(&["approvals", "show", &id]).stdout);
    let pinned = shown
        .lines()
        .find(|l| l.trim_start().starts_with("build.sh  sha256:"))
        .unwrap_or_else(|| panic!("build.sh is not listed as pinned:\n{shown}"));
    assert_eq!(
        pinned.split("sha256:").nth(1).unwrap().len(),
        64,
        "{pinned}"
    );
    assert!(shown.contains("not what they import or load"), "{shown}");
    let json: serde_json::Value =
        serde_json::from_slice(&e.airlock(&["approvals", "show", &id, "--json"]).stdout).unwrap();
    assert!(
        json["content"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("/build.sh"),
        "{json}"
    );
}

/// An editor git opens (a commit without `-m`) reads its keystrokes from the
/// run's stdin, which the agent writes: vim's `:!cmd` would run a program the
/// gate never judged. The run's git configuration names `true` instead.
#[test]
fn git_opens_no_editor_that_reads_the_agents_stdin() {
    let e = Env::new();
    let init = Command::new("git")
        .args(["init", "-q"])
        .current_dir(e.ws())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", e.dir.path())
        .output()
        .unwrap();
    assert!(init.status.success(), "{}", text(&init.stderr));
    let p = e.dir.path().join("policy.toml");
    std::fs::write(
        &p,
        "[workspace]\nroot = \"ws\"\n[commands]\nallow = [\"git\"]\n[env]\npass = [\"TERM\"]\n\
         git_config = { \"user.name\" = \"agent\", \"user.email\" = \"agent@example.invalid\" }\n",
    )
    .unwrap();
    let p = p.to_string_lossy().into_owned();
    // TERM as a terminal user has it, so that vim would take the keys.
    let o = airlock_with_stdin_env(
        &e,
        &[
            "run",
            "--json",
            "--policy",
            &p,
            "--",
            "git",
            "commit",
            "--allow-empty",
        ],
        b":!touch ran-by-editor\n:wq\n",
        &[("TERM", "xterm")],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "ran", "{v}");
    let changes = v["changes"].to_string();
    assert!(
        !changes.contains("ran-by-editor"),
        "an editor ran the agent's keys: {v}"
    );
    assert!(
        v["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("empty commit message"),
        "{v}"
    );
}
