//! Who owns what a run leaves outside its helper (a docker container and
//! stage, an OCI stage directory), so that the next helper can tell whether
//! it is stale: the boot and the pid namespace the owning helper ran in, its
//! pid there and the start time of that process (so that a reused pid is not
//! mistaken for it). Only owners of this boot and this pid namespace can be
//! looked up; anything else, and any label that does not read, is never
//! called stale.

use std::path::Path;

/// Where a helper runs: this boot of this machine, and the pid namespace
/// whose pids its `/proc` shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Here {
    /// /proc/sys/kernel/random/boot_id: new at every boot, unlike the pids.
    pub boot: String,
    /// The inode of /proc/self/ns/pid.
    pub pid_ns: u64,
}

impl Here {
    pub fn detect() -> Option<Here> {
        let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let boot = boot.trim().to_string();
        if boot.is_empty() || boot.contains(':') {
            return None;
        }
        let ns = std::fs::read_link("/proc/self/ns/pid").ok()?;
        let pid_ns = ns
            .to_str()?
            .strip_prefix("pid:[")?
            .strip_suffix(']')?
            .parse()
            .ok()?;
        Some(Here { boot, pid_ns })
    }
}

/// The start time of process `pid` in clock ticks since boot (field 22 of
/// /proc/PID/stat), as this `/proc` shows it.
fn start_of(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces: count from its closing ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// This process's owner label, `BOOT:PIDNS:PID:START`: the pid as this
/// `/proc` shows it (/proc/self), so that it and the namespace the label
/// names are those the sweep looks the owner up in. Empty when `/proc` cannot
/// say (such an owner is never swept).
pub fn owner_label() -> String {
    let pid = std::fs::read_link("/proc/self")
        .ok()
        .and_then(|p| p.to_str()?.parse::<u32>().ok());
    match (Here::detect(), pid.and_then(|p| Some((p, start_of(p)?)))) {
        (Some(h), Some((pid, start))) => format!("{}:{}:{pid}:{start}", h.boot, h.pid_ns),
        _ => String::new(),
    }
}

/// Whether what `label` names may be swept from `here`: its owner ran in this
/// boot and this pid namespace, and the process it names is gone (`alive`
/// says whether a pid is still the process started at a time). An owner of
/// another boot, host or pid namespace cannot be looked up here, and an
/// unreadable label names nobody: neither is ever swept.
pub fn stale(label: &str, here: &Here, alive: impl Fn(u32, u64) -> bool) -> bool {
    let f: Vec<&str> = label.split(':').collect();
    let [boot, pid_ns, pid, start] = f.as_slice() else {
        return false;
    };
    let (Ok(pid_ns), Ok(pid), Ok(start)) = (
        pid_ns.parse::<u64>(),
        pid.parse::<u32>(),
        start.parse::<u64>(),
    ) else {
        return false;
    };
    if boot.is_empty() || *boot != here.boot || pid_ns != here.pid_ns || pid == 0 {
        return false;
    }
    !alive(pid, start)
}

/// Whether process `pid` of this `/proc` is still the one started at `start`.
pub fn alive(pid: u32, start: u64) -> bool {
    start_of(pid) == Some(start)
}

/// The suffix of the file beside an OCI stage directory that names its
/// owner. Beside, not inside: the stage's tmpfs is mounted in the helper's
/// private mount namespace, so from any other namespace the directory is
/// empty and only a sibling on the host's filesystem can say whose it is.
pub const STAGE_OWNER_SUFFIX: &str = ".owner";

/// Which stages under a base may go: the run names whose owner file
/// (`read_owner` of `NAME.owner`) names a stale owner ([`stale`]). A stage
/// without an owner file, or with one that does not read, is never chosen.
pub fn stale_stages(
    names: &[String],
    read_owner: impl Fn(&str) -> Option<String>,
    here: &Here,
    alive: impl Fn(u32, u64) -> bool,
) -> Vec<String> {
    names
        .iter()
        .filter_map(|n| n.strip_suffix(STAGE_OWNER_SUFFIX))
        .filter(|run| crate::native::rundir::valid_run_name(run))
        .filter(|run| read_owner(run).is_some_and(|label| stale(&label, here, &alive)))
        .map(str::to_string)
        .collect()
}

/// Removes the stage directories under `base` that runs killed outright left
/// (their private mount namespace died with them, so each is an empty
/// directory on the host's filesystem), with their owner files; returns
/// notes. Never recursive and never through a symlink: a directory goes by
/// `rmdir` only, which refuses one that is not empty (or is a mount point
/// here), and a name that is not a plain directory is left alone.
pub fn sweep_stages(base: &Path) -> Vec<String> {
    use std::os::unix::fs::OpenOptionsExt;
    let Some(here) = Here::detect() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(base) else {
        return Vec::new();
    };
    let names: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    let read_owner = |run: &str| {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(base.join(format!("{run}{STAGE_OWNER_SUFFIX}")))
            .ok()?;
        let mut label = String::new();
        std::io::Read::read_to_string(&mut f, &mut label).ok()?;
        Some(label)
    };
    let mut notes = Vec::new();
    for run in stale_stages(&names, read_owner, &here, alive) {
        let dir = base.join(&run);
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_dir() => {
                if let Err(e) = std::fs::remove_dir(&dir) {
                    notes.push(format!("stale stage {} left: {e}", dir.display()));
                    continue;
                }
            }
            Ok(_) => {
                notes.push(format!(
                    "stale stage {} left: not a directory",
                    dir.display()
                ));
                continue;
            }
            Err(_) => {}
        }
        let _ = std::fs::remove_file(base.join(format!("{run}{STAGE_OWNER_SUFFIX}")));
        notes.push(format!("removed stale stage {}", dir.display()));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn here() -> Here {
        Here {
            boot: "0b7e3f6a-1c2d-4e5f-8a9b-0c1d2e3f4a5b".into(),
            pid_ns: 4026531836,
        }
    }

    fn label(boot: &str, ns: u64, pid: u32, start: u64) -> String {
        format!("{boot}:{ns}:{pid}:{start}")
    }

    #[test]
    fn an_owner_of_this_boot_and_pid_namespace_that_is_gone_is_swept() {
        let h = here();
        let l = label(&h.boot, h.pid_ns, 4242, 777);
        assert!(stale(&l, &h, |_, _| false));
        assert!(!stale(&l, &h, |pid, start| pid == 4242 && start == 777));
        // The same pid, started at another time, is another process.
        assert!(stale(&l, &h, |pid, start| pid == 4242 && start == 778));
    }

    #[test]
    fn another_pid_namespace_host_or_boot_is_never_swept() {
        let h = here();
        let gone = |_, _| false;
        assert!(!stale(&label(&h.boot, h.pid_ns + 1, 4242, 777), &h, gone));
        assert!(!stale(
            &label("11111111-2222-3333-4444-555555555555", h.pid_ns, 4242, 777),
            &h,
            gone
        ));
    }

    #[test]
    fn an_unreadable_owner_is_never_swept() {
        let h = here();
        let gone = |_, _| false;
        for l in [
            String::new(),
            "4242:777".to_string(), // an older airlock's PID:START
            format!("{}:{}:4242", h.boot, h.pid_ns),
            format!("{}:{}:4242:777:9", h.boot, h.pid_ns),
            format!("{}:{}:x:777", h.boot, h.pid_ns),
            format!("{}:{}:0:777", h.boot, h.pid_ns),
            format!(":{}:4242:777", h.pid_ns),
        ] {
            assert!(!stale(&l, &h, gone), "{l}");
        }
    }

    #[test]
    fn only_stages_whose_owner_file_names_a_gone_owner_here_are_chosen() {
        let h = here();
        let names: Vec<String> = [
            "r1",
            "r1.owner", // gone: chosen
            "r2",
            "r2.owner", // alive
            "r3",       // no owner file (an older airlock's): left
            "r4",
            "r4.owner",   // another pid namespace
            "r5.owner",   // its directory already gone: the file still goes
            "../x.owner", // not a run name
            "r6",
            "r6.owner", // unreadable
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let read = |run: &str| match run {
            "r1" | "r5" => Some(label(&h.boot, h.pid_ns, 10, 1)),
            "r2" => Some(label(&h.boot, h.pid_ns, 20, 2)),
            "r4" => Some(label(&h.boot, h.pid_ns + 1, 10, 1)),
            "r6" => Some("garbage".into()),
            "../x" => Some(label(&h.boot, h.pid_ns, 10, 1)),
            _ => None,
        };
        let alive = |pid, start| (pid, start) == (20, 2);
        assert_eq!(stale_stages(&names, read, &h, alive), ["r1", "r5"]);
    }

    #[test]
    fn the_stage_sweep_removes_an_empty_stale_directory_and_nothing_else() {
        let base = tempfile::tempdir().unwrap();
        let h = Here::detect().unwrap();
        // A pid that is not alive now: its start time never matches.
        let gone = format!("{}:{}:{}:1", h.boot, h.pid_ns, std::process::id());
        let b = base.path();
        std::fs::create_dir(b.join("gone")).unwrap();
        std::fs::write(b.join("gone.owner"), &gone).unwrap();
        std::fs::create_dir(b.join("full")).unwrap();
        std::fs::write(b.join("full/keep"), "x").unwrap();
        std::fs::write(b.join("full.owner"), &gone).unwrap();
        std::fs::create_dir(b.join("mine")).unwrap();
        std::fs::write(b.join("mine.owner"), owner_label()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), b.join("link")).unwrap();
        std::fs::write(b.join("link.owner"), &gone).unwrap();
        let notes = sweep_stages(b);
        assert!(
            !b.join("gone").exists() && !b.join("gone.owner").exists(),
            "{notes:?}"
        );
        assert!(
            b.join("full/keep").exists() && b.join("full.owner").exists(),
            "{notes:?}"
        );
        assert!(
            b.join("mine").exists() && b.join("mine.owner").exists(),
            "{notes:?}"
        );
        assert!(
            outside.path().exists() && b.join("link").exists(),
            "{notes:?}"
        );
    }

    #[test]
    fn this_process_labels_itself_alive_here() {
        let h = Here::detect().expect("this /proc names a boot and a pid namespace");
        let l = owner_label();
        assert!(l.starts_with(&format!("{}:{}:", h.boot, h.pid_ns)), "{l}");
        assert!(!stale(&l, &h, alive), "{l}");
    }
}
