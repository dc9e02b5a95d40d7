//! Where a symlink of a change set leads: lexically ([`target_inside`]) and
//! once the links on the way are followed ([`resolve_target`]).

use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// True when the symlink at `rel` with `target` resolves, lexically, inside the
/// workspace. Absolute targets must lie under `root`; `..` may not climb above it.
pub fn target_inside(rel: &Path, target: &Path, root: &Path) -> bool {
    if target.as_os_str().is_empty() {
        return false;
    }
    let (start, rest): (Vec<&[u8]>, &Path) = if target.is_absolute() {
        match target.strip_prefix(root) {
            Ok(rest) if root.is_absolute() && root != Path::new("/") => (Vec::new(), rest),
            _ => return false,
        }
    } else {
        let parent = rel.parent().unwrap_or(Path::new(""));
        (
            parent
                .components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n.as_bytes()),
                    _ => None,
                })
                .collect(),
            target,
        )
    };
    let mut stack = start;
    for c in rest.components() {
        match c {
            Component::Normal(n) => stack.push(n.as_bytes()),
            Component::CurDir => {}
            Component::ParentDir => {
                if stack.pop().is_none() {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Most symlinks followed while resolving one link's target (as the kernel's 40).
pub const MAX_LINK_HOPS: usize = 40;

/// True when the symlink at `rel` with `target` resolves inside the workspace
/// also once the links on the way are followed: `links(p)` returns the target
/// of the symlink at the workspace-relative path `p` in the view the change
/// set would leave (a link of the change set, else an existing host link), or
/// `None` for anything else. `ln -s inner/x link` with `inner -> /etc` on the
/// host, or a chain of new links, is caught here where the lexical
/// [`target_inside`] sees only `inner/x`. Too many hops count as outside.
pub fn resolves_inside(
    rel: &Path,
    target: &Path,
    root: &Path,
    links: &dyn Fn(&Path) -> Option<PathBuf>,
) -> bool {
    resolve_target(rel, target, root, links).is_some()
}

/// Where the symlink at `rel` with `target` leads once every link on the way
/// is followed (see [`resolves_inside`]), relative to the root; `None` when it
/// leaves the workspace or takes too many hops.
pub fn resolve_target(
    rel: &Path,
    target: &Path,
    root: &Path,
    links: &dyn Fn(&Path) -> Option<PathBuf>,
) -> Option<PathBuf> {
    use std::collections::VecDeque;
    use std::ffi::OsString;
    let mut stack: Vec<OsString> = match rel.parent() {
        Some(p) => p
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                _ => None,
            })
            .collect(),
        None => Vec::new(),
    };
    let mut todo: VecDeque<OsString> = VecDeque::new();
    // Puts a target's components in front of what is left; false if it leaves the root.
    let push_target =
        |t: &Path, stack: &mut Vec<OsString>, todo: &mut VecDeque<OsString>| -> bool {
            let rest = if t.is_absolute() {
                match t.strip_prefix(root) {
                    Ok(rest) if root.is_absolute() && root != Path::new("/") => {
                        stack.clear();
                        rest
                    }
                    _ => return false,
                }
            } else {
                t
            };
            let comps: Vec<OsString> = rest
                .components()
                .map(|c| c.as_os_str().to_os_string())
                .collect();
            for c in comps.into_iter().rev() {
                todo.push_front(c);
            }
            true
        };
    if target.as_os_str().is_empty() || !push_target(target, &mut stack, &mut todo) {
        return None;
    }
    let mut hops = 0;
    while let Some(c) = todo.pop_front() {
        if c == "." {
            continue;
        } else if c == ".." {
            stack.pop()?;
        } else if c == "/" {
            return None;
        } else {
            {
                stack.push(c);
                let here: PathBuf = stack.iter().collect();
                if let Some(t) = links(&here) {
                    hops += 1;
                    if hops > MAX_LINK_HOPS {
                        return None;
                    }
                    stack.pop();
                    if !push_target(&t, &mut stack, &mut todo) {
                        return None;
                    }
                }
            }
        }
    }
    Some(stack.iter().collect())
}
