//! Gate speed: one simple command against a 50-rule policy (target median
//! < 20 µs), a 100-segment compound (< 1 ms), loading a policy (< 1 ms).
//! The simple command is measured first on a tree just made (the boundary
//! looks every path up afresh), then once the tree is settled.

use airlock_policy::{decide, load, Command, Request};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn fifty_rule_policy() -> String {
    let mut allow: Vec<String> = (0..44).map(|i| format!("\"tool{i} run\"")).collect();
    allow.extend(
        [
            "\"ls\"",
            "\"cat\"",
            "\"grep\"",
            "\"git status\"",
            "\"git diff\"",
        ]
        .map(String::from),
    );
    format!(
        "[commands]\nallow = [{}]\napproval = [\"rm -rf\"]\ndeny = [\"sudo\"]\n",
        allow.join(", ")
    )
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
    std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n").expect("write");
    let root = dir.path().canonicalize().expect("canonical");
    let text = fifty_rule_policy();
    let policy = load::from_str(&text, "bench.toml", &root)
        .expect("loads")
        .policy;
    assert_eq!(policy.commands.rules.len(), 51);
    let req = |command: String| Request {
        command: Command::Shell { command },
        cwd: root.clone(),
        loosening: Default::default(),
    };

    let simple = req("grep -n main src/main.rs".into());
    c.bench_function("decide: simple command, 50-rule policy", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&simple)))
    });

    let compound: Vec<String> = (0..100)
        .map(|i| match i % 4 {
            0 => "ls -la src".to_string(),
            1 => "cat src/main.rs".to_string(),
            2 => "git status --short".to_string(),
            _ => "grep -c fn src/main.rs".to_string(),
        })
        .collect();
    let compound = req(compound.join(" && "));
    let d = decide(&policy, &compound);
    assert_eq!(d.segments.len(), 100);
    c.bench_function("decide: 100-segment compound", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&compound)))
    });

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
    c.bench_function("load: the 50-rule policy", |b| {
        b.iter(|| load::from_str(black_box(&text), "bench.toml", &root))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
