//! Prometheus text exposition (format 0.0.4), written by hand: a handful of
//! counters, two gauges read live from admission control, and histograms.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Histogram bucket upper bounds, in seconds: 0.5 ms up to 60 s.
const BUCKETS: [f64; 16] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0,
];

#[derive(Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Label values are code-chosen (endpoints, verdicts, kill reasons), never
/// caller text, so they need no escaping beyond what `label` does defensively.
#[derive(Default)]
pub struct Metrics {
    counters: Mutex<BTreeMap<(&'static str, String), u64>>,
    histograms: Mutex<BTreeMap<(&'static str, String), Histogram>>,
}

const HELP: &[(&str, &str, &str)] = &[
    (
        "airlock_decisions_total",
        "counter",
        "Gate decisions, by endpoint and verdict.",
    ),
    (
        "airlock_runs_total",
        "counter",
        "Sandboxes run to an outcome, by how they ended.",
    ),
    (
        "airlock_kills_total",
        "counter",
        "Sandboxes stopped by a limit, by reason.",
    ),
    (
        "airlock_rejected_total",
        "counter",
        "Requests refused before running, by reason.",
    ),
    (
        "airlock_errors_total",
        "counter",
        "Requests that ended in an API error, by code.",
    ),
    (
        "airlock_request_duration_seconds",
        "histogram",
        "Request latency, by endpoint.",
    ),
    (
        "airlock_sandbox_duration_seconds",
        "histogram",
        "Wall time of sandbox runs.",
    ),
    (
        "airlock_queue_wait_seconds",
        "histogram",
        "Time spent waiting for a run slot.",
    ),
];

fn label(name: &str, value: &str) -> String {
    let escaped = value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("{name}=\"{escaped}\"")
}

impl Metrics {
    pub fn inc(&self, metric: &'static str, label_name: &str, label_value: &str) {
        let key = (metric, label(label_name, label_value));
        if let Ok(mut counters) = self.counters.lock() {
            *counters.entry(key).or_insert(0) += 1;
        }
    }

    pub fn observe(&self, metric: &'static str, label_name: &str, label_value: &str, d: Duration) {
        let seconds = d.as_secs_f64();
        let key = (metric, label(label_name, label_value));
        if let Ok(mut histograms) = self.histograms.lock() {
            let h = histograms.entry(key).or_default();
            for (i, bound) in BUCKETS.iter().enumerate() {
                if seconds <= *bound {
                    h.counts[i] += 1;
                }
            }
            h.count += 1;
            h.sum += seconds;
        }
    }

    /// Render everything, with the live gauges supplied by the caller.
    pub fn render(&self, gauges: &[(&str, &str, f64)]) -> String {
        let mut out = String::new();
        let counters = self.counters.lock().map(|c| {
            c.iter()
                .map(|((m, l), v)| (*m, l.clone(), *v))
                .collect::<Vec<_>>()
        });
        let counters = counters.unwrap_or_default();
        for (name, kind, help) in HELP.iter().filter(|(_, k, _)| *k == "counter") {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (metric, labels, value) in counters.iter().filter(|(m, _, _)| m == name) {
                let _ = writeln!(out, "{metric}{{{labels}}} {value}");
            }
        }
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        if let Ok(histograms) = self.histograms.lock() {
            for (name, kind, help) in HELP.iter().filter(|(_, k, _)| *k == "histogram") {
                let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
                for ((metric, labels), h) in histograms.iter().filter(|((m, _), _)| m == name) {
                    for (i, bound) in BUCKETS.iter().enumerate() {
                        let _ = writeln!(
                            out,
                            "{metric}_bucket{{{labels},le=\"{bound}\"}} {}",
                            h.counts[i]
                        );
                    }
                    let _ = writeln!(out, "{metric}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
                    let _ = writeln!(out, "{metric}_sum{{{labels}}} {}", h.sum);
                    let _ = writeln!(out, "{metric}_count{{{labels}}} {}", h.count);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_cumulative_buckets() {
        let m = Metrics::default();
        m.inc("airlock_decisions_total", "verdict", "deny");
        m.inc("airlock_decisions_total", "verdict", "deny");
        m.observe(
            "airlock_request_duration_seconds",
            "endpoint",
            "check",
            Duration::from_millis(3),
        );
        let text = m.render(&[("airlock_queue_depth", "Requests waiting.", 4.0)]);
        assert!(
            text.contains("airlock_decisions_total{verdict=\"deny\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("airlock_queue_depth 4\n"), "{text}");
        // 3 ms is above the 2.5 ms bucket and inside the 5 ms one; buckets are cumulative.
        assert!(text.contains("le=\"0.0025\"} 0\n"), "{text}");
        assert!(text.contains("le=\"0.005\"} 1\n"), "{text}");
        assert!(text.contains("le=\"+Inf\"} 1\n"), "{text}");
    }
}
