//! Links the unwinder statically (`libgcc_eh.a`) instead of `libgcc_s.so.1`.
//!
//! Every `airlock run` is a process start, and on glibc a Rust binary's start
//! pays for loading `libgcc_s.so.1`: one more object to map and relocate, and
//! its constructor's CPU feature probe, whose `cpuid` instructions each trap to
//! the hypervisor in a VM. That is about 0.3 ms of a 1.4 ms start here, the
//! same start as a fully static binary gets. Panics and backtraces unwind as
//! before; only where the unwinder's code lives changes.
//!
//! A native library named by a build script comes before the standard
//! library's own `-lgcc_s` on the link line, so the unwinder's symbols resolve
//! here and `--as-needed` drops `libgcc_s.so.1`. Only on linux-gnu, only when
//! not cross-compiling and the C compiler can name `libgcc_eh.a`; otherwise
//! the build links as usual.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let gnu_linux = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    // A static build (crt-static) links libgcc_eh already.
    let crt_static = var("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static");
    // Cross-compiling, `cc` would name the host's libgcc_eh.a, not the target's.
    let cross = var("TARGET") != var("HOST");
    if !gnu_linux || crt_static || cross {
        return;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(out) = Command::new(&cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let found = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // Without the file, cc prints the bare name back.
    if !out.status.success() || !Path::new(&found).is_absolute() || !Path::new(&found).exists() {
        return;
    }
    if let Some(dir) = Path::new(&found).parent() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=static=gcc_eh");
}
