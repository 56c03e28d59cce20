//! Worker pool (Visibroker's thread pool): one reactor thread reads every
//! connection and puts the requests into a bounded queue; N worker threads
//! take them in arrival order and run them. A request that finds the queue
//! full is answered at once with TRANSIENT (`minor::SERVER_BUSY`,
//! COMPLETED_NO): the reading thread never waits for a worker. A worker
//! whose upcall waits for a reply runs queued requests meanwhile
//! (`thread_role::serve_while_waiting`), so a call back into this
//! server is served even when every worker waits.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::{busy, ModelThreads, ResolvedRequest, ServerConcurrency};
use crate::completion::WaitForCompletion;
use crate::poa::Poa;

/// N workers fed by a bounded queue.
#[derive(Debug)]
pub(crate) struct WorkerPool {
    queue: Arc<Queue>,
    threads: ModelThreads,
}

#[derive(Debug)]
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when a request is queued or the pool stops.
    ready: Condvar,
    capacity: usize,
}

#[derive(Debug)]
struct QueueState {
    requests: VecDeque<ResolvedRequest>,
    stopped: bool,
}

impl WorkerPool {
    /// Starts `workers` threads (at least one) behind a queue of
    /// `capacity` requests (at least one).
    pub(crate) fn start(workers: usize, capacity: usize) -> std::io::Result<WorkerPool> {
        let queue = Arc::new(Queue {
            state: Mutex::new(QueueState {
                requests: VecDeque::new(),
                stopped: false,
            }),
            ready: Condvar::new(),
            capacity: capacity.max(1),
        });
        let pool = WorkerPool {
            queue,
            threads: ModelThreads::new(),
        };
        for _ in 0..workers.max(1) {
            let queue = pool.queue.clone();
            let worker = move || {
                // A worker waiting for a reply inside an upcall runs the
                // queued requests meanwhile (a nested call back into this
                // server may be among them), so the pool cannot deadlock
                // on its own callbacks however small it is.
                let nested = queue.clone();
                let _serving =
                    crate::thread_role::serve_while_waiting(move || nested.run_one_queued());
                queue.work();
            };
            if let Err(e) = pool.threads.spawn("armillary-worker", worker) {
                pool.stop(WaitForCompletion::Yes);
                return Err(e);
            }
        }
        Ok(pool)
    }
}

impl Queue {
    /// Runs the first queued request, if any, on this thread: what a
    /// worker does while it waits for a reply. True if it ran one.
    fn run_one_queued(&self) -> bool {
        let request = {
            let mut state = self.state.lock();
            if state.stopped {
                return false;
            }
            state.requests.pop_front()
        };
        match request {
            Some(request) => {
                request.run();
                true
            }
            None => false,
        }
    }

    /// A worker's loop: takes requests in arrival order until the pool
    /// stops.
    fn work(&self) {
        loop {
            let request = {
                let mut state = self.state.lock();
                loop {
                    if state.stopped {
                        return;
                    }
                    if let Some(request) = state.requests.pop_front() {
                        break request;
                    }
                    self.ready.wait(&mut state);
                }
            };
            request.run();
        }
    }
}

impl ServerConcurrency for WorkerPool {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn runs_here(&self, _poa: &Poa) -> bool {
        false
    }

    fn schedule(&self, request: ResolvedRequest) {
        let mut state = self.queue.state.lock();
        if state.stopped || state.requests.len() >= self.queue.capacity {
            drop(state);
            request.reject(busy());
            return;
        }
        state.requests.push_back(request);
        drop(state);
        self.queue.ready.notify_one();
    }

    fn stop(&self, wait: WaitForCompletion) {
        // Requests still queued are not run: their connections are closed.
        let unrun = {
            let mut state = self.queue.state.lock();
            state.stopped = true;
            std::mem::take(&mut state.requests)
        };
        self.queue.ready.notify_all();
        drop(unrun);
        self.threads.stop(wait);
    }
}
