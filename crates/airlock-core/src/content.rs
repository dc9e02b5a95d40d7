//! Approvals bind to content: the workspace files a command names as a program
//! or a script (`./run.sh`, `bash build.sh`, `python3 x.py`, `make`'s
//! makefile, `source env.sh`) are hashed when the approval is asked for, and
//! again when a run presents it. A person approved what those files said
//! then; if they changed (a later allowed run rewrote them, say), the
//! approval does not cover them.

use airlock_policy::{Decision, Policy};
use rustix::fs::{FileType, Mode, OFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Past this size only the first bytes are hashed (with the size beside them),
/// so that a huge planted file cannot make asking for an approval slow.
const HASH_CAP: u64 = 16 << 20;

/// A workspace file a command runs, and what it held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContentPin {
    /// Absolute path in the workspace.
    pub path: PathBuf,
    /// `sha256:<hex>` of the content (`sha256-16MiB:<hex>:<size>` past 16 MiB),
    /// `absent`, or `not-a-file:<kind>`.
    pub content: String,
}

/// The pins for a request the gate judged: every simple command's program and
/// script, when they are files of the workspace.
pub fn pins(policy: &Policy, cwd: &Path, decision: &Decision) -> Vec<ContentPin> {
    let root = &policy.workspace.root;
    let mut cwd = normalize(cwd);
    let mut out: Vec<ContentPin> = Vec::new();
    for seg in &decision.segments {
        let argv = &seg.argv;
        if argv.first().map(String::as_str) == Some("cd") && argv.len() == 2 {
            cwd = normalize(&cwd.join(&argv[1]));
            continue;
        }
        for named in named_files(argv, &cwd) {
            let path = normalize(&cwd.join(named));
            if !path.starts_with(root) || out.iter().any(|p| p.path == path) {
                continue;
            }
            let content = fingerprint(&path);
            out.push(ContentPin { path, content });
        }
    }
    out
}

/// The first pin whose file no longer holds what it held (or that is new),
/// comparing what an approval recorded with what is there now.
pub fn first_change<'a>(then: &'a [ContentPin], now: &'a [ContentPin]) -> Option<&'a ContentPin> {
    then.iter()
        .find(|p| !now.contains(p))
        .or_else(|| now.iter().find(|p| !then.iter().any(|t| t.path == p.path)))
}

/// Lexical: `.` and `..` removed (no filesystem access).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What a file holds, without blocking on a FIFO or opening a device.
pub fn fingerprint(path: &Path) -> String {
    let st = match rustix::fs::stat(path) {
        Ok(st) => st,
        Err(_) => return "absent".into(),
    };
    let kind = FileType::from_raw_mode(st.st_mode);
    if kind != FileType::RegularFile {
        return format!("not-a-file:{kind:?}").to_lowercase();
    }
    let fd = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(e) => return format!("unreadable:{e}"),
    };
    match rustix::fs::fstat(&fd) {
        Ok(s) if FileType::from_raw_mode(s.st_mode) == FileType::RegularFile => {}
        _ => return "not-a-file:changed".into(),
    }
    let size = st.st_size.max(0) as u64;
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::from(fd).take(HASH_CAP);
    let mut buf = vec![0u8; 64 << 10];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) => return format!("unreadable:{e}"),
        }
    }
    let hex: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if size > HASH_CAP {
        format!("sha256-16MiB:{hex}:{size}")
    } else {
        format!("sha256:{hex}")
    }
}

fn base(prog: &str) -> &str {
    prog.rsplit('/').next().unwrap_or(prog)
}

fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "fish"
    )
}

fn is_python(name: &str) -> bool {
    let rest = name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"));
    rest.is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The files an argv runs: its program when given as a path, and the script
/// an interpreter is asked to run. Paths as written (relative to the cwd).
pub fn named_files(argv: &[String], cwd: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Some(prog) = argv.first() else {
        return out;
    };
    if prog.contains('/') {
        out.push(prog.clone());
    }
    let name = base(prog);
    let args = &argv[1..];
    match name {
        "source" | "." => out.extend(args.first().cloned()),
        n if is_shell(n) => out.extend(script_arg(
            args,
            &["-c"],
            &["-o", "-O", "--rcfile", "--init-file"],
            true,
        )),
        n if is_python(n) => {
            out.extend(script_arg(args, &["-c", "-m"], &["-W", "-X", "-Q"], false))
        }
        "node" | "nodejs" | "bun" | "deno" => out.extend(script_arg(
            args,
            &["-e", "--eval", "-p", "--print"],
            &["-r", "--require", "--import", "--loader"],
            false,
        )),
        "perl" | "ruby" | "php" | "lua" | "Rscript" | "tclsh" => {
            out.extend(script_arg(args, &["-e", "-E", "-r"], &["-I", "-M"], false))
        }
        "make" | "gmake" => {
            let mut given = false;
            let mut i = 0;
            while i < args.len() {
                let a = &args[i];
                if a == "-f" || a == "--file" || a == "--makefile" {
                    out.extend(args.get(i + 1).cloned());
                    given = true;
                    i += 1;
                } else if let Some(f) = a
                    .strip_prefix("--file=")
                    .or_else(|| a.strip_prefix("--makefile="))
                {
                    out.push(f.to_string());
                    given = true;
                } else if let Some(f) = a.strip_prefix("-f").filter(|f| !f.is_empty()) {
                    out.push(f.to_string());
                    given = true;
                }
                i += 1;
            }
            if !given {
                // make's own search order; the first that exists is read.
                let found = ["GNUmakefile", "makefile", "Makefile"]
                    .into_iter()
                    .find(|m| cwd.join(m).exists())
                    .unwrap_or("Makefile");
                out.push(found.to_string());
            }
        }
        _ => {}
    }
    out
}

/// The first operand of an interpreter's argv (its script), unless one of
/// `inline` (code on the command line) comes first. Options in `with_arg`
/// take the next word. A shell's single-dash cluster containing `c` (`-ec`)
/// counts as `-c`.
fn script_arg(args: &[String], inline: &[&str], with_arg: &[&str], shell: bool) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == "--" {
            return args.get(i + 1).cloned();
        }
        if a == "-" {
            return None;
        }
        if inline.contains(&a) {
            return None;
        }
        if shell && a.starts_with('-') && !a.starts_with("--") && a[1..].contains('c') {
            return None;
        }
        if with_arg.contains(&a) {
            i += 2;
            continue;
        }
        if a.starts_with('-') || (shell && a.starts_with('+')) {
            i += 1;
            continue;
        }
        return Some(a.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn programs_and_scripts_a_command_runs() {
        let cwd = Path::new("/nonexistent");
        for (cmd, want) in [
            ("bash build.sh", vec!["build.sh"]),
            ("bash -e -x build.sh arg", vec!["build.sh"]),
            ("bash -o pipefail build.sh", vec!["build.sh"]),
            ("bash -c ls", vec![]),
            ("sh -ec ls", vec![]),
            ("python3 x.py --flag", vec!["x.py"]),
            ("python3.12 -u tools/x.py", vec!["tools/x.py"]),
            ("python3 -c print(1)", vec![]),
            ("python3 -m pytest", vec![]),
            ("./run.sh", vec!["./run.sh"]),
            ("scripts/deploy", vec!["scripts/deploy"]),
            (
                ".venv/bin/python app.py",
                vec![".venv/bin/python", "app.py"],
            ),
            ("node server.js", vec!["server.js"]),
            ("source env.sh", vec!["env.sh"]),
            (". env.sh", vec!["env.sh"]),
            ("make deploy", vec!["Makefile"]),
            ("make -f build.mk all", vec!["build.mk"]),
            ("perl -e 1", vec![]),
            ("ls -la", vec![]),
        ] {
            assert_eq!(named_files(&v(cmd), cwd), want, "{cmd}");
        }
    }

    #[test]
    fn a_changed_file_is_found() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("build.sh");
        std::fs::write(&f, "echo one\n").unwrap();
        let a = fingerprint(&f);
        std::fs::write(&f, "echo two\n").unwrap();
        let b = fingerprint(&f);
        assert_ne!(a, b);
        assert!(a.starts_with("sha256:"));
        assert_eq!(fingerprint(&d.path().join("none")), "absent");
        let then = vec![ContentPin {
            path: f.clone(),
            content: a,
        }];
        let now = vec![ContentPin {
            path: f.clone(),
            content: b,
        }];
        assert_eq!(first_change(&then, &now).unwrap().path, f);
        assert_eq!(first_change(&then, &then), None);
    }
}
