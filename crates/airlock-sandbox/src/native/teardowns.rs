//! Sandbox helpers that are still tearing down after their report, waited
//! for by one long-lived thread: the caller answers as soon as a run's
//! outcome is known, and whoever must leave nothing behind (a one-shot
//! caller's exit, a pool's stop) waits for the count to reach zero.
//!
//! One thread for every teardown, started with the first: a thread started
//! per run put its `clone` on a warm run's way to the answer, and waiting
//! for one helper after another costs nothing, since each only removes
//! what its sandbox left.

use super::caller::Helper;
use super::helper_process::HelperProcess;
use std::os::fd::OwnedFd;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Helpers still tearing down after their report: [`Teardowns::wait`] lets a
/// pool's stop leave nothing behind.
#[derive(Clone, Default)]
pub(crate) struct Teardowns(Arc<Shared>);

#[derive(Default)]
struct Shared {
    /// Teardowns handed over and not yet finished.
    count: Mutex<usize>,
    done: Condvar,
    /// The waiting thread's queue, made with the first teardown.
    worker: Mutex<Option<Sender<Job>>>,
}

impl std::fmt::Debug for Teardowns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.count.lock().map(|n| *n).unwrap_or(0);
        f.debug_struct("Teardowns").field("pending", &n).finish()
    }
}

impl Teardowns {
    pub(super) fn reap(&self, mut child: HelperProcess, ctl_w: OwnedFd) {
        self.hand_over(Box::new(move || {
            let _ = child.wait();
            // Held until the helper is gone: its EOF would mean "caller gone".
            drop(ctl_w);
        }));
    }

    /// [`Helper::abandon`] on the teardown thread, counted like a reap: the
    /// caller does not wait for the teardown, a pool's stop does.
    pub(crate) fn abandon(&self, helper: Helper) {
        self.hand_over(Box::new(move || helper.abandon()));
    }

    /// Queues `wait_for_exit` for the teardown thread, counted until it returns.
    fn hand_over(&self, wait_for_exit: Job) {
        if let Ok(mut n) = self.0.count.lock() {
            *n += 1;
        }
        let shared = Arc::clone(&self.0);
        let job: Job = Box::new(move || {
            wait_for_exit();
            shared.finished();
        });
        let Ok(mut worker) = self.0.worker.lock() else {
            // Poisoned: a panic elsewhere; wait here rather than lose the job.
            job();
            return;
        };
        // No thread yet, or it is gone: start one with this job.
        let job = match worker.as_ref() {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(mpsc::SendError(job)) => job,
            },
            None => job,
        };
        match start_worker() {
            Ok(tx) => {
                let _ = tx.send(job);
                *worker = Some(tx);
            }
            Err(e) => {
                // The helper still tears down, but nobody waits for it, so it
                // is not counted.
                eprintln!("airlock: cannot start a thread to reap sandbox helpers: {e}");
                drop(job);
                self.0.finished();
            }
        }
    }

    /// Blocks until every helper handed to [`Teardowns::reap`] or
    /// [`Teardowns::abandon`] has exited.
    pub(crate) fn wait(&self) {
        let Ok(mut n) = self.0.count.lock() else {
            return;
        };
        while *n > 0 {
            n = match self.0.done.wait(n) {
                Ok(n) => n,
                Err(_) => return,
            };
        }
    }
}

impl Shared {
    fn finished(&self) {
        if let Ok(mut n) = self.count.lock() {
            *n = n.saturating_sub(1);
        }
        self.done.notify_all();
    }
}

/// The teardown thread: runs each job in turn, and ends when every
/// [`Teardowns`] that could send one is gone.
fn start_worker() -> std::io::Result<Sender<Job>> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("airlock-reap".into())
        .spawn(move || {
            for job in rx {
                job();
            }
        })?;
    Ok(tx)
}
