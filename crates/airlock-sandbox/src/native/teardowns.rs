//! Sandbox helpers that are still tearing down after their report, each
//! waited for on a thread of its own: the caller answers as soon as a run's
//! outcome is known, and whoever must leave nothing behind (a one-shot
//! caller's exit, a pool's stop) waits for the count to reach zero.

use super::caller::Helper;
use super::helper_process::HelperProcess;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Condvar, Mutex};

/// Helpers still tearing down after their report: [`Teardowns::wait`] lets a
/// pool's stop leave nothing behind.
#[derive(Debug, Clone, Default)]
pub(crate) struct Teardowns(Arc<(Mutex<usize>, Condvar)>);

impl Teardowns {
    pub(super) fn reap(&self, mut child: HelperProcess, ctl_w: OwnedFd) {
        self.spawn(move || {
            let _ = child.wait();
            // Held until the helper is gone: its EOF would mean "caller gone".
            drop(ctl_w);
        });
    }

    /// [`Helper::abandon`] on a thread of its own, counted like a reap: the
    /// caller does not wait for the teardown, a pool's stop does.
    pub(crate) fn abandon(&self, helper: Helper) {
        self.spawn(move || helper.abandon());
    }

    /// Runs `wait_for_exit` on a thread, counted until it returns.
    fn spawn(&self, wait_for_exit: impl FnOnce() + Send + 'static) {
        let (count, done) = &*self.0;
        if let Ok(mut n) = count.lock() {
            *n += 1;
        }
        let me = self.clone();
        let reaper = move || {
            wait_for_exit();
            let (count, done) = &*me.0;
            if let Ok(mut n) = count.lock() {
                *n = n.saturating_sub(1);
            }
            done.notify_all();
        };
        if let Err(e) = std::thread::Builder::new()
            .name("airlock-reap".into())
            .spawn(reaper)
        {
            // std dropped the closure with the child: the helper still tears
            // down, but nobody waits for it, so it is not counted.
            eprintln!("airlock: cannot start a thread to reap a sandbox helper: {e}");
            if let Ok(mut n) = count.lock() {
                *n = n.saturating_sub(1);
            }
            done.notify_all();
        }
    }

    /// Blocks until every helper handed to [`Teardowns::reap`] or
    /// [`Teardowns::abandon`] has exited.
    pub(crate) fn wait(&self) {
        let (count, done) = &*self.0;
        let Ok(mut n) = count.lock() else {
            return;
        };
        while *n > 0 {
            n = match done.wait(n) {
                Ok(n) => n,
                Err(_) => return,
            };
        }
    }
}
