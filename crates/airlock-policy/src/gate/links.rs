//! Links a command line makes itself. The boundary resolves paths on the
//! host, where a link made by an earlier command of the same line does not
//! exist yet: in `ln -s .git/hooks h && cp x h/pre-commit` the host shows
//! only a missing `h/pre-commit`. The line's links are collected here, so
//! that a path through one is judged also as the path through its target.

use crate::knowledge::{normalize, Kb, Normalized, Word};
use crate::paths::{joined, Boundary};
use crate::shell::{Cwd, Segment};
use std::path::{Component, Path, PathBuf};

/// Most links followed from one path, as the kernel's 40.
const MAX_HOPS: usize = 40;
/// Most places one path may land at through the line's links.
const MAX_LANDINGS: usize = 64;
/// Most links one line may make for the gate to follow them all.
const MAX_LINKS: usize = 256;

/// What a command does with links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `ln -s`, `cp -s`: each source becomes the target of a new symlink.
    Symbolic,
    /// `ln`, `link`, `cp -l`: each source gets another name for its inode.
    Hard,
    /// `cp`, `mv`: a symlink among the sources may arrive as a symlink.
    Carry,
}

/// The operands of `ln`, `link`, `cp` or `mv`.
#[derive(Debug)]
pub(super) struct Transfer {
    pub kind: Kind,
    /// `ln -r`: a target is written as from the cwd; ln makes it relative.
    relative: bool,
    /// `-T`: the last operand is the new name itself, never a directory.
    no_dir: bool,
    /// argv indices of the sources (a symlink's targets).
    pub sources: Vec<usize>,
    /// Where things are put: `-t DIR` (argv index of the word holding it,
    /// and the directory), or else the last operand.
    pub place: Option<(usize, String)>,
    /// `-t` was given: the place is a directory.
    into: bool,
    /// An option the knowledge base does not know: the operands are not sure.
    pub unsure: Option<String>,
}

impl Transfer {
    /// Each source's argv index with the names it may arrive at, as written,
    /// each marked when it is the place itself: the place, and the place as
    /// a directory holding it (unless `-T`; with `-t`, or more than one
    /// source, only the latter).
    pub fn names(&self, argv: &[String]) -> Vec<(usize, String, bool)> {
        let mut out = Vec::new();
        for &s in &self.sources {
            let base = Path::new(&argv[s]).file_name().map(|b| b.to_string_lossy());
            match (&self.place, base) {
                (None, Some(b)) => out.push((s, b.into_owned(), false)),
                (None, None) => {}
                (Some((_, p)), base) => {
                    if !self.into && self.sources.len() == 1 {
                        out.push((s, p.clone(), true));
                    }
                    if let Some(b) = base.filter(|_| !self.no_dir || self.into) {
                        out.push((s, format!("{}/{b}", p.trim_end_matches('/')), false));
                    }
                }
            }
        }
        out
    }
}

/// How `argv` moves or makes links, for `ln`, `link`, `cp` and `mv`.
pub(super) fn transfer(argv: &[String], n: Option<&Normalized<'_>>) -> Option<Transfer> {
    let program = crate::rules::program_name(argv.first()?);
    if !matches!(program, "ln" | "link" | "cp" | "mv") {
        return None;
    }
    let mut t = Transfer {
        kind: match program {
            "ln" | "link" => Kind::Hard,
            _ => Kind::Carry,
        },
        relative: false,
        no_dir: false,
        sources: Vec::new(),
        place: None,
        into: false,
        unsure: None,
    };
    let mut operands: Vec<usize> = Vec::new();
    if program == "link" {
        operands = (1..argv.len()).collect();
    } else {
        for w in &n?.words {
            match w {
                Word::Arg { at, .. } => operands.push(*at),
                Word::End { .. } => {}
                _ if w.owner().is_none() => {
                    t.unsure.get_or_insert(format!(
                        "`{}` is an option of {program} the gate does not know",
                        argv[w.at()]
                    ));
                }
                Word::Short {
                    value, at, next, ..
                }
                | Word::Long {
                    value, at, next, ..
                } => match (program, w.key().as_deref()) {
                    ("ln" | "cp", Some("-s")) => t.kind = Kind::Symbolic,
                    ("cp", Some("-l")) if t.kind != Kind::Symbolic => t.kind = Kind::Hard,
                    ("ln", Some("-r")) => t.relative = true,
                    (_, Some("-T")) => t.no_dir = true,
                    (_, Some("-t")) => {
                        // The value is in a word of its own, or in the option's.
                        let held = if *next > at + 1 { next - 1 } else { *at };
                        t.place = value.map(|v| (held, v.to_string()));
                        t.into = true;
                    }
                    _ => {}
                },
            }
        }
    }
    // With `-t`, or `ln` given one operand, every operand is a source.
    if t.into || (operands.len() == 1 && program == "ln") {
        t.sources = operands;
    } else if let Some((last, rest)) = operands.split_last() {
        t.place = Some((*last, argv[*last].clone()));
        t.sources = rest.to_vec();
    }
    Some(t)
}

/// Why the value of an argv word is not known before running, if it is not.
fn unsure_word(seg: &Segment, at: usize) -> Option<String> {
    let word = seg.argv.get(at)?;
    if let Some((_, why)) = seg.unknown_args.iter().find(|(shown, _)| shown == word) {
        return Some(why.clone());
    }
    seg.glob_args
        .iter()
        .any(|g| g == word)
        .then(|| format!("`{word}` is a pattern, whose names are only known when it runs"))
}

/// A symlink the line makes.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Link {
    /// The segment that makes it.
    seg: usize,
    /// Where it lies: its directory as the host resolves it, and its name.
    at: PathBuf,
    /// The link as the command wrote it.
    pub shown: String,
    /// Its target as stored (relative to the link's directory), or why it
    /// is not known.
    pub target: Result<String, String>,
}

impl Link {
    /// Where the target is, before any link on the way is followed.
    pub fn target_path(&self) -> Option<PathBuf> {
        let t = self.target.as_ref().ok()?;
        Some(self.at.parent().unwrap_or(Path::new("/")).join(t))
    }
}

/// One place a path lands at through the line's links.
#[derive(Debug)]
pub(super) struct Landing {
    pub path: PathBuf,
    /// The first link made by the line on the way, as written, and its target.
    pub link: String,
    pub target: String,
}

/// The symlinks a command line makes, with where each lies and leads.
#[derive(Debug, Default)]
pub(super) struct LineLinks {
    links: Vec<Link>,
    /// A segment makes links where the gate cannot tell (a name only known
    /// when it runs): every other segment's writes are unknown.
    anywhere: Option<(usize, String)>,
}

impl LineLinks {
    pub fn new(segments: &[Segment], boundary: &Boundary<'_>, kb: Kb<'_>) -> LineLinks {
        let mut me = LineLinks::default();
        let relevant = |s: &Segment| {
            s.argv.first().is_some_and(|a| {
                matches!(crate::rules::program_name(a), "ln" | "link" | "cp" | "mv")
            })
        };
        if !segments.iter().any(relevant) {
            return me;
        }
        let ops: Vec<Option<Transfer>> = segments
            .iter()
            .map(|s| {
                relevant(s)
                    .then(|| transfer(&s.argv, Some(&normalize(&s.argv, kb))))
                    .flatten()
            })
            .collect();
        // A loop runs its commands in another order than written, and a
        // link carried by `mv` may be one made later in the text: go round
        // until nothing new is found.
        for _ in 0..4 {
            let before = me.links.len();
            for (i, (seg, op)) in segments.iter().zip(&ops).enumerate() {
                if let Some(op) = op {
                    me.add(i, seg, op, boundary);
                }
            }
            if me.links.len() == before || me.anywhere.is_some() {
                break;
            }
        }
        me
    }

    fn push(&mut self, link: Link) {
        if self.links.contains(&link) {
            return;
        }
        if self.links.len() >= MAX_LINKS {
            self.anywhere.get_or_insert((
                link.seg,
                format!(
                    "the command makes more than {MAX_LINKS} symlinks, more than the gate follows"
                ),
            ));
            return;
        }
        self.links.push(link);
    }

    fn add(&mut self, i: usize, seg: &Segment, op: &Transfer, boundary: &Boundary<'_>) {
        let making = op.kind == Kind::Symbolic;
        let Cwd::Known(cwds) = &seg.cwd else {
            if making {
                self.anywhere.get_or_insert((
                    i,
                    format!(
                        "`{}` makes symlinks in a working directory the gate cannot know",
                        super::display_argv(&seg.argv)
                    ),
                ));
            }
            return;
        };
        if making {
            let unsure = op
                .unsure
                .clone()
                .or_else(|| op.place.as_ref().and_then(|(at, _)| unsure_word(seg, *at)));
            if let Some(why) = unsure {
                self.anywhere.get_or_insert((
                    i,
                    format!(
                        "`{}` makes symlinks whose names are not known before it runs ({why})",
                        super::display_argv(&seg.argv)
                    ),
                ));
                return;
            }
        }
        let names = op.names(&seg.argv);
        for cwd in cwds {
            for (src, name, itself) in &names {
                // A directory there already (not a symlink) takes the new
                // name inside it.
                let directory = name.ends_with('/')
                    || std::fs::symlink_metadata(joined(cwd, name)).is_ok_and(|m| m.is_dir());
                if *itself && directory {
                    continue;
                }
                let Some(at) = place(boundary, cwd, name) else {
                    continue;
                };
                if making {
                    let written = &seg.argv[*src];
                    let target = match unsure_word(seg, *src) {
                        Some(why) => Err(format!("`{written}` ({why})")),
                        // ln -r writes the target relative to the link, so
                        // it leads where the word leads from the cwd.
                        None if op.relative => Ok(joined(cwd, written).display().to_string()),
                        None => Ok(written.clone()),
                    };
                    self.push(Link {
                        seg: i,
                        at,
                        shown: name.clone(),
                        target,
                    });
                    continue;
                }
                // A copy, a move or a hard link of a symlink the line made
                // (or of a directory holding one) is that symlink again at
                // the new name, its stored target unchanged.
                let from = boundary.resolve(&joined(cwd, &seg.argv[*src]));
                let carried: Vec<Link> = self
                    .links
                    .iter()
                    .filter(|l| l.seg != i)
                    .filter_map(|l| {
                        let rest = l.at.strip_prefix(&from).ok()?;
                        let (at, shown) = if rest.as_os_str().is_empty() {
                            (at.clone(), name.clone())
                        } else {
                            let shown = Path::new(name).join(rest);
                            (at.join(rest), shown.display().to_string())
                        };
                        Some(Link {
                            seg: i,
                            at,
                            shown,
                            target: l.target.clone(),
                        })
                    })
                    .collect();
                for l in carried {
                    self.push(l);
                }
            }
        }
    }

    /// The symlinks segment `seg` makes.
    pub fn made_by(&self, seg: usize) -> impl Iterator<Item = &Link> {
        self.links.iter().filter(move |l| l.seg == seg)
    }

    pub fn is_empty(&self) -> bool {
        self.links.is_empty() && self.anywhere.is_none()
    }

    /// Where `path` (absolute, as joined from the cwd) lands through the
    /// symlinks the line makes, other than those segment `seg` makes itself
    /// (they do not exist while it names them). Each place along a chain of
    /// links is given; `Err` says why the places are not known.
    pub fn through(
        &self,
        seg: usize,
        path: &Path,
        boundary: &Boundary<'_>,
    ) -> Result<Vec<Landing>, String> {
        if let Some((s, why)) = &self.anywhere {
            if *s != seg {
                return Err(why.clone());
            }
        }
        let mut out = Vec::new();
        if !self.links.is_empty() {
            self.land(seg, path, boundary, 0, None, &mut out)?;
        }
        Ok(out)
    }

    fn others(&self, seg: usize) -> impl Iterator<Item = &Link> {
        self.links.iter().filter(move |l| l.seg != seg)
    }

    fn land(
        &self,
        seg: usize,
        path: &Path,
        boundary: &Boundary<'_>,
        hops: usize,
        first: Option<&Link>,
        out: &mut Vec<Landing>,
    ) -> Result<(), String> {
        // `..` after a link made by the line leaves the link's target, not
        // the directory the link lies in; the host cannot show which.
        let mut prefix = PathBuf::new();
        for c in path.components() {
            if c == Component::ParentDir {
                let r = boundary.resolve(&prefix);
                if let Some(l) = self.others(seg).find(|l| r.starts_with(&l.at)) {
                    return Err(format!(
                        "`..` after `{}`, a symlink this command makes, which may lead anywhere once it exists",
                        l.shown
                    ));
                }
            }
            prefix.push(c);
        }
        let resolved = boundary.resolve(path);
        for link in self.others(seg) {
            let Ok(rest) = resolved.strip_prefix(&link.at) else {
                continue;
            };
            let Some(to) = link.target_path() else {
                let why = link.target.as_ref().err().cloned().unwrap_or_default();
                return Err(format!(
                    "`{}`, a symlink this command makes to {why}",
                    link.shown
                ));
            };
            if hops >= MAX_HOPS || out.len() >= MAX_LANDINGS {
                return Err(format!(
                    "`{}`, a symlink this command makes, through more links than the gate follows",
                    link.shown
                ));
            }
            let to = if rest.as_os_str().is_empty() {
                to
            } else {
                to.join(rest)
            };
            let first = first.unwrap_or(link);
            out.push(Landing {
                path: to.clone(),
                link: first.shown.clone(),
                target: first.target.clone().unwrap_or_default(),
            });
            self.land(seg, &to, boundary, hops + 1, Some(first), out)?;
        }
        Ok(())
    }
}

/// Where a new name lies: its directory as the host resolves it (the name
/// itself is made, not followed), and the name.
fn place(boundary: &Boundary<'_>, cwd: &Path, name: &str) -> Option<PathBuf> {
    let file = Path::new(name).file_name()?;
    let p = joined(cwd, name);
    let dir = p.parent()?;
    Some(boundary.resolve(dir).join(file))
}
