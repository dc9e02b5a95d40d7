//! The container's cgroup as the daemon made it, read while the command runs:
//! the pids controller's `max` events (the run is ended as a pids kill, as
//! under the native backend), peak memory and CPU time. The daemon removes
//! the cgroup when the container stops, so the helper samples it on every
//! tick and keeps the last values.

use std::path::PathBuf;

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

/// One container's cgroup files, sampled.
pub struct Watch {
    pids_events: Vec<PathBuf>,
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
        Watch {
            pids_events: candidates(id, "pids", "pids.events", "pids.events"),
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
        read(&self.pids_events)
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("max ").map(|n| n.trim().parse::<u64>()))
            })
            .is_some_and(|n| n.is_ok_and(|n| n > 0))
    }
}
