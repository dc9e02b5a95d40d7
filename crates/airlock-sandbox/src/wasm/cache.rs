//! Precompiled modules: each module is compiled once per wasmtime version and
//! kept as a `.cwasm` named by the wasmtime version and the module's SHA-256.
//!
//! Loading a `.cwasm` runs its machine code, so the cache must be trusted: it
//! lives in a directory owned by this user with mode 0700, a file is written
//! under a temporary name and renamed into place, and a directory or file that
//! someone else could have written is refused rather than used.

use crate::Layer;
use crate::SandboxError;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The wasmtime version this binary embeds (pinned in Cargo.toml).
pub const WASMTIME_VERSION: &str = "48.0.8";

fn layer(detail: String) -> SandboxError {
    SandboxError::Layer {
        layer: Layer::Wasm,
        detail,
    }
}

fn sha256_file(path: &Path) -> Result<String, SandboxError> {
    let mut f =
        std::fs::File::open(path).map_err(|e| layer(format!("reading {}: {e}", path.display())))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(|e| layer(format!("reading {}: {e}", path.display())))?;
    Ok(hex::encode(h.finalize()))
}

/// Makes the cache directory (0700) or checks that an existing one is ours.
fn private_dir(dir: &Path) -> Result<(), SandboxError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| layer(format!("creating the module cache {}: {e}", dir.display())))?;
    let m = std::fs::symlink_metadata(dir)
        .map_err(|e| layer(format!("module cache {}: {e}", dir.display())))?;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    if !m.is_dir() || m.uid() != me || m.mode() & 0o022 != 0 {
        return Err(layer(format!(
            "the module cache {} is not a directory owned by uid {me} and closed to others; \
             Hint: remove it, or point AIRLOCK_WASM_CACHE at a private directory",
            dir.display()
        )));
    }
    Ok(())
}

/// A module's place in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The `.cwasm`, named by the module's SHA-256 and the wasmtime version.
    pub cwasm: PathBuf,
    /// The module's SHA-256 (hex): what [`compile`] must find in the bytes it
    /// compiles.
    pub sha256: String,
    /// A trusted `.cwasm` is there already.
    pub present: bool,
}

/// Where the `.cwasm` of `module` is kept, and whether a trusted one is
/// there already. `pinned` is the SHA-256 the module must have (the CPython
/// runtime), if any. Needs no wasmtime: the caller runs this, and has
/// [`compile`] run in the `airlock-wasm` binary only when the entry is missing.
pub fn locate(
    cache_dir: &Path,
    module: &Path,
    pinned: Option<&str>,
) -> Result<Entry, SandboxError> {
    private_dir(cache_dir)?;
    let entry = |sha256: String| {
        let cwasm = cache_dir.join(format!("{sha256}-wasmtime-{WASMTIME_VERSION}.cwasm"));
        let present = trusted_file(&cwasm);
        Entry {
            cwasm,
            sha256,
            present,
        }
    };
    let hash = match pinned {
        // The pinned runtime is large: its hash is checked when it is compiled,
        // and the cache entry carries the pinned hash in its name.
        Some(pin) => {
            let known = entry(pin.to_string());
            if known.present {
                return Ok(known);
            }
            let got = sha256_file(module)?;
            if got != pin {
                return Err(layer(format!(
                    "{} has SHA-256 {got}, not the pinned {pin}: refusing to run it; \
                     Hint: reinstall it with scripts/setup-wasm-python",
                    module.display()
                )));
            }
            got
        }
        None => sha256_file(module)?,
    };
    Ok(entry(hash))
}

/// Compiles `module` into `cwasm` (a temporary name, synced, renamed into
/// place), in the cache directory [`locate`] checked. The bytes compiled are
/// the bytes hashed here: a module changed since [`locate`] hashed it is
/// refused, so an entry never holds code other than its name says.
pub fn compile(module: &Path, cwasm: &Path, sha256: &str) -> Result<(), SandboxError> {
    let bytes =
        std::fs::read(module).map_err(|e| layer(format!("reading {}: {e}", module.display())))?;
    let got = hex::encode(Sha256::digest(&bytes));
    if got != sha256 {
        return Err(layer(format!(
            "{} changed while it was being compiled (SHA-256 {got}, expected {sha256}); \
             nothing was cached. Hint: run the command again once the file stays put",
            module.display()
        )));
    }
    let engine = super::engine::new()?;
    let compiled = engine
        .precompile_module(&bytes)
        .map_err(|e| layer(format!("compiling {}: {e:#}", module.display())))?;
    let name = cwasm.file_name().unwrap_or_default().to_string_lossy();
    let tmp = cwasm.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(&compiled).and_then(|_| f.sync_all()))
        .and_then(|_| std::fs::rename(&tmp, cwasm));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(layer(format!("writing {}: {e}", cwasm.display())));
    }
    Ok(())
}

/// A regular file owned by us and writable by nobody else.
fn trusted_file(p: &Path) -> bool {
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    std::fs::symlink_metadata(p).is_ok_and(|m| {
        m.is_file() && m.uid() == me && m.permissions().mode() & 0o022 == 0 && m.len() > 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_named_by_the_modules_hash_and_compiles_only_those_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let module = dir.path().join("m.wat");
        std::fs::write(&module, "(module)").unwrap();
        let e = locate(&cache, &module, None).unwrap();
        assert!(!e.present);
        assert_eq!(e.sha256, hex::encode(Sha256::digest(b"(module)")));
        assert!(e.cwasm.starts_with(&cache));
        // Changed between the hash and the compile: refused, nothing cached.
        std::fs::write(&module, "(module (func))").unwrap();
        let err = compile(&module, &e.cwasm, &e.sha256)
            .unwrap_err()
            .to_string();
        assert!(err.contains("changed while it was being compiled"), "{err}");
        assert!(!e.cwasm.exists());
        let e = locate(&cache, &module, None).unwrap();
        compile(&module, &e.cwasm, &e.sha256).unwrap();
        assert!(locate(&cache, &module, None).unwrap().present);
    }

    #[test]
    fn a_pinned_module_with_another_hash_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let module = dir.path().join("python.wasm");
        std::fs::write(&module, "not the runtime").unwrap();
        let err = locate(&dir.path().join("cache"), &module, Some(&"0".repeat(64)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not the pinned"), "{err}");
    }
}
