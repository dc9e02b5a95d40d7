use super::*;
use airlock_policy::Request;

fn policy_with(root: &Path, toolchains: &str) -> Policy {
    let text = format!("[toolchains]\nuse = [{toolchains}]\n");
    airlock_policy::load::from_str(&text, "test.toml", root)
        .unwrap()
        .policy
}

fn get<'a>(p: &'a Policy, k: &str) -> Option<&'a str> {
    p.env
        .set
        .iter()
        .find(|(n, _)| n == k)
        .map(|(_, v)| v.as_str())
}

/// A home with rustup, cargo and pyenv laid out as their installers do, and a
/// workspace holding a venv made from the pyenv interpreter.
struct Fixture {
    _t: tempfile::TempDir,
    home: PathBuf,
    ws: PathBuf,
}

fn fixture() -> Fixture {
    let t = tempfile::tempdir().unwrap();
    let base = t.path().canonicalize().unwrap();
    let home = base.join("home");
    let ws = base.join("ws");
    for d in [
        ".rustup/toolchains",
        ".cargo/bin",
        ".pyenv/versions/3.11.7/bin",
        ".pyenv/versions/3.11.7/lib/python3.11",
        "go/pkg/mod",
    ] {
        std::fs::create_dir_all(home.join(d)).unwrap();
    }
    for f in [
        ".cargo/config.toml",
        ".cargo/credentials.toml",
        ".cargo/credentials",
    ] {
        std::fs::write(home.join(f), "").unwrap();
    }
    exe(&home.join(".pyenv/versions/3.11.7/bin/python3.11"));
    std::os::unix::fs::symlink(
        "python3.11",
        home.join(".pyenv/versions/3.11.7/bin/python3"),
    )
    .unwrap();
    std::fs::create_dir_all(ws.join(".venv/bin")).unwrap();
    std::fs::write(
        ws.join(".venv/pyvenv.cfg"),
        format!(
            "home = {}\ninclude-system-site-packages = false\n",
            home.join(".pyenv/versions/3.11.7/bin").display()
        ),
    )
    .unwrap();
    Fixture { _t: t, home, ws }
}

fn exe(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The workspace writes `pyvenv.cfg`: its `home` shows nothing but a Python
/// installation, whatever directory it names.
#[test]
fn a_venv_home_shows_only_a_python_installation() {
    let f = fixture();
    let home = f.home.display().to_string();
    let host = Host::with_env([("HOME", home.as_str())]);
    // uv's layout: ~/.local/bin/python3 links into its managed install.
    let uv = f
        .home
        .join(".local/share/uv/python/cpython-3.12.4-linux-x86_64-gnu");
    exe(&uv.join("bin/python3.12"));
    std::fs::create_dir_all(uv.join("lib/python3.12")).unwrap();
    std::fs::create_dir_all(f.home.join(".local/bin")).unwrap();
    std::os::unix::fs::symlink(uv.join("bin/python3.12"), f.home.join(".local/bin/python3"))
        .unwrap();
    // A lone executable, not an installation.
    exe(&f.home.join("tools/bin/python3"));
    std::fs::create_dir_all(f.home.join(".ssh")).unwrap();
    let homes = [
        ("nonexistent", f.home.join(".ssh/nonexistent")),
        ("system", PathBuf::from("/usr/bin")),
        ("lone", f.home.join("tools/bin")),
        ("uv", f.home.join(".local/bin")),
    ];
    for (name, h) in &homes {
        std::fs::create_dir_all(f.ws.join(name)).unwrap();
        std::fs::write(
            f.ws.join(name).join("pyvenv.cfg"),
            format!("home = {}\n", h.display()),
        )
        .unwrap();
    }
    let mut p = policy_with(&f.ws, "\"python\"");
    apply(&mut p, &host);
    let shown: Vec<&PathBuf> = p
        .filesystem
        .read
        .iter()
        .filter(|r| !r.starts_with(f.home.join(".pyenv")))
        .collect();
    assert_eq!(shown, vec![&uv], "{:?}", p.filesystem.read);
    assert!(p
        .filesystem
        .read
        .contains(&f.home.join(".pyenv/versions/3.11.7")));
}

#[test]
fn rust_exposes_the_homes_read_only_and_puts_cargo_on_path() {
    let f = fixture();
    let home = f.home.display().to_string();
    let host = Host::with_env([("HOME", home.as_str()), ("PATH", "/usr/bin")]);
    let mut p = policy_with(&f.ws, "\"rust\"");
    apply(&mut p, &host);
    assert!(p.filesystem.read.contains(&f.home.join(".rustup")));
    // cargo's home is shown entry by entry, but for its registry tokens.
    assert!(p.filesystem.read.contains(&f.home.join(".cargo/bin")));
    assert!(p
        .filesystem
        .read
        .contains(&f.home.join(".cargo/config.toml")));
    for name in ["credentials.toml", "credentials"] {
        let token = f.home.join(".cargo").join(name);
        assert!(
            !p.filesystem.read.iter().any(|r| token.starts_with(r)),
            "{name} shown: {:?}",
            p.filesystem.read
        );
    }
    assert!(
        p.filesystem.write.is_empty(),
        "a preset never makes a host path writable"
    );
    assert_eq!(
        get(&p, "RUSTUP_HOME"),
        Some(&*f.home.join(".rustup").to_string_lossy())
    );
    assert_eq!(get(&p, "CARGO_NET_OFFLINE"), Some("true"));
    let path = get(&p, "PATH").unwrap();
    assert!(
        path.starts_with(&format!("{}:", f.home.join(".cargo/bin").display())),
        "{path}"
    );
    assert!(path.contains("/usr/bin"), "{path}");
    // The gate now allows cargo test by the preset's rule.
    let d = airlock_policy::decide(&p, &Request::shell("cargo test -q", &f.ws));
    assert_eq!(d.decision, Verdict::Allow, "{d:?}");
    assert_eq!(d.rule.as_deref(), Some("toolchains.rust[0]"));
    // ...but not cargo publish.
    let d = airlock_policy::decide(&p, &Request::shell("cargo publish", &f.ws));
    assert_ne!(d.decision, Verdict::Allow, "{d:?}");
}

#[test]
fn a_network_gets_a_fresh_cargo_home_never_the_hosts() {
    let f = fixture();
    let home = f.home.display().to_string();
    let host = Host::with_env([("HOME", home.as_str())]);
    let text = "[toolchains]\nuse = [\"rust\", \"go\"]\n[network]\nmode = \"open\"\n";
    let mut p = airlock_policy::load::from_str(text, "t.toml", &f.ws)
        .unwrap()
        .policy;
    apply(&mut p, &host);
    assert_eq!(get(&p, "CARGO_HOME"), Some("/tmp/cargo-home"));
    assert_eq!(get(&p, "CARGO_NET_OFFLINE"), None);
    assert_eq!(get(&p, "GOMODCACHE"), Some("/tmp/go/pkg/mod"));
    assert_eq!(get(&p, "GOPROXY"), None);
}

#[test]
fn python_exposes_the_interpreter_a_workspace_venv_was_made_from() {
    let f = fixture();
    let home = f.home.display().to_string();
    let host = Host::with_env([("HOME", home.as_str())]);
    let mut p = policy_with(&f.ws, "\"python\"");
    apply(&mut p, &host);
    assert!(
        p.filesystem
            .read
            .contains(&f.home.join(".pyenv/versions/3.11.7")),
        "{:?}",
        p.filesystem.read
    );
    assert!(p.filesystem.read.contains(&f.home.join(".pyenv/versions")));
    // `. .venv/bin/activate` is allowed; any other sourced file stays unknown.
    let d = airlock_policy::decide(
        &p,
        &Request::shell(". .venv/bin/activate && python -m pytest -q", &f.ws),
    );
    assert_eq!(d.decision, Verdict::Allow, "{d:?}");
    let d = airlock_policy::decide(&p, &Request::shell(". ./setup-env.sh", &f.ws));
    assert_eq!(d.decision, Verdict::Deny, "{d:?}");
    let d = airlock_policy::decide(&p, &Request::shell("source ../x/bin/activate", &f.ws));
    assert_eq!(d.decision, Verdict::Deny, "{d:?}");
}

#[test]
fn the_policys_own_values_win_and_unset_presets_add_nothing() {
    let f = fixture();
    let home = f.home.display().to_string();
    let host = Host::with_env([("HOME", home.as_str())]);
    let text = "[toolchains]\nuse = [\"go\"]\n[env]\nset = { GOCACHE = \"/tmp/mine\", PATH = \"/usr/bin:/bin\" }\n";
    let mut p = airlock_policy::load::from_str(text, "t.toml", &f.ws)
        .unwrap()
        .policy;
    apply(&mut p, &host);
    assert_eq!(get(&p, "GOCACHE"), Some("/tmp/mine"));
    assert_eq!(get(&p, "GOPROXY"), Some("off"));
    assert!(p.filesystem.read.contains(&f.home.join("go/pkg/mod")));
    assert_eq!(
        get(&p, "GOMODCACHE"),
        Some(&*f.home.join("go/pkg/mod").to_string_lossy())
    );

    let mut plain = airlock_policy::load::builtin_default(&f.ws);
    let before = plain.clone();
    apply(&mut plain, &host);
    assert_eq!(plain, before);
}

#[test]
fn policy_init_detects_what_a_project_holds() {
    let t = tempfile::tempdir().unwrap();
    assert!(detect(t.path()).is_empty());
    for f in ["Cargo.toml", "package.json", "go.mod"] {
        std::fs::write(t.path().join(f), "").unwrap();
    }
    std::fs::create_dir_all(t.path().join("venv")).unwrap();
    std::fs::write(t.path().join("venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    assert_eq!(
        detect(t.path()),
        vec![
            Toolchain::Python,
            Toolchain::Node,
            Toolchain::Rust,
            Toolchain::Go
        ]
    );
}
