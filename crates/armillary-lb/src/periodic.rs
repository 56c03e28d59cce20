//! [`Periodic`]: a thread that runs a task every period until it is
//! stopped — the locator's liveness probes and a replica's load reports.
//!
//! Stopping (dropping the handle) wakes the thread at once and waits for
//! the task it may be running to end.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// A thread running a task every period; dropping it stops the thread.
#[derive(Debug)]
pub(crate) struct Periodic {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Periodic {
    /// Starts a thread named `name` that waits `period`, runs `task`, and
    /// again, until the handle is dropped.
    pub(crate) fn spawn(
        name: &str,
        period: Duration,
        mut task: impl FnMut() + Send + 'static,
    ) -> std::io::Result<Periodic> {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || loop {
                {
                    let (stopped, wake) = &*flag;
                    let mut stopped = stopped.lock();
                    if !*stopped {
                        wake.wait_for(&mut stopped, period);
                    }
                    if *stopped {
                        return;
                    }
                }
                task();
            })?;
        Ok(Periodic {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Periodic {
    fn drop(&mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock() = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // A task that panicked has already said so on stderr.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn runs_the_task_until_dropped() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        let periodic = Periodic::spawn("test", Duration::from_millis(1), move || {
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
        armillary_testkit::wait_until("the task ran three times", || {
            runs.load(Ordering::SeqCst) >= 3
        });
        // Dropping joins the thread: nothing runs after it returns.
        drop(periodic);
        let after_stop = runs.load(Ordering::SeqCst);
        assert_eq!(runs.load(Ordering::SeqCst), after_stop);
    }

    #[test]
    fn dropping_wakes_a_thread_in_a_long_period() {
        let periodic = Periodic::spawn("test", Duration::from_secs(3600), || {}).unwrap();
        // Returns at once, not in an hour.
        drop(periodic);
    }
}
