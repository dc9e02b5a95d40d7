//! `airlock-wasm`: the WebAssembly backend's helper and precompiler, the one
//! binary that embeds wasmtime. `airlock` starts it (it is looked for next to
//! `airlock`); it is not meant to be run by hand. Kept apart so that every
//! other `airlock` start does not pay for wasmtime's code and relocations.

fn main() {
    airlock_sandbox::wasm::maybe_run_helper();
    eprintln!(
        "airlock-wasm: the WebAssembly backend's helper, started by airlock; \
         run `airlock run --backend wasm -- ...` instead"
    );
    std::process::exit(2);
}
