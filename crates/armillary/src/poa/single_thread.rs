//! SINGLE_THREAD_MODEL (and MAIN_THREAD_MODEL, which Armillary serialises
//! the same way): a POA with that policy runs one upcall at a time.
//!
//! The thread in an upcall of the POA *owns* it; the owner may enter it
//! again (a nested upcall on its own thread: a collocated call, or a
//! request it serves while it waits for a reply). Any other thread waits
//! until the POA is free, with one exception that keeps nested calls from
//! deadlocking: while the owner waits for a reply (it called out, and the
//! callee may call back), a request for the POA that another thread took
//! is *handed over* to the owner, which runs it inside its wait (see
//! `transport::wait`), on its own thread, as omniORB and TAO run such
//! callbacks. So two upcalls of the POA never run at once on two threads,
//! whatever the concurrency model, and a callback into the POA never
//! waits for the upcall that waits for it.
//!
//! Requests handed over that the owner could not run before its wait
//! ended run when it leaves the POA, before the next thread enters.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::ThreadId;

use parking_lot::{Condvar, Mutex, MutexGuard};

use crate::thread_role::{self, HandOver};

/// A request (its upcall and reply) to run as an upcall of the POA.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

/// The serialisation of one SINGLE_THREAD_MODEL POA (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct SingleThread {
    state: Mutex<State>,
    /// Signalled when the POA becomes free or its owner starts waiting.
    changed: Condvar,
}

#[derive(Default)]
struct State {
    /// The thread in an upcall of the POA, if any.
    owner: Option<ThreadId>,
    /// How many upcalls the owner is in (nested).
    depth: usize,
    /// How many waits for a reply the owner is in that run the requests
    /// handed over to it (nested): while any, other threads hand over.
    waiting: usize,
    /// Requests other threads handed over, in the order they came.
    handed_over: VecDeque<Job>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("owner", &self.owner)
            .field("depth", &self.depth)
            .field("waiting", &self.waiting)
            .field("handed_over", &self.handed_over.len())
            .finish()
    }
}

/// An upcall of the POA in progress on this thread (see
/// [`SingleThread::enter`]); leaves the POA when dropped.
#[derive(Debug)]
pub(crate) struct Entered(Arc<SingleThread>);

impl Drop for Entered {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl SingleThread {
    /// Waits until this thread may run an upcall of the POA (it is free,
    /// or this thread owns it already), and owns it until the returned
    /// guard drops.
    pub(crate) fn enter(self: &Arc<Self>) -> Entered {
        let me = std::thread::current().id();
        let mut state = self.state.lock();
        while state.owner.is_some_and(|owner| owner != me) {
            self.changed.wait(&mut state);
        }
        self.own(state, me)
    }

    /// Whether this thread is in an upcall of the POA (nested calls into
    /// it run here, whoever else waits for it).
    pub(crate) fn owned_here(&self) -> bool {
        self.state.lock().owner == Some(std::thread::current().id())
    }

    /// Runs `job` as an upcall of the POA: here, once this thread may
    /// (see [`enter`](Self::enter)), or, when another thread owns the POA
    /// and waits for a reply meanwhile, handed over to that thread, which
    /// runs it inside its wait (this thread returns at once then).
    pub(crate) fn run_or_hand_over(self: &Arc<Self>, job: Job) {
        let me = std::thread::current().id();
        let mut state = self.state.lock();
        while state.owner.is_some_and(|owner| owner != me) {
            if state.waiting > 0 {
                state.handed_over.push_back(job);
                return;
            }
            self.changed.wait(&mut state);
        }
        let _entered = self.own(state, me);
        job();
    }

    /// Makes `me` own the POA (it is free or `me` owns it already), one
    /// upcall deeper.
    fn own(self: &Arc<Self>, mut state: MutexGuard<'_, State>, me: ThreadId) -> Entered {
        state.depth += 1;
        if state.owner.is_none() {
            state.owner = Some(me);
            drop(state);
            thread_role::owns(self.clone());
        }
        Entered(self.clone())
    }

    /// Runs the first request handed over, if any (the owner, waiting for
    /// a reply). True if it ran one.
    fn run_handed_over(self: &Arc<Self>) -> bool {
        let job = self.state.lock().handed_over.pop_front();
        match job {
            Some(job) => {
                let _entered = self.enter();
                job();
                true
            }
            None => false,
        }
    }

    /// Leaves one upcall; the last one first runs what was handed over
    /// and not run yet (unless unwinding), then frees the POA.
    fn leave(self: &Arc<Self>) {
        let mut state = self.state.lock();
        while state.depth == 1 && !std::thread::panicking() {
            let Some(job) = state.handed_over.pop_front() else {
                break;
            };
            drop(state);
            job();
            state = self.state.lock();
        }
        state.depth -= 1;
        if state.depth > 0 {
            return;
        }
        state.owner = None;
        drop(state);
        let me: Arc<dyn HandOver> = self.clone();
        thread_role::disowns(&me);
        self.changed.notify_all();
    }
}

impl HandOver for SingleThread {
    fn start_waiting(&self) {
        self.state.lock().waiting += 1;
        self.changed.notify_all();
    }

    fn stop_waiting(&self) {
        let mut state = self.state.lock();
        state.waiting = state.waiting.saturating_sub(1);
    }

    fn run_one(self: Arc<Self>) -> bool {
        self.run_handed_over()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    const LIMIT: Duration = Duration::from_secs(30);

    #[test]
    fn the_owner_reenters_and_others_wait_until_it_leaves() {
        let poa = Arc::new(SingleThread::default());
        let outer = poa.enter();
        let inner = poa.enter();
        let (tx, rx) = mpsc::channel();
        let other = {
            let poa = poa.clone();
            std::thread::spawn(move || {
                let _entered = poa.enter();
                tx.send(()).unwrap();
            })
        };
        drop(inner);
        // Still owned: the other thread is not in.
        assert!(rx.try_recv().is_err());
        drop(outer);
        rx.recv_timeout(LIMIT).unwrap();
        other.join().unwrap();
    }

    #[test]
    fn a_request_taken_while_the_owner_waits_runs_on_the_owner() {
        let poa = Arc::new(SingleThread::default());
        let ran_on = Arc::new(Mutex::new(None));
        let _entered = poa.enter();
        let waits = thread_role::hand_overs().expect("this thread owns the POA");
        let other = {
            let (poa, ran_on) = (poa.clone(), ran_on.clone());
            std::thread::spawn(move || {
                poa.run_or_hand_over(Box::new(move || {
                    *ran_on.lock() = Some(std::thread::current().id());
                }));
            })
        };
        // The other thread hands it over and returns without running it.
        other.join().unwrap();
        assert!(ran_on.lock().is_none());
        assert!(waits.run_one());
        assert_eq!(*ran_on.lock(), Some(std::thread::current().id()));
        assert!(!waits.run_one());
    }

    #[test]
    fn what_the_owner_did_not_run_in_its_wait_runs_when_it_leaves() {
        let poa = Arc::new(SingleThread::default());
        let ran = Arc::new(AtomicUsize::new(0));
        let entered = poa.enter();
        let waits = thread_role::hand_overs().unwrap();
        let r = ran.clone();
        let p = poa.clone();
        std::thread::spawn(move || {
            p.run_or_hand_over(Box::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }))
        })
        .join()
        .unwrap();
        drop(waits);
        assert_eq!(ran.load(Ordering::SeqCst), 0);
        drop(entered);
        assert_eq!(ran.load(Ordering::SeqCst), 1);
        // Free again: a request now runs where it is.
        poa.run_or_hand_over(Box::new(|| {}));
        assert!(thread_role::owns_nothing());
    }
}
