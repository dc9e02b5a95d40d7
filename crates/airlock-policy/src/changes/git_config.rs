//! Workspace files that the host's git configuration runs or reads as
//! configuration.
//!
//! A repository's `.git/config` is held for a person, but it often names
//! ordinary files of the work tree that git executes: `core.hooksPath = .hooks`,
//! `filter.x.clean = ./scripts/clean.sh`, a `diff.x.textconv`, a
//! `core.fsmonitor` script, an `include.path` into the work tree. A run that
//! rewrites such a file gets its code run at the user's next `git commit`,
//! `git add` or `git diff`, though its path is as plain as any. So the
//! configuration host git would read for the workspace is read here (the
//! repository's, with its worktree config and includes, and the user's and the
//! system's), and every work-tree path those keys name is held.
//!
//! The values are shell commands or paths; a command's words are each taken as
//! a path relative to the repository's top (where git runs hooks, filters and
//! drivers), so a word that is no file (`git-lfs`, `%f`) names a path no run
//! is likely to write, and holding it costs nothing.

use super::{HostNamed, NamedBy};
use std::path::{Component, Path, PathBuf};

/// Most bytes of one configuration file read; a larger one is not read (git
/// itself reads it, so its keys are then not seen: see [`host_named`]).
const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Most include levels followed (git's own limit is 10).
const MAX_INCLUDE_DEPTH: usize = 10;

/// How a key's value is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ValueKind {
    /// A shell command: every word may name a file.
    Command,
    /// A path to a file git runs or reads as configuration.
    File,
    /// A directory whose entries git runs.
    Dir,
    /// Another configuration file, read in turn.
    Include,
}

/// The kind of value `key` (`section[.subsection].name`, section and name
/// lower-cased) holds, when git runs it or reads it as configuration.
fn kind_of(key: &str) -> Option<ValueKind> {
    use ValueKind::*;
    let (section, rest) = key.split_once('.')?;
    let name = rest.rsplit('.').next().unwrap_or(rest);
    let has_sub = rest.contains('.');
    Some(match (section, name, has_sub) {
        ("core", "hookspath", false) => Dir,
        ("core", "attributesfile", false) => File,
        (
            "core",
            "fsmonitor" | "pager" | "editor" | "sshcommand" | "askpass" | "gitproxy",
            false,
        ) => Command,
        ("sequence", "editor", false) => Command,
        ("diff", "external", false) => Command,
        ("diff", "textconv" | "command", true) => Command,
        ("merge", "driver", true) => Command,
        ("filter", "clean" | "smudge" | "process", true) => Command,
        ("gpg", "program", _) => Command,
        ("credential", "helper", _) => Command,
        ("pager", _, false) => Command,
        ("alias", _, false) => Command,
        ("interactive", "difffilter", false) => Command,
        ("remote", "uploadpack" | "receivepack" | "proxy", true) => Command,
        ("uploadpack", "packobjectshook", false) => Command,
        ("include", "path", false) | ("includeif", "path", true) => Include,
        _ => return None,
    })
}

/// The `(key, value)` pairs of a git configuration file, keys as
/// `section[.subsection].name` with section and name lower-cased (git
/// compares them so) and the subsection as written. Lines that do not parse
/// are skipped: git refuses such a file, so nothing it names runs.
pub fn parse(text: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(text);
    let mut out = Vec::new();
    let mut section = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut line = line.trim_start().to_string();
        if line.starts_with('[') {
            let Some(end) = line.find(']') else {
                section.clear();
                continue;
            };
            let header = &line[1..end];
            section = match header.split_once(|c: char| c.is_ascii_whitespace()) {
                Some((name, sub)) => {
                    let sub = sub.trim();
                    let sub = sub
                        .strip_prefix('"')
                        .and_then(|s| s.strip_suffix('"'))
                        .unwrap_or(sub);
                    format!("{}.{}", name.to_ascii_lowercase(), unescape_sub(sub))
                }
                // The old `[section.sub]` form: the subsection is lower-cased.
                None => header.to_ascii_lowercase(),
            };
            line = line[end + 1..].trim_start().to_string();
            if line.is_empty() {
                continue;
            }
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') || section.is_empty() {
            continue;
        }
        let (name, raw) = match line.split_once('=') {
            Some((n, v)) => (n.trim().to_ascii_lowercase(), v.to_string()),
            // A bare name is a boolean true: no command, no path.
            None => continue,
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        // A value may continue on the next line after a final backslash.
        let mut raw = raw;
        while raw.ends_with('\\') && !raw.ends_with("\\\\") {
            raw.pop();
            match lines.next() {
                Some(next) => raw.push_str(next),
                None => break,
            }
        }
        out.push((format!("{section}.{name}"), value(&raw)));
    }
    out
}

fn unescape_sub(sub: &str) -> String {
    let mut out = String::new();
    let mut chars = sub.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A raw value as git reads it: quotes removed, escapes applied, an unquoted
/// comment dropped, outer white space trimmed.
fn value(raw: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('b') => {
                    out.pop();
                }
                Some(other) => out.push(other),
                None => {}
            },
            '#' | ';' if !quoted => break,
            _ => out.push(c),
        }
    }
    out.trim_end().to_string()
}

/// The words of a shell command, quotes removed; `!` (an alias's shell
/// escape) and `VAR=` prefixes dropped. Not a shell: a word that a real shell
/// would split further only adds paths, never hides one.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(std::mem::take(word));
        }
    };
    for c in command.trim_start_matches('!').chars() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() || ";&|()<>`".contains(c) => flush(&mut word, &mut out),
            _ => word.push(c),
        }
    }
    flush(&mut word, &mut out);
    out.into_iter()
        .map(|w| match w.split_once('=') {
            Some((name, rest)) if !name.is_empty() && !name.contains('/') => rest.to_string(),
            _ => w,
        })
        .filter(|w| !w.is_empty() && !w.starts_with('-'))
        .collect()
}

/// `p` with `.` and `..` applied lexically; `None` if `..` climbs above `/`.
pub(super) fn normalize(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::RootDir => out.push("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    return None;
                }
            }
            Component::Normal(n) => out.push(n),
            Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// What reading a repository's configuration found.
struct Reader<'a> {
    root: &'a Path,
    /// Where git runs hooks, filters and drivers: relative values start here.
    top: &'a Path,
    home: Option<&'a Path>,
    named: Vec<HostNamed>,
    seen: Vec<PathBuf>,
}

impl Reader<'_> {
    /// `value` as a path: `~/` is the home directory, a relative path starts
    /// at `base`. Kept only when it lies inside the workspace.
    fn inside(&self, value: &str, base: &Path) -> Option<PathBuf> {
        let abs = if let Some(rest) = value.strip_prefix("~/") {
            self.home?.join(rest)
        } else {
            base.join(value)
        };
        let abs = normalize(&abs)?;
        let rel = abs.strip_prefix(self.root).ok()?;
        Some(rel.to_path_buf())
    }

    fn name(&mut self, path: PathBuf, dir: bool, by: String) {
        if !self.named.iter().any(|n| n.path == path && n.dir == dir) {
            self.named.push(HostNamed {
                path,
                dir,
                by,
                tool: NamedBy::Git,
            });
        }
    }

    /// Reads the configuration file at `file` (absolute) and what it includes.
    fn read(&mut self, file: &Path, depth: usize) {
        if depth > MAX_INCLUDE_DEPTH || self.seen.iter().any(|s| s == file) {
            return;
        }
        self.seen.push(file.to_path_buf());
        let Some(text) = read_small(file) else {
            return;
        };
        let shown = file.display().to_string();
        let file_dir = file.parent().unwrap_or(Path::new("/")).to_path_buf();
        let top = self.top.to_path_buf();
        for (key, val) in parse(&text) {
            let Some(kind) = kind_of(&key) else { continue };
            let by = format!("{key} in {shown}");
            match kind {
                ValueKind::Command => {
                    for w in words(&val) {
                        if let Some(p) = self.inside(&w, &top) {
                            self.name(p, false, by.clone());
                        }
                    }
                }
                ValueKind::File => {
                    if let Some(p) = self.inside(&val, &top) {
                        self.name(p, false, by);
                    }
                }
                ValueKind::Dir => {
                    if let Some(p) = self.inside(&val, &top) {
                        self.name(p, true, by);
                    }
                }
                ValueKind::Include => {
                    // git resolves an include relative to the including file.
                    let Some(abs) = (if let Some(rest) = val.strip_prefix("~/") {
                        self.home.map(|h| h.join(rest))
                    } else {
                        Some(file_dir.join(&val))
                    })
                    .and_then(|p| normalize(&p)) else {
                        continue;
                    };
                    if let Ok(rel) = abs.strip_prefix(self.root) {
                        self.name(rel.to_path_buf(), false, by);
                    }
                    self.read(&abs, depth + 1);
                }
            }
        }
    }
}

pub(super) fn read_small(file: &Path) -> Option<Vec<u8>> {
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() || meta.len() > MAX_CONFIG_BYTES {
        return None;
    }
    std::fs::read(file).ok()
}

/// The repository git finds from `root` (as it looks upwards from its working
/// directory): its top, its git directory, and the directory holding the
/// shared `config` (the main repository's for a linked worktree).
fn find_repo(root: &Path) -> Option<(PathBuf, PathBuf, PathBuf)> {
    let mut dir = Some(root);
    while let Some(d) = dir {
        let dot = d.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot) {
            let git_dir = if meta.is_dir() {
                dot
            } else if meta.is_file() {
                let text = read_small(&dot)?;
                let text = String::from_utf8_lossy(&text);
                let target = text.trim().strip_prefix("gitdir:")?.trim().to_string();
                normalize(&d.join(target))?
            } else {
                return None;
            };
            let common = read_small(&git_dir.join("commondir"))
                .map(|t| String::from_utf8_lossy(&t).trim().to_string())
                .and_then(|c| normalize(&git_dir.join(c)))
                .unwrap_or_else(|| git_dir.clone());
            return Some((d.to_path_buf(), git_dir, common));
        }
        dir = d.parent();
    }
    None
}

/// The work-tree paths below `root` that host git, run in `root`, would run
/// or read as configuration: from the system's, the user's (`home`) and the
/// repository's configuration, as they are on the host now.
///
/// A file larger than 1 MiB or unreadable is skipped; git would read it, so
/// a key only it holds is not seen (such a config file in the work tree is
/// itself held: `.git/` and any included file below the root are).
pub fn host_named(root: &Path, home: Option<&Path>) -> Vec<HostNamed> {
    let repo = find_repo(root);
    let top = repo
        .as_ref()
        .map(|(top, _, _)| top.clone())
        .unwrap_or_else(|| root.to_path_buf());
    let mut reader = Reader {
        root,
        top: &top,
        home,
        named: Vec::new(),
        seen: Vec::new(),
    };
    reader.read(Path::new("/etc/gitconfig"), 0);
    if let Some(home) = home {
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(".config"));
        reader.read(&xdg.join("git/config"), 0);
        reader.read(&home.join(".gitconfig"), 0);
    }
    if let Some((_, git_dir, common)) = &repo {
        reader.read(&common.join("config"), 0);
        reader.read(&git_dir.join("config.worktree"), 0);
    }
    reader.named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_reads_sections_subsections_quotes_and_continuations() {
        let text = br#"
[core]
	hooksPath = .hooks ; a comment
	bare = false
[filter "strip"]
	clean = "./scripts/clean.sh %f" # another
	smudge = sh -c \
	  'tools/smudge'
[Diff "Tex"]
	textconv = python3 tools/tc.py
[includeIf "gitdir:/r/"]
	path = ../extra.cfg
[alias.old]
	x = y
broken line
"#;
        let kv = parse(text);
        assert!(
            kv.contains(&("core.hookspath".into(), ".hooks".into())),
            "{kv:?}"
        );
        assert!(kv.contains(&("filter.strip.clean".into(), "./scripts/clean.sh %f".into())));
        assert!(
            kv.contains(&(
                "filter.strip.smudge".into(),
                "sh -c \t  'tools/smudge'".into()
            )),
            "{kv:?}"
        );
        assert!(kv.contains(&("diff.Tex.textconv".into(), "python3 tools/tc.py".into())));
        assert!(kv.contains(&("includeif.gitdir:/r/.path".into(), "../extra.cfg".into())));
        assert!(kv.contains(&("alias.old.x".into(), "y".into())));
    }

    #[test]
    fn kinds_cover_what_git_runs() {
        assert_eq!(kind_of("core.hookspath"), Some(ValueKind::Dir));
        assert_eq!(kind_of("filter.x.clean"), Some(ValueKind::Command));
        assert_eq!(kind_of("filter.a.b.process"), Some(ValueKind::Command));
        assert_eq!(kind_of("diff.x.textconv"), Some(ValueKind::Command));
        assert_eq!(kind_of("diff.external"), Some(ValueKind::Command));
        assert_eq!(kind_of("merge.x.driver"), Some(ValueKind::Command));
        assert_eq!(kind_of("core.fsmonitor"), Some(ValueKind::Command));
        assert_eq!(kind_of("includeif.gitdir:x.path"), Some(ValueKind::Include));
        assert_eq!(kind_of("alias.st"), Some(ValueKind::Command));
        assert_eq!(kind_of("core.autocrlf"), None);
        assert_eq!(kind_of("user.name"), None);
        assert_eq!(kind_of("diff.x.binary"), None);
    }

    #[test]
    fn words_are_paths_relative_to_the_top() {
        assert_eq!(
            words("!f() { ./x.sh \"$1\"; }; f"),
            vec!["f", "{", "./x.sh", "$1", "}", "f"]
        );
        assert_eq!(
            words("GIT_X=a/b sh 'tools/y z'"),
            vec!["a/b", "sh", "tools/y z"]
        );
        assert_eq!(words("git-lfs clean -- %f"), vec!["git-lfs", "clean", "%f"]);
    }

    fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "airlock-gitcfg-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn host_named_reads_the_repository_its_worktree_config_and_includes() {
        let top = tmp();
        let root = top.join("ws");
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(
            top.join(".git/config"),
            "[core]\n\thooksPath = ws/.hooks\n[filter \"s\"]\n\tclean = ./ws/scripts/clean.sh %f\n\tsmudge = /usr/bin/cat\n[include]\n\tpath = ../ws/more.cfg\n",
        )
        .unwrap();
        std::fs::write(
            root.join("more.cfg"),
            "[diff \"x\"]\n\ttextconv = ws/tools/tc\n[core]\n\tfsmonitor = ../../outside.sh\n",
        )
        .unwrap();
        std::fs::write(
            top.join(".git/config.worktree"),
            "[core]\n\teditor = ws/ed\n",
        )
        .unwrap();
        let named = host_named(&root, None);
        let has = |p: &str, dir: bool| named.iter().any(|n| n.path == Path::new(p) && n.dir == dir);
        assert!(has(".hooks", true), "{named:?}");
        assert!(has("scripts/clean.sh", false), "{named:?}");
        assert!(has("more.cfg", false), "{named:?}");
        assert!(has("tools/tc", false), "{named:?}");
        assert!(has("ed", false), "{named:?}");
        // Outside the workspace, or no path at all: not named.
        assert!(!named
            .iter()
            .any(|n| n.path.to_string_lossy().contains("outside")));
        assert!(!named
            .iter()
            .any(|n| n.path.to_string_lossy().contains("cat")));
        let by = &named
            .iter()
            .find(|n| n.path == Path::new("tools/tc"))
            .unwrap()
            .by;
        assert!(
            by.contains("diff.x.textconv") && by.contains("more.cfg"),
            "{by}"
        );
        std::fs::remove_dir_all(&top).unwrap();
    }

    #[test]
    fn a_linked_worktree_reads_the_main_repositorys_config() {
        let base = tmp();
        let main = base.join("main");
        let wt = base.join("wt");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        std::fs::write(main.join(".git/config"), "[core]\n\thooksPath = hooks\n").unwrap();
        let named = host_named(&wt, None);
        assert!(
            named.iter().any(|n| n.path == Path::new("hooks") && n.dir),
            "{named:?}"
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
