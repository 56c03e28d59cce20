//! Collocated oneways that return at once (`SyncScope::None`), and the
//! order of a caller's requests.
//!
//! Such a oneway is not run by its caller: it is posted to the target
//! ORB's reactor, which runs it as it would one read off a connection.
//! A connection keeps its requests in order, and so does this: each
//! thread counts the oneways it posted that have not run yet
//! (`thread_role::posting_oneway`), and its next collocated call that
//! waits for anything (a two-way, a synchronised oneway, an asynchronous
//! request) first waits for them (`thread_role::wait_for_posted_oneways`).
//!
//! A thread that serves (inside an upcall, or one that must drive an
//! application-driven ORB) runs its oneways itself before the call
//! returns ([`may_post`] is false): it would be the one to run them, and
//! a wait for them could wait for itself.

use crate::orb::OrbCore;

/// Whether the calling thread may post a oneway to `core` rather than
/// run it (see the module docs).
pub(crate) fn may_post(core: &OrbCore) -> bool {
    !crate::poa::current::in_any_upcall() && !core.driven_by_application()
}
