//! How a decision's cost grows with the command's length, for the shapes that
//! stress the workspace boundary (issue 12), under a policy that accepts
//! commands up to `max_command_bytes = "16MiB"` (the most a policy may allow):
//!
//!     cargo run --release -p airlock-policy --example decision_cost [MAX_KIB [SHAPE]]
//!
//! Prints, per shape and size, the median wall time of a few decisions and the
//! ratio to the size before (2.0 per doubling is linear, 4.0 quadratic).

use airlock_policy::{decide, load, Request};
use std::time::{Duration, Instant};

fn fill(bytes: usize, head: &str, unit: &str, tail: &str) -> String {
    let n = (bytes.saturating_sub(head.len() + tail.len())) / unit.len();
    format!("{head}{}{tail}", unit.repeat(n.max(1)))
}

/// Makes a command of a shape, about `bytes` long.
type Shape = fn(usize) -> String;

/// Shapes of a command `bytes` long.
const SHAPES: &[(&str, Shape)] = &[
    ("cd b/b/…/b; ls (one deep path)", |n| {
        fill(n, "cd ", "b/", "b; ls")
    }),
    ("cat b/b/…/b (a deep path argument)", |n| {
        fill(n, "cat ", "b/", "b")
    }),
    (
        "cd <n/2 deep>; ls; ls; … (long cwd, many segments)",
        |n| {
            let half = fill(n / 2, "cd ", "b/", "b");
            let rest = fill(n - half.len(), "", "; ls", "");
            format!("{half}{rest}")
        },
    ),
    ("cd <n/2 deep>; ls a a a … (long cwd, many paths)", |n| {
        let half = fill(n / 2, "cd ", "b/", "b; ls");
        let rest = fill(n - half.len(), "", " a", "");
        format!("{half}{rest}")
    }),
    ("cd b; cd b; … ; ls (cwd grown by many cd)", |n| {
        fill(n, "", "cd b; ", "ls")
    }),
    ("ls x x x … (many short paths)", |n| {
        fill(n, "ls", " x", "")
    }),
];

fn main() {
    let max_kib: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let dir = std::env::temp_dir().join(format!("airlock-decision-cost-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("b/b/b")).expect("mkdir");
    let root = dir.canonicalize().expect("canonical");
    let text = "[commands]\nallow = [\"ls\", \"cat\"]\nmax_command_bytes = \"16MiB\"\n";
    let policy = load::from_str(text, "cost.toml", &root)
        .expect("loads")
        .policy;
    let only = std::env::args().nth(2).unwrap_or_default();
    for (name, make) in SHAPES.iter().filter(|(n, _)| n.contains(&only)) {
        println!("{name}");
        let mut last: Option<f64> = None;
        let mut kib = 16;
        while kib <= max_kib {
            let command = make(kib * 1024);
            let request = Request::shell(&command, &root);
            let mut times: Vec<Duration> = Vec::new();
            let started = Instant::now();
            let mut verdict = String::new();
            while times.len() < 3
                || (times.len() < 15 && started.elapsed() < Duration::from_secs(2))
            {
                let t = Instant::now();
                let d = decide(&policy, &request);
                times.push(t.elapsed());
                verdict = format!("{} ({} segments)", d.decision.as_str(), d.segments.len());
            }
            times.sort();
            let ms = times[times.len() / 2].as_secs_f64() * 1e3;
            let ratio = last
                .map(|l| format!("{:5.2}x", ms / l))
                .unwrap_or_else(|| "     ".into());
            println!(
                "  {:>6} KiB ({:>8} bytes) {:10.3} ms  {ratio}  {verdict}",
                kib,
                command.len(),
                ms
            );
            last = Some(ms);
            kib *= 4;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
