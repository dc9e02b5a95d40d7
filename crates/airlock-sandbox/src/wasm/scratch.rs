//! The guest's filesystem view, built by the helper in its private mount
//! namespace: the workspace as an overlay whose upper layer is a size-capped
//! tmpfs (the same layout the native backend reads its change report from), a
//! size-capped tmpfs for /tmp, hidden paths masked, and the list of WASI
//! preopens and landlock rules that make up the whole view.

use crate::native::landlock::FsRules;
use crate::native::mounts::inode_cap;
use crate::sys;
use crate::Layer;
use crate::{SandboxError, SandboxSpec, WorkspaceMode};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// One WASI preopen: `host` appears to the guest as `guest`.
#[derive(Debug, Clone)]
pub struct Preopen {
    pub host: PathBuf,
    pub guest: String,
    pub writable: bool,
}

#[derive(Debug)]
pub struct View {
    /// The run's directory (a tmpfs mount point in the helper's namespace).
    pub scratch: PathBuf,
    /// The overlay's upper layer, when the workspace is an overlay.
    pub upper: Option<PathBuf>,
    pub preopens: Vec<Preopen>,
    pub landlock: FsRules,
}

fn fail(what: &str, e: impl std::fmt::Display) -> SandboxError {
    SandboxError::Layer {
        layer: Layer::Mounts,
        detail: format!("{what}: {e}"),
    }
}

fn tmpfs(at: &Path, bytes: u64, what: &str) -> Result<(), SandboxError> {
    let data = CString::new(format!(
        "size={bytes},nr_inodes={},mode=0755",
        inode_cap(bytes)
    ))
    .map_err(|e| fail(what, e))?;
    sys::mount(
        Some(c"tmpfs"),
        at,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some(&data),
    )
    .map_err(|e| fail(what, e))
}

fn mkdir(p: &Path) -> Result<(), SandboxError> {
    std::fs::create_dir(p).map_err(|e| fail(&format!("mkdir {}", p.display()), e))
}

/// Makes this process's mounts private and builds the view. Call it after
/// `unshare(CLONE_NEWNS)`: nothing here is seen outside the helper.
pub fn build(spec: &SandboxSpec, runs_dir: &Path) -> Result<View, SandboxError> {
    // Step 1: nothing mounted here propagates back to the host.
    sys::make_mounts_private().map_err(|e| fail("make mounts private", e))?;

    // Step 2: the run's own tmpfs, holding the overlay's upper layer. Writes
    // are capped at 3/4 of the memory limit, as under the native backend.
    std::fs::create_dir_all(runs_dir).map_err(|e| fail("runs directory", e))?;
    let scratch = runs_dir.join(format!("{}.wasm", spec.request_id));
    mkdir(&scratch)?;
    let layer_bytes = (spec.limits.memory_bytes / 4 * 3).max(1 << 20);
    tmpfs(&scratch, layer_bytes, "tmpfs for the workspace layer")?;
    let root = &spec.workspace.root;

    // Step 3: the workspace.
    let mut preopens = Vec::new();
    let mut rules = FsRules::default();
    let mut upper = None;
    let ws_host = match spec.workspace.mode {
        WorkspaceMode::Ro => {
            preopens.push(Preopen {
                host: root.clone(),
                guest: root.display().to_string(),
                writable: false,
            });
            rules.read_only.push(root.clone());
            root.clone()
        }
        WorkspaceMode::Overlay | WorkspaceMode::Rw => {
            let (up, work, merged) = (
                scratch.join("upper"),
                scratch.join("work"),
                scratch.join("merged"),
            );
            for d in [&up, &work, &merged] {
                mkdir(d)?;
            }
            let opts = CString::new(format!(
                "lowerdir={},upperdir={},workdir={}",
                root.display(),
                up.display(),
                work.display()
            ))
            .map_err(|e| fail("overlay options", e))?;
            sys::mount(
                Some(c"overlay"),
                &merged,
                Some(c"overlay"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some(&opts),
            )
            .map_err(|e| fail("overlay mount of the workspace", e))?;
            preopens.push(Preopen {
                host: merged.clone(),
                guest: root.display().to_string(),
                writable: true,
            });
            rules.read_write.push(merged.clone());
            upper = Some(up);
            merged
        }
    };

    // The guest's current directory: wasi-libc resolves relative paths against
    // a preopen named ".", so the cwd (inside the workspace) is also preopened so.
    if let Ok(rel) = spec.cwd.strip_prefix(root) {
        let host = ws_host.join(rel);
        if host.is_dir() {
            preopens.push(Preopen {
                host,
                guest: ".".into(),
                writable: spec.workspace.mode != WorkspaceMode::Ro,
            });
        }
    }

    // Step 4: /tmp, capped by limits.tmp.
    let tmp = scratch.join("tmp");
    mkdir(&tmp)?;
    tmpfs(&tmp, spec.limits.tmp_bytes.max(1 << 16), "tmpfs /tmp")?;
    preopens.push(Preopen {
        host: tmp.clone(),
        guest: "/tmp".into(),
        writable: true,
    });
    rules.read_write.push(tmp);

    // Step 5: extra host paths, at their own paths (directories only: a
    // preopen is a directory).
    for (paths, writable) in [(&spec.read_paths, false), (&spec.write_paths, true)] {
        for p in paths.iter().filter(|p| p.is_dir()) {
            preopens.push(Preopen {
                host: p.clone(),
                guest: p.display().to_string(),
                writable,
            });
            if writable {
                rules.read_write.push(p.clone());
            } else {
                rules.read_only.push(p.clone());
            }
        }
    }

    // Step 6: hidden paths, masked where the guest would reach them.
    for hide in &spec.hide_paths {
        let target = match hide.strip_prefix(root) {
            Ok(rel) => ws_host.join(rel),
            Err(_) => hide.clone(),
        };
        let Ok(m) = std::fs::symlink_metadata(&target) else {
            continue;
        };
        if m.is_dir() {
            tmpfs(&target, 4096, "mask a hidden directory")?;
            sys::mount(
                None,
                &target,
                None,
                libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
                None,
            )
            .map_err(|e| fail("mask a hidden directory read-only", e))?;
        } else {
            sys::mount(Some(c"/dev/null"), &target, None, libc::MS_BIND, None)
                .map_err(|e| fail("mask a hidden file", e))?;
        }
    }
    Ok(View {
        scratch,
        upper,
        preopens,
        landlock: rules,
    })
}

/// Detaches the run's mounts and removes its directory.
pub fn teardown(view: &View) {
    let _ = sys::umount_detach(&view.scratch);
    let _ = std::fs::remove_dir_all(&view.scratch);
}
