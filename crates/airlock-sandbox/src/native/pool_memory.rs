//! What a warm sandbox holds while it waits, for `airlock serve
//! --pool-memory`: the proportional set size (Pss) of its helper and of every
//! process below it (init), from `/proc/<pid>/smaps_rollup`.
//!
//! Pss counts a page shared by n processes as 1/n of a page to each, so the
//! pages a helper shares with its init, with the other warm sandboxes and
//! with the server (the same executable) are counted once across them all,
//! and the sum over the pool is what the pool adds to the machine's memory
//! in user space. What the kernel holds for a sandbox (its mounts,
//! namespaces, cgroup and page tables) is not in it: a few hundred KiB more.
//!
//! Reading costs about 0.1 ms a process; it runs on the pool's refill thread,
//! never on a request's path.

use std::path::Path;

/// Pss in bytes of `root` and every process below it; `None` when `root` is
/// gone. A descendant that exits while the tree is read counts as 0.
pub fn tree_pss(root: libc::pid_t) -> Option<u64> {
    let mut total = pss(root)?;
    let mut todo = children(root);
    // A sandbox's tree is a helper and its init: the bound only guards
    // against a loop through recycled pids.
    let mut seen = 0;
    while let Some(pid) = todo.pop() {
        seen += 1;
        if seen > 64 {
            break;
        }
        total += pss(pid).unwrap_or(0);
        todo.extend(children(pid));
    }
    Some(total)
}

/// `Pss:` of `/proc/<pid>/smaps_rollup`, in bytes.
fn pss(pid: libc::pid_t) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    pss_of(&text)
}

fn pss_of(smaps_rollup: &str) -> Option<u64> {
    let line = smaps_rollup.lines().find(|l| l.starts_with("Pss:"))?;
    let kib: u64 = line
        .trim_start_matches("Pss:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// The children of every thread of `pid` (`/proc/<pid>/task/<tid>/children`).
fn children(pid: libc::pid_t) -> Vec<libc::pid_t> {
    let task = format!("/proc/{pid}/task");
    let Ok(threads) = std::fs::read_dir(&task) else {
        return Vec::new();
    };
    threads
        .flatten()
        .filter_map(|t| {
            std::fs::read_to_string(Path::new(&task).join(t.file_name()).join("children")).ok()
        })
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<libc::pid_t>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pss_is_read_from_smaps_rollup() {
        let text = "5608e273e000-7ffd7b849000 ---p 00000000 00:00 0  [rollup]\n\
                    Rss:                4220 kB\n\
                    Pss:                1849 kB\n\
                    Pss_Dirty:           717 kB\n";
        assert_eq!(pss_of(text), Some(1849 * 1024));
        assert_eq!(pss_of("Rss: 1 kB\n"), None);
        assert_eq!(pss_of("Pss: many kB\n"), None);
    }

    #[test]
    fn a_tree_counts_its_children() {
        // A shell (the root) waiting for its sleep (the child).
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .expect("sh");
        let root = sh.id() as libc::pid_t;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let child = loop {
            let exec_done = children(root).into_iter().find(|c| {
                std::fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|comm| comm.trim() == "sleep")
            });
            if let Some(c) = exec_done {
                break c;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "sh did not start sleep"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let (tree, alone, child_alone) = (tree_pss(root), pss(root), pss(child));
        crate::sys::kill(child, libc::SIGKILL);
        let _ = sh.wait();
        let (tree, alone, child_alone) = (tree.unwrap(), alone.unwrap(), child_alone.unwrap());
        assert!(child_alone > 0);
        // Other tests start processes meanwhile, which moves every Pss of a
        // shared library a little: the child's share is in the tree's total.
        assert!(
            tree >= alone + child_alone / 2,
            "tree {tree}, root alone {alone}, child {child_alone}"
        );
        assert_eq!(tree_pss(-1), None);
    }
}
