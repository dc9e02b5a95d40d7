//! Workspace files that the host's direnv configuration runs or loads.
//!
//! A workspace's `.envrc` is held for a person, but it often names ordinary
//! files of the work tree: `PATH_add bin` puts `bin/` first on the user's
//! PATH, `layout node` does the same for `node_modules/.bin`, `dotenv` loads
//! `.env` into the shell's environment, `use flake` evaluates `flake.nix`
//! (whose `shellHook` is a script). With direnv hooked into the user's shell,
//! a run that writes `bin/git` gets its code run at the user's next `git
//! status` in that directory, though `bin/git` is as plain a path as any. So
//! the host's `.envrc` at the workspace root is read here, and every path its
//! common directives name is held.
//!
//! An `.envrc` is a bash script; only the direnv standard library's directives
//! and `PATH=` assignments are read, line by line, not executed. A directive
//! whose path goes through an expansion the reader does not follow
//! (`PATH_add "$(git rev-parse --show-toplevel)/bin"`, `dotenv $ENV_FILE`)
//! could name any path of the workspace, so it holds every one of them, and
//! the reason says to write the path out. `$PWD`, `$HOME` and `~` are
//! followed; `$PATH` in a `PATH=` assignment is the PATH before it. A
//! directive hidden inside a function of the user's own is not seen (the file
//! itself, and `.envrc.*` and `.direnv/`, are held by the default approval
//! list). An `.envrc` below the root applies in its directory (direnv loads the
//! nearest one up from the shell's directory): those in the directories of a
//! set's changes are read too ([`named_below`]).

use super::git_config::{normalize, read_small};
use super::{HostNamed, NamedBy};
use std::path::{Path, PathBuf};

/// Most directories [`named_below`] looks in for an `.envrc`: one stat each,
/// for a set of changes spread over many directories.
const MAX_DIRS: usize = 10_000;

/// The work-tree paths below `root` that the root's `.envrc`, as it is on the
/// host now, puts on PATH or loads; `home` is what `$HOME` and `~` stand for.
pub fn host_named(root: &Path, home: Option<&Path>) -> Vec<HostNamed> {
    named_by(root, home, Path::new(""))
}

/// What the `.envrc` files in the directories holding `changed` (paths
/// relative to `root`) and in the directories between them and the root, the
/// root's own excepted, name: the files direnv would load in a shell there.
pub fn named_below<'a>(
    root: &Path,
    home: Option<&Path>,
    changed: impl IntoIterator<Item = &'a Path>,
) -> Vec<HostNamed> {
    let mut dirs: Vec<&Path> = Vec::new();
    for path in changed {
        for dir in path.ancestors().skip(1) {
            if dir.as_os_str().is_empty() || dirs.contains(&dir) {
                break;
            }
            if dirs.len() >= MAX_DIRS {
                break;
            }
            dirs.push(dir);
        }
    }
    dirs.iter().flat_map(|d| named_by(root, home, d)).collect()
}

/// What `<root>/<dir>/.envrc` names, relative to `root`.
fn named_by(root: &Path, home: Option<&Path>, dir: &Path) -> Vec<HostNamed> {
    let base = root.join(dir);
    let file = base.join(".envrc");
    let Some(text) = read_small(&file) else {
        return Vec::new();
    };
    let mut named: Vec<HostNamed> = Vec::new();
    let mut name = |rel: &str, dir: bool, directive: &str| {
        let (path, dir, by) = match place(root, home, &base, rel) {
            Place::Inside(path) => (path, dir, format!("`{directive}` in {}", file.display())),
            Place::Outside => return,
            // The root as a directory: every path of the workspace.
            Place::Unknown => (
                PathBuf::new(),
                true,
                format!(
                    "`{directive}` in {}, through an expansion the gate does not follow, so it may name any path of the workspace; write the path out in the .envrc to hold only what it names",
                    file.display()
                ),
            ),
        };
        if !named.iter().any(|n| n.path == path && n.dir == dir) {
            named.push(HostNamed {
                path,
                dir,
                by,
                tool: NamedBy::Direnv,
            });
        }
    };
    for command in commands(&String::from_utf8_lossy(&text)) {
        let Some((first, args)) = command.split_first() else {
            continue;
        };
        let shown = crate::shell::words::short(&command.join(" "));
        let arg = |i: usize| args.get(i).map(String::as_str);
        match first.as_str() {
            "PATH_add" | "MANPATH_add" => args.iter().for_each(|a| name(a, true, &shown)),
            "path_add" => args.iter().skip(1).for_each(|a| name(a, true, &shown)),
            "load_prefix" => args.iter().for_each(|a| name(a, true, &shown)),
            "dotenv" | "dotenv_if_exists" => name(arg(0).unwrap_or(".env"), false, &shown),
            "source_env" | "source_env_if_exists" | "source" | "." => {
                if let Some(a) = arg(0) {
                    // A directory stands for its `.envrc`.
                    name(a, false, &shown);
                    name(&format!("{a}/.envrc"), false, &shown);
                }
            }
            "use" | "use_flake" | "use_nix" => {
                let (what, rest) = match first.as_str() {
                    "use" => (arg(0).unwrap_or(""), args.get(1..).unwrap_or(&[])),
                    "use_flake" => ("flake", args),
                    _ => ("nix", args),
                };
                let rest: Vec<&str> = rest
                    .iter()
                    .map(String::as_str)
                    .filter(|a| !a.starts_with('-'))
                    .collect();
                match what {
                    "flake" => {
                        // `use flake [DIR][#output]`: a flake reference that is a path.
                        let dir = rest
                            .first()
                            .map(|r| r.split('#').next().unwrap_or(""))
                            .filter(|d| !d.contains(':'))
                            .map(|d| if d.is_empty() { "." } else { d })
                            .unwrap_or(".");
                        name(&format!("{dir}/flake.nix"), false, &shown);
                        name(&format!("{dir}/flake.lock"), false, &shown);
                    }
                    "nix" => {
                        if rest.is_empty() {
                            name("shell.nix", false, &shown);
                            name("default.nix", false, &shown);
                        }
                        rest.iter().for_each(|f| name(f, false, &shown));
                    }
                    _ => {}
                }
            }
            "layout" => match arg(0).unwrap_or("") {
                "node" => name("node_modules/.bin", true, &shown),
                // Older direnv put `$PWD/bin` on PATH; 2.32 puts
                // `.direnv/go/bin` there, below `.direnv/`, held.
                "go" => name("bin", true, &shown),
                "php" => name("vendor/bin", true, &shown),
                // python, ruby, perl, pipenv, anaconda: below .direnv/, held.
                _ => {}
            },
            _ => {}
        }
        // `PATH=bin:$PATH`, `export PATH="$PWD/tools:$PATH"`: the entries that
        // lie in the workspace.
        for word in &command {
            if let Some(value) = word.strip_prefix("PATH=") {
                for entry in value.split(':') {
                    if !matches!(entry, "$PATH" | "${PATH}" | "") {
                        name(entry, true, &shown);
                    }
                }
            }
        }
    }
    named
}

/// Where a path written in an `.envrc` lies.
enum Place {
    /// In the workspace, relative to its root (the root itself is empty).
    Inside(PathBuf),
    /// Outside it, where no run writes.
    Outside,
    /// Behind an expansion that is not followed: anywhere.
    Unknown,
}

/// Where `value` (as written in the `.envrc` of `base`: relative, `./x`,
/// `$PWD/x`, `${PWD}/x`, `$HOME/x`, `~/x` or absolute) lies.
fn place(root: &Path, home: Option<&Path>, base: &Path, value: &str) -> Place {
    let value = value.trim_end_matches('/');
    let mut start = base;
    let mut rest = value;
    // Each prefix a path may start with, and whether it stands for the home.
    let prefixes = [
        ("$PWD", false),
        ("${PWD}", false),
        ("$(pwd)", false),
        ("$(expand_path .)", false),
        ("$HOME", true),
        ("${HOME}", true),
        ("~", true),
    ];
    for (p, is_home) in prefixes {
        let Some(r) = value.strip_prefix(p) else {
            continue;
        };
        if !(r.is_empty() || r.starts_with('/')) {
            continue;
        }
        if is_home {
            match home {
                Some(h) => start = h,
                None => return Place::Unknown,
            }
        }
        rest = r.trim_start_matches('/');
        break;
    }
    if rest.contains('$') || rest.contains('`') || rest.starts_with('~') {
        return Place::Unknown;
    }
    // Only `..` past `/` fails to normalize: outside any workspace but `/`.
    let Some(abs) = normalize(&start.join(rest)) else {
        return Place::Outside;
    };
    match abs.strip_prefix(root) {
        Ok(rel) => Place::Inside(rel.to_path_buf()),
        Err(_) => Place::Outside,
    }
}

/// The simple commands of a script, each as its words with quotes removed:
/// split at newlines (a final backslash continues a line), `;`, `&&`, `||`,
/// `|` and `&`; a `#` that starts a word starts a comment. Not a shell: a
/// word a shell would split further only adds paths, never hides one.
fn commands(text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut command: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut comment = false;
    let mut chars = text.chars().peekable();
    let end_word = |word: &mut String, command: &mut Vec<String>| {
        if !word.is_empty() {
            command.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        if comment {
            if c == '\n' {
                comment = false;
                end_word(&mut word, &mut command);
                out.push(std::mem::take(&mut command));
            }
            continue;
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(c),
            (None, '\\') => match chars.next() {
                Some('\n') | None => {}
                Some(n) => word.push(n),
            },
            (None, '#') if word.is_empty() => comment = true,
            // `$(...)` and `${...}` are part of their word, unquoted too.
            (None, open @ ('(' | '{')) if word.ends_with('$') => {
                let close = if open == '(' { ')' } else { '}' };
                word.push(open);
                let mut depth = 1;
                for n in chars.by_ref() {
                    word.push(n);
                    if n == open {
                        depth += 1;
                    } else if n == close {
                        depth -= 1;
                    }
                    if depth == 0 {
                        break;
                    }
                }
            }
            (None, '\n' | ';' | '&' | '|' | '(' | ')' | '{' | '}') => {
                end_word(&mut word, &mut command);
                out.push(std::mem::take(&mut command));
            }
            (None, c) if c.is_whitespace() => end_word(&mut word, &mut command),
            (None, c) => word.push(c),
        }
    }
    end_word(&mut word, &mut command);
    out.push(command);
    // `export`, `local` and the like precede assignments; `if`/`then` and
    // friends precede a command.
    out.into_iter()
        .map(|mut c| {
            while c.first().is_some_and(|w| {
                matches!(
                    w.as_str(),
                    "export" | "local" | "declare" | "if" | "then" | "else" | "elif" | "do" | "!"
                )
            }) {
                c.remove(0);
            }
            c
        })
        .filter(|c| !c.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(envrc: &str) -> Vec<(String, bool)> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".envrc"), envrc).unwrap();
        host_named(dir.path(), None)
            .into_iter()
            .map(|n| (n.path.display().to_string(), n.dir))
            .collect()
    }

    /// Every path, as a directory: what a directive behind an expansion names.
    fn all() -> Vec<(String, bool)> {
        vec![(String::new(), true)]
    }

    #[test]
    fn a_path_behind_an_expansion_names_the_whole_workspace() {
        for envrc in [
            "PATH_add \"$(git rev-parse --show-toplevel)/tools\"\n",
            "PATH_add $(git rev-parse --show-toplevel)/tools\n",
            "PATH_add $TOOLS\n",
            "source_env_if_exists \"${ENV_DIR}\"\n",
            "dotenv `echo .env`\n",
            "export PATH=\"$TOOLS:$PATH\"\n",
            "PATH_add ~/bin\n",
            "PATH_add .\n",
        ] {
            assert_eq!(named(envrc), all(), "{envrc}");
        }
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join(".envrc"), "PATH_add $TOOLS\n").unwrap();
        let by = &host_named(d.path(), None)[0].by;
        assert!(
            by.contains("`PATH_add $TOOLS`") && by.contains("write the path out"),
            "{by}"
        );
    }

    #[test]
    fn pwd_home_and_the_old_path_are_followed() {
        // $PATH is the PATH before; $(pwd) unquoted is one word.
        assert_eq!(
            named("export PATH=\"$PWD/bin:$PATH\"\n"),
            vec![("bin".into(), true)]
        );
        assert_eq!(named("PATH_add $(pwd)/bin\n"), vec![("bin".into(), true)]);
        assert_eq!(named("PATH=${PATH}:$PWD/x\n"), vec![("x".into(), true)]);
        // $HOME and ~: inside the workspace when the home holds it, else outside.
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("proj");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(
            root.join(".envrc"),
            "PATH_add $HOME/proj/bin ~/.cargo/bin ${HOME}/proj/t\n",
        )
        .unwrap();
        let got: Vec<String> = host_named(&root, Some(d.path()))
            .into_iter()
            .map(|n| n.path.display().to_string())
            .collect();
        assert_eq!(got, vec!["bin", "t"]);
    }

    #[test]
    fn the_stdlib_directives_name_their_paths() {
        let got = named(
            "# a comment naming PATH_add nothing\n\
             PATH_add bin \"$PWD/tools\"\n\
             path_add PYTHONPATH lib\n\
             dotenv\n\
             dotenv_if_exists .env.local\n\
             source_env_if_exists sub\n\
             use flake . --impure\n\
             use nix\n\
             layout node\n\
             layout python3\n\
             export PATH=\"${PWD}/scripts:$PATH\"; watch_file x\n\
             strict_env && PATH_add ../outside /abs\n",
        );
        let want: &[(&str, bool)] = &[
            ("bin", true),
            ("tools", true),
            ("lib", true),
            (".env", false),
            (".env.local", false),
            ("sub", false),
            ("sub/.envrc", false),
            ("flake.nix", false),
            ("flake.lock", false),
            ("shell.nix", false),
            ("default.nix", false),
            ("node_modules/.bin", true),
            ("scripts", true),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(p, d)| (p.to_string(), *d)).collect();
        assert_eq!(got, want);
    }

    /// An `.envrc` in a directory of the changes (or between it and the
    /// root) names paths from its own directory; others are not read.
    #[test]
    fn an_envrc_below_the_root_is_read_where_the_changes_are() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["svc/api", "other"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("svc/.envrc"), "PATH_add bin ../tools\n").unwrap();
        std::fs::write(root.join("other/.envrc"), "PATH_add bin\n").unwrap();
        let names = |changed: &[&str]| -> Vec<String> {
            let changed: Vec<&Path> = changed.iter().map(Path::new).collect();
            named_below(root, None, changed)
                .into_iter()
                .map(|n| n.path.display().to_string())
                .collect()
        };
        assert_eq!(names(&["svc/api/main.go"]), vec!["svc/bin", "tools"]);
        assert_eq!(names(&["svc/bin/git", "svc/x"]), vec!["svc/bin", "tools"]);
        assert!(names(&["README.md", "src/a.rs"]).is_empty());
    }

    #[test]
    fn no_envrc_or_an_unreadable_one_names_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(host_named(dir.path(), None).is_empty());
        std::fs::create_dir(dir.path().join(".envrc")).unwrap();
        assert!(host_named(dir.path(), None).is_empty());
        assert!(named("").is_empty());
        assert!(named("PATH_add '$unbalanced").len() <= 1);
    }
}
