//! Grows a shell string toward the slowest gate decision it can find, to see how
//! bad a shape that fuzzing found can get. Fuzzing stops at the first input over
//! its timeout; this keeps going: random insertions, deletions and replacements
//! of shell tokens, each kept when the decision took at least as long.
//!
//!     cargo run --release -p airlock-policy --example slowest -- START_FILE [PREFIX] [SECONDS] [SEED]
//!
//! Prints each new record (over 1.5 times the last) and the slowest string at the
//! end. It is a tool for finding parser hazards (see docs/policy.md), not a test.

use std::path::Path;
use std::time::{Duration, Instant};

/// The tokens edits are made of: brush-parser's openers, closers and quotes.
const TOKENS: &[&str] = &[
    "$(", "$((", "$[", "${", "+(", "@(", "!(", "(", ")", "[", "]", "{", "}", "\"", "\\\"", "'",
    "`", "=", ";", "|", " ", "d",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(start_file) = args.first() else {
        eprintln!("usage: slowest START_FILE [PREFIX] [SECONDS] [SEED]");
        std::process::exit(2);
    };
    let start = match std::fs::read_to_string(start_file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("slowest: {start_file}: {e}");
            std::process::exit(2);
        }
    };
    let prefix = args.get(1).cloned().unwrap_or_default();
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1) | 1;
    let mut random = move |n: usize| {
        // xorshift64: reproducible from the seed, and no dependency for it.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };

    let root = Path::new("/nonexistent-slowest-root");
    let policy = airlock_policy::load::builtin_default(root);
    let cwd = root.join("sub");
    let time = |pieces: &[String]| {
        let text = format!("{prefix}{}", pieces.concat());
        let t = Instant::now();
        let d = airlock_policy::gate::decide_shell_bytes(&policy, text.as_bytes(), &cwd);
        (t.elapsed(), d.reason)
    };

    let mut best: Vec<String> = start.chars().map(String::from).collect();
    let (mut best_time, _) = time(&best);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while Instant::now() < deadline {
        let mut candidate = best.clone();
        for _ in 0..1 + random(3) {
            let token = TOKENS[random(TOKENS.len())].to_string();
            match random(4) {
                0 | 1 if candidate.len() < 1024 => {
                    let at = random(candidate.len() + 1);
                    candidate.insert(at, token);
                }
                2 if candidate.len() > 1 => {
                    let at = random(candidate.len());
                    candidate.remove(at);
                }
                _ if !candidate.is_empty() => {
                    let at = random(candidate.len());
                    candidate[at] = token;
                }
                _ => candidate.push(token),
            }
        }
        let (mut took, _) = time(&candidate);
        if took >= best_time {
            // A record is timed twice and keeps the faster, so that one stall of
            // a busy machine does not become the bar every later edit must pass.
            took = took.min(time(&candidate).0);
        }
        if took >= best_time {
            if took.as_secs_f64() > best_time.as_secs_f64() * 1.5 {
                println!("{:.4} s  {:?}", took.as_secs_f64(), candidate.concat());
            }
            best_time = took;
            best = candidate;
        }
    }
    let (took, reason) = time(&best);
    println!(
        "slowest: {:.4} s, {} bytes",
        took.as_secs_f64(),
        best.concat().len()
    );
    println!("{:?}", format!("{prefix}{}", best.concat()));
    println!("{reason}");
}
