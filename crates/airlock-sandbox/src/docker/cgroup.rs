//! The container's cgroup as the daemon made it, read while the command runs:
//! the pids controller's `max` events (the run is ended as a pids kill, as
//! under the native backend), peak memory and CPU time. The daemon removes
//! the cgroup when the container stops, so the helper samples it on every
//! tick and keeps the last values.
//!
//! A refused fork often ends the command at once (a shell exits 2 on "Cannot
//! fork"), and the daemon may remove the cgroup before the next tick: a
//! thread of its own ([`PidsWatch`]) reads `pids.events` through one open
//! file every [`PIDS_POLL`], so that the hit is seen before the removal. No
//! notification can replace it on cgroup v1: a poll for POLLPRI on
//! `pids.events` does not wake on a refused fork there (it wakes only when
//! the cgroup is removed).

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How often [`PidsWatch`] reads `pids.events`: one read of a small kernfs
/// file (a few microseconds) 500 times a second while a container runs.
const PIDS_POLL: Duration = Duration::from_millis(2);

/// Where the daemon may have put container `id`'s cgroup, per controller
/// file: cgroup v1 with the `cgroupfs` driver, v2 with `cgroupfs`, v2 with
/// the systemd driver; dockerd's names, then podman's (`libpod_parent` with
/// cgroupfs, `machine.slice` with systemd).
fn candidates(id: &str, v1: &str, file_v1: &str, file_v2: &str) -> Vec<PathBuf> {
    [
        format!("/sys/fs/cgroup/{v1}/docker/{id}/{file_v1}"),
        format!("/sys/fs/cgroup/docker/{id}/{file_v2}"),
        format!("/sys/fs/cgroup/system.slice/docker-{id}.scope/{file_v2}"),
        format!("/sys/fs/cgroup/{v1}/libpod_parent/libpod-{id}/{file_v1}"),
        format!("/sys/fs/cgroup/libpod_parent/libpod-{id}/{file_v2}"),
        format!("/sys/fs/cgroup/machine.slice/libpod-{id}.scope/{file_v2}"),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

fn read(paths: &[PathBuf]) -> Option<String> {
    paths.iter().find_map(|p| std::fs::read_to_string(p).ok())
}

/// Whether a fork was refused at the pids limit, from a thread that reads
/// the first of the candidate `pids.events` files that opens, until it is
/// stopped or the cgroup is removed.
struct PidsWatch {
    hit: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl PidsWatch {
    fn start(paths: Vec<PathBuf>) -> PidsWatch {
        let hit = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, st) = (hit.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("airlock-pids".into())
            .spawn(move || {
                let mut file: Option<File> = None;
                let mut buf = [0u8; 128];
                while !st.load(Ordering::Relaxed) {
                    if file.is_none() {
                        file = paths.iter().find_map(|p| File::open(p).ok());
                    }
                    if let Some(f) = &file {
                        match f.read_at(&mut buf, 0) {
                            Ok(n) => {
                                if max_events(&String::from_utf8_lossy(&buf[..n])) {
                                    h.store(true, Ordering::Relaxed);
                                    return;
                                }
                            }
                            // ENODEV: the cgroup is gone; nothing more to see.
                            Err(_) => return,
                        }
                    }
                    std::thread::sleep(PIDS_POLL);
                }
            })
            .ok();
        // If no thread could start, the tick's own reads are the only look.
        PidsWatch { hit, stop, thread }
    }

    fn hit(&self) -> bool {
        self.hit.load(Ordering::Relaxed)
    }
}

impl Drop for PidsWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether a flat-keyed `pids.events` says a fork was refused (`max N`, N > 0).
fn max_events(text: &str) -> bool {
    text.lines()
        .find_map(|l| l.strip_prefix("max ").map(|n| n.trim().parse::<u64>()))
        .is_some_and(|n| n.is_ok_and(|n| n > 0))
}

/// One container's cgroup files, sampled.
pub struct Watch {
    pids_events: Vec<PathBuf>,
    pids: PidsWatch,
    memory_peak: Vec<PathBuf>,
    cpu: Vec<PathBuf>,
    oom: Vec<PathBuf>,
    pub peak_memory_bytes: u64,
    pub cpu_ms: u64,
    /// The memory controller's OOM kills seen in the container's cgroup. Not
    /// every daemon reports them (podman's State.OOMKilled stays false
    /// with runc on cgroup v1).
    pub oom_kills: u64,
}

impl Watch {
    pub fn new(id: &str) -> Watch {
        let pids_events = candidates(id, "pids", "pids.events", "pids.events");
        Watch {
            pids: PidsWatch::start(pids_events.clone()),
            pids_events,
            memory_peak: candidates(id, "memory", "memory.max_usage_in_bytes", "memory.peak"),
            cpu: candidates(id, "cpuacct", "cpuacct.usage", "cpu.stat"),
            oom: candidates(id, "memory", "memory.oom_control", "memory.events"),
            peak_memory_bytes: 0,
            cpu_ms: 0,
            oom_kills: 0,
        }
    }

    /// Samples memory and CPU; true when a fork was refused at the pids limit.
    pub fn sample(&mut self) -> bool {
        if let Some(v) = read(&self.memory_peak).and_then(|s| s.trim().parse::<u64>().ok()) {
            self.peak_memory_bytes = self.peak_memory_bytes.max(v);
        }
        if let Some(s) = read(&self.cpu) {
            let ms = match s.split_whitespace().collect::<Vec<_>>().as_slice() {
                // v1: nanoseconds.
                [ns] => ns.parse::<u64>().ok().map(|n| n / 1_000_000),
                // v2: cpu.stat, `usage_usec N` first.
                [_, usec, ..] => usec.parse::<u64>().ok().map(|u| u / 1000),
                _ => None,
            };
            if let Some(ms) = ms {
                self.cpu_ms = self.cpu_ms.max(ms);
            }
        }
        // v1 memory.oom_control and v2 memory.events both hold `oom_kill N`.
        if let Some(n) = read(&self.oom).and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("oom_kill ").map(|n| n.trim().parse::<u64>()))
                .and_then(Result::ok)
        }) {
            self.oom_kills = self.oom_kills.max(n);
        }
        self.pids.hit() || read(&self.pids_events).is_some_and(|s| max_events(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_fork_is_a_positive_max_count() {
        assert!(max_events("max 3\n"));
        assert!(!max_events("max 0\n"));
        assert!(!max_events(""));
        assert!(!max_events("max x\n"));
    }

    #[test]
    fn the_pids_thread_reads_the_first_file_that_opens_and_stops_when_dropped() {
        let dir =
            std::env::temp_dir().join(format!("airlock-test-pidswatch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let events = dir.join("pids.events");
        std::fs::write(&events, "max 0\n").unwrap();
        let w = PidsWatch::start(vec![dir.join("absent"), events.clone()]);
        std::thread::sleep(PIDS_POLL * 5);
        assert!(!w.hit());
        std::fs::write(&events, "max 1\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !w.hit() && std::time::Instant::now() < deadline {
            std::thread::sleep(PIDS_POLL);
        }
        assert!(w.hit());
        drop(w);
        let quiet = PidsWatch::start(vec![dir.join("absent")]);
        drop(quiet); // returns: the thread sees its stop flag
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
