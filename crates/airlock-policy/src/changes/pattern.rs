//! Path patterns of the `[changes]` lists, with gitignore-like meaning:
//!
//! * a pattern without `/` (a trailing `/` aside) matches a path component at
//!   any depth: `__pycache__` matches `a/b/__pycache__/x.pyc`;
//! * a pattern with `/` is anchored at the workspace root; a leading `/` is
//!   allowed and means the same; `**` stands for any number of components;
//! * `*` and `?` match within one component;
//! * a pattern that matches a directory matches everything below it.
//!
//! Matching works on bytes, so names that are not UTF-8 are matched exactly;
//! a pattern made [`Pattern::ignoring_case`] compares ASCII letters in
//! either case.

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

/// A checked pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    text: String,
    anchored: bool,
    parts: Vec<Vec<u8>>,
    /// ASCII letters match in either case.
    fold: bool,
}

impl Pattern {
    /// Parses a pattern; the error says what is wrong, for the policy loader.
    pub fn new(text: &str) -> Result<Pattern, String> {
        if text.is_empty() {
            return Err("an empty pattern matches nothing".into());
        }
        if text.contains('\0') {
            return Err("a pattern cannot contain a NUL byte".into());
        }
        let trimmed = text.trim_end_matches('/');
        let body = trimmed.strip_prefix('/').unwrap_or(trimmed);
        if body.is_empty() {
            return Err("a pattern must name something below the workspace root".into());
        }
        let parts: Vec<Vec<u8>> = body.split('/').map(|p| p.as_bytes().to_vec()).collect();
        if parts
            .iter()
            .any(|p| p.is_empty() || p == b"." || p == b"..")
        {
            return Err("a pattern cannot contain empty, `.` or `..` components".into());
        }
        let anchored = body.contains('/') || trimmed.starts_with('/');
        Ok(Pattern {
            text: text.to_string(),
            anchored,
            parts,
            fold: false,
        })
    }

    /// The same pattern, matching ASCII letters in either case: what a
    /// case-insensitive work tree (WSL's drvfs, SMB, vfat, casefold
    /// directories) takes for the same name. Only for lists where matching
    /// more holds more (approval), never for what it lets through.
    pub fn ignoring_case(mut self) -> Pattern {
        self.fold = true;
        self
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when `rel` (relative to the workspace root) or one of its ancestors matches.
    pub fn matches(&self, rel: &Path) -> bool {
        let comps = normal_components(rel);
        if self.anchored {
            prefix_match(&self.parts, &comps, self.fold)
        } else {
            (0..comps.len()).any(|i| prefix_match(&self.parts, &comps[i..], self.fold))
        }
    }

    /// True when the pattern matches the last components of `path`, starting
    /// at any of its components, anchored or not: for a path as a command
    /// names it (relative to some directory, under a home, absolute), where
    /// the workspace root it is relative to is not known. `.github/` matches
    /// `sub/.github/x` here, as [`matches`] would not. A pattern written as a
    /// directory (`.vscode/`) matches everything below it; any other only a
    /// path that ends with it (`.gitconfig`, not `.gitconfig/x`).
    ///
    /// [`matches`]: Pattern::matches
    pub fn matches_at_any_depth(&self, path: &Path) -> bool {
        let comps = normal_components(path);
        let dir = self.text.ends_with('/');
        (0..comps.len()).any(|i| {
            if dir {
                prefix_match(&self.parts, &comps[i..], self.fold)
            } else {
                whole_match(&self.parts, &comps[i..], self.fold)
            }
        })
    }

    /// True when the pattern, anchored, may match a path below `rel` whose
    /// match uses `rel`'s components: what a symlink at `rel` would stand in
    /// for, were the names below it reached through it. (A pattern of one
    /// component matches at any depth, so a name below `rel` matches it
    /// wherever the link leads: only `rel` itself counts, as in [`matches`].)
    ///
    /// [`matches`]: Pattern::matches
    pub fn may_match_below(&self, rel: &Path) -> bool {
        if !self.anchored {
            return self.matches(rel);
        }
        let comps = normal_components(rel);
        may_extend(&self.parts, &comps, self.fold)
    }
}

/// The names of `rel`'s plain components, as bytes (`.`, `..` and a root
/// left out).
pub(crate) fn normal_components(rel: &Path) -> Vec<&[u8]> {
    rel.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.as_bytes()),
            _ => None,
        })
        .collect()
}

/// True when `pat` matches `comps` followed by some further components,
/// the last of `comps` matched by a part of the pattern other than `**` (a
/// `**` that took the link's own name would match below its target as well).
fn may_extend(pat: &[Vec<u8>], comps: &[&[u8]], fold: bool) -> bool {
    match (pat.split_first(), comps.split_first()) {
        // Matched already (everything below matches), or `comps` used up
        // with pattern left, which names below can satisfy.
        (None, _) | (_, None) => true,
        (Some((first, rest)), _) if first.as_slice() == b"**" => {
            rest.is_empty() || (0..comps.len()).any(|i| may_extend(rest, &comps[i..], fold))
        }
        (Some((first, rest)), Some((c, tail))) => {
            glob_case(first, c, fold) && may_extend(rest, tail, fold)
        }
    }
}

/// True when `pat` matches `comps[..k]` for some k >= 1.
fn prefix_match(pat: &[Vec<u8>], comps: &[&[u8]], fold: bool) -> bool {
    let Some((first, rest)) = pat.split_first() else {
        return true;
    };
    if first.as_slice() == b"**" {
        // Zero or more components.
        return (0..=comps.len()).any(|i| {
            let tail = &comps[i..];
            if rest.is_empty() {
                // `a/**` matches everything below `a`, not `a` itself.
                !tail.is_empty() || i > 0
            } else {
                prefix_match(rest, tail, fold)
            }
        });
    }
    match comps.split_first() {
        Some((c, tail)) if glob_case(first, c, fold) => prefix_match(rest, tail, fold),
        _ => false,
    }
}

/// True when `pat` matches all of `comps`.
fn whole_match(pat: &[Vec<u8>], comps: &[&[u8]], fold: bool) -> bool {
    let Some((first, rest)) = pat.split_first() else {
        return comps.is_empty();
    };
    if first.as_slice() == b"**" {
        return (0..=comps.len()).any(|i| whole_match(rest, &comps[i..], fold));
    }
    match comps.split_first() {
        Some((c, tail)) if glob_case(first, c, fold) => whole_match(rest, tail, fold),
        _ => false,
    }
}

/// `*` and `?` within one component, on bytes (ASCII letters in either
/// case when `fold`).
fn glob_case(pat: &[u8], name: &[u8], fold: bool) -> bool {
    let same = |a: u8, b: u8| a == b || (fold && a.eq_ignore_ascii_case(&b));
    let (mut p, mut n) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while n < name.len() {
        if p < pat.len() && (pat[p] == b'?' || same(pat[p], name[n])) {
            p += 1;
            n += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some(p);
            mark = n;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            n = mark;
        } else {
            return false;
        }
    }
    while p < pat.len() && pat[p] == b'*' {
        p += 1;
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    fn m(p: &str, path: &str) -> bool {
        Pattern::new(p).unwrap().matches(Path::new(path))
    }

    #[test]
    fn a_link_may_stand_for_what_anchored_patterns_name_below_it() {
        let below = |p: &str, rel: &str| Pattern::new(p).unwrap().may_match_below(Path::new(rel));
        assert!(below(".config/git/", ".config"));
        assert!(below(".config/git/", ".config/git"));
        assert!(below("**/.github/workflows/", ".github"));
        assert!(below("**/.github/workflows/", "a/b/.github"));
        assert!(!below("**/.github/workflows/", "anything"));
        assert!(!below("**/.github/workflows/", "node_modules/pkg"));
        assert!(below("a/**", "a/x"));
        assert!(!below(".config/git/", "cfg"));
        assert!(!below(".config/git/", ".config2"));
        assert!(!below("src/gen/", "lib"));
        // One component: only the path itself.
        assert!(below(".vscode/", ".vscode"));
        assert!(below(".envrc", "a/.envrc"));
        assert!(!below(".envrc", "cfg"));
    }

    #[test]
    fn unanchored_names_match_at_any_depth_and_below() {
        assert!(m("__pycache__", "__pycache__"));
        assert!(m("__pycache__/", "a/b/__pycache__/x.pyc"));
        assert!(m(".envrc", "sub/.envrc"));
        assert!(!m(".envrc", "sub/.envrc2"));
        assert!(m("*.pyc", "a/b.pyc"));
    }

    #[test]
    fn at_any_depth_ignores_the_anchor() {
        let any = |p: &str, path: &str| {
            Pattern::new(p)
                .unwrap()
                .matches_at_any_depth(Path::new(path))
        };
        assert!(any(".github/", "sub/.github/workflows/ci.yml"));
        assert!(any(".config/fish/", "~/.config/fish/config.fish"));
        assert!(any("**/.cargo/config.toml", "/abs/ws/a/.cargo/config.toml"));
        assert!(any("*.code-workspace", "x.code-workspace"));
        assert!(any(".envrc", "../ws/.envrc"));
        assert!(!any(".envrc", "docs/envrc.md"));
        assert!(!any(".config/git/", ".config/gitx/y"));
        assert!(!any(".gitconfig", "/tmp/.gitconfig/README.md"));
        assert!(any("**/.hg/hgrc", "a/.hg/hgrc"));
    }

    #[test]
    fn anchored_patterns_start_at_the_root() {
        assert!(m(".github/workflows/", ".github/workflows/ci.yml"));
        assert!(!m(".github/workflows/", "sub/.github/workflows/ci.yml"));
        assert!(m("**/.github/workflows", "sub/.github/workflows/ci.yml"));
        assert!(m("**/.github/workflows", ".github/workflows/ci.yml"));
        assert!(!m(".github/workflows/", ".github/dependabot.yml"));
        assert!(m("/build", "build/x"));
        assert!(!m("/build", "a/build/x"));
        assert!(m("a/**", "a/b"));
        assert!(!m("a/**", "a"));
    }

    #[test]
    fn bytes_that_are_not_utf8_match_exactly() {
        use std::os::unix::ffi::OsStrExt;
        let p = Pattern::new("*.txt").unwrap();
        assert!(p.matches(Path::new(OsStr::from_bytes(b"\xff\xfe.txt"))));
        assert!(!p.matches(Path::new(OsStr::from_bytes(b"\xff\xfe.txu"))));
    }

    #[test]
    fn patterns_ignoring_case_match_ascii_letters_in_either_case() {
        let ci = |p: &str, path: &str| {
            Pattern::new(p)
                .unwrap()
                .ignoring_case()
                .matches(Path::new(path))
        };
        assert!(ci(".envrc", "sub/.ENVRC"));
        assert!(ci(".vscode/", ".VSCode/tasks.json"));
        assert!(ci("**/.github/workflows/", "a/.GitHub/Workflows/x.yml"));
        assert!(ci(".lintstagedrc*", ".LintStagedRC.json"));
        assert!(!ci(".envrc", "sub/.envrc2"));
        assert!(!m(".envrc", "sub/.ENVRC"));
        assert!(Pattern::new(".config/git/")
            .unwrap()
            .ignoring_case()
            .may_match_below(Path::new(".CONFIG")));
    }

    #[test]
    fn bad_patterns_are_refused() {
        for p in ["", "/", "a/../b", "./a", "a//b", "a\0b"] {
            assert!(Pattern::new(p).is_err(), "{p:?}");
        }
    }
}
