//! Thread per object: one reactor thread reads every connection; every
//! object (its POA and object id) gets a queue and a thread of its own
//! while it has requests, so one object's requests run one at a time in
//! arrival order and different objects' run in parallel. The thread ends
//! once its object's queue is empty: an object that is deactivated, or
//! whose POA is destroyed, keeps no thread, and an idle server holds none.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{busy, ModelThreads, ResolvedRequest, ServerConcurrency};
use crate::completion::WaitForCompletion;
use crate::poa::ObjectId;
use crate::poa::Poa;

/// An object: its POA's identity and its id within the POA.
type ObjectKey = (usize, ObjectId);

/// A queue and a thread per object with requests.
#[derive(Debug)]
pub(crate) struct ThreadPerObject {
    /// The objects with a thread, and the requests waiting for it.
    queues: Arc<Queues>,
    threads: ModelThreads,
}

impl ThreadPerObject {
    /// No object has a thread yet.
    pub(crate) fn new() -> ThreadPerObject {
        ThreadPerObject {
            queues: Arc::new(Mutex::new(HashMap::new())),
            threads: ModelThreads::new(),
        }
    }
}

/// The objects with a thread, and the requests waiting for it.
type Queues = Mutex<HashMap<ObjectKey, VecDeque<ResolvedRequest>>>;

/// An object's thread: runs its requests in order until none is left.
/// While an upcall waits for a reply, the thread runs the object's next
/// requests inside that wait (a nested call back into the same object
/// would otherwise wait behind the upcall that waits for it).
fn serve(queues: &Arc<Queues>, key: &ObjectKey) {
    let _serving = {
        let (queues, key) = (queues.clone(), key.clone());
        crate::thread_role::serve_while_waiting(move || run_next(&queues, &key))
    };
    loop {
        let request = {
            let mut queues = queues.lock();
            let Some(queue) = queues.get_mut(key) else {
                // Stopped: the queues were cleared.
                return;
            };
            match queue.pop_front() {
                Some(request) => request,
                None => {
                    queues.remove(key);
                    return;
                }
            }
        };
        request.run();
    }
}

/// Runs the object's next queued request, if any, on this thread (its
/// own, waiting for a reply). True if it ran one.
fn run_next(queues: &Queues, key: &ObjectKey) -> bool {
    let request = queues.lock().get_mut(key).and_then(VecDeque::pop_front);
    match request {
        Some(request) => {
            request.run();
            true
        }
        None => false,
    }
}

impl ServerConcurrency for ThreadPerObject {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn runs_here(&self, _poa: &Poa) -> bool {
        false
    }

    fn schedule(&self, request: ResolvedRequest) {
        let key = (request.poa().identity(), request.object_id().clone());
        let mut queues = self.queues.lock();
        if let Some(queue) = queues.get_mut(&key) {
            // Its thread is running: it takes this one in turn.
            queue.push_back(request);
            return;
        }
        queues.insert(key.clone(), VecDeque::from([request]));
        // Spawned under the lock, so that the entry is there for it; the
        // thread's first step waits for the lock.
        let (shared, thread_key) = (self.queues.clone(), key.clone());
        let started = self
            .threads
            .spawn("armillary-object", move || serve(&shared, &thread_key));
        if started.is_err() {
            let unrun = queues.remove(&key).unwrap_or_default();
            drop(queues);
            for request in unrun {
                request.reject(busy());
            }
        }
    }

    fn stop(&self, wait: WaitForCompletion) {
        // Requests still queued are not run: their connections are closed.
        let unrun = std::mem::take(&mut *self.queues.lock());
        drop(unrun);
        self.threads.stop(wait);
    }
}
