//! Every layer of the native sandbox, proven in force by looking from inside a
//! real sandbox on this kernel, and teardown proven by looking at the host
//! (process table, mountinfo, cgroup tree, runs directory).
//!
//! Needs root (the machine these tests run on is root); each test builds its
//! own workspace and runs directory.

use airlock_sandbox::native::NativeBackend;
use airlock_sandbox::relay;
use airlock_sandbox::{
    Backend, ChangeKind, KillReason, Limits, NetworkSpec, Outcome, SandboxSpec, WorkspaceMode,
    WorkspaceSpec,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

const HELPER: &str = env!("CARGO_BIN_EXE_airlock-sandbox-helper");

fn unique(tag: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "t{}-{tag}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    runs: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("readme.txt"), "original\n").unwrap();
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
    let runs = dir.path().join("runs");
    Fixture {
        ws,
        runs,
        _dir: dir,
    }
}

fn limits() -> Limits {
    Limits {
        timeout_ms: 30_000,
        cpu_time_ms: 30_000,
        memory_bytes: 256 << 20,
        pids: 64,
        cpus: 1.0,
        output_bytes: 1 << 20,
        tmp_bytes: 16 << 20,
        file_size_bytes: 64 << 20,
        open_files: 256,
    }
}

fn spec(f: &Fixture, script: &str) -> SandboxSpec {
    SandboxSpec {
        request_id: unique("run"),
        argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
        cwd: f.ws.clone(),
        env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
        workspace: WorkspaceSpec {
            root: f.ws.clone(),
            mode: WorkspaceMode::Overlay,
            protect: vec![".git/hooks".into(), ".git/config".into()],
            apply: false,
            changes: Default::default(),
            owned: vec![],
            keep: None,
            list: None,
            home: None,
        },
        network: NetworkSpec::None,
        limits: limits(),
        read_paths: vec![],
        write_paths: vec![],
        hide_paths: vec![],
        stdin: None,
        limit_enforcement: Default::default(),
        git_config: String::new(),
    }
}

fn run(f: &Fixture, spec: &SandboxSpec) -> Outcome {
    let backend = NativeBackend::new(PathBuf::from(HELPER), f.runs.clone());
    let outcome = backend
        .run(spec, &mut airlock_sandbox::backend::Discard)
        .expect("sandbox run");
    assert_no_trace(f, &spec.request_id);
    outcome
}

fn sh(f: &Fixture, script: &str) -> Outcome {
    run(f, &spec(f, script))
}

/// After a run: no process, mount, cgroup or run directory of it is left.
fn assert_no_trace(f: &Fixture, request_id: &str) {
    let leftover_dirs: Vec<_> = std::fs::read_dir(&f.runs)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        leftover_dirs.is_empty(),
        "runs dir not empty: {leftover_dirs:?}"
    );
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mountinfo.contains(f.runs.to_str().unwrap()),
        "a mount of the run is visible on the host"
    );
    for ctrl in ["memory", "pids", "cpu", "cpuacct", "unified"] {
        let parent = Path::new("/sys/fs/cgroup").join(ctrl).join("airlock");
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                assert!(
                    !name.ends_with(request_id),
                    "cgroup {ctrl}/airlock/{name} left behind"
                );
            }
        }
    }
    // A reused cgroup (v1 slot) does not carry the run's id: none that no
    // run holds may have a member.
    if let Some(census) = airlock_sandbox::native::cgroup::CgroupHost::detect()
        .ok()
        .and_then(|h| h.slot_census())
    {
        assert!(
            census.stray.is_empty(),
            "processes left in cgroup slots no run holds: {:?}",
            census.stray
        );
    }
    for p in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cg) = std::fs::read_to_string(p.path().join("cgroup")) {
            assert!(
                !cg.contains(request_id),
                "process {:?} still in the run's cgroup",
                p.file_name()
            );
        }
    }
}

fn field<'a>(text: &'a str, key: &str) -> &'a str {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .map(str::trim)
        .unwrap_or_else(|| panic!("{key} not in:\n{text}"))
}

#[test]
fn privileges_and_user_namespace_are_in_force() {
    let f = fixture();
    let o = sh(&f, "cat /proc/self/status; echo UIDMAP; cat /proc/self/uid_map; echo FDS; ls /proc/self/fd; echo HOST; cat /proc/sys/kernel/hostname");
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    let s = &o.stdout;
    assert_eq!(field(s, "NoNewPrivs:"), "1");
    for k in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        assert_eq!(field(s, k), "0000000000000000", "{k}");
    }
    assert_eq!(field(s, "Seccomp:"), "2", "seccomp filter mode");
    // One filter: the set-id rule is part of the main filter, not stacked on it.
    assert_eq!(field(s, "Seccomp_filters:"), "1", "seccomp filters");
    // Root inside, an unprivileged host uid outside.
    assert!(field(s, "Uid:").starts_with("0\t"));
    let map = s.split("UIDMAP\n").nth(1).unwrap().lines().next().unwrap();
    let cols: Vec<&str> = map.split_whitespace().collect();
    assert_eq!(cols, ["0", "2000000000", "1"], "uid_map");
    // Only 0, 1, 2 (and the fd ls opens for the listing itself).
    let fds: Vec<&str> = s
        .split("FDS\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| *l != "HOST")
        .collect();
    assert_eq!(fds, ["0", "1", "2", "3"], "open fds");
    assert_eq!(s.split("HOST\n").nth(1).unwrap().trim(), "airlock");
}

#[test]
fn stdio_can_be_reopened_through_dev_stdout() {
    let f = fixture();
    let o = sh(
        &f,
        "echo out > /dev/stdout; echo err > /dev/stderr; cat /dev/stdin",
    );
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_eq!(o.stdout, "out\n");
    assert_eq!(o.stderr, "err\n");
}

#[test]
fn new_session_and_landlock_are_in_force() {
    let f = fixture();
    // The command leads its own session (setsid): the shell's session id is its pid.
    // Landlock: `/` (a read-only tmpfs whose mode lets anyone list it) has no
    // landlock rule, so listing it is refused although the mounts would allow it.
    // It belongs to sandbox root, as a container's root does.
    let o = sh(
        &f,
        "echo SID $(cut -d' ' -f6 /proc/$$/stat) PID $$; stat -c 'MODE %a OWNER %u:%g' /; ls / 2>&1 | head -1",
    );
    let sid = o.stdout.lines().next().unwrap();
    let parts: Vec<&str> = sid.split_whitespace().collect();
    assert_eq!(parts[1], parts[3], "not a session leader: {sid}");
    assert!(o.stdout.contains("MODE 755 OWNER 0:0"), "{o:?}");
    assert!(o.stdout.contains("Permission denied"), "{o:?}");
}

#[test]
fn network_namespace_has_only_loopback_and_it_is_up() {
    let f = fixture();
    let o = sh(
        &f,
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '; echo ROUTE; cat /proc/net/route | wc -l; \
         echo LINK; ip -o link show; \
         python3 -c 'import socket; socket.socket()' 2>&1 | tail -1",
    );
    let ifaces: Vec<&str> = o
        .stdout
        .split("ROUTE")
        .next()
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(ifaces, ["lo"], "{o:?}");
    // No routes besides the header line: nothing beyond loopback is reachable.
    assert_eq!(
        o.stdout
            .split("ROUTE\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim(),
        "1"
    );
    let links: Vec<&str> = o
        .stdout
        .split("LINK\n")
        .nth(1)
        .unwrap()
        .lines()
        .filter(|l| l.contains(": <"))
        .collect();
    assert_eq!(links.len(), 1, "{links:?}");
    assert!(links[0].contains(" lo: <LOOPBACK,UP"), "{links:?}");
    // Network mode none: AF_INET sockets are refused outright (seccomp socket rule).
    assert!(o.stdout.contains("Address family not supported"), "{o:?}");
}

#[test]
fn proxy_mode_reaches_only_the_relay_to_the_host_socket() {
    use std::io::{Read, Write};
    let f = fixture();
    let sock = f.runs.parent().unwrap().join("proxy.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let server = std::thread::spawn(move || {
        // The relay hands the program's TCP connection itself to the proxy.
        use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
        let (c, _) = listener.accept().unwrap();
        let mut byte = [0xffu8; 1];
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = recvmsg(
            &c,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        )
        .unwrap();
        assert_eq!((got.bytes, byte[0]), (1, relay::HANDOFF_BYTE));
        let fd = control
            .drain()
            .find_map(|m| match m {
                RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
                _ => None,
            })
            .expect("a descriptor behind the handoff byte");
        let mut program = std::net::TcpStream::from(fd);
        let mut buf = [0u8; 5];
        program.read_exact(&mut buf).unwrap();
        // Answer, so that the command waits for its bytes to have arrived before
        // it exits (the sandbox's teardown ends the relay).
        program.write_all(b"ok").unwrap();
        buf
    });
    let mut s = spec(
        &f,
        "python3 -c 'import socket, os\n\
c = socket.create_connection((\"127.0.0.1\", 3128)); c.sendall(b\"hello\"); print(\"relayed\", c.recv(2))\n\
try:\n socket.create_connection((\"127.0.0.1\", 9), timeout=2); print(\"DIRECT_OK\")\n\
except OSError as e: print(\"direct refused\", e.errno)\n\
print(os.environ.get(\"HTTP_PROXY\"))'",
    );
    s.network = NetworkSpec::Proxy {
        socket: sock.clone(),
    };
    let o = run(&f, &s);
    assert_eq!(&server.join().unwrap(), b"hello", "{o:?}");
    assert!(o.stdout.contains("relayed b'ok'"), "{o:?}");
    assert!(!o.stdout.contains("DIRECT_OK"), "{o:?}");
    assert!(o.stdout.contains("http://127.0.0.1:3128"), "{o:?}");
    assert!(
        o.violations
            .iter()
            .any(|v| v.kind == airlock_sandbox::ViolationKind::Network
                && v.detail.contains("127.0.0.1:9")),
        "{:?}",
        o.violations
    );
}

#[test]
fn filesystem_view_hides_secrets_and_protects_proc() {
    let f = fixture();
    let host_pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap();
    // `/home` itself now exists (it holds the run's own home, /home/airlock),
    // so what must be absent is every home of the host's.
    let host_homes: String = std::fs::read_dir("/home")
        .map(|d| {
            d.flatten()
                .map(|e| format!(" /home/{}", e.file_name().to_string_lossy()))
                .filter(|p| p != " /home/airlock")
                .collect()
        })
        .unwrap_or_default();
    let script = format!(
        "for p in /etc/shadow /root{host_homes} /var /run/docker.sock /etc/ssh; do [ -e $p ] && echo PRESENT $p; done; \
         echo '|/tmp/pwn %p' > /proc/sys/kernel/core_pattern && echo WROTE_CORE_PATTERN; \
         echo c > /proc/sysrq-trigger && echo WROTE_SYSRQ; \
         echo BYTES $(head -c 100 /proc/kcore | wc -c) $(cat /proc/keys | wc -c) $(cat /proc/timer_list | wc -c); \
         touch /usr/x 2>/dev/null && echo WROTE_USR; touch /etc/x 2>/dev/null && echo WROTE_ETC; \
         grep ' /usr ' /proc/self/mountinfo; grep ' /proc/sys ' /proc/self/mountinfo; \
         echo tmpdata > /tmp/t && cat /tmp/t; df -k /tmp | tail -1"
    );
    let o = sh(&f, &script);
    let out = &o.stdout;
    assert!(!out.contains("PRESENT"), "{out}");
    assert!(!out.contains("WROTE"), "{out}");
    assert!(out.contains("BYTES 0 0 0"), "{out}");
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap(),
        host_pattern
    );
    let usr = out
        .lines()
        .find(|l| l.contains(" /usr "))
        .expect("usr mount");
    assert!(
        usr.contains(" ro,") && usr.contains("nosuid") && usr.contains("nodev"),
        "{usr}"
    );
    let sys = out
        .lines()
        .find(|l| l.contains(" /proc/sys "))
        .expect("proc/sys mount");
    assert!(sys.contains(" ro,"), "{sys}");
    assert!(out.contains("tmpdata"));
    // /tmp is the 16 MiB tmpfs of limits.tmp.
    let df: Vec<&str> = out.lines().last().unwrap().split_whitespace().collect();
    assert_eq!(df[1], "16384", "{df:?}");
}

#[test]
fn pid_namespace_shows_only_the_sandbox() {
    let f = fixture();
    let o = sh(
        &f,
        "ls -d /proc/[0-9]* | wc -l; cat /proc/1/cmdline | tr '\\0' ' '",
    );
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    let mut lines = o.stdout.lines();
    let count: u32 = lines.next().unwrap().trim().parse().unwrap();
    // init, sh, ls (and the pipeline's wc): nothing from the host.
    assert!(count <= 5, "{count} processes visible");
}

#[test]
fn caller_environment_never_reaches_the_sandbox_not_even_pid1() {
    let f = fixture();
    let mut s = spec(&f, "cat /proc/1/environ; echo; env; cat /proc/self/environ");
    s.env.push(("VISIBLE".into(), "yes".into()));
    let path = f.runs.parent().unwrap().join("spec.json");
    std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
    let canary = "AIRLOCK_CANARY_7c1e55b0";
    let out = std::process::Command::new(HELPER)
        .arg("run")
        .arg(&path)
        .env("SECRET_TOKEN", canary)
        .env("AIRLOCK_STATE_DIR", f.runs.parent().unwrap())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("VISIBLE=yes"), "{text}");
    assert!(!text.contains(canary), "canary leaked: {text}");
}

#[test]
fn overlay_workspace_reports_changes_and_leaves_the_host_untouched() {
    let f = fixture();
    std::fs::write(f.ws.join("gone.txt"), "bye").unwrap();
    let o = sh(&f, "echo changed >> readme.txt && echo new > added.txt && mkdir d && echo x > d/f && rm gone.txt && cat readme.txt && echo hook > .git/hooks/pre-commit");
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_eq!(o.stdout, "original\nchanged\n");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("readme.txt")).unwrap(),
        "original\n"
    );
    assert!(!f.ws.join("added.txt").exists());
    assert!(f.ws.join("gone.txt").exists());
    let find = |p: &str| {
        o.changes
            .iter()
            .find(|c| c.path == f.ws.join(p).to_str().unwrap())
            .map(|c| c.kind)
    };
    assert_eq!(find("readme.txt"), Some(ChangeKind::Modified));
    assert_eq!(find("added.txt"), Some(ChangeKind::Added));
    assert_eq!(find("d"), Some(ChangeKind::Added));
    assert_eq!(find("d/f"), Some(ChangeKind::Added));
    assert_eq!(find("gone.txt"), Some(ChangeKind::Deleted));
    assert_eq!(find(".git/hooks/pre-commit"), Some(ChangeKind::Added));
    assert!(!o.applied);
}

#[test]
fn overlay_apply_copies_back_but_never_a_protected_path_or_through_a_symlink() {
    let f = fixture();
    let outside = f.runs.parent().unwrap().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, f.ws.join("link")).unwrap();
    std::fs::write(f.ws.join("gone.txt"), "bye").unwrap();
    let mut s = spec(&f, "echo changed > readme.txt; echo new > added.txt; rm gone.txt; echo evil > .git/hooks/post-checkout; echo '[x]' >> .git/config; rm link; mkdir link; echo esc > link/escaped");
    s.workspace.apply = true;
    let o = run(&f, &s);
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert!(o.applied);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("readme.txt")).unwrap(),
        "changed\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("added.txt")).unwrap(),
        "new\n"
    );
    assert!(!f.ws.join("gone.txt").exists());
    assert!(
        !f.ws.join(".git/hooks/post-checkout").exists(),
        "protected hook applied"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(
        !outside.join("escaped").exists(),
        "apply followed a symlink out of the workspace"
    );
    assert!(
        o.violations.iter().any(|v| v.detail.contains(".git/hooks")),
        "{:?}",
        o.violations
    );
}

#[test]
fn overlay_apply_refuses_to_replace_a_parent_of_a_protected_path() {
    let f = fixture();
    let mut s = spec(
        &f,
        "mv .git .git-old && mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit && echo ok",
    );
    s.workspace.apply = true;
    let o = run(&f, &s);
    assert_eq!(o.stdout, "ok\n", "{o:?}");
    assert!(
        f.ws.join(".git/hooks").is_dir(),
        "the real .git was replaced"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(
        !f.ws.join(".git/hooks/pre-commit").exists(),
        "a hook reached the host"
    );
    assert!(
        o.violations
            .iter()
            .any(|v| v.kind == airlock_sandbox::ViolationKind::Filesystem),
        "{:?}",
        o.violations
    );
}

#[test]
fn read_write_and_hide_lists_adjust_the_view() {
    let f = fixture();
    let base = f.runs.parent().unwrap().to_path_buf();
    let (ro, rw) = (base.join("ro-data"), base.join("rw-data"));
    std::fs::create_dir(&ro).unwrap();
    std::fs::create_dir(&rw).unwrap();
    std::fs::write(ro.join("r.txt"), "readable\n").unwrap();
    std::fs::write(f.ws.join("secret.txt"), "hidden-canary\n").unwrap();
    std::fs::create_dir(f.ws.join("private")).unwrap();
    std::fs::write(f.ws.join("private/key"), "hidden-canary\n").unwrap();
    let script = format!(
        "cat {ro}/r.txt; echo x > {ro}/new || echo RO_REFUSED; echo w > {rw}/w.txt && echo RW_OK; \
         cat secret.txt; ls private; cat private/key 2>&1",
        ro = ro.display(),
        rw = rw.display()
    );
    let mut s = spec(&f, &script);
    s.read_paths.push(ro.clone());
    s.write_paths.push(rw.clone());
    s.hide_paths.push(f.ws.join("secret.txt"));
    s.hide_paths.push(f.ws.join("private"));
    let o = run(&f, &s);
    assert!(
        o.stdout.contains("readable")
            && o.stdout.contains("RO_REFUSED")
            && o.stdout.contains("RW_OK"),
        "{o:?}"
    );
    assert!(
        !o.stdout.contains("hidden-canary") && !o.stderr.contains("hidden-canary"),
        "{o:?}"
    );
    assert!(!ro.join("new").exists());
    assert_eq!(std::fs::read_to_string(rw.join("w.txt")).unwrap(), "w\n");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("secret.txt")).unwrap(),
        "hidden-canary\n"
    );
}

#[test]
fn workspace_and_tmp_writes_are_bounded_in_bytes_and_inodes() {
    let f = fixture();
    let mut s = spec(
        &f,
        "dd if=/dev/zero of=big bs=1M count=200 2>/dev/null && echo WROTE_ALL; rm -f big; \
         python3 -c '\nimport os\ntry:\n  for i in range(100000): open(\"/tmp/f%d\" % i, \"w\").close()\n  print(\"TMP_INODES_UNBOUNDED\")\nexcept OSError as e: print(\"tmp stopped\", e.errno)'",
    );
    s.limits.memory_bytes = 96 << 20;
    let o = run(&f, &s);
    assert!(!o.stdout.contains("WROTE_ALL"), "{o:?}");
    assert!(!o.stdout.contains("TMP_INODES_UNBOUNDED"), "{o:?}");
    assert!(
        o.stdout.contains("tmp stopped 28") || o.killed_by == Some(KillReason::Memory),
        "{o:?}"
    );
    assert!(!f.ws.join("big").exists());
}

#[test]
fn a_state_dir_inside_the_workspace_works_and_stays_hidden() {
    let f = fixture();
    let state = f.ws.join(".airlock-state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join("audit.jsonl"), "audit-canary\n").unwrap();
    let inner = Fixture {
        _dir: tempfile::tempdir().unwrap(),
        ws: f.ws.clone(),
        runs: state.join("runs"),
    };
    let s = spec(&inner, "cat readme.txt; cat .airlock-state/audit.jsonl 2>&1; ls -A .airlock-state; echo x > new.txt");
    let o = run(&inner, &s);
    assert!(o.stdout.starts_with("original\n"), "{o:?}");
    assert!(!o.stdout.contains("audit-canary"), "{o:?}");
    assert!(
        o.changes.iter().all(|c| !c.path.contains(".airlock-state")),
        "{:?}",
        o.changes
    );
    assert_eq!(o.changes.len(), 1, "{:?}", o.changes);
}

#[test]
fn ro_workspace_refuses_writes() {
    let f = fixture();
    let mut s = spec(
        &f,
        "cat readme.txt; echo x > readme.txt || echo REFUSED; touch new || echo REFUSED2",
    );
    s.workspace.mode = WorkspaceMode::Ro;
    let o = run(&f, &s);
    assert!(
        o.stdout.contains("original")
            && o.stdout.contains("REFUSED\n")
            && o.stdout.contains("REFUSED2"),
        "{o:?}"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("readme.txt")).unwrap(),
        "original\n"
    );
    assert!(!f.ws.join("new").exists());
}

#[test]
fn rw_workspace_writes_through_except_protected_paths() {
    let f = fixture();
    let mut s = spec(&f, "echo rw > readme.txt && mkdir sub && echo y > sub/new && echo evil > .git/hooks/pre-commit || echo HOOK_REFUSED; echo '[x]' >> .git/config || echo CONFIG_REFUSED");
    s.workspace.mode = WorkspaceMode::Rw;
    let o = run(&f, &s);
    assert!(
        o.stdout.contains("HOOK_REFUSED") && o.stdout.contains("CONFIG_REFUSED"),
        "{o:?}"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("readme.txt")).unwrap(),
        "rw\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("sub/new")).unwrap(),
        "y\n"
    );
    assert!(!f.ws.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(f.ws.join(".git/config")).unwrap(),
        "[core]\n"
    );
    // Files written through keep the workspace owner (host root), not the sandbox uid.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(f.ws.join("sub/new")).unwrap().uid(), 0);
}

#[test]
fn no_set_id_file_can_be_made_even_in_rw_mode() {
    let f = fixture();
    let mut s = spec(
        &f,
        "cp /bin/true t; chmod 4755 t || echo CHMOD_REFUSED; chmod g+s t || echo SETGID_REFUSED; \
         chmod 755 t && echo PLAIN_CHMOD_OK; mkdir -m 2775 d || echo MKDIR_REFUSED; \
         python3 -c 'import os; os.open(\"s\", os.O_CREAT | os.O_WRONLY, 0o4755)' 2>&1 | tail -1; \
         python3 -c 'import os; os.chmod(\"t\", 0o6755)' 2>&1 | tail -1",
    );
    s.workspace.mode = WorkspaceMode::Rw;
    let o = run(&f, &s);
    for want in [
        "CHMOD_REFUSED",
        "SETGID_REFUSED",
        "PLAIN_CHMOD_OK",
        "MKDIR_REFUSED",
    ] {
        assert!(o.stdout.contains(want), "{want}: {o:?}");
    }
    assert_eq!(
        o.stdout.matches("Operation not permitted").count(),
        2,
        "{o:?}"
    );
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(&f.ws).unwrap().flatten() {
        let mode = entry.metadata().unwrap().permissions().mode();
        assert_eq!(
            mode & 0o6000,
            0,
            "{:?} has set-id bits: {mode:o}",
            entry.path()
        );
    }
}

#[test]
fn rw_protection_survives_renaming_the_parent_and_missing_paths_refuse() {
    let f = fixture();
    let mut s = spec(
        &f,
        "mv .git .git-aside || echo MOVE_REFUSED; rm -rf .git/hooks 2>/dev/null; [ -d .git/hooks ] && echo HOOKS_STILL_THERE",
    );
    s.workspace.mode = WorkspaceMode::Rw;
    let o = run(&f, &s);
    assert!(
        o.stdout.contains("MOVE_REFUSED") && o.stdout.contains("HOOKS_STILL_THERE"),
        "{o:?}"
    );
    assert!(f.ws.join(".git/hooks").is_dir() && !f.ws.join(".git-aside").exists());
    // A protected path that does not exist under an existing parent cannot be
    // kept from being created: the run is refused, naming the layer.
    std::fs::remove_dir(f.ws.join(".git/hooks")).unwrap();
    let mut s = spec(&f, "mkdir .git/hooks && echo evil > .git/hooks/pre-commit");
    s.workspace.mode = WorkspaceMode::Rw;
    let backend = NativeBackend::new(PathBuf::from(HELPER), f.runs.clone());
    match backend.run(&s, &mut airlock_sandbox::backend::Discard) {
        Err(airlock_sandbox::SandboxError::Layer { layer, detail }) => {
            assert_eq!(layer, airlock_sandbox::Layer::Workspace);
            assert!(detail.contains(".git/hooks"), "{detail}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!f.ws.join(".git/hooks").exists());
    assert_no_trace(&f, &s.request_id);
}

#[test]
fn timeout_kills_the_whole_tree_including_daemons() {
    let f = fixture();
    let mut s = spec(
        &f,
        "(setsid sh -c 'trap \"\" TERM; sleep 1000' &) ; trap '' TERM; sleep 1000",
    );
    s.limits.timeout_ms = 1000;
    let o = run(&f, &s);
    assert_eq!(o.killed_by, Some(KillReason::Timeout), "{o:?}");
    assert!(
        o.duration_ms >= 1000 && o.duration_ms < 10_000,
        "{}",
        o.duration_ms
    );
}

#[test]
fn memory_limit_is_reported_as_memory() {
    let f = fixture();
    let mut s = spec(
        &f,
        "python3 -c 'a = bytearray(300 * 1024 * 1024); print(len(a))'",
    );
    s.limits.memory_bytes = 64 << 20;
    let o = run(&f, &s);
    assert_eq!(o.killed_by, Some(KillReason::Memory), "{o:?}");
    assert!(!o.stdout.contains("314572800"));
    assert!(
        o.peak_memory_bytes > 32 << 20,
        "peak {}",
        o.peak_memory_bytes
    );
}

/// The command starts in its run's cgroup. Its very first act (cat reading
/// /proc/self/cgroup, no shell before it) finds it at the root of the
/// sandbox's cgroup namespace in the memory, pids and cpu hierarchies (v2: the
/// unified line), in the same groups as the sandbox's init: init unshared that
/// namespace only once it was in the run's cgroup. (From inside, a command and
/// an init both left outside would look the same; the escape case
/// res_memory_first_instruction proves the ordering by the limit itself.)
#[test]
fn the_command_starts_inside_its_cgroup() {
    let f = fixture();
    let mut s = spec(&f, "");
    s.argv = vec![
        "/bin/cat".into(),
        "/proc/self/cgroup".into(),
        "/proc/1/cgroup".into(),
    ];
    let o = run(&f, &s);
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    let lines: Vec<&str> = o.stdout.lines().collect();
    let (own, init) = lines.split_at(lines.len() / 2);
    assert_eq!(own, init, "the command and init are in different cgroups");
    // v1: the memory, pids and cpu lines; v2: the one unified line ("0::").
    let limited: Vec<&&str> = own
        .iter()
        .filter(|l| {
            l.split(':').nth(1).is_some_and(|c| {
                c.is_empty() || c.split(',').any(|x| ["memory", "pids", "cpu"].contains(&x))
            })
        })
        .collect();
    assert!(!limited.is_empty(), "no cgroup lines: {}", o.stdout);
    for line in limited {
        assert!(
            line.ends_with(":/"),
            "the command is not at the root of its cgroup namespace: {line}"
        );
    }
}

#[test]
fn fork_bomb_stops_at_the_pids_limit() {
    let f = fixture();
    let mut s = spec(&f, "b() { b | b & }; b; sleep 5");
    s.limits.pids = 32;
    let o = run(&f, &s);
    assert_eq!(o.killed_by, Some(KillReason::Pids), "{o:?}");
    // The main shell returns at once while its children hit the limit: still
    // reported, and nothing of the bomb survives (run() checks the cgroup).
    let mut s = spec(&f, "b() { b | b & }; b; sleep 0.2; exit 0");
    s.limits.pids = 32;
    let o = run(&f, &s);
    assert_eq!(o.killed_by, Some(KillReason::Pids), "{o:?}");
}

#[test]
fn cpu_time_limit_stops_a_spin() {
    let f = fixture();
    let mut s = spec(&f, "while :; do :; done");
    s.limits.cpu_time_ms = 1000;
    let o = run(&f, &s);
    assert_eq!(o.killed_by, Some(KillReason::CpuTime), "{o:?}");
    assert!(o.cpu_ms >= 500, "cpu {}", o.cpu_ms);
}

#[test]
fn output_cap_truncates_with_a_marker_and_kills() {
    let f = fixture();
    let mut s = spec(&f, "yes airlock");
    s.limits.output_bytes = 10_000;
    let o = run(&f, &s);
    assert_eq!(o.killed_by, Some(KillReason::Output), "{o:?}");
    assert!(o.truncated);
    assert!(o.stdout.starts_with("airlock\nairlock\n"));
    assert!(o.stdout.contains("[airlock: output truncated"));
    assert!(o.stdout.len() < 10_200);
}

#[test]
fn concurrent_sandboxes_cannot_see_each_other() {
    let f = fixture();
    let g = fixture();
    // A (rw workspace, so the host can see its progress) makes a /tmp file, a
    // /dev/shm file and a SysV shared memory segment, says "ready", and waits
    // until B is done looking.
    let mut a = spec(
        &f,
        "echo secret-a > /tmp/a; echo shm-a > /dev/shm/a; \
         python3 -c 'import ctypes; print(\"shmid\", ctypes.CDLL(None).shmget(0x51ab, 4096, 0o1666))'; \
         echo A-PIDS $(ls -d /proc/[0-9]* | wc -l); cat /proc/sysvipc/shm | wc -l; \
         touch ready; while [ ! -e done ]; do sleep 0.05; done",
    );
    a.workspace.mode = WorkspaceMode::Rw;
    let b = spec(
        &g,
        "ls -A /tmp /dev/shm; cat /tmp/a /dev/shm/a 2>&1; echo SHM $(cat /proc/sysvipc/shm | wc -l); \
         echo B-PIDS $(ls -d /proc/[0-9]* | wc -l)",
    );
    let (ws_a, runs_a) = (f.ws.clone(), f.runs.clone());
    let ta = std::thread::spawn(move || {
        let holder = Fixture {
            _dir: tempfile::tempdir().unwrap(),
            ws: ws_a,
            runs: runs_a,
        };
        run(&holder, &a)
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !f.ws.join("ready").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "sandbox A never got ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let ob = run(&g, &b);
    std::fs::write(f.ws.join("done"), "").unwrap();
    let oa = ta.join().unwrap();
    assert!(
        oa.stdout.contains("shmid ") && !oa.stdout.contains("shmid -1"),
        "{oa:?}"
    );
    assert_eq!(
        oa.stdout.lines().nth(2),
        Some("2"),
        "A sees its own segment: {oa:?}"
    );
    assert!(
        !ob.stdout.contains("secret-a") && !ob.stdout.contains("shm-a"),
        "{ob:?}"
    );
    assert!(ob.stdout.contains("No such file"), "{ob:?}");
    assert!(
        ob.stdout.contains("SHM 1\n"),
        "B sees A's SysV segment: {ob:?}"
    );
    let b_pids: u32 = ob
        .stdout
        .split("B-PIDS ")
        .nth(1)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(b_pids <= 5, "B sees {b_pids} processes");
}

#[test]
fn killing_the_caller_tears_everything_down() {
    let f = fixture();
    // Found by their argv: a reused cgroup (v1 slot) does not carry the run's id.
    let secs = format!("1000.{}", std::process::id());
    let s = spec(&f, &format!("sleep {secs} & sleep {secs}"));
    let argv = format!("sleep\0{secs}\0");
    let path = f.runs.parent().unwrap().join("spec.json");
    std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
    let mut child = std::process::Command::new(HELPER)
        .arg("run")
        .arg(&path)
        .env("AIRLOCK_STATE_DIR", f.runs.parent().unwrap())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the sandbox is up: its sleeps run.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let in_sandbox = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .any(|p| std::fs::read(p.path().join("cmdline")).is_ok_and(|c| c == argv.as_bytes()))
    };
    while !in_sandbox() {
        assert!(
            std::time::Instant::now() < deadline,
            "sandbox never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let runs_empty = std::fs::read_dir(&f.runs)
            .map(|d| d.count() == 0)
            .unwrap_or(true);
        if !in_sandbox() && runs_empty {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sandbox survived its caller"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_no_trace(&f, &s.request_id);
}

#[test]
fn stale_state_of_a_killed_helper_is_cleaned_at_the_next_start() {
    let f = fixture();
    let s = spec(&f, "sleep 1000");
    let path = f.runs.parent().unwrap().join("spec.json");
    std::fs::write(&path, serde_json::to_vec(&s).unwrap()).unwrap();
    let mut child = std::process::Command::new(HELPER)
        .arg("run")
        .arg(&path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .env("AIRLOCK_STATE_DIR", f.runs.parent().unwrap())
        .spawn()
        .unwrap();
    let run_entry = f.runs.join(&s.request_id);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    // The helper is the caller's child whose argv[1] is the hidden argument.
    let helper_pid = loop {
        let found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|p| {
            let cmd = std::fs::read(p.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(p.path().join("stat")).ok()?;
            let ppid: u32 = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (ppid == child.id() && cmd.windows(16).any(|w| w == b"__sandbox-helper"))
                .then(|| p.file_name())
        });
        if let Some(pid) = found {
            if run_entry.exists() {
                break pid.to_string_lossy().parse::<i32>().unwrap();
            }
        }
        assert!(std::time::Instant::now() < deadline, "helper never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    // SAFETY: signalling a process this test started (the helper of its own run).
    unsafe { libc::kill(helper_pid, libc::SIGKILL) };
    let _ = child.wait();
    assert!(
        run_entry.exists(),
        "a killed helper cannot clean up: its run's entry stays until the next start"
    );
    // The next run cleans it up.
    let o = sh(&f, "true");
    assert_eq!(o.exit_code, Some(0));
    assert!(!run_entry.exists(), "stale run entry not cleaned");
    assert_no_trace(&f, &s.request_id);
}

#[test]
fn python_on_the_callers_path_works_inside() {
    let f = fixture();
    let path = std::env::var("PATH").unwrap_or_default();
    let Some(py) = airlock_sandbox::native::interp::resolve("python3", &path, &f.ws, None) else {
        // The host's python3 is a system one: nothing extra is bound; still check it runs.
        let o = sh(&f, "python3 -c 'print(6*7)'");
        assert_eq!(o.stdout, "42\n");
        return;
    };
    let mut s = spec(
        &f,
        "python3 -c 'import sys, ssl, json; print(sys.prefix)'; ls /root 2>&1 | head -1",
    );
    s.read_paths.push(py.prefix.clone());
    s.env = vec![("PATH".into(), format!("{}:/usr/bin:/bin", py.bin.display()))];
    let o = run(&f, &s);
    assert_eq!(
        o.stdout.lines().next(),
        Some(py.prefix.to_str().unwrap()),
        "{o:?}"
    );
    // The rest of the home directory is not there.
    assert!(
        !o.stdout.contains(".bashrc") && !o.stdout.contains(".pyenv\n"),
        "{o:?}"
    );
}

/// The environment `airlock_core::spec` gives every run (issue 12): a home of
/// its own, and git's global configuration only from airlock's file.
fn protected_env() -> Vec<(String, String)> {
    [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", airlock_sandbox::SANDBOX_HOME),
        ("XDG_CONFIG_HOME", "/home/airlock/.config"),
        ("GIT_CONFIG_NOSYSTEM", "1"),
        ("GIT_CONFIG_GLOBAL", airlock_sandbox::GIT_CONFIG_FILE),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Plants git configuration in every place git looks for it (HOME, /tmp,
/// XDG), each with core.fsmonitor and a `!` alias that append to a marker,
/// then runs `git status` and `git st`; prints `MARK:` and what ran.
const PLANT_GIT_CONFIG: &str = r#"
command -v git >/dev/null || { echo NO-GIT; exit 0; }
P=/tmp/payload.sh; M=/tmp/marker
printf '#!/bin/sh\necho "$1" >> /tmp/marker\n' > $P; chmod +x $P
git init -q /tmp/r && cd /tmp/r && echo x > f && git add f && git -c user.name=a -c user.email=a@b.invalid commit -qm x || echo GIT-FAILED
for f in "$HOME/.gitconfig" /tmp/.gitconfig "${XDG_CONFIG_HOME:-$HOME/.config}/git/config" "$HOME/.config/git/config"; do
  mkdir -p "$(dirname "$f")"
  printf '[core]\n\tfsmonitor = "%s %s"\n[alias]\n\tst = "!%s alias-%s"\n' $P "$f" $P "$f" > "$f"
  git status >/dev/null 2>&1; git st >/dev/null 2>&1
  rm -f "$f"
done
echo "MARK:$(cat $M 2>/dev/null | tr '\n' ' ')"
echo "GLOBAL:$(git config --global --list 2>&1 | tr '\n' ' ')"
if echo x >> /etc/airlock/gitconfig 2>/dev/null; then echo GLOBAL-WRITABLE; fi
"#;

/// Issue 12: with the protection a planted `~/.gitconfig`, `/tmp/.gitconfig`
/// or `$XDG_CONFIG_HOME/git/config` runs nothing in the same run; the global
/// file is airlock's and cannot be written. The same script in a spec built
/// without the protection (HOME=/tmp, no GIT_CONFIG_*: what runs had before)
/// fills the marker, so the check can fail.
#[test]
fn planted_git_configuration_runs_nothing() {
    let f = fixture();
    let mut protected = spec(&f, PLANT_GIT_CONFIG);
    protected.env = protected_env();
    protected.git_config = "[core]\n\tfsmonitor = false\n[user]\n\tname = airlock-test\n".into();
    let o = run(&f, &protected);
    if o.stdout.contains("NO-GIT") {
        eprintln!("git is not installed; skipped");
        return;
    }
    assert!(!o.stdout.contains("GIT-FAILED"), "{o:?}");
    assert_eq!(
        field(&o.stdout, "MARK:"),
        "",
        "a planted command ran: {o:?}"
    );
    assert!(
        field(&o.stdout, "GLOBAL:").contains("user.name=airlock-test"),
        "git does not read airlock's file: {o:?}"
    );
    assert!(!o.stdout.contains("GLOBAL-WRITABLE"), "{o:?}");

    let mut unprotected = spec(&f, PLANT_GIT_CONFIG);
    unprotected.env = vec![
        ("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()),
        ("HOME".into(), "/tmp".into()),
    ];
    let o = run(&f, &unprotected);
    let mark = field(&o.stdout, "MARK:");
    for planted in [
        "/tmp/.gitconfig",
        "alias-/tmp/.gitconfig",
        "/tmp/.config/git/config",
    ] {
        assert!(
            mark.split(' ').any(|m| m == planted),
            "without the protection {planted} should have run: {o:?}"
        );
    }
}

/// Issue 12: HOME is an empty, writable tmpfs of the run's own, not `/tmp`,
/// and what one run leaves there is gone in the next.
#[test]
fn home_is_fresh_for_every_run() {
    let f = fixture();
    let script = r#"
echo "HOME:$HOME"
echo "LEFT:$(ls -A "$HOME" | tr '\n' ' ')"
echo "SAMEFS:$([ "$(stat -c %d "$HOME")" = "$(stat -c %d /tmp)" ] && echo yes || echo no)"
echo "OWNER:$(stat -c %u:%a "$HOME")"
echo planted > "$HOME/.gitconfig" && echo "WROTE:yes"
"#;
    for round in 0..2 {
        let mut s = spec(&f, script);
        s.env = protected_env();
        let o = run(&f, &s);
        assert_eq!(field(&o.stdout, "HOME:"), "/home/airlock", "{o:?}");
        assert_eq!(field(&o.stdout, "LEFT:"), "", "round {round}: {o:?}");
        assert_eq!(field(&o.stdout, "SAMEFS:"), "no", "{o:?}");
        assert_eq!(field(&o.stdout, "OWNER:"), "0:700", "{o:?}");
        assert_eq!(field(&o.stdout, "WROTE:"), "yes", "{o:?}");
    }
}

/// A gated run builds the sandbox while the gate works, starts the command only
/// after the gate said yes, and never starts it when the gate says no (the
/// engine's gate is the decision record's fdatasync).
#[test]
fn the_command_starts_only_after_the_gate_and_never_when_it_refuses() {
    let f = fixture();
    let mut s = spec(&f, "echo ran > marker");
    s.workspace.mode = WorkspaceMode::Rw;
    let backend = NativeBackend::new(PathBuf::from(HELPER), f.runs.clone());
    let mut refuse = || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        Err(airlock_sandbox::SandboxError::Layer {
            layer: airlock_sandbox::Layer::Audit,
            detail: "test refusal".into(),
        })
    };
    let err = backend
        .run_gated(&s, &mut airlock_sandbox::backend::Discard, &mut refuse)
        .expect_err("a refused gate must fail the run");
    assert!(err.to_string().contains("test refusal"), "{err}");
    assert!(!f.ws.join("marker").exists(), "the command ran");
    // The helper tore the sandbox down on its own (EOF on its control pipe).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_dir(&f.runs).map(|d| d.count()).unwrap_or(0) > 0
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_no_trace(&f, &s.request_id);

    let mut s = spec(&f, "echo ran > marker");
    s.workspace.mode = WorkspaceMode::Rw;
    let mut entered = None;
    let mut open = || {
        entered = Some(std::time::SystemTime::now());
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(())
    };
    let o = backend
        .run_gated(&s, &mut airlock_sandbox::backend::Discard, &mut open)
        .expect("gated run");
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_no_trace(&f, &s.request_id);
    assert_marker_written_after_the_gate(&f, entered.unwrap());
}

/// The command of a gated run wrote `marker` only after a gate entered at
/// `entered` and open 300 ms later had opened. File times come from the
/// kernel's coarse clock (a tick behind at most): a command started before
/// the gate returned would have written within the first tens of ms.
fn assert_marker_written_after_the_gate(f: &Fixture, entered: std::time::SystemTime) {
    let written = std::fs::metadata(f.ws.join("marker"))
        .unwrap()
        .modified()
        .unwrap();
    let waited = written.duration_since(entered).unwrap_or_default();
    assert!(
        waited >= std::time::Duration::from_millis(250),
        "the command ran {waited:?} after the gate was entered, before it opened"
    );
}

/// A pool of one warm sandbox in front of the test helper.
fn warm_pool(f: &Fixture) -> airlock_sandbox::native::WarmPool {
    let backend = NativeBackend::new(PathBuf::from(HELPER), f.runs.clone());
    airlock_sandbox::native::WarmPool::new(backend, airlock_sandbox::native::PoolLimits::size(1))
}

/// Waits (at most 20 s) until `pool` has a warm sandbox ready.
fn wait_ready(pool: &airlock_sandbox::native::WarmPool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while pool.stats().ready == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the pool never filled"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A warm sandbox gets its command before the gate has passed (it prepares
/// it meanwhile), but execs it only after the gate said yes, and never when
/// the gate says no: the same guarantee as a cold gated run.
#[test]
fn a_warm_sandbox_starts_its_command_only_after_the_gate() {
    use airlock_sandbox::native::pool::RunPath;
    let f = fixture();
    let pool = warm_pool(&f);
    let spec_for = |f: &Fixture| {
        let mut s = spec(f, "echo ran > marker");
        s.workspace.mode = WorkspaceMode::Rw;
        s
    };
    pool.prime(&spec_for(&f));
    wait_ready(&pool);

    let mut refuse = || {
        std::thread::sleep(std::time::Duration::from_millis(300));
        Err(airlock_sandbox::SandboxError::Layer {
            layer: airlock_sandbox::Layer::Audit,
            detail: "test refusal".into(),
        })
    };
    let (path, result) = pool.run_reporting(
        &spec_for(&f),
        &mut airlock_sandbox::backend::Discard,
        &mut refuse,
    );
    assert!(matches!(path, RunPath::Warm { .. }), "{path:?}");
    let err = result.expect_err("a refused gate must fail the run");
    assert!(err.to_string().contains("test refusal"), "{err}");
    assert!(!f.ws.join("marker").exists(), "the command ran");

    wait_ready(&pool);
    let mut entered = None;
    let mut open = || {
        entered = Some(std::time::SystemTime::now());
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(())
    };
    let (path, result) = pool.run_reporting(
        &spec_for(&f),
        &mut airlock_sandbox::backend::Discard,
        &mut open,
    );
    assert!(matches!(path, RunPath::Warm { .. }), "{path:?}");
    let o = result.expect("warm gated run");
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_marker_written_after_the_gate(&f, entered.unwrap());
}

/// A warm sandbox that waited in its pool longer than its run's timeout plus
/// the caller's grace for a stuck helper still runs its command: that grace
/// counts from when the run is handed over, not from when the pool built the
/// sandbox (a server left idle failed its next runs so).
#[test]
fn a_warm_sandbox_left_idle_past_its_timeout_still_runs() {
    use airlock_sandbox::native::pool::RunPath;
    let f = fixture();
    let mut backend = NativeBackend::new(PathBuf::from(HELPER), f.runs.clone());
    backend.set_stuck_helper_grace(std::time::Duration::from_millis(500));
    let pool = airlock_sandbox::native::WarmPool::new(
        backend,
        airlock_sandbox::native::PoolLimits::size(1),
    );
    let mut s = spec(&f, "echo still-fine");
    s.limits.timeout_ms = 1000;
    pool.prime(&s);
    wait_ready(&pool);
    // Idle for longer than timeout + grace since the build.
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let (path, result) =
        pool.run_reporting(&s, &mut airlock_sandbox::backend::Discard, &mut || Ok(()));
    assert!(matches!(path, RunPath::Warm { .. }), "{path:?}");
    let o = result.expect("a warm sandbox left idle must still run");
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    assert_eq!(o.stdout, "still-fine\n", "{o:?}");
}

/// A pool stopped while its refill thread is building a warm sandbox leaves
/// nothing behind once the stop returns: no helper still running, no run
/// directory, no cgroup. `airlock serve` exits right after the stop, and a
/// sandbox still being built then outlived it. The stop comes at several
/// moments of the first builds. The helper runs from a private copy, so that
/// its processes are told apart from other tests' by their executable. With
/// the forker a server uses, the forker goes with the pool.
#[test]
fn a_pool_stopped_mid_build_leaves_nothing() {
    let f = fixture();
    let helper = f.runs.with_file_name("helper-copy");
    std::fs::copy(HELPER, &helper).unwrap();
    let mut template = spec(&f, "true");
    template.request_id = "pool-stop".into();
    let ours = format!("warm-{:05x}-", std::process::id());
    let delays = [0u64, 200, 500, 1000, 2000, 3000, 5000, 8000, 12000, 20000];
    for (delay_us, forker) in delays.into_iter().flat_map(|d| [(d, false), (d, true)]) {
        let mut backend = NativeBackend::new(helper.clone(), f.runs.clone());
        if forker {
            // A server's helpers come from a forker, which must go too.
            backend.use_forker();
        }
        let pool = airlock_sandbox::native::WarmPool::new(
            backend,
            airlock_sandbox::native::PoolLimits::size(2),
        );
        pool.prime(&template);
        std::thread::sleep(std::time::Duration::from_micros(delay_us));
        drop(pool);
        let when = format!("stopped {delay_us} us after the prime (forker: {forker})");
        for p in std::fs::read_dir("/proc").unwrap().flatten() {
            if std::fs::read_link(p.path().join("exe")).ok().as_ref() == Some(&helper) {
                panic!("{when}: helper {:?} still running", p.file_name());
            }
        }
        let left: Vec<_> = std::fs::read_dir(&f.runs)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{when}: run directories left: {left:?}");
        for ctrl in ["memory", "pids", "cpu", "cpuacct", "unified"] {
            let parent = Path::new("/sys/fs/cgroup").join(ctrl).join("airlock");
            for e in std::fs::read_dir(parent).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                assert!(
                    !name.contains(&ours),
                    "{when}: cgroup {ctrl}/airlock/{name} left"
                );
            }
        }
    }
}

/// This process's children running `exe` as the helper forker.
fn forkers_of(exe: &Path) -> Vec<i32> {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|p| std::fs::read_link(p.path().join("exe")).ok().as_deref() == Some(exe))
        .filter(|p| {
            let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
            let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            after.split_whitespace().nth(1) == Some(me.as_str())
        })
        .filter(|p| {
            std::fs::read(p.path().join("cmdline"))
                .unwrap_or_default()
                .split(|b| *b == 0)
                .any(|a| a == b"__sandbox-forker")
        })
        .filter_map(|p| p.file_name().to_str()?.parse().ok())
        .collect()
}

/// Output as the command wrote it.
#[derive(Default)]
struct Collect {
    out: Vec<u8>,
    err: Vec<u8>,
}

impl airlock_sandbox::OutputSink for Collect {
    fn stdout(&mut self, chunk: &[u8]) {
        self.out.extend_from_slice(chunk);
    }
    fn stderr(&mut self, chunk: &[u8]) {
        self.err.extend_from_slice(chunk);
    }
    fn cancelled(&self) -> bool {
        false
    }
}

/// A server's helpers come from one forker process, not an exec each
/// (`NativeBackend::use_forker`). Such a helper must run a sandbox exactly as
/// a spawned one: stdin, stdout, stderr and the exit status cross, the run
/// leaves no trace, PID 1 shows the forker's argv, the forker has an empty
/// environment (never the caller's), and one forker serves every run. Killed from
/// outside, it is replaced for the next run.
#[test]
fn helpers_from_the_forker_run_sandboxes_like_spawned_ones() {
    let f = fixture();
    let helper = f.runs.with_file_name("helper-forker-copy");
    std::fs::copy(HELPER, &helper).unwrap();
    let mut backend = NativeBackend::new(helper.clone(), f.runs.clone());
    backend.use_forker();
    let mut first_forker = None;
    for round in 0..3 {
        let mut s = spec(
            &f,
            "cat; echo out; echo err >&2; tr '\\0' ' ' < /proc/1/cmdline; exit 7",
        );
        s.stdin = Some(format!("in-{round}\n").into_bytes());
        let mut sink = Collect::default();
        let o = backend.run(&s, &mut sink).expect("sandbox run");
        let out = String::from_utf8_lossy(&sink.out);
        assert_eq!(o.exit_code, Some(7), "{o:?} {out}");
        assert!(out.starts_with(&format!("in-{round}\nout\n")), "{out}");
        assert!(
            out.contains("__sandbox-forker"),
            "PID 1 is not the forker's child: {out}"
        );
        assert_eq!(String::from_utf8_lossy(&sink.err), "err\n");
        assert_no_trace(&f, &s.request_id);
        let forkers = forkers_of(&helper);
        assert_eq!(forkers.len(), 1, "one forker serves every run: {forkers:?}");
        let environ = std::fs::read(format!("/proc/{}/environ", forkers[0])).unwrap();
        assert!(
            environ.is_empty(),
            "the forker (and so PID 1) has an environment: {}",
            String::from_utf8_lossy(&environ).replace('\0', " ")
        );
        match (round, first_forker) {
            (0, _) => first_forker = Some(forkers[0]),
            (1, Some(pid)) => {
                assert_eq!(forkers[0], pid, "the forker was replaced without cause");
                // SAFETY: SIGKILL to the forker this test started (its child).
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
            (_, Some(pid)) => assert_ne!(forkers[0], pid, "the killed forker is still there"),
            _ => unreachable!(),
        }
    }
    drop(backend);
    assert_eq!(
        forkers_of(&helper),
        Vec::<i32>::new(),
        "the forker outlived its backend"
    );
}

/// Run by hand, the forker refuses with a message instead of waiting on
/// a socket that is not there.
#[test]
fn the_forker_refuses_to_run_by_hand() {
    let out = std::process::Command::new(HELPER)
        .arg("__sandbox-forker")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not meant to be run by hand"), "{err}");
}

/// A request may lower its policy's time limits (`timeout_s`, `airlock run
/// --server --timeout`). A warm sandbox is built before any request comes, so
/// the limits must come with the launch: a tighter timeout or CPU time is
/// enforced in a warm sandbox, and a request with other limits still takes
/// one (the pool no longer drains and rebuilds for each new limit).
#[test]
fn a_warm_sandbox_enforces_the_time_limits_its_request_brings() {
    use airlock_sandbox::native::pool::RunPath;
    use airlock_sandbox::KillReason;
    let f = fixture();
    let pool = warm_pool(&f);
    pool.prime(&spec(&f, "true"));
    let run = |s: &SandboxSpec| {
        wait_ready(&pool);
        let t = std::time::Instant::now();
        let (path, result) =
            pool.run_reporting(s, &mut airlock_sandbox::backend::Discard, &mut || Ok(()));
        assert!(matches!(path, RunPath::Warm { .. }), "{path:?}");
        (result.expect("warm run"), t.elapsed())
    };

    let mut tight = spec(&f, "sleep 20");
    tight.limits.timeout_ms = 700;
    let (o, took) = run(&tight);
    assert_eq!(o.killed_by, Some(KillReason::Timeout), "{o:?}");
    assert!(took < std::time::Duration::from_secs(10), "ran {took:?}");

    let mut cpu = spec(&f, "while :; do :; done");
    cpu.limits.cpu_time_ms = 1000;
    let (o, took) = run(&cpu);
    assert_eq!(o.killed_by, Some(KillReason::CpuTime), "{o:?}");
    assert!(took < std::time::Duration::from_secs(10), "ran {took:?}");

    let (o, _) = run(&spec(&f, "true"));
    assert_eq!(o.exit_code, Some(0), "{o:?}");
}
