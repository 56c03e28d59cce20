//! Threads that run collocated upcalls off the caller's thread: a call
//! bounded by its call timeout runs here while its caller waits no longer
//! than the deadline (as a remote call's caller does), so a servant that
//! overruns cannot hold the caller past it.
//!
//! The threads are made on demand and kept: a job goes to an idle one,
//! or to a new one when none is idle (nested calls each need a thread of
//! their own, or they would wait for each other). An idle thread blocks
//! on its queue and wakes for nothing else.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use parking_lot::{Condvar, Mutex};

/// A collocated upcall to run.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Pool {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
    /// Threads waiting for a job and not yet claimed by one.
    idle: AtomicUsize,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// Runs `job` on a thread of the pool. When no thread can be made, runs
/// it on the calling thread (the call is then bounded only when it ends).
pub(crate) fn run(job: Job) {
    let pool = POOL.get_or_init(Pool::default);
    // Claim an idle thread if there is one; otherwise make one.
    let claimed = pool
        .idle
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if !claimed
        && std::thread::Builder::new()
            .name("armillary-collocated".into())
            .spawn(move || serve(pool))
            .is_err()
    {
        job();
        return;
    }
    pool.jobs.lock().push_back(job);
    pool.ready.notify_one();
}

/// A pool thread: runs jobs, counting itself idle between them.
fn serve(pool: &'static Pool) {
    loop {
        let job = {
            let mut jobs = pool.jobs.lock();
            loop {
                if let Some(job) = jobs.pop_front() {
                    break job;
                }
                pool.ready.wait(&mut jobs);
            }
        };
        // A panic is contained where the upcall runs; one that escapes
        // ends this job, not the thread.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
        pool.idle.fetch_add(1, Ordering::SeqCst);
    }
}
