//! Collocated oneways that return at once (`SyncScope::None`), and the
//! order of a caller's requests.
//!
//! Such a oneway is not run by its caller: it is posted to the target
//! ORB's reactor, which runs it as it would one read off a connection.
//! A connection keeps its requests in order, and so does this: each
//! thread counts the oneways it posted that have not run yet, and its
//! next collocated call that waits for anything (a two-way, a
//! synchronised oneway, an asynchronous request) first waits for them
//! ([`flush`]).
//!
//! A thread that serves (inside an upcall, or one that must drive an
//! application-driven ORB) runs its oneways itself before the call
//! returns ([`may_post`] is false): it would be the one to run them, and
//! a wait for them could wait for itself.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use crate::orb::OrbCore;

/// One thread's oneways posted and not run yet.
#[derive(Default)]
struct Posted {
    count: AtomicUsize,
    lock: Mutex<()>,
    none_left: Condvar,
}

thread_local! {
    static POSTED: Arc<Posted> = Arc::default();
}

/// Counts one of this thread's oneways as posted, until dropped (run,
/// or dropped unrun by a reactor that stopped).
pub(crate) struct PostedOneway(Arc<Posted>);

impl Drop for PostedOneway {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::SeqCst) == 1 {
            let _guard = self.0.lock.lock();
            self.0.none_left.notify_all();
        }
    }
}

/// Counts a oneway this thread posts.
pub(crate) fn posting() -> PostedOneway {
    POSTED.with(|posted| {
        posted.count.fetch_add(1, Ordering::SeqCst);
        PostedOneway(posted.clone())
    })
}

/// Whether the calling thread may post a oneway to `core` rather than
/// run it (see the module docs).
pub(crate) fn may_post(core: &OrbCore) -> bool {
    !crate::poa::current::in_any_upcall() && !core.driven_by_application()
}

/// Waits until every oneway this thread posted has run.
pub(crate) fn flush() {
    POSTED.with(|posted| {
        if posted.count.load(Ordering::SeqCst) == 0 {
            return;
        }
        let mut guard = posted.lock.lock();
        while posted.count.load(Ordering::SeqCst) > 0 {
            posted.none_left.wait(&mut guard);
        }
    });
}
