//! The WebAssembly backend with real WASI modules (written as WAT, which the
//! embedded wasmtime compiles): output, exit status, the limits and the
//! overlay change report, each observed from the host. Needs root (the helper
//! builds its view with mounts), like the native backend's tests.
#![cfg(feature = "wasm")]

use airlock_sandbox::wasm::WasmBackend;
use airlock_sandbox::{
    backend::Discard, Backend, ChangeKind, KillReason, Limits, NetworkSpec, SandboxSpec,
    WorkspaceMode, WorkspaceSpec,
};
use std::path::{Path, PathBuf};

const HELPER: &str = env!("CARGO_BIN_EXE_airlock-sandbox-helper");

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    backend: WasmBackend,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let backend = WasmBackend {
        helper_exe: PathBuf::from(HELPER),
        runs_dir: dir.path().join("runs"),
        cache_dir: dir.path().join("cache"),
    };
    Fixture {
        _dir: dir,
        ws,
        backend,
    }
}

fn spec(ws: &Path, module: &str) -> SandboxSpec {
    SandboxSpec {
        request_id: format!("wasm-test-{}", std::process::id()),
        argv: vec![ws.join(module).display().to_string()],
        cwd: ws.to_path_buf(),
        env: vec![("PATH".into(), "/usr/bin".into())],
        workspace: WorkspaceSpec {
            root: ws.to_path_buf(),
            mode: WorkspaceMode::Overlay,
            protect: vec![],
            apply: false,
            changes: Default::default(),
            owned: vec![],
            keep: None,
            list: None,
            home: None,
        },
        network: NetworkSpec::None,
        limits: Limits {
            timeout_ms: 3_000,
            cpu_time_ms: 3_000,
            memory_bytes: 16 << 20,
            pids: 16,
            cpus: 1.0,
            output_bytes: 64,
            tmp_bytes: 1 << 20,
            file_size_bytes: 1 << 20,
            open_files: 64,
        },
        read_paths: vec![],
        write_paths: vec![],
        hide_paths: vec![],
        stdin: None,
        limit_enforcement: Default::default(),
        git_config: String::new(),
    }
}

/// A WASI module: `fd_write`s `text` to `fd` `times` times, then runs `tail`.
fn module(text: &str, fd: u32, times: u32, tail: &str) -> String {
    format!(
        r#"(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 64) "{text}")
  (data (i32.const 200) "out.txt")
  (func (export "_start") (local $i i32)
    (i32.store (i32.const 0) (i32.const 64))
    (i32.store (i32.const 4) (i32.const {len}))
    (block $done (loop $again
      (br_if $done (i32.ge_u (local.get $i) (i32.const {times})))
      (drop (call $fd_write (i32.const {fd}) (i32.const 0) (i32.const 1) (i32.const 8)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $again)))
    {tail}))"#,
        len = text.len()
    )
}

fn write(ws: &Path, name: &str, wat: &str) {
    std::fs::write(ws.join(name), wat).unwrap();
}

#[test]
fn a_wasi_module_prints_and_exits_with_its_status() {
    let f = fixture();
    write(
        &f.ws,
        "hello.wasm",
        &module("hello", 1, 1, "(call $proc_exit (i32.const 7))"),
    );
    let o = f
        .backend
        .run(&spec(&f.ws, "hello.wasm"), &mut Discard)
        .unwrap();
    assert_eq!(o.stdout, "hello");
    assert_eq!(o.exit_code, Some(7));
    assert_eq!(o.killed_by, None);
}

#[test]
fn a_spin_is_stopped_by_the_time_limits() {
    let f = fixture();
    write(&f.ws, "spin.wasm", &module("x", 1, 0, "(loop $l (br $l))"));
    let o = f
        .backend
        .run(&spec(&f.ws, "spin.wasm"), &mut Discard)
        .unwrap();
    assert!(
        matches!(o.killed_by, Some(KillReason::Timeout | KillReason::CpuTime)),
        "{o:?}"
    );
    assert!(o.duration_ms < 10_000, "{o:?}");
}

#[test]
fn memory_growth_past_the_limit_ends_the_run_as_memory() {
    let f = fixture();
    // 16 MiB limit; ask for 512 pages (32 MiB) more.
    write(
        &f.ws,
        "grow.wasm",
        &module("x", 1, 0, "(drop (memory.grow (i32.const 512)))"),
    );
    let o = f
        .backend
        .run(&spec(&f.ws, "grow.wasm"), &mut Discard)
        .unwrap();
    assert_eq!(o.killed_by, Some(KillReason::Memory), "{o:?}");
}

#[test]
fn output_past_the_cap_is_cut_and_ends_the_run() {
    let f = fixture();
    write(&f.ws, "flood.wasm", &module("0123456789", 2, 100, ""));
    let o = f
        .backend
        .run(&spec(&f.ws, "flood.wasm"), &mut Discard)
        .unwrap();
    assert_eq!(o.killed_by, Some(KillReason::Output), "{o:?}");
    assert!(o.truncated);
    assert!(o.stderr.starts_with(&"0123456789".repeat(6)));
}

#[test]
fn a_file_written_in_the_workspace_is_a_reported_change_and_the_host_is_untouched() {
    let f = fixture();
    // path_open(fd 3 = the workspace preopen, "out.txt", O_CREAT) then write to it.
    let tail = r#"(drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 200) (i32.const 7)
        (i32.const 1) (i64.const 0x1fffffff) (i64.const 0x1fffffff) (i32.const 0) (i32.const 300)))
      (drop (call $fd_write (i32.load (i32.const 300)) (i32.const 0) (i32.const 1) (i32.const 8)))"#;
    write(&f.ws, "touch.wasm", &module("data", 1, 0, tail));
    let o = f
        .backend
        .run(&spec(&f.ws, "touch.wasm"), &mut Discard)
        .unwrap();
    assert_eq!(o.exit_code, Some(0), "{o:?}");
    let added: Vec<_> = o
        .changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Added)
        .collect();
    assert_eq!(added.len(), 1, "{o:?}");
    assert!(added[0].path.ends_with("/out.txt"));
    assert_eq!(added[0].size, 4);
    assert!(
        !f.ws.join("out.txt").exists(),
        "the overlay wrote through to the host"
    );
}

#[test]
fn a_module_outside_the_workspace_and_a_host_program_are_refused() {
    let f = fixture();
    let mut s = spec(&f.ws, "x.wasm");
    s.argv = vec!["/bin/sh".into(), "-c".into(), "true".into()];
    let e = f.backend.run(&s, &mut Discard).unwrap_err().to_string();
    assert!(e.contains("not the host program"), "{e}");
    let outside = f.ws.parent().unwrap().join("out.wasm");
    std::fs::write(&outside, "(module)").unwrap();
    s.argv = vec![outside.display().to_string()];
    let e = f.backend.run(&s, &mut Discard).unwrap_err().to_string();
    assert!(e.contains("outside the workspace"), "{e}");
}

/// A sink whose reader stops waiting `after` the run starts.
struct LeavesAfter {
    start: std::time::Instant,
    after: std::time::Duration,
}

impl airlock_sandbox::OutputSink for LeavesAfter {
    fn stdout(&mut self, _: &[u8]) {}
    fn stderr(&mut self, _: &[u8]) {}
    fn cancelled(&self) -> bool {
        self.start.elapsed() >= self.after
    }
}

/// A run whose caller stops waiting (a server's client went away) is killed
/// within moments, not at its timeout: the helper's stdin is its lifeline.
/// Nothing of a cancelled run is applied, and its scratch is gone.
#[test]
fn a_cancelled_run_is_killed_at_once_and_leaves_nothing() {
    let f = fixture();
    // Writes out.txt in the workspace, then spins.
    let tail = r#"(drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 200) (i32.const 7)
        (i32.const 1) (i64.const 0x1fffffff) (i64.const 0x1fffffff) (i32.const 0) (i32.const 300)))
      (drop (call $fd_write (i32.load (i32.const 300)) (i32.const 0) (i32.const 1) (i32.const 8)))
      (loop $l (br $l))"#;
    write(&f.ws, "spin.wasm", &module("data", 1, 0, tail));
    let mut s = spec(&f.ws, "spin.wasm");
    s.workspace.apply = true;
    s.limits.timeout_ms = 60_000;
    s.limits.cpu_time_ms = 60_000;
    let start = std::time::Instant::now();
    let mut sink = LeavesAfter {
        start,
        after: std::time::Duration::from_millis(500),
    };
    let o = f.backend.run(&s, &mut sink).unwrap();
    assert_eq!(o.killed_by, Some(KillReason::Cancelled), "{o:?}");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(10),
        "the cancelled run went on for {:?}",
        start.elapsed()
    );
    assert!(o.changes.is_empty() && !o.applied, "{o:?}");
    assert!(
        !f.ws.join("out.txt").exists(),
        "a cancelled run's change was applied"
    );
    let runs = f.backend.runs_dir.clone();
    let left: Vec<_> = std::fs::read_dir(&runs)
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "left in {}: {left:?}", runs.display());
}
