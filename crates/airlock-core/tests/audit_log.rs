//! The audit log on a real filesystem: chain, tampering, rotation, torn tails,
//! a full disk, threads. (Crash and multi-process tests drive the real binary:
//! crates/airlock/tests/cli_audit.rs.)

use airlock_core::audit::log::{file_name, HEAD_FILE};
use airlock_core::audit::record::{Event, TestEvent};
use airlock_core::audit::{read_all, verify, AuditConfig, AuditLog};
use std::path::Path;

fn test_event(n: u64) -> Event {
    Event::Test(TestEvent {
        writer: "t".into(),
        n,
    })
}

fn write_n(dir: &Path, config: AuditConfig, n: u64) -> AuditLog {
    let log = AuditLog::open(dir, config).unwrap();
    for i in 0..n {
        log.append(test_event(i)).unwrap();
    }
    log
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

#[test]
fn a_fresh_log_chains_and_verifies() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 5);
    let report = verify(&dir).unwrap();
    assert_eq!(report.records, 5);
    assert_eq!(report.files, 1);
    let records = read_all(&dir).unwrap();
    assert_eq!(
        records.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5]
    );
    assert_eq!(records[0].prev, airlock_core::audit::chain::GENESIS);
    let raw = lines(&dir.join(file_name(1)));
    assert_eq!(
        records[1].prev,
        airlock_core::audit::chain::line_hash(raw[0].as_bytes())
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(
        std::fs::metadata(dir.join(file_name(1)))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
}

#[test]
fn an_edited_record_is_detected_and_named() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 5);
    let path = dir.join(file_name(1));
    let mut l = lines(&path);
    l[2] = l[2].replace("\"n\":2", "\"n\":7");
    assert!(l[2].contains("\"n\":7"));
    write_lines(&path, &l);
    let failure = verify(&dir).unwrap_err();
    // The edit of line 3 shows at line 4, whose prev no longer matches.
    assert_eq!(failure.line, Some(4), "{failure}");
    assert_eq!(failure.record_id.as_deref(), Some("a4"));
    assert!(failure.problem.contains("chain broken"), "{failure}");
}

#[test]
fn an_edited_last_record_is_detected_by_the_anchor() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 3);
    let path = dir.join(file_name(1));
    let mut l = lines(&path);
    l[2] = l[2].replace("\"n\":2", "\"n\":9");
    write_lines(&path, &l);
    let failure = verify(&dir).unwrap_err();
    assert_eq!(failure.record_id.as_deref(), Some("a3"), "{failure}");
    // And the writer refuses to extend it, rather than bury the edit.
    let err = AuditLog::open(&dir, AuditConfig::default())
        .err()
        .expect("open must refuse");
    assert!(err.to_string().contains("edited"), "{err}");
}

#[test]
fn a_deleted_record_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 5);
    let path = dir.join(file_name(1));
    let mut l = lines(&path);
    l.remove(1);
    write_lines(&path, &l);
    let failure = verify(&dir).unwrap_err();
    assert_eq!(failure.line, Some(2));
    assert_eq!(failure.record_id.as_deref(), Some("a3"));
    assert!(failure.problem.contains("missing"), "{failure}");
}

#[test]
fn swapped_records_are_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 5);
    let path = dir.join(file_name(1));
    let mut l = lines(&path);
    l.swap(1, 2);
    write_lines(&path, &l);
    let failure = verify(&dir).unwrap_err();
    assert_eq!(failure.line, Some(2));
    assert_eq!(failure.record_id.as_deref(), Some("a3"));
}

#[test]
fn records_cut_off_the_end_are_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 5);
    let path = dir.join(file_name(1));
    let mut l = lines(&path);
    l.truncate(3);
    write_lines(&path, &l);
    let failure = verify(&dir).unwrap_err();
    assert!(failure.problem.contains("cut off the end"), "{failure}");
    assert_eq!(failure.record_id.as_deref(), Some("a5"));
    // Deleting the anchor too is no escape.
    std::fs::remove_file(dir.join(HEAD_FILE)).unwrap();
    let failure = verify(&dir).unwrap_err();
    assert!(failure.problem.contains("head anchor missing"), "{failure}");
    // The writer refuses until a person accepts the loss, which is recorded.
    assert!(AuditLog::open(&dir, AuditConfig::default()).is_err());
    let log = AuditLog::open_unchecked(&dir, AuditConfig::default()).unwrap();
    let rec = log.reanchor().unwrap();
    assert_eq!(rec.seq, 4);
    assert_eq!(verify(&dir).unwrap().records, 4);
}

#[test]
fn a_record_cut_in_the_middle_is_detected_then_repaired_and_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    drop(write_n(&dir, AuditConfig::default(), 3));
    let path = dir.join(file_name(1));
    // Simulate a writer killed mid-append: half a line, no newline.
    let mut bytes = std::fs::read(&path).unwrap();
    let good_len = bytes.len() as u64;
    bytes.extend_from_slice(b"{\"v\":1,\"seq\":4,\"id\":\"a4\",\"ti");
    std::fs::write(&path, &bytes).unwrap();
    let failure = verify(&dir).unwrap_err();
    assert_eq!(failure.line, Some(4));
    assert!(
        failure.problem.contains("incomplete last record"),
        "{failure}"
    );

    let log = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    let report = verify(&dir).unwrap();
    assert_eq!(report.records, 4, "3 records and the repair record");
    let records = read_all(&dir).unwrap();
    match &records[3].event {
        Event::Repair(r) => {
            assert_eq!(r.length_after, good_len);
            assert_eq!(r.length_before, bytes.len() as u64);
            // What was cut is named by its digest (docs/audit.md).
            let dropped = &bytes[good_len as usize..];
            assert_eq!(
                r.dropped_sha256,
                hex::encode(<sha2::Sha256 as sha2::Digest>::digest(dropped))
            );
        }
        other => panic!("expected a repair record, got {other:?}"),
    }
    log.append(test_event(99)).unwrap();
    assert_eq!(verify(&dir).unwrap().records, 5);
}

/// `verify` that reads while a writer appends can see part of the line being
/// written: it waits for the log's lock and reads the line again, and reports
/// a torn tail only if the line is still incomplete then.
#[test]
fn verify_waits_for_a_line_being_written() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    // Long enough that verify is still reading when the append starts.
    drop(write_n(&dir, AuditConfig::default(), 20_000));
    let path = dir.join(file_name(1));
    let mut text = std::fs::read(&path).unwrap();
    text.pop();
    let cut = text.iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let last = text.split_off(cut);
    text.push(b'\n');
    text.truncate(cut);
    std::fs::write(&path, &text).unwrap();
    let started = Instant::now();
    let verifier = std::thread::spawn({
        let dir = dir.clone();
        move || (verify(&dir), started.elapsed())
    });
    // A writer appends the last record in two writes, holding the lock.
    std::thread::sleep(Duration::from_millis(5));
    let lock = std::fs::File::open(dir.join("lock")).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let half = last.len() / 2;
    f.write_all(&last[..half]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    f.write_all(&last[half..]).unwrap();
    f.write_all(b"\n").unwrap();
    drop(lock);
    let (report, took) = verifier.join().unwrap();
    let report = report.unwrap_or_else(|e| panic!("verify after {took:?}: {e:?}"));
    assert_eq!(report.records, 20_000);
    // With no writer, a line that stays incomplete is a torn tail.
    let mut torn = std::fs::read(&path).unwrap();
    torn.truncate(torn.len() - 10);
    std::fs::write(&path, &torn).unwrap();
    let e = verify(&dir).unwrap_err();
    assert!(e.problem.contains("incomplete last record"), "{e:?}");
}

/// Finding 5 of the audit review: a torn last line whose record the head
/// anchor names (it was acknowledged, so this is no crash) is not cut: the
/// writer refuses and leaves the file exactly as it found it.
#[test]
fn a_torn_tail_the_anchor_names_is_refused_and_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let writer = write_n(&dir, AuditConfig::default(), 3);
    let path = dir.join(file_name(1));
    let mut lines = lines(&path);
    // The anchor names a3; cut a3 in half.
    let last = lines.pop().unwrap();
    let mut bytes = (lines.join("\n") + "\n").into_bytes();
    bytes.extend_from_slice(&last.as_bytes()[..last.len() / 2]);
    std::fs::write(&path, &bytes).unwrap();
    // A writer that had the log open before the tear, then a fresh one.
    let e = writer.append(test_event(9)).unwrap_err();
    assert!(e.to_string().contains("the head anchor names a3"), "{e}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the torn bytes are kept"
    );
    let e = AuditLog::open(&dir, AuditConfig::default()).err().unwrap();
    assert!(e.to_string().contains("the head anchor names a3"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn rotation_keeps_one_chain_across_files_and_a_missing_file_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let config = AuditConfig {
        max_file_bytes: 600,
        ..AuditConfig::default()
    };
    write_n(&dir, config.clone(), 20);
    let report = verify(&dir).unwrap();
    assert_eq!(report.records, 20);
    assert!(
        report.files >= 4,
        "expected several files, got {}",
        report.files
    );
    // The first record of file 2 links to the last of file 1.
    let last_of_1 = lines(&dir.join(file_name(1))).pop().unwrap();
    let first_of_2: airlock_core::audit::Record =
        serde_json::from_str(&lines(&dir.join(file_name(2)))[0]).unwrap();
    assert_eq!(
        first_of_2.prev,
        airlock_core::audit::chain::line_hash(last_of_1.as_bytes())
    );
    // A second writer (fresh process state) continues the same chain.
    write_n(&dir, config, 3);
    assert_eq!(verify(&dir).unwrap().records, 23);

    std::fs::remove_file(dir.join(file_name(2))).unwrap();
    let failure = verify(&dir).unwrap_err();
    assert!(failure.problem.contains("missing"), "{failure}");
    assert_eq!(failure.file, dir.join(file_name(2)));
}

#[test]
fn threads_sharing_one_log_never_interleave() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = std::sync::Arc::new(AuditLog::open(&dir, AuditConfig::default()).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..50 {
                    log.append(test_event(t * 1000 + i)).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Two logs on the same dir in one process (two fds) also take the flock.
    let other = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    other.append(test_event(5000)).unwrap();
    log.append(test_event(5001)).unwrap();
    assert_eq!(verify(&dir).unwrap().records, 202);
}

/// A full disk: a 64 KiB tmpfs this test mounts. The append fails with a clear
/// error, leaves no partial line, and the log verifies afterwards.
#[test]
fn a_full_disk_is_a_clear_error_and_leaves_the_log_intact() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("SKIPPED: mounting a tmpfs needs root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mnt = tmp.path().join("small");
    std::fs::create_dir(&mnt).unwrap();
    let status = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(status.success(), "mount tmpfs failed");
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _guard = Unmount(mnt.clone());
    let dir = mnt.join("audit");
    let log = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    let big = "x".repeat(3000);
    let mut written = 0;
    let err = loop {
        match log.append(Event::Test(TestEvent {
            writer: big.clone(),
            n: written,
        })) {
            Ok(_) => written += 1,
            Err(e) => break e,
        }
        assert!(written < 1000, "a 64k tmpfs never filled");
    };
    assert!(err.is_disk_full(), "{err}");
    assert!(err.to_string().contains("no space left"), "{err}");
    // Nothing half-written: the log verifies. (If the log line landed but the
    // small head anchor then found no room, the call still failed, so the log
    // may hold one record more than was acknowledged, never fewer.)
    let report = verify(&dir).unwrap();
    assert!(
        report.records == written || report.records == written + 1,
        "{} vs {written}",
        report.records
    );
}

/// A deferred record is in the chain at once, the head anchor names it only
/// once it is synced, and a later append that overtook it is never undone.
#[test]
fn a_deferred_record_chains_at_once_and_anchors_after_its_sync() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = write_n(&dir, AuditConfig::default(), 2);
    let (record, pending) = log.append_deferred(test_event(2)).unwrap();
    assert_eq!(record.seq, 3);
    let anchor = airlock_core::audit::log::read_anchor(&dir)
        .unwrap()
        .unwrap();
    assert_eq!(anchor.seq, 2, "the anchor must not name an unsynced record");
    // In the chain already: the next record links to it.
    let next = log.append(test_event(3)).unwrap();
    assert_eq!(next.seq, 4);
    log.make_durable(pending).unwrap();
    let anchor = airlock_core::audit::log::read_anchor(&dir)
        .unwrap()
        .unwrap();
    assert_eq!(anchor.seq, 4, "an older sync moved the anchor back");
    let report = verify(&dir).unwrap();
    assert_eq!(report.records, 4);

    // Alone, the deferred record's sync moves the anchor to it.
    let (record, pending) = log.append_deferred(test_event(4)).unwrap();
    std::thread::scope(|s| s.spawn(|| log.make_durable(pending)).join().unwrap()).unwrap();
    let anchor = airlock_core::audit::log::read_anchor(&dir)
        .unwrap()
        .unwrap();
    assert_eq!(anchor.seq, record.seq);
    assert_eq!(verify(&dir).unwrap().records, 5);
}

/// `sync` puts a record on disk and leaves the head anchor where it was (a
/// server's decision record, before its command starts); `make_all_durable`
/// later anchors the last of several records with one anchor write and no
/// sync beyond the ones they need.
#[test]
fn a_synced_record_is_anchored_later_with_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = write_n(&dir, AuditConfig::default(), 2);
    let anchor = || {
        airlock_core::audit::log::read_anchor(&dir)
            .unwrap()
            .unwrap()
            .seq
    };
    let (decision, first) = log.append_deferred(test_event(2)).unwrap();
    log.sync(&first).unwrap();
    assert_eq!(log.group_syncs(), 1);
    assert_eq!(anchor(), 2, "sync alone does not move the anchor");
    let (execution, second) = log.append_deferred(test_event(3)).unwrap();
    assert_eq!(execution.seq, decision.seq + 1);
    log.make_all_durable(vec![first, second]).unwrap();
    assert_eq!(
        log.group_syncs(),
        2,
        "the first record's sync is not repeated"
    );
    assert_eq!(anchor(), execution.seq);
    assert_eq!(verify(&dir).unwrap().records, 4);
    // Nothing to do: no sync, the anchor stays.
    log.make_all_durable(Vec::new()).unwrap();
    assert_eq!((log.group_syncs(), anchor()), (2, execution.seq));
}

/// A fresh log's first record, synced by a server's gate, is anchored at once:
/// `verify` during that first run does not find an anchor that names no
/// record.
#[test]
fn a_fresh_logs_first_synced_record_is_anchored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    let (record, pending) = log.append_deferred(test_event(1)).unwrap();
    log.sync(&pending).unwrap();
    let anchor = airlock_core::audit::log::read_anchor(&dir)
        .unwrap()
        .unwrap();
    assert_eq!(anchor.seq, record.seq);
    assert_eq!(verify(&dir).unwrap().records, 1);
}

/// A deferred record in a file that is then rotated away is synced before the
/// next file's first record (the anchor never leads the log).
#[test]
fn rotation_after_a_deferred_record_keeps_the_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let config = AuditConfig {
        max_file_bytes: 1,
        ..AuditConfig::default()
    };
    let log = write_n(&dir, config, 1);
    let (_, pending) = log.append_deferred(test_event(1)).unwrap();
    log.append(test_event(2)).unwrap();
    log.make_durable(pending).unwrap();
    let report = verify(&dir).unwrap();
    assert_eq!(report.records, 3);
    assert_eq!(report.files, 3);
}

/// Group commit: one sync covers every record of the file written before it
/// began; a record written after a sync began is never acknowledged by it.
#[test]
fn one_sync_covers_every_deferred_record_written_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = write_n(&dir, AuditConfig::default(), 1);
    let (_, first) = log.append_deferred(test_event(1)).unwrap();
    let (second_record, second) = log.append_deferred(test_event(2)).unwrap();
    log.make_durable(first).unwrap();
    assert_eq!(log.group_syncs(), 1);
    // Written before that sync began: covered, no sync of its own.
    log.make_durable(second).unwrap();
    assert_eq!(log.group_syncs(), 1);
    let anchor = airlock_core::audit::log::read_anchor(&dir)
        .unwrap()
        .unwrap();
    assert_eq!(anchor.seq, second_record.seq);
    // Written after: needs a sync of its own.
    let (_, third) = log.append_deferred(test_event(3)).unwrap();
    log.make_durable(third).unwrap();
    assert_eq!(log.group_syncs(), 2);
    assert_eq!(verify(&dir).unwrap().records, 4);
}

/// Many threads making their records durable at once: every one is
/// acknowledged, the chain verifies, and they shared syncs.
#[test]
fn concurrent_deferred_records_share_syncs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = write_n(&dir, AuditConfig::default(), 0);
    let threads = 16;
    let rounds = 10;
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (log, barrier) = (&log, &barrier);
            s.spawn(move || {
                for i in 0..rounds {
                    let (_, pending) = log
                        .append_deferred(test_event((t * rounds + i) as u64))
                        .unwrap();
                    barrier.wait();
                    log.make_durable(pending).unwrap();
                }
            });
        }
    });
    let total = (threads * rounds) as u64;
    assert_eq!(verify(&dir).unwrap().records, total);
    assert!(
        log.group_syncs() < total,
        "{} syncs for {total} records: none shared",
        log.group_syncs()
    );
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .unwrap();
}

/// Nothing in the audit directory is followed through a symlink or written
/// unless it is a regular file: a planted link never redirects the torn-tail
/// repair, an append or the anchor's in-place write outside the state dir.
#[test]
fn symlinks_in_the_audit_dir_are_refused_and_their_targets_left_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    // A torn tail (no final newline): the repair would cut it.
    std::fs::write(&outside, "{\"not\":\"a record\"}\npartial line").unwrap();
    let before = std::fs::read(&outside).unwrap();

    // The log file.
    let dir = tmp.path().join("a1");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(file_name(1))).unwrap();
    let e = AuditLog::open(&dir, AuditConfig::default()).err().unwrap();
    assert!(e.to_string().contains("a symlink (to "), "{e}");
    assert!(e.to_string().contains("remove it"), "{e}");
    assert!(verify(&dir).unwrap_err().problem.contains("a symlink"));
    assert_eq!(std::fs::read(&outside).unwrap(), before);

    // The lock, dangling: its target is not created.
    let dir = tmp.path().join("a2");
    std::fs::create_dir(&dir).unwrap();
    let nowhere = tmp.path().join("created-by-airlock");
    std::os::unix::fs::symlink(&nowhere, dir.join("lock")).unwrap();
    let e = AuditLog::open(&dir, AuditConfig::default()).err().unwrap();
    assert!(e.to_string().contains("a symlink"), "{e}");
    assert!(!nowhere.exists());

    // head.json, on a fresh log and on one with records.
    for records in [0, 3] {
        let dir = tmp.path().join(format!("a3-{records}"));
        write_n(&dir, AuditConfig::default(), records);
        std::fs::remove_file(dir.join(HEAD_FILE)).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(HEAD_FILE)).unwrap();
        let e = AuditLog::open(&dir, AuditConfig::default()).err().unwrap();
        assert!(e.to_string().contains("a symlink"), "{e}");
        assert!(verify(&dir).unwrap_err().problem.contains("a symlink"));
        assert_eq!(std::fs::read(&outside).unwrap(), before);
    }

    // The audit directory itself.
    let real = tmp.path().join("real");
    write_n(&real, AuditConfig::default(), 1);
    let link = tmp.path().join("a4");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = AuditLog::open(&link, AuditConfig::default()).err().unwrap();
    assert!(e.to_string().contains("a symlink"), "{e}");
    assert!(verify(&link).unwrap_err().problem.contains("a symlink"));
    assert_eq!(verify(&real).unwrap().records, 1);
}

/// A FIFO in place of the anchor, the lock or a log file neither hangs a
/// writer nor `verify`: each refuses at once, naming it.
#[test]
fn fifos_in_the_audit_dir_are_refused_without_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    for name in [HEAD_FILE.to_string(), "lock".into(), file_name(1)] {
        let dir = tmp.path().join(name.replace('.', "_"));
        write_n(&dir, AuditConfig::default(), 2);
        std::fs::remove_file(dir.join(&name)).unwrap();
        mkfifo(&dir.join(&name));
        let (tx, rx) = std::sync::mpsc::channel();
        let d = dir.clone();
        std::thread::spawn(move || {
            let open = AuditLog::open(&d, AuditConfig::default())
                .err()
                .map(|e| e.to_string());
            let verified = verify(&d).map_err(|f| f.to_string());
            let _ = tx.send((open, verified));
        });
        let (open, verified) = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("a FIFO as {name} hangs"));
        let open = open.unwrap_or_else(|| panic!("a FIFO as {name} was accepted"));
        assert!(open.contains("a FIFO"), "{name}: {open}");
        let v = verified.unwrap_err();
        assert!(v.contains("a FIFO"), "{name}: {v}");
    }
}

/// A run's decision record is anchored only after its sync; a second writer
/// arriving on a brand-new log in between must not take the missing anchor
/// for a deleted one.
#[test]
fn first_use_by_many_writers_at_once_all_succeed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let first = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    let (_, pending) = first.append_deferred(test_event(0)).unwrap();
    let second = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    second.append(test_event(1)).unwrap();
    first.make_durable(pending).unwrap();
    assert_eq!(verify(&dir).unwrap().records, 2);

    // Many at once, each with a log of its own (as separate processes have).
    let dir = tmp.path().join("parallel");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(16));
    let threads: Vec<_> = (0..16)
        .map(|i| {
            let dir = dir.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                let log = AuditLog::open(&dir, AuditConfig::default())?;
                let (_, pending) = log.append_deferred(test_event(i))?;
                std::thread::sleep(std::time::Duration::from_millis(5));
                log.make_durable(pending)?;
                log.append(test_event(100 + i)).map(|_| ())
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert_eq!(verify(&dir).unwrap().records, 32);

    // A deleted anchor on a log with records is still refused.
    std::fs::remove_file(dir.join(HEAD_FILE)).unwrap();
    let e = AuditLog::open(&dir, AuditConfig::default()).err().unwrap();
    assert!(e.to_string().contains("head anchor is missing"), "{e}");
    assert!(verify(&dir)
        .unwrap_err()
        .problem
        .contains("head anchor missing"));
}

/// head.json set back (seq 0, or an anchor that is not one airlock wrote)
/// fails `verify`: otherwise an edited or cut end of the log would pass.
#[test]
fn a_head_anchor_set_back_fails_verify_and_a_lagging_one_warns() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    write_n(&dir, AuditConfig::default(), 30);
    let head = dir.join(HEAD_FILE);
    let set = |text: &str| std::fs::write(&head, text).unwrap();
    assert_eq!(verify(&dir).unwrap().warnings, Vec::<String>::new());

    set(r#"{"seq":0,"id":"a0","hash":"x","file":"y"}"#);
    let f = verify(&dir).unwrap_err();
    assert!(f.problem.contains("head anchor is malformed"), "{f}");

    set(&serde_json::to_string(&airlock_core::audit::log::HeadAnchor::genesis()).unwrap());
    let f = verify(&dir).unwrap_err();
    assert!(f.problem.contains("names no record (seq 0)"), "{f}");
    // … and with it, cutting the end or editing the last record still fails.
    let path = dir.join(file_name(1));
    let all = lines(&path);
    write_lines(&path, &all[..27]);
    assert!(verify(&dir).is_err());
    write_lines(&path, &all);

    // A genuine anchor that lags the end by more than a few records: a warning.
    let third = airlock_core::audit::chain::line_hash(all[2].as_bytes());
    set(&format!(
        r#"{{"seq":3,"id":"a3","hash":"{third}","file":"{}"}}"#,
        file_name(1)
    ));
    let report = verify(&dir).unwrap();
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains("27 record(s) before the end"),
        "{:?}",
        report.warnings
    );
    // Naming a record with another hash is tampering.
    set(&format!(
        r#"{{"seq":3,"id":"a3","hash":"{}","file":"{}"}}"#,
        "ab".repeat(32),
        file_name(1)
    ));
    assert!(verify(&dir)
        .unwrap_err()
        .problem
        .contains("does not match the head anchor"));
    // A lag within the bound is quiet.
    let h = airlock_core::audit::chain::line_hash(all[25].as_bytes());
    set(&format!(
        r#"{{"seq":26,"id":"a26","hash":"{h}","file":"{}"}}"#,
        file_name(1)
    ));
    assert_eq!(verify(&dir).unwrap().warnings, Vec::<String>::new());
}

/// `verify` and the last records are read as streams: a log of tens of MB
/// verifies, and its last records are found reading from the end.
#[test]
fn a_large_log_verifies_and_its_last_records_are_read_from_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("audit");
    let log = AuditLog::open(&dir, AuditConfig::default()).unwrap();
    let pad = "p".repeat(64 * 1024);
    for i in 0..400u64 {
        let (_, pending) = log
            .append_deferred(Event::Test(TestEvent {
                writer: format!("{i}{pad}"),
                n: i,
            }))
            .unwrap();
        if i % 100 == 99 {
            log.make_durable(pending).unwrap();
        } else {
            drop(pending);
        }
    }
    log.append(test_event(400)).unwrap();
    assert!(std::fs::metadata(dir.join(file_name(1))).unwrap().len() > 25_000_000);
    assert_eq!(verify(&dir).unwrap().records, 401);
    let last = airlock_core::audit::last_n(&dir, 2).unwrap();
    assert_eq!(
        last.iter().map(|r| r.seq).collect::<Vec<_>>(),
        vec![400, 401]
    );
}
