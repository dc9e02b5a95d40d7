//! Recent runs, kept in memory so that `GET /v1/runs/{id}` can answer after a
//! streaming client lost its connection. Bounded: the oldest are forgotten first
//! (the audit log keeps everything). A tenant only ever sees its own runs.

use crate::serve::service::RunResult;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

pub struct RunRegistry {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    by_id: HashMap<String, (String, Arc<RunResult>)>,
    order: VecDeque<String>,
}

impl RunRegistry {
    pub fn new(capacity: usize) -> RunRegistry {
        RunRegistry {
            capacity: capacity.max(1),
            inner: Mutex::new(Inner::default()),
        }
    }

    pub fn insert(&self, tenant: &str, result: RunResult) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let id = result.request_id.clone();
        if inner
            .by_id
            .insert(id.clone(), (tenant.to_string(), Arc::new(result)))
            .is_none()
        {
            inner.order.push_back(id);
        }
        while inner.order.len() > self.capacity {
            if let Some(old) = inner.order.pop_front() {
                inner.by_id.remove(&old);
            }
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
