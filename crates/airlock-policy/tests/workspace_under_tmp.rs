//! A workspace that itself lives under `/tmp` (as a CI checkout may): the host
//! tree around it is outside the boundary, even though `/tmp` paths are
//! otherwise the sandbox's own private tmpfs.

use airlock_policy::{decide, load, Request, Verdict};
use std::path::Path;

fn judge(root: &Path, command: &str) -> Verdict {
    decide(&load::builtin_default(root), &Request::shell(command, root)).decision
}

#[test]
fn the_host_tree_around_a_tmp_workspace_is_outside_the_boundary() {
    let outer = tempfile::Builder::new()
        .prefix("airlock-tmp-ws-")
        .tempdir_in("/tmp")
        .unwrap();
    let root = outer.path().join("ws");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(outer.path().join("secret"), "canary").unwrap();

    for outside in [
        "cat ../secret",
        "echo x > ../outside.txt",
        "cd .. && ls",
        "cd src; cd ..; cd ..; cat x",
    ] {
        assert_eq!(judge(&root, outside), Verdict::Deny, "{outside}");
    }
    let secret = outer.path().join("secret");
    assert_eq!(
        judge(&root, &format!("cat {}", secret.display())),
        Verdict::Deny,
        "the absolute host path of a sibling"
    );
    // Inside the workspace, and the sandbox's own /tmp elsewhere, stay allowed.
    assert_eq!(judge(&root, "ls src && cat src/../src"), Verdict::Allow);
    assert_eq!(
        judge(&root, "echo x > /tmp/scratch-of-the-sandbox"),
        Verdict::Allow
    );
}
