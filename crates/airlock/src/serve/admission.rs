//! Bounded concurrency with a bounded queue: at most `concurrency` sandboxes run
//! at once, at most `queue` requests wait for a slot, and anything past that is
//! refused at once (the HTTP layer answers 429 with `Retry-After`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Admission {
    slots: Arc<Semaphore>,
    concurrency: usize,
    max_queue: usize,
    queued: AtomicUsize,
    running: AtomicUsize,
}

/// Why a request was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    QueueFull,
    Closed,
}

/// Held while a sandbox runs; releases its slot when dropped.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    admission: Arc<Admission>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.admission.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Counts one waiting request; the count drops when the wait ends either way
/// (admitted, or the client went away and the future was dropped).
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Admission {
    pub fn new(concurrency: usize, max_queue: usize) -> Arc<Admission> {
        let concurrency = concurrency.max(1);
        Arc::new(Admission {
            slots: Arc::new(Semaphore::new(concurrency)),
            concurrency,
            max_queue,
            queued: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
        })
    }

    /// Take a slot, waiting in the queue if all are busy and the queue has room.
    pub async fn admit(self: &Arc<Self>) -> Result<Slot, Refusal> {
        let permit = match self.slots.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(tokio::sync::TryAcquireError::Closed) => return Err(Refusal::Closed),
            Err(tokio::sync::TryAcquireError::NoPermits) => {
                // Reserve a queue place atomically so that the bound is exact.
                let reserved = self
                    .queued
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |q| {
                        (q < self.max_queue).then_some(q + 1)
                    });
                if reserved.is_err() {
                    return Err(Refusal::QueueFull);
                }
                let _waiting = Waiting(&self.queued);
                self.slots
                    .clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| Refusal::Closed)?
            }
        };
        self.running.fetch_add(1, Ordering::SeqCst);
        Ok(Slot {
            _permit: permit,
            admission: self.clone(),
        })
    }

    /// Refuse every new request and wake every waiter with `Closed`.
    pub fn close(&self) {
        self.slots.close();
    }

    pub fn queue_depth(&self) -> usize {
        self.queued.load(Ordering::SeqCst)
    }

    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    pub fn concurrency(&self) -> usize {
        self.concurrency
    }

    pub fn max_queue(&self) -> usize {
        self.max_queue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn queue_bound_is_exact_and_slots_are_released() {
        let admission = Admission::new(1, 2);
        let first = admission.admit().await.expect("free slot");
        // Two waiters fit in the queue, the third is refused.
        let a = tokio::spawn({
            let adm = admission.clone();
            async move { adm.admit().await.map(|_| ()) }
        });
        let b = tokio::spawn({
            let adm = admission.clone();
            async move { adm.admit().await.map(|_| ()) }
        });
        while admission.queue_depth() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(admission.admit().await.err(), Some(Refusal::QueueFull));
        assert_eq!(admission.running(), 1);
        drop(first);
        assert_eq!(a.await.unwrap(), Ok(()));
        assert_eq!(b.await.unwrap(), Ok(()));
        assert_eq!(admission.queue_depth(), 0);
        assert_eq!(admission.running(), 0);
        admission.close();
        assert_eq!(admission.admit().await.err(), Some(Refusal::Closed));
    }
}
