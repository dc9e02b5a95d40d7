//! Filesystem layer: executes the sandbox's view ([`crate::view`], a list of
//! operations built from the spec) as real root inside a private mount
//! namespace, then pivots into it.
//!
//! Around the list: propagation private; the workspace tree cloned before
//! anything is mounted (the runs directory may lie inside it); a tmpfs as the
//! new root. Then each [`ViewOp`] in order, in one loop. After it:
//! `pivot_root`, old root detached, the root tmpfs made read-only.
//!
//! Mount points are created by walking from an fd on the new root with
//! `O_NOFOLLOW` at every step, and trees are attached by fd (`open_tree` +
//! `move_mount`), so a symlink placed in a visible tree cannot redirect a mount.

use super::mountpoints::MountPoints;
use crate::sys::{
    self, walk, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOEXEC, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY,
};
use crate::view::{self, relative_inside, Owner, ViewOp};
use crate::Layer;
use crate::{SandboxError, SandboxSpec, WorkspaceMode};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;

use std::path::{Path, PathBuf};

pub const LAYER: Layer = Layer::Filesystem;

fn fail(layer: Layer, what: impl std::fmt::Display, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer,
        detail: format!("{what}: {e}"),
    }
}

/// The layer a failure of an operation on `path` is reported under.
fn layer_of(path: &Path) -> Layer {
    if path.starts_with("/dev") {
        Layer::Dev
    } else if path.starts_with("/proc") {
        Layer::Proc
    } else {
        LAYER
    }
}

/// What the view needs besides the spec.
pub struct ViewPlan<'a> {
    pub spec: &'a SandboxSpec,
    /// The view's operations ([`view::plan`], made by the helper before the
    /// clone, its `/etc` possibly one prepared directory).
    pub ops: &'a [ViewOp],
    /// Idmapping for the workspace and the write paths: maps the owner of the
    /// tree to sandbox root.
    pub idmaps: &'a dyn Fn(&Path) -> Option<RawFd>,
    /// The detached tmpfs holding `upper/` and `work/` (overlay mode).
    pub upper_fs: Option<&'a OwnedFd>,
    /// The detached, read-only tree of the prepared `/etc`
    /// ([`ViewOp::Prepared`]), opened and checked by the helper.
    pub prepared: Option<&'a OwnedFd>,
    /// Rootless mode: the overlay keeps its marks in `user.*` xattrs (`userxattr`),
    /// since `trusted.*` needs host privilege.
    pub rootless: bool,
}

/// Builds the view and pivots into it. Runs in the sandbox's init, as real root,
/// in its own mount namespace.
pub fn build(plan: &ViewPlan) -> Result<(), SandboxError> {
    let spec = plan.spec;
    let root = super::rundir::mount_point("root");
    sys::make_mounts_private().map_err(|e| fail(Layer::Mounts, "make / private", e))?;
    // The workspace tree is copied before anything is mounted: the runs
    // directory (and so the new root) may lie inside the workspace.
    let mut ws_tree = Some(
        sys::clone_tree(&spec.workspace.root, true)
            .map_err(|e| fail(Layer::Workspace, spec.workspace.root.display(), e))?,
    );
    // The root belongs to sandbox root, as a container's does: tools that
    // check `/`'s owner (ssh's StrictModes, `find -user`) see root, and
    // stat("/") reads ids Python keeps cached. It is read-only after the
    // pivot, so owning it allows no change. Rootless, init's own namespace
    // makes it, whose root is already the one the sandbox maps.
    let root_options = match plan.rootless {
        true => c"mode=0755,size=4m".to_owned(),
        false => std::ffi::CString::new(format!(
            "mode=0755,size=4m,uid={},gid={}",
            super::namespaces::SANDBOX_HOST_UID,
            super::namespaces::SANDBOX_HOST_GID
        ))
        .map_err(|e| fail(Layer::Mounts, "tmpfs root", e))?,
    };
    sys::mount(
        Some(c"airlock"),
        &root,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&root_options),
    )
    .map_err(|e| fail(Layer::Mounts, "tmpfs root", e))?;
    let root_fd = sys::open(&root, libc::O_PATH | libc::O_DIRECTORY, 0)
        .map_err(|e| fail(Layer::Mounts, "open new root", e))?;
    let r = root_fd.as_raw_fd();
    let mut points = MountPoints::new(r);
    for op in plan.ops {
        execute(plan, op, &mut points, r, &root, &mut ws_tree)?;
    }
    pivot(&root)?;
    Ok(())
}

/// Executes one operation of the view inside the new root (`r`, at `root`;
/// `points` walks it).
fn execute(
    plan: &ViewPlan,
    op: &ViewOp,
    points: &mut MountPoints,
    r: RawFd,
    root: &Path,
    ws_tree: &mut Option<OwnedFd>,
) -> Result<(), SandboxError> {
    // These mount by path, not through `points`: whatever they cover, no
    // directory `points` kept may be used after them.
    if matches!(
        op,
        ViewOp::Devpts { .. }
            | ViewOp::Proc { .. }
            | ViewOp::ReadOnly { .. }
            | ViewOp::Mask { .. }
            | ViewOp::Workspace { .. }
            | ViewOp::Hide { .. }
    ) {
        points.forget_all();
    }
    match op {
        ViewOp::Symlink { link, target } => symlink_in(points, target, link),
        ViewOp::BindRo { src, dst } => bind_ro(src, points, dst),
        ViewOp::Prepared { src, dst } => {
            let tree = plan
                .prepared
                .ok_or_else(|| fail(LAYER, src.display(), "the prepared tree was not opened"))?;
            let at = points.at(dst, true)?;
            sys::attach_tree(tree, &at).map_err(|e| fail(LAYER, src.display(), e))
        }
        ViewOp::WriteFile { path, content } => write_file_in(points, path, content),
        ViewOp::Tmpfs {
            path,
            mode,
            size_bytes,
            inodes,
            flags,
            owner,
        } => {
            let l = layer_of(path);
            let at = points.at(path, true)?;
            let mode = format!("{mode:04o}");
            let size = size_bytes.to_string();
            let inodes = inodes.map(|n| n.to_string());
            let uid = super::namespaces::SANDBOX_HOST_UID.to_string();
            let gid = super::namespaces::SANDBOX_HOST_GID.to_string();
            let mut options: Vec<(&str, &str)> = vec![("mode", &mode), ("size", &size)];
            if let Some(n) = &inodes {
                options.push(("nr_inodes", n));
            }
            // As root, the tmpfs is made in the initial user namespace: its
            // owner is the host uid that sandbox root maps to. Rootless, it is
            // made inside the caller's own namespace, whose root (the caller)
            // is already its owner.
            if *owner == Owner::SandboxUser && !plan.rootless {
                options.extend([("uid", uid.as_str()), ("gid", gid.as_str())]);
            }
            let mut attrs = MOUNT_ATTR_NOSUID;
            if flags.nodev {
                attrs |= MOUNT_ATTR_NODEV;
            }
            if flags.noexec {
                attrs |= MOUNT_ATTR_NOEXEC;
            }
            let fs = sys::new_fs(c"tmpfs", &options, attrs)
                .map_err(|e| fail(l, format!("tmpfs {}", path.display()), e))?;
            sys::attach_tree(&fs, &at).map_err(|e| fail(l, format!("mount {}", path.display()), e))
        }
        ViewOp::Device { path } => {
            const L: Layer = Layer::Dev;
            let at = points.at(path, false)?;
            let tree = sys::clone_tree(path, false).map_err(|e| fail(L, path.display(), e))?;
            sys::set_tree_attrs(&tree, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, None)
                .map_err(|e| fail(L, path.display(), e))?;
            sys::attach_tree(&tree, &at).map_err(|e| fail(L, path.display(), e))
        }
        ViewOp::Devpts { path } => {
            drop(points.at(path, true)?);
            sys::mount(
                Some(c"devpts"),
                &inside(root, path)?,
                Some(c"devpts"),
                libc::MS_NOSUID | libc::MS_NOEXEC,
                Some(c"newinstance,ptmxmode=0666,mode=0620"),
            )
            .map_err(|e| fail(Layer::Dev, "devpts", e))
        }
        ViewOp::Proc { path } => {
            drop(points.at(path, true)?);
            sys::mount(
                Some(c"proc"),
                &inside(root, path)?,
                Some(c"proc"),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                None,
            )
            .map_err(|e| fail(Layer::Proc, "mount proc", e))
        }
        ViewOp::ReadOnly { path } => {
            let l = layer_of(path);
            let p = inside(root, path)?;
            if p.exists() {
                let tree = sys::clone_tree(&p, true).map_err(|e| fail(l, p.display(), e))?;
                sys::set_tree_attrs(
                    &tree,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                    None,
                )
                .map_err(|e| fail(l, p.display(), e))?;
                sys::attach_tree_at(&tree, &p).map_err(|e| fail(l, p.display(), e))?;
            }
            Ok(())
        }
        ViewOp::Mask { path } => mask(&inside(root, path)?, layer_of(path)),
        ViewOp::Workspace {
            root: ws_root,
            mode,
            protect,
        } => {
            let tree = ws_tree
                .take()
                .ok_or_else(|| fail(Layer::Workspace, ws_root.display(), "shown twice"))?;
            build_workspace(plan, points, r, tree, ws_root, *mode, protect)
        }
        ViewOp::BindRw { src, dst } => {
            let tree = sys::clone_tree(src, true).map_err(|e| fail(LAYER, src.display(), e))?;
            sys::set_tree_attrs(
                &tree,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                (plan.idmaps)(src),
            )
            .map_err(|e| fail(LAYER, format!("idmap {}", src.display()), e))?;
            let at = points.at(dst, src.is_dir())?;
            sys::attach_tree(&tree, &at).map_err(|e| fail(LAYER, src.display(), e))
        }
        ViewOp::ProxySocket { src, dst } => {
            // The egress proxy's socket, idmapped so that sandbox root may connect.
            let at = points.at(dst, false)?;
            let tree =
                sys::clone_tree(src, false).map_err(|e| fail(Layer::Network, src.display(), e))?;
            sys::set_tree_attrs(
                &tree,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
                (plan.idmaps)(src),
            )
            .map_err(|e| fail(Layer::Network, "idmap proxy socket", e))?;
            sys::attach_tree(&tree, &at).map_err(|e| fail(Layer::Network, "bind proxy socket", e))
        }
        ViewOp::Hide { path } => hide(r, root, path),
    }
}

/// The host path (before the pivot) of the sandbox path `path`.
fn inside(root: &Path, path: &Path) -> Result<PathBuf, SandboxError> {
    relative_inside(path)
        .map(|rel| root.join(rel))
        .ok_or_else(|| fail(LAYER, path.display(), "path must not contain `..`"))
}

fn pivot(root: &Path) -> Result<(), SandboxError> {
    let c = sys::cpath(root).map_err(|e| fail(Layer::Mounts, "root path", e))?;
    // SAFETY: c is a live C string.
    sys::cvt(unsafe { libc::chdir(c.as_ptr()) })
        .map_err(|e| fail(Layer::Mounts, "chdir new root", e))?;
    sys::pivot_root_here().map_err(|e| fail(Layer::Mounts, "pivot_root", e))?;
    sys::umount_detach(Path::new(".")).map_err(|e| fail(Layer::Mounts, "detach old root", e))?;
    // SAFETY: c"/" is a live C string.
    sys::cvt(unsafe { libc::chdir(c"/".as_ptr()) })
        .map_err(|e| fail(Layer::Mounts, "chdir /", e))?;
    sys::mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )
    .map_err(|e| fail(Layer::Mounts, "remount / read-only", e))?;
    Ok(())
}

/// Covers `path` (a host path as seen before pivot) with /dev/null or an empty
/// read-only tmpfs.
fn mask(path: &Path, layer: Layer) -> Result<(), SandboxError> {
    let Ok(m) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if m.is_dir() {
        let fs = sys::new_fs(
            c"tmpfs",
            &[("mode", "0555"), ("size", "4k")],
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
        )
        .map_err(|e| fail(layer, path.display(), e))?;
        sys::attach_tree_at(&fs, path).map_err(|e| fail(layer, path.display(), e))?;
    } else {
        let null = sys::clone_tree(Path::new("/dev/null"), false)
            .map_err(|e| fail(layer, "/dev/null", e))?;
        sys::set_tree_attrs(
            &null,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
            None,
        )
        .map_err(|e| fail(layer, path.display(), e))?;
        sys::attach_tree_at(&null, path).map_err(|e| fail(layer, path.display(), e))?;
    }
    Ok(())
}

/// Hides an absolute sandbox path if it is visible.
fn hide(r: RawFd, root: &Path, path: &Path) -> Result<(), SandboxError> {
    let Some(rel) = relative_inside(path) else {
        return Err(fail(
            LAYER,
            path.display(),
            "hide path must be absolute without `..`",
        ));
    };
    // Resolve without following symlinks: a symlink is itself masked by the
    // mount over its parent's entry only if it is the final component.
    match walk(r, &rel, libc::O_PATH | libc::O_NOFOLLOW) {
        Ok(_) => mask(&root.join(&rel), LAYER),
        Err(e)
            if e.raw_os_error() == Some(libc::ENOENT)
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            Ok(())
        }
        Err(e) => Err(fail(LAYER, format!("hide {}", path.display()), e)),
    }
}

fn build_workspace(
    plan: &ViewPlan,
    points: &mut MountPoints,
    r: RawFd,
    tree: OwnedFd,
    ws_root: &Path,
    mode: WorkspaceMode,
    protected: &[PathBuf],
) -> Result<(), SandboxError> {
    const L: Layer = Layer::Workspace;
    let idmap = (plan.idmaps)(ws_root);
    let at = points.at(ws_root, true)?;
    match mode {
        WorkspaceMode::Ro => {
            sys::set_tree_attrs(
                &tree,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                idmap,
            )
            .map_err(|e| fail(L, "idmapped read-only bind", e))?;
            sys::attach_tree(&tree, &at).map_err(|e| fail(L, "attach", e))?;
        }
        WorkspaceMode::Rw => {
            sys::set_tree_attrs(&tree, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, idmap)
                .map_err(|e| fail(L, "idmapped bind", e))?;
            sys::attach_tree(&tree, &at).map_err(|e| fail(L, "attach", e))?;
            drop(at);
            let ws_inside = walk(
                r,
                &relative_inside(ws_root).unwrap_or_default(),
                libc::O_PATH | libc::O_DIRECTORY,
            )
            .map_err(|e| fail(L, "reopen workspace", e))?;
            // Every directory between the root and a protected path becomes a
            // mount point of its own: the kernel refuses to rename or remove a
            // mount point (EBUSY), so `.git` cannot be moved aside and rebuilt
            // with hooks of the sandbox's choosing.
            let mut pinned: Vec<PathBuf> = Vec::new();
            for p in protected {
                let Some(rel) = relative_inside(p) else {
                    continue;
                };
                let ancestors: Vec<&Path> = rel
                    .ancestors()
                    .skip(1)
                    .filter(|a| !a.as_os_str().is_empty())
                    .collect();
                for a in ancestors.into_iter().rev() {
                    if pinned.iter().any(|x| x == a) {
                        continue;
                    }
                    match walk(ws_inside.as_raw_fd(), a, libc::O_PATH | libc::O_DIRECTORY) {
                        Ok(fd) => {
                            let tree = sys::clone_tree(
                                &PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())),
                                false,
                            )
                            .map_err(|e| fail(L, a.display(), e))?;
                            sys::attach_tree(&tree, &fd)
                                .map_err(|e| fail(L, format!("pin {}", a.display()), e))?;
                            pinned.push(a.to_path_buf());
                        }
                        Err(_) => break,
                    }
                }
            }
            for p in protected {
                protect(ws_inside.as_raw_fd(), p)?;
            }
        }
        WorkspaceMode::Overlay => {
            let lower = super::rundir::mount_point("lower");
            sys::set_tree_attrs(&tree, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, idmap)
                .map_err(|e| fail(L, "idmapped lower layer", e))?;
            sys::attach_tree_at(&tree, &lower).map_err(|e| fail(L, "attach lower layer", e))?;
            // The upper layer lives on the run's own size-capped tmpfs (made by the
            // helper, which keeps it to read the changes after the run), so that
            // writes to the workspace can fill neither the host's disk nor its inodes.
            let layer_fs = plan
                .upper_fs
                .ok_or_else(|| fail(L, "overlay", "no upper layer filesystem"))?;
            let upper_mp = super::rundir::mount_point("upper");
            sys::attach_tree_at(layer_fs, &upper_mp)
                .map_err(|e| fail(L, "attach upper layer tmpfs", e))?;
            let upper = upper_mp.join("upper");
            let work = upper_mp.join("work");
            let s = |p: &Path| p.to_string_lossy().into_owned();
            let (lower_s, upper_s, work_s) = (s(&lower), s(&upper), s(&work));
            let mut options: Vec<(&str, &str)> = vec![
                ("lowerdir", &lower_s),
                ("upperdir", &upper_s),
                ("workdir", &work_s),
                // `userxattr` refuses to follow redirects ("off" still follows).
                (
                    "redirect_dir",
                    if plan.rootless { "nofollow" } else { "off" },
                ),
                ("metacopy", "off"),
                ("index", "off"),
            ];
            if plan.rootless {
                options.push(("userxattr", ""));
            }
            let ovl = sys::new_fs(c"overlay", &options, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
                .map_err(|e| fail(L, "overlay mount", e))?;
            sys::attach_tree(&ovl, &at).map_err(|e| fail(L, "attach overlay", e))?;
        }
    }
    Ok(())
}

/// Makes `rel` (relative to the workspace, opened as `ws`) read-only if it exists.
fn protect(ws: RawFd, rel: &Path) -> Result<(), SandboxError> {
    const L: Layer = Layer::Workspace;
    let Some(rel) = relative_inside(rel) else {
        return Err(fail(
            L,
            rel.display(),
            "protect path must stay inside the workspace",
        ));
    };
    let fd = match walk(ws, &rel, libc::O_PATH | libc::O_NOFOLLOW) {
        Ok(fd) => fd,
        Err(e)
            if e.raw_os_error() == Some(libc::ENOENT)
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            // A missing path under an existing directory could be created by the
            // command and would then run on the host (a git hook): refuse.
            let parent = rel.parent().unwrap_or(Path::new(""));
            if !parent.as_os_str().is_empty()
                && walk(ws, parent, libc::O_PATH | libc::O_DIRECTORY).is_ok()
            {
                return Err(fail(
                    L,
                    format!("protected path {}", rel.display()),
                    "does not exist, so a read-only mount cannot keep it from being created in rw mode \
                     (create it, or use the overlay mode)",
                ));
            }
            return Ok(());
        }
        Err(e) => return Err(fail(L, format!("protect {}", rel.display()), e)),
    };
    let proc_path = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    let tree = sys::clone_tree(&proc_path, true).map_err(|e| fail(L, rel.display(), e))?;
    sys::set_tree_attrs(
        &tree,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        None,
    )
    .map_err(|e| fail(L, rel.display(), e))?;
    sys::attach_tree(&tree, &fd).map_err(|e| fail(L, rel.display(), e))?;
    Ok(())
}

/// Inodes of a tmpfs of `bytes`: one per 4 KiB page (at least 1024), so that
/// empty files cannot exhaust kernel memory long before the size cap.
pub fn inode_cap(bytes: u64) -> String {
    view::inode_cap(bytes).to_string()
}

fn symlink_in(points: &mut MountPoints, target: &Path, link: &Path) -> Result<(), SandboxError> {
    let rel = relative_inside(link).ok_or_else(|| fail(LAYER, link.display(), "bad link path"))?;
    let parent = points.dir(&Path::new("/").join(rel.parent().unwrap_or(Path::new(""))))?;
    let name = CString::new(rel.file_name().unwrap_or_default().as_bytes())
        .map_err(|e| fail(LAYER, link.display(), e))?;
    let t = sys::cpath(target).map_err(|e| fail(LAYER, target.display(), e))?;
    // SAFETY: both strings are live C strings; parent is an open directory fd.
    let rc = unsafe { libc::symlinkat(t.as_ptr(), parent, name.as_ptr()) };
    if rc < 0 && sys::last_errno() != libc::EEXIST {
        return Err(fail(
            LAYER,
            format!("symlink {}", link.display()),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

fn write_file_in(
    points: &mut MountPoints,
    path: &Path,
    content: &[u8],
) -> Result<(), SandboxError> {
    let rel = relative_inside(path).ok_or_else(|| fail(LAYER, path.display(), "bad path"))?;
    let parent = points.dir(&Path::new("/").join(rel.parent().unwrap_or(Path::new(""))))?;
    let name = CString::new(rel.file_name().unwrap_or_default().as_bytes())
        .map_err(|e| fail(LAYER, path.display(), e))?;
    // Reopen the parent for real (O_PATH cannot be used to create).
    let dir = sys::openat(parent, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0)
        .map_err(|e| fail(LAYER, path.display(), e))?;
    let f = sys::openat(
        dir.as_raw_fd(),
        &name,
        libc::O_CREAT | libc::O_WRONLY | libc::O_TRUNC | libc::O_NOFOLLOW,
        0o644,
    )
    .map_err(|e| fail(LAYER, path.display(), e))?;
    sys::write_all(f.as_raw_fd(), content).map_err(|e| fail(LAYER, path.display(), e))?;
    Ok(())
}

/// Binds host `src` read-only, nosuid, nodev at `dst` inside the new root.
fn bind_ro(src: &Path, points: &mut MountPoints, dst: &Path) -> Result<(), SandboxError> {
    let is_dir = std::fs::metadata(src).map(|m| m.is_dir()).unwrap_or(false);
    let at = points.at(dst, is_dir)?;
    bind_ro_at(src, &at)
}

fn bind_ro_at(src: &Path, at: &OwnedFd) -> Result<(), SandboxError> {
    let tree = sys::clone_tree(src, true).map_err(|e| fail(LAYER, src.display(), e))?;
    sys::set_tree_attrs(
        &tree,
        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        None,
    )
    .map_err(|e| fail(LAYER, src.display(), e))?;
    sys::attach_tree(&tree, at).map_err(|e| fail(LAYER, src.display(), e))?;
    Ok(())
}
