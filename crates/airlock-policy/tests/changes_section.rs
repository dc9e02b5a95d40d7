//! `[changes]`: the change-set policy loads with located errors and safe defaults.

use airlock_policy::changes::{self, ChangeKind, Context, Entry, EntryType, DEFAULT_DISCARD};
use airlock_policy::{load, Disposition};
use std::path::{Path, PathBuf};

fn one_error(text: &str) -> (usize, usize, String) {
    let e = load::from_str(text, "p.toml", Path::new("/")).expect_err("must be rejected");
    let d = e.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    (
        d[0].location.line,
        d[0].location.column,
        d[0].message.clone(),
    )
}

#[test]
fn defaults_discard_caches_and_leave_limits_to_the_overlay() {
    let p = load::from_str("", "p.toml", Path::new("/")).unwrap().policy;
    assert_eq!(p.changes.discard, DEFAULT_DISCARD);
    assert!(p.changes.approval.is_empty() && p.changes.allow.is_empty());
    assert_eq!((p.changes.max_files, p.changes.max_bytes), (None, None));
    let d = load::builtin_default(Path::new("/tmp"));
    assert_eq!(d.changes, p.changes);
}

#[test]
fn the_lists_and_limits_load() {
    let text = "[changes]\napproval = [\"Makefile\"]\nallow = [\".vscode/settings.json\"]\ndeny = [\"secrets/\"]\ndiscard = []\nmax_files = 1000\nmax_bytes = \"10MiB\"\n";
    let p = load::from_str(text, "p.toml", Path::new("/"))
        .unwrap()
        .policy;
    assert_eq!(p.changes.approval, ["Makefile"]);
    assert_eq!(p.changes.allow, [".vscode/settings.json"]);
    assert_eq!(p.changes.deny, ["secrets/"]);
    assert!(p.changes.discard.is_empty());
    assert_eq!(p.changes.max_files, Some(1000));
    assert_eq!(p.changes.max_bytes, Some(10 << 20));
    let ctx = Context::new(Path::new("/w"), &[], &[]);
    let e = Entry {
        rel: Path::new("__pycache__/a.pyc"),
        kind: ChangeKind::Added,
        file_type: EntryType::File,
        mode: 0o644,
        host_mode: None,
        host_type: None,
        symlink_target: None,
    };
    assert_eq!(
        changes::classify(&e, &p.changes, &ctx).disposition,
        Disposition::Allow
    );
}

#[test]
fn a_misspelt_key_is_located_with_a_suggestion() {
    let (l, c, m) = one_error("[changes]\napprove = [\"x\"]\n");
    assert_eq!((l, c), (2, 1));
    assert!(m.contains("did you mean `approval`?"), "{m}");
    let (l, _, m) = one_error("[changes]\ndeny = [\"ok\", \"a/../b\"]\n");
    assert_eq!(l, 2);
    assert!(m.contains("\"a/../b\"") && m.contains("`..`"), "{m}");
    let (_, _, m) = one_error("[changes]\nmax_files = 0\n");
    assert!(m.contains("changes.max_files"), "{m}");
    let (_, _, m) = one_error("[changes]\nmax_bytes = \"lots\"\n");
    assert!(m.contains("changes.max_bytes"), "{m}");
    let (_, _, m) = one_error("[chnages]\n");
    assert!(m.contains("did you mean `changes`?"), "{m}");
}

#[test]
fn a_policy_file_is_denied_even_when_the_policy_allows_everything() {
    let text = "[changes]\nallow = [\"**\"]\n";
    let p = load::from_str(text, "p.toml", Path::new("/"))
        .unwrap()
        .policy;
    let ctx = Context::new(Path::new("/w"), &[PathBuf::from("/w/airlock.toml")], &[]);
    let e = Entry {
        rel: Path::new("airlock.toml"),
        kind: ChangeKind::Modified,
        file_type: EntryType::File,
        mode: 0o644,
        host_mode: Some(0o644),
        host_type: Some(EntryType::File),
        symlink_target: None,
    };
    let c = changes::classify(&e, &p.changes, &ctx);
    assert_eq!(c.disposition, Disposition::Deny);
    assert!(c.reason.contains("airlock.toml"), "{}", c.reason);
}
