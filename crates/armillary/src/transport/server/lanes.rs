//! The server side of the threading framework (`crate::request_filter`):
//! the lanes a [`RequestFilter`](crate::RequestFilter) sends requests to
//! (named pools of threads, [`Lanes`]) and the thread a request routed to
//! a new thread runs on.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use crate::request_filter::LaneConfig;

/// Work for a lane.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct LaneQueue {
    jobs: VecDeque<Job>,
    closing: bool,
}

/// One lane's queue and threads.
struct Lane {
    queue: Arc<(Mutex<LaneQueue>, Condvar)>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// The lanes of a server, by name.
pub(crate) struct Lanes {
    lanes: HashMap<String, Lane>,
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.lanes.keys()).finish()
    }
}

impl Lanes {
    /// Starts the threads of every lane in `configs`.
    pub(crate) fn start(configs: &[LaneConfig]) -> std::io::Result<Lanes> {
        let mut lanes = Lanes {
            lanes: HashMap::new(),
        };
        for config in configs {
            let queue = Arc::new((Mutex::new(LaneQueue::default()), Condvar::new()));
            let mut threads = Vec::new();
            for i in 0..config.threads.max(1) {
                let mine = queue.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("lane-{}-{i}", config.name))
                    .spawn(move || lane_worker(&mine));
                match spawned {
                    Ok(h) => threads.push(h),
                    Err(e) => {
                        lanes.lanes.insert(
                            config.name.clone(),
                            Lane {
                                queue,
                                threads: Mutex::new(threads),
                            },
                        );
                        lanes.join();
                        return Err(e);
                    }
                }
            }
            lanes.lanes.insert(
                config.name.clone(),
                Lane {
                    queue,
                    threads: Mutex::new(threads),
                },
            );
        }
        Ok(lanes)
    }

    /// Queues `job` on the lane `name`; gives it back when there is no
    /// such lane or it is closing.
    pub(crate) fn run(&self, name: &str, job: Job) -> Result<(), Job> {
        let Some(lane) = self.lanes.get(name) else {
            return Err(job);
        };
        let mut queue = lane.queue.0.lock();
        if queue.closing {
            return Err(job);
        }
        queue.jobs.push_back(job);
        drop(queue);
        lane.queue.1.notify_one();
        Ok(())
    }

    /// Takes no more jobs; the lanes' threads run what is queued, then
    /// end.
    pub(crate) fn close(&self) {
        for lane in self.lanes.values() {
            lane.queue.0.lock().closing = true;
            lane.queue.1.notify_all();
        }
    }

    /// Closes, and waits for the lanes' threads to end (except for a lane
    /// thread calling this).
    pub(crate) fn join(&self) {
        self.close();
        let me = std::thread::current().id();
        for lane in self.lanes.values() {
            for h in std::mem::take(&mut *lane.threads.lock()) {
                if h.thread().id() != me {
                    let _ = h.join();
                }
            }
        }
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        self.join();
    }
}

fn lane_worker(queue: &(Mutex<LaneQueue>, Condvar)) {
    let mut q = queue.0.lock();
    loop {
        if let Some(job) = q.jobs.pop_front() {
            drop(q);
            // A panicking upcall must not take the lane's thread with it.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            q = queue.0.lock();
        } else if q.closing {
            return;
        } else {
            queue.1.wait(&mut q);
        }
    }
}

/// Runs `job` on a new thread named `name`; gives it back if the system
/// refuses a thread.
pub(crate) fn run_on_new_thread(name: &str, job: Job) -> Result<(), Job> {
    // The job comes back through this slot if the spawn fails.
    let slot = Arc::new(Mutex::new(Some(job)));
    let mine = slot.clone();
    let spawned = std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            if let Some(job) = mine.lock().take() {
                job();
            }
        });
    match spawned {
        Ok(_) => Ok(()),
        Err(_) => slot.lock().take().map_or(Ok(()), Err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::{Duration, Instant};

    fn wait_until(what: &str, cond: impl Fn() -> bool) {
        let end = Instant::now() + Duration::from_secs(30);
        while !cond() {
            assert!(Instant::now() < end, "never happened: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_lane_runs_its_jobs_in_order_on_its_threads() {
        let lanes = Lanes::start(&[LaneConfig {
            name: "slow".into(),
            threads: 1,
        }])
        .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        for i in 0..10 {
            let log = log.clone();
            assert!(lanes
                .run(
                    "slow",
                    Box::new(move || log
                        .lock()
                        .push((i, std::thread::current().name().map(str::to_owned))))
                )
                .is_ok());
        }
        assert!(lanes.run("nope", Box::new(|| {})).is_err());
        wait_until("every job ran", || log.lock().len() == 10);
        let log = log.lock().clone();
        assert_eq!(
            log.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        assert!(log.iter().all(|(_, n)| n.as_deref() == Some("lane-slow-0")));
        lanes.join();
        assert!(lanes.run("slow", Box::new(|| {})).is_err());
    }

    #[test]
    fn a_new_thread_runs_the_job() {
        let done = Arc::new(AtomicUsize::new(0));
        let d = done.clone();
        assert!(run_on_new_thread(
            "request",
            Box::new(move || {
                assert_eq!(std::thread::current().name(), Some("request"));
                d.fetch_add(1, Ordering::SeqCst);
            })
        )
        .is_ok());
        wait_until("the thread ran", || done.load(Ordering::SeqCst) == 1);
    }
}
