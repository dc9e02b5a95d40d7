//! Recent runs, kept in memory so that `GET /v1/runs/{id}` can answer after a
//! streaming client lost its connection. Bounded twice: by count (the oldest
//! are forgotten first) and by the bytes of output they hold (the oldest
//! runs' stdout and stderr are dropped first, and their answer says so with
//! `output_evicted`); the audit log keeps everything. A tenant only ever sees
//! its own runs.

use crate::serve::service::RunResult;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// The default of [`RunRegistry::new`]'s output budget: 64 runs at the
/// default 1 MiB output limit for each of stdout and stderr, instead of the
/// gigabytes 4096 of them could pin.
pub const DEFAULT_OUTPUT_BUDGET: usize = 128 << 20;

pub struct RunRegistry {
    capacity: usize,
    output_budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, (String, Arc<RunResult>)>,
    order: VecDeque<String>,
    /// Bytes of stdout and stderr held by the runs in `by_id`.
    output_bytes: usize,
    /// Oldest first: the ids in `order` up to this one no longer hold output.
    evicted_upto: usize,
}

/// The stdout and stderr bytes `result` holds.
fn output_of(result: &RunResult) -> usize {
    result
        .outcome
        .as_ref()
        .map_or(0, |o| o.stdout.len() + o.stderr.len())
}

impl RunRegistry {
    /// At most `capacity` runs, holding at most `output_budget` bytes of
    /// stdout and stderr together.
    pub fn new(capacity: usize, output_budget: usize) -> RunRegistry {
        RunRegistry {
            capacity: capacity.max(1),
            output_budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn insert(&self, tenant: &str, result: RunResult) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let id = result.request_id.clone();
        inner.output_bytes += output_of(&result);
        match inner
            .by_id
            .insert(id.clone(), (tenant.to_string(), Arc::new(result)))
        {
            None => inner.order.push_back(id),
            Some((_, old)) => inner.output_bytes -= output_of(&old),
        }
        while inner.order.len() > self.capacity {
            if let Some(old) = inner.order.pop_front() {
                inner.evicted_upto = inner.evicted_upto.saturating_sub(1);
                if let Some((_, r)) = inner.by_id.remove(&old) {
                    inner.output_bytes -= output_of(&r);
                }
            }
        }
        while inner.output_bytes > self.output_budget && inner.evicted_upto < inner.order.len() {
            let Inner {
                by_id,
                order,
                output_bytes,
                evicted_upto,
            } = &mut *inner;
            let old = &order[*evicted_upto];
            *evicted_upto += 1;
            let Some((_, r)) = by_id.get_mut(old) else {
                continue;
            };
            let held = output_of(r);
            if held == 0 {
                continue;
            }
            let mut kept = RunResult::clone(r);
            if let Some(o) = kept.outcome.as_mut() {
                o.stdout = String::new();
                o.stderr = String::new();
            }
            kept.output_evicted = true;
            *r = Arc::new(kept);
            *output_bytes -= held;
        }
    }

    pub fn get(&self, tenant: &str, id: &str) -> Option<Arc<RunResult>> {
        let inner = self.inner.lock().ok()?;
        inner
            .by_id
            .get(id)
            .filter(|(owner, _)| owner == tenant)
            .map(|(_, r)| r.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::RunRegistry;
    use crate::serve::service::RunResult;

    fn run(id: &str, out: usize) -> RunResult {
        let decision = serde_json::from_value(serde_json::json!({
            "decision": "allow",
            "reason": "",
            "rule": null,
            "step": "allowlist",
            "segments": [],
            "policy_sha256": "",
        }))
        .unwrap();
        RunResult {
            request_id: id.into(),
            caller: "t".into(),
            status: airlock_core::RunStatus::Ran,
            message: String::new(),
            decision,
            approval: None,
            refusal: None,
            outcome: Some(airlock_sandbox::Outcome {
                stdout: "o".repeat(out),
                stderr: "e".repeat(out),
                ..Default::default()
            }),
            audit_ids: vec![],
            backend: Some("native".into()),
            output_evicted: false,
        }
    }

    /// Past the byte budget the oldest runs lose their output first (and say
    /// so); the newest keep theirs; the count bound still holds.
    #[test]
    fn the_oldest_outputs_go_first_past_the_byte_budget() {
        let runs = RunRegistry::new(4, 1000);
        for i in 0..3 {
            runs.insert("a", run(&format!("r{i}"), 200));
        }
        // 1200 bytes held: r0's output goes.
        let r0 = runs.get("a", "r0").unwrap();
        assert!(r0.output_evicted);
        let o = r0.outcome.as_ref().unwrap();
        assert_eq!((o.stdout.len(), o.stderr.len()), (0, 0));
        for id in ["r1", "r2"] {
            let r = runs.get("a", id).unwrap();
            assert!(!r.output_evicted, "{id}");
            assert_eq!(r.outcome.as_ref().unwrap().stdout.len(), 200);
        }
        // A run with more output than the whole budget: the older ones' goes
        // first, then its own.
        runs.insert("a", run("big", 600));
        assert!(runs.get("a", "big").unwrap().output_evicted);
        assert!(runs.get("a", "r1").unwrap().output_evicted);
        assert!(runs.get("a", "r2").unwrap().output_evicted);
        runs.insert("a", run("r4", 100));
        assert!(!runs.get("a", "r4").unwrap().output_evicted);
        // Count bound: r0 is gone entirely.
        assert!(runs.get("a", "r0").is_none());
        assert!(runs.get("b", "r4").is_none(), "another tenant's");
    }
}
