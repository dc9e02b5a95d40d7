//! Whether the host hands the sandbox's uid or gid to a user: every backend
//! that runs as root takes host uid/gid [`SANDBOX_HOST_UID`] and
//! [`SANDBOX_HOST_GID`] for a stranger to the host. A user whose range in
//! /etc/subuid or /etc/subgid holds them can become them in a user namespace
//! of its own (newuidmap, newgidmap) and then signal the sandbox's processes
//! and write what they own. `airlock doctor` and the capability report check
//! the delegations; /etc/login.defs says where `useradd` would delegate next.

use super::namespaces::{SANDBOX_HOST_GID, SANDBOX_HOST_UID};
use std::path::Path;

/// One range of a subordinate id file that holds an id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    pub file: String,
    /// The user (a name or a uid, as the file writes it).
    pub user: String,
    pub first: u64,
    pub count: u64,
}

impl Delegation {
    fn last(&self) -> u64 {
        self.first + self.count.saturating_sub(1)
    }
}

/// The ranges of `text` (the `USER:FIRST:COUNT` lines of /etc/subuid or
/// /etc/subgid, read from `file`) that hold `id`. Lines that do not parse are
/// skipped, as newuidmap skips them.
pub fn holding(file: &str, text: &str, id: u32) -> Vec<Delegation> {
    let id = u64::from(id);
    text.lines()
        .filter_map(|line| {
            let line = line.trim();
            if line.starts_with('#') {
                return None;
            }
            let mut f = line.split(':');
            let (user, first, count) = (f.next()?, f.next()?, f.next()?);
            let first: u64 = first.trim().parse().ok()?;
            let count: u64 = count.trim().parse().ok()?;
            (count > 0 && first <= id && id - first < count).then(|| Delegation {
                file: file.to_string(),
                user: user.to_string(),
                first,
                count,
            })
        })
        .collect()
}

/// Whether /etc/login.defs (its text) has `useradd` delegate ids that reach
/// `id`: from SUB_UID_MIN (or SUB_GID_MIN) up to SUB_UID_MAX plus one
/// SUB_UID_COUNT. Missing keys take shadow's defaults (100000, 600100000,
/// 65536).
pub fn login_defs_reach(text: &str, kind: &str, id: u32) -> Option<(u64, u64)> {
    let key = |k: &str, default: u64| {
        text.lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some(k)).then(|| f.next()?.parse().ok())?
            })
            .next_back()
            .unwrap_or(default)
    };
    let min = key(&format!("SUB_{kind}_MIN"), 100_000);
    let max = key(&format!("SUB_{kind}_MAX"), 600_100_000);
    let count = key(&format!("SUB_{kind}_COUNT"), 65_536);
    let top = max.saturating_add(count);
    (min <= u64::from(id) && u64::from(id) <= top).then_some((min, top))
}

/// What is wrong, why and what to do, for delegations of the sandbox's ids.
pub fn describe(delegations: &[Delegation]) -> Option<String> {
    if delegations.is_empty() {
        return None;
    }
    let each: Vec<String> = delegations
        .iter()
        .map(|d| format!("{} gives {} {}-{}", d.file, d.user, d.first, d.last()))
        .collect();
    let fixes: Vec<String> = delegations
        .iter()
        .map(|d| {
            let opt = if d.file.ends_with("subgid") {
                "--del-subgids"
            } else {
                "--del-subuids"
            };
            format!("usermod {opt} {}-{} {}", d.first, d.last(), d.user)
        })
        .collect();
    Some(format!(
        "the sandbox's host uid {SANDBOX_HOST_UID} / gid {SANDBOX_HOST_GID} is delegated to a \
         user ({}): that user can become it in a user namespace of its own (newuidmap, \
         newgidmap), then signal the sandbox's processes and write what they own. Hint: remove \
         the range or move it off these ids ({}), then check with `airlock doctor`",
        each.join("; "),
        fixes.join("; ")
    ))
}

/// The host's delegations of the sandbox's uid and gid (unreadable files
/// delegate nothing: newuidmap reads the same files).
pub fn host_delegations() -> Vec<Delegation> {
    let read = |p: &str| std::fs::read_to_string(Path::new(p)).unwrap_or_default();
    let mut out = holding("/etc/subuid", &read("/etc/subuid"), SANDBOX_HOST_UID);
    out.extend(holding(
        "/etc/subgid",
        &read("/etc/subgid"),
        SANDBOX_HOST_GID,
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_holding_the_id_is_found_with_its_user() {
        let text =
            "# comment\nairlock-u1:100000:65536\nairlock-u2:165536:65536\nbroken\n1002:0:x\n";
        assert_eq!(
            holding("/etc/subuid", text, 100_000),
            [Delegation {
                file: "/etc/subuid".into(),
                user: "airlock-u1".into(),
                first: 100_000,
                count: 65_536
            }]
        );
        assert_eq!(holding("/etc/subuid", text, 165_535).len(), 1);
        assert_eq!(holding("/etc/subuid", text, 165_536)[0].user, "airlock-u2");
        assert!(holding("/etc/subuid", text, 231_072).is_empty());
        assert!(holding("/etc/subuid", "u:5:0\n", 5).is_empty());
    }

    #[test]
    fn the_sandbox_ids_lie_outside_what_debian_delegates_by_default() {
        // The first user `useradd` makes on Debian and Ubuntu gets
        // 100000:65536; the ranges go up to SUB_UID_MAX.
        let debian = "u1:100000:65536\nlast:600034464:65536\n";
        assert!(holding("/etc/subuid", debian, SANDBOX_HOST_UID).is_empty());
        assert!(holding("/etc/subgid", debian, SANDBOX_HOST_GID).is_empty());
        assert_eq!(login_defs_reach("", "UID", SANDBOX_HOST_UID), None);
        assert_eq!(login_defs_reach("", "GID", SANDBOX_HOST_GID), None);
        // Below 2^31 (signed uid_t users) and above systemd's container range.
        const { assert!(SANDBOX_HOST_UID < 1 << 31 && SANDBOX_HOST_UID > 1_879_048_191) };
        assert_eq!(SANDBOX_HOST_UID, SANDBOX_HOST_GID);
    }

    #[test]
    fn login_defs_reach_counts_one_range_past_the_maximum() {
        let defs = "SUB_UID_MIN\t\t   100000\nSUB_UID_MAX\t\t600100000\nSUB_UID_COUNT\t\t65536\n";
        assert_eq!(
            login_defs_reach(defs, "UID", 600_165_536),
            Some((100_000, 600_165_536))
        );
        assert_eq!(login_defs_reach(defs, "UID", 600_165_537), None);
        let wide = "SUB_UID_MAX 4000000000\n";
        assert!(login_defs_reach(wide, "UID", SANDBOX_HOST_UID).is_some());
        assert!(login_defs_reach(wide, "GID", SANDBOX_HOST_GID).is_none());
    }

    #[test]
    fn the_description_says_what_why_and_how_to_fix_it() {
        assert_eq!(describe(&[]), None);
        let d = describe(&holding(
            "/etc/subgid",
            "alice:1999990000:65536\n",
            2_000_000_000,
        ))
        .unwrap();
        assert!(
            d.contains("/etc/subgid gives alice 1999990000-2000055535"),
            "{d}"
        );
        assert!(d.contains("Hint: "), "{d}");
        assert!(
            d.contains("usermod --del-subgids 1999990000-2000055535 alice"),
            "{d}"
        );
    }
}
