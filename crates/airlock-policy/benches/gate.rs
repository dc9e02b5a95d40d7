//! Gate speed: one simple command against a 50-rule policy (target median
//! < 20 µs; once as plain words, which skip the parser, once with a quote, which
//! brush-parser reads), a 100-segment compound (< 1 ms), a 64 KiB command with a
//! path 32 Ki components deep (< 10 ms: the boundary walk is linear in the
//! command's length), lines of loops and `set -a` (a 3-deep nest ~150 µs; 500
//! loops in a row and 500 assignments under `set -a` ~5-8 ms, linear; ten
//! nested loops that each change a value ~3 ms, cut off by
//! MAX_NESTED_LOOP_PASSES where they took 25 ms), loading a policy (< 1 ms).
//! The simple command is measured first on a tree just made (the boundary
//! looks every path up afresh), then once the tree is settled.

mod workload;

use airlock_policy::{decide, load};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use workload::Workload;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let Workload {
        root,
        policy_text: text,
        policy,
        simple,
        simple_quoted,
        compound,
        deep_path,
    } = Workload::in_dir(dir.path());
    c.bench_function("decide: simple command, 50-rule policy", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&simple)))
    });
    c.bench_function(
        "decide: simple command with a quote (parsed), 50-rule policy",
        |b| b.iter(|| decide(black_box(&policy), black_box(&simple_quoted))),
    );

    let d = decide(&policy, &compound);
    assert_eq!(d.segments.len(), 100);
    c.bench_function("decide: 100-segment compound", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&compound)))
    });

    // Loops are judged again until their variables settle (up to four
    // passes, multiplied when nested), and a line that sets `set -a` or
    // attributes is judged again with them assumed from the start.
    let line = |command: String| airlock_policy::Request {
        command: airlock_policy::Command::Shell { command },
        cwd: root.clone(),
        loosening: Default::default(),
    };
    let nested = |depth: usize, body: &str, reset: bool| {
        (0..depth).fold(body.to_string(), |inner, i| {
            if reset {
                format!("z=a; for v{i} in 1 2; do z=c; {inner}; done")
            } else {
                format!("for v{i} in 1 2; do {inner}; done")
            }
        })
    };
    let loops = [
        (
            "decide: loops: 3-deep nested loop",
            line(format!(
                "x=a; {}",
                nested(3, "x=$x.b; grep -c $x src/main.rs", false)
            )),
        ),
        (
            "decide: loops: 500 loops in a row",
            line("for i in 1 2; do x=$x$i; done; ".repeat(500) + "ls src"),
        ),
        (
            "decide: loops: 10 nested loops that reset a variable (pathological)",
            line(nested(10, "grep -c $z src/main.rs", true)),
        ),
        (
            "decide: loops: set -a line, 500 assignments",
            line(format!(
                "{}; set -a; ls src",
                (0..500)
                    .map(|i| format!("x{i}={i}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            )),
        ),
    ];
    for (name, request) in &loops {
        c.bench_function(name, |b| {
            b.iter(|| decide(black_box(&policy), black_box(request)))
        });
    }

    let d = decide(&policy, &deep_path);
    assert!(d.reason.len() < 64 * 1024, "{}", d.reason.len());
    c.bench_function(
        "decide: 64 KiB pathological deep path (cd b/b/…; ls)",
        |b| b.iter(|| decide(black_box(&policy), black_box(&deep_path))),
    );

    // The boundary keeps what it found in directories unchanged for 3 s
    // (paths::entry_cache::SETTLE); the case above ran on a tree just made.
    std::thread::sleep(std::time::Duration::from_millis(3_500));
    c.bench_function(
        "decide: simple command, 50-rule policy, settled tree",
        |b| b.iter(|| decide(black_box(&policy), black_box(&simple))),
    );

    c.bench_function("load: the built-in default policy text", |b| {
        b.iter(|| load::from_str(black_box(load::DEFAULT_POLICY_TOML), "default.toml", &root))
    });
    // What every process without a policy file pays: the same policy from the
    // data made at build time (load/builtin.rs).
    c.bench_function("load: the built-in default, as built", |b| {
        b.iter(|| load::builtin_default(black_box(&root)))
    });
    // What builtin() paid once per process (so once per CLI run) before the
    // parse moved to build time (knowledge/built.rs).
    c.bench_function("load: the built-in knowledge base", |b| {
        b.iter(|| {
            airlock_policy::load::knowledge_from_str(
                black_box(airlock_policy::knowledge::PROGRAMS_TOML),
                "programs.toml",
            )
        })
    });
    // What builtin() pays now: the same base from the data made at build time.
    c.bench_function("load: the built-in knowledge base, as built", |b| {
        b.iter(airlock_policy::knowledge::builtin_uncached)
    });
    c.bench_function("load: the 50-rule policy", |b| {
        b.iter(|| load::from_str(black_box(&text), "bench.toml", &root))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
