//! Thread per request: one reactor thread reads every connection; each
//! request runs on a new thread of its own, at most CAP at a time. A
//! request that arrives with CAP upcalls running is answered at once with
//! TRANSIENT (`minor::SERVER_BUSY`, COMPLETED_NO): the reading thread never
//! waits for an upcall to end, so it goes on reading (and answering) the
//! other requests, nested calls back into this server included.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{busy, ModelThreads, ResolvedRequest, ServerConcurrency};
use crate::completion::WaitForCompletion;
use crate::poa::Poa;

/// A new thread per request, at most `cap` alive.
#[derive(Debug)]
pub(crate) struct ThreadPerRequest {
    cap: usize,
    /// Upcall threads started and not finished.
    alive: Arc<AtomicUsize>,
    threads: ModelThreads,
}

/// Counts an upcall thread out when it ends, however it ends.
struct Alive(Arc<AtomicUsize>);

impl Drop for Alive {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl ThreadPerRequest {
    /// At most `cap` upcall threads (`None`: no limit).
    pub(crate) fn new(cap: Option<usize>) -> ThreadPerRequest {
        ThreadPerRequest {
            cap: cap.unwrap_or(usize::MAX).max(1),
            alive: Arc::new(AtomicUsize::new(0)),
            threads: ModelThreads::new(),
        }
    }
}

impl ServerConcurrency for ThreadPerRequest {
    fn reactor_threads(&self) -> usize {
        1
    }

    fn runs_here(&self, _poa: &Poa) -> bool {
        false
    }

    fn schedule(&self, request: ResolvedRequest) {
        if self.alive.fetch_add(1, Ordering::SeqCst) >= self.cap {
            self.alive.fetch_sub(1, Ordering::SeqCst);
            request.reject(busy());
            return;
        }
        let alive = Alive(self.alive.clone());
        // Kept here too, so that it can be answered if no thread starts.
        let slot = Arc::new(Mutex::new(Some(request)));
        let taken = slot.clone();
        let started = self.threads.spawn("armillary-request", move || {
            let _alive = alive;
            let request = taken.lock().take();
            if let Some(request) = request {
                request.run();
            }
        });
        if started.is_err() {
            // The closure (and its count) was dropped unrun.
            let request = slot.lock().take();
            if let Some(request) = request {
                request.reject(busy());
            }
        }
    }

    fn stop(&self, wait: WaitForCompletion) {
        self.threads.stop(wait);
    }
}
