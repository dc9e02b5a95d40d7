//! What auditing one execution costs: serialise, hash, append, fsync (and the
//! head anchor's rename). Also fsync alone and the CPU part alone, so that the
//! total can be read against what the disk costs here.
//!
//! `cargo bench -p airlock-core --bench audit`

use airlock_core::audit::record::{
    Event, ExecutionEvent, OutcomeRecord, RequestRecord, StreamRecord,
};
use airlock_core::audit::{AuditConfig, AuditLog, Record};
use airlock_core::Caller;
use criterion::{criterion_group, criterion_main, Criterion};
use std::io::Write;

fn execution() -> Event {
    let stdout = "x".repeat(8 * 1024);
    Event::Execution(Box::new(ExecutionEvent {
        request_id: airlock_core::new_request_id(),
        who: Caller::token("bench-agent"),
        tenant: airlock_core::TenantId::token("bench-agent"),
        request: RequestRecord {
            command: airlock_policy::Command::Shell {
                command: "pytest -q tests/test_api.py".into(),
            },
            cwd: "/srv/work/project".into(),
        },
        policy_sha256: "ab".repeat(32),
        backend: "native".into(),
        argv: vec![
            "/bin/bash".into(),
            "-c".into(),
            "pytest -q tests/test_api.py".into(),
        ],
        env_names: ["PATH", "HOME", "LANG", "TERM", "TMPDIR"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        limits: airlock_sandbox::Limits {
            timeout_ms: 30_000,
            cpu_time_ms: 30_000,
            memory_bytes: 512 << 20,
            pids: 128,
            cpus: 1.0,
            output_bytes: 1 << 20,
            tmp_bytes: 64 << 20,
            file_size_bytes: 64 << 20,
            open_files: 256,
        },
        network: "none".into(),
        workspace_mode: "overlay".into(),
        outcome: Some(OutcomeRecord {
            exit_code: Some(0),
            signal: None,
            killed_by: None,
            duration_ms: 812,
            cpu_ms: 640,
            peak_memory_bytes: 48 << 20,
            output_capped: false,
        }),
        stdout: StreamRecord {
            text: stdout,
            truncated: true,
            bytes: 120_000,
            sha256: "cd".repeat(32),
            source: "stream".into(),
        },
        stderr: StreamRecord::default(),
        stdin: None,
        changes: vec![],
        change_summary: None,
        applied: false,
        violations: vec![],
        loosened_by: vec![],
        approval_id: None,
        approver: None,
        error: None,
    }))
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let log = AuditLog::open(&tmp.path().join("audit"), AuditConfig::default()).unwrap();
    let event = execution();

    c.bench_function(
        "audit one execution (serialise + hash + append + fsync)",
        |b| b.iter(|| log.append(event.clone()).unwrap()),
    );

    // The same path with the log on tmpfs, where fsync returns at once: what
    // everything but the device flush costs (lock, stat, write, anchor).
    if std::path::Path::new("/dev/shm").is_dir() {
        let shm = tempfile::tempdir_in("/dev/shm").unwrap();
        let shm_log = AuditLog::open(&shm.path().join("audit"), AuditConfig::default()).unwrap();
        c.bench_function("audit one execution on tmpfs (fsync is a no-op)", |b| {
            b.iter(|| shm_log.append(event.clone()).unwrap())
        });
    }

    c.bench_function("serialise + hash only (no I/O)", |b| {
        b.iter(|| {
            let record = Record {
                v: 1,
                seq: 1,
                id: "a1".into(),
                time: airlock_core::clock::format_rfc3339(airlock_core::clock::now_ms()),
                prev: "00".repeat(32),
                event: event.clone(),
            };
            let line = serde_json::to_vec(&record).unwrap();
            airlock_core::audit::chain::line_hash(&line)
        })
    });

    let mut raw = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(tmp.path().join("raw.jsonl"))
        .unwrap();
    let line = vec![b'x'; 9 * 1024];
    c.bench_function("write 9 KiB + fdatasync alone", |b| {
        b.iter(|| {
            raw.write_all(&line).unwrap();
            raw.sync_data().unwrap();
        })
    });
}

criterion_group! {
    name = audit;
    config = Criterion::default().sample_size(200);
    targets = benches
}
criterion_main!(audit);
