//! CPU time per decision, read from the kernel's per-thread accounting
//! (/proc/thread-self/schedstat), so that a busy machine does not inflate it
//! the way it inflates wall-clock figures. Complements `cargo bench`.
//!
//!     cargo run --release -p airlock-policy --example gate_cpu

#[path = "../benches/workload/mod.rs"]
mod workload;

use airlock_policy::{decide, load};
use workload::Workload;

fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn per_iter(n: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 {
        f();
    }
    let start = cpu_ns();
    for _ in 0..n {
        f();
    }
    (cpu_ns() - start) as f64 / n as f64 / 1000.0
}

fn main() {
    let dir = std::env::temp_dir().join(format!("airlock-gate-cpu-{}", std::process::id()));
    let Workload {
        root,
        policy_text: text,
        policy,
        simple,
        simple_quoted,
        compound,
        deep_path,
    } = Workload::in_dir(&dir);
    // `simple`, `quoted`, `compound` or `deep` measures that case alone (for profiling).
    let alone = std::env::args().nth(1);
    if let Some(case) = alone.as_deref() {
        let (request, n) = match case {
            "simple" => (&simple, 100_000),
            "quoted" => (&simple_quoted, 100_000),
            "compound" => (&compound, 2_000),
            "deep" => (&deep_path, 200),
            other => {
                eprintln!("unknown case {other:?}: give simple, quoted, compound or deep");
                std::process::exit(2);
            }
        };
        println!(
            "{:.1}",
            per_iter(n, || {
                std::hint::black_box(decide(&policy, request));
            })
        );
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    println!(
        "decide, simple command, 50-rule policy: {:8.1} µs CPU",
        per_iter(20_000, || {
            std::hint::black_box(decide(&policy, &simple));
        })
    );
    println!(
        "decide, simple command with a quote:    {:8.1} µs CPU",
        per_iter(20_000, || {
            std::hint::black_box(decide(&policy, &simple_quoted));
        })
    );
    println!(
        "decide, 100-segment compound:           {:8.1} µs CPU",
        per_iter(200, || {
            std::hint::black_box(decide(&policy, &compound));
        })
    );
    println!(
        "decide, 64 KiB deep path (cd b/b/…; ls): {:8.1} µs CPU",
        per_iter(50, || {
            std::hint::black_box(decide(&policy, &deep_path));
        })
    );
    println!(
        "load, built-in default text:            {:8.1} µs CPU",
        per_iter(500, || {
            let _ =
                std::hint::black_box(load::from_str(load::DEFAULT_POLICY_TOML, "d.toml", &root));
        })
    );
    println!(
        "load, 50-rule policy:                   {:8.1} µs CPU",
        per_iter(2_000, || {
            let _ = std::hint::black_box(load::from_str(&text, "b.toml", &root));
        })
    );
    // The boundary keeps what it found in directories unchanged for 3 s
    // (paths::entry_cache::SETTLE); the tree above was just made.
    std::thread::sleep(std::time::Duration::from_millis(3_500));
    println!(
        "decide, simple command, settled tree:   {:8.1} µs CPU",
        per_iter(20_000, || {
            std::hint::black_box(decide(&policy, &simple));
        })
    );
    let _ = std::fs::remove_dir_all(&dir);
}
