//! What the calling thread is doing for the ORB, kept per thread where any
//! layer can ask: the client's waits need to know what the thread serves
//! meanwhile, and the server needs to know when a thread is about to block
//! waiting for a reply of its own. It sits below both the transport and
//! the ORB core, so that neither reaches into the other for it.
//!
//! - **Waiting for a reply** ([`waiting_for_reply`]): a thread that is
//!   about to block waiting for a reply of its own (a servant calling
//!   another object, a future awaited in an upcall) first writes the
//!   replies it holds ([`hold_replies`]: the reactive server's reply
//!   coalescing), and holds none while it waits, so that no reply waits on
//!   that call, nor the replies of what the thread serves meanwhile.
//! - **Serving while waiting** ([`serve_while_waiting`]): a thread whose
//!   concurrency model has work queued for it that only it may run (the
//!   connection a thread-per-connection thread reads, the jobs of a worker
//!   pool, thread-per-object or locality worker) installs a hook that runs
//!   some of that work; a wait for a reply on this thread calls it, so
//!   that a nested request queued for the thread is served.
//!
//! - **How deep a thread serves** ([`nested_serving`]): each wait that
//!   serves may run an upcall that waits again, so a busy server thread's
//!   stack grows by a wait and an upcall for every request it takes while
//!   it waits. Past [`MAX_NESTED_SERVING`] such waits (on the server's
//!   reactor threads, started with a [`DEEP_SERVING_STACK`], past
//!   [`MAX_DEEP_SERVING`]), a thread's wait serves nothing more (other
//!   than work handed over to it) until an inner one returns: requests
//!   wait for it instead of overflowing its stack, which would abort the
//!   process.
//!
//! - **Work handed over while waiting** ([`owns`], [`hand_overs`]): a
//!   thread in an upcall of a SINGLE_THREAD_MODEL POA owns it; while it
//!   waits for a reply, requests for that POA that other threads take are
//!   handed over to it, and its wait runs them (`poa::single_thread`).
//!
//! - **Oneways posted** ([`posting_oneway`], [`wait_for_posted_oneways`]):
//!   the collocated oneways that return at once, which this thread posted
//!   to a serving ORB and which have not run yet; its next collocated
//!   call that waits for anything waits for them first, so that its
//!   requests keep their order as on a connection (`collocation::oneway`).
//!
//! Which reactor's events a thread handles is the reactor's own business
//! (`reactor::handling`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use crate::request_count::RequestCount;

/// The most waits a thread nests that each serve requests (and so may
/// nest a wait again): 32 upcalls and waits stay far within the 2 MiB
/// stack of a thread Rust starts (a debug build overflowed it at about
/// 200), whatever the servants keep on the stack themselves within reason.
/// The application's threads (`Orb::run`, a worker of its own) and the
/// models' other threads keep this bound.
pub(crate) const MAX_NESTED_SERVING: usize = 32;

/// The bound for the server's reactor threads, which serve every client
/// while they wait (a single-threaded reactive middle tier nests a wait
/// per client waiting on its sink): 512 levels, 128 KiB of stack each.
pub(crate) const MAX_DEEP_SERVING: usize = 512;

/// The stack of a server reactor thread: room for [`MAX_DEEP_SERVING`]
/// levels. Only the pages a thread touches take memory.
pub(crate) const DEEP_SERVING_STACK: usize = 64 << 20;

/// This thread (a server reactor thread, started with a
/// [`DEEP_SERVING_STACK`]) nests up to [`MAX_DEEP_SERVING`] serving waits.
pub(crate) fn allow_deep_serving() {
    SERVING_LIMIT.with(|l| l.set(MAX_DEEP_SERVING));
}

/// Counts one wait that serves, while alive.
#[derive(Debug)]
pub(crate) struct NestedServing(());

impl Drop for NestedServing {
    fn drop(&mut self) {
        SERVING.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// A wait that serves begins on this thread: counted while the returned
/// guard lives; `None` when the thread is as many such waits deep as it
/// may be ([`MAX_NESTED_SERVING`], or [`MAX_DEEP_SERVING`] on a server
/// reactor thread) already: this wait must serve nothing.
pub(crate) fn nested_serving() -> Option<NestedServing> {
    let limit = SERVING_LIMIT.with(Cell::get);
    SERVING.with(|d| {
        if d.get() >= limit {
            return None;
        }
        d.set(d.get() + 1);
        Some(NestedServing(()))
    })
}

/// Replies a thread holds to write them together (the server's reply
/// coalescing on one connection), which it must write before it blocks.
pub(crate) trait HeldReplies {
    /// Writes the replies held (holding goes on).
    fn write_held(&self);
}

/// Something a thread owns to which other threads hand work while the
/// owner waits for a reply (a SINGLE_THREAD_MODEL POA).
pub(crate) trait HandOver: Send + Sync {
    /// The owner starts waiting: other threads may hand work over.
    fn start_waiting(&self);
    /// The owner's wait ended.
    fn stop_waiting(&self);
    /// Runs one piece of work handed over, if any; true if it ran one.
    fn run_one(self: Arc<Self>) -> bool;
}

thread_local! {
    /// The collocated oneways this thread posted that have not run yet.
    static POSTED: Arc<RequestCount> = Arc::default();
    /// What this thread owns that takes hand-overs, innermost last.
    static OWNED: RefCell<Vec<Arc<dyn HandOver>>> = const { RefCell::new(Vec::new()) };
    /// How many waits for a reply this thread is in (nested).
    static WAITING: Cell<u32> = const { Cell::new(0) };
    /// How many of those serve what the thread serves (nested).
    static SERVING: Cell<usize> = const { Cell::new(0) };
    /// How many it may (its stack's room).
    static SERVING_LIMIT: Cell<usize> = const { Cell::new(MAX_NESTED_SERVING) };
    /// The replies this thread holds, by the holder's key.
    static HOLDING: RefCell<Vec<(usize, Rc<dyn HeldReplies>)>> = const { RefCell::new(Vec::new()) };
    /// The work this thread's concurrency model queued for it alone.
    static SERVING_HOOK: RefCell<Option<Rc<dyn Fn() -> bool>>> = const { RefCell::new(None) };
    /// Which of `OWNED`, `HOLDING` and `SERVING_HOOK` are in use (bits
    /// [`OWNS`], [`HOLDS`], [`HOOKED`]): every wait for a reply asks, and
    /// a thread that is only a client uses none, which this tells without
    /// reaching those cells (each, having a destructor, costs more to
    /// reach).
    static ROLES: Cell<u8> = const { Cell::new(0) };
}

/// [`ROLES`]' bit for `OWNED` not empty.
const OWNS: u8 = 1;
/// [`ROLES`]' bit for `HOLDING` not empty.
const HOLDS: u8 = 2;
/// [`ROLES`]' bit for `SERVING_HOOK` set.
const HOOKED: u8 = 4;

/// Whether the calling thread has `role` (a bit of [`ROLES`]).
fn has(role: u8) -> bool {
    ROLES.with(|r| r.get() & role != 0)
}

/// Records whether the calling thread has `role`.
fn set_role(role: u8, on: bool) {
    ROLES.with(|r| r.set(if on { r.get() | role } else { r.get() & !role }));
}

/// A thread's wait for a reply of its own (see [`waiting_for_reply`]).
#[derive(Debug)]
pub(crate) struct WaitingForReply(());

/// Called before a thread waits for a reply of its own: writes the
/// replies it holds, and has it hold none until the returned guard drops.
pub(crate) fn waiting_for_reply() -> WaitingForReply {
    write_held_replies();
    let _ = WAITING.try_with(|w| w.set(w.get() + 1));
    WaitingForReply(())
}

impl Drop for WaitingForReply {
    fn drop(&mut self) {
        let _ = WAITING.try_with(|w| w.set(w.get().saturating_sub(1)));
    }
}

/// Whether the calling thread is waiting for a reply of its own (then it
/// must not hold replies).
pub(crate) fn is_waiting_for_reply() -> bool {
    WAITING.try_with(|w| w.get() > 0).unwrap_or(false)
}

/// Records that the calling thread holds replies, under `key` (the
/// holder's identity), until [`stop_holding`].
pub(crate) fn hold_replies(key: usize, holder: Rc<dyn HeldReplies>) {
    HOLDING.with(|h| h.borrow_mut().push((key, holder)));
    set_role(HOLDS, true);
}

/// The calling thread no longer holds the replies of `key`.
pub(crate) fn stop_holding(key: usize) {
    HOLDING.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(i) = h.iter().rposition(|(k, _)| *k == key) {
            h.remove(i);
        }
        set_role(HOLDS, !h.is_empty());
    });
}

/// Writes the replies the calling thread holds, everywhere: for a thread
/// that may block now.
#[inline]
pub(crate) fn write_held_replies() {
    if has(HOLDS) {
        write_held();
    }
}

/// [`write_held_replies`] when the thread holds some.
fn write_held() {
    // Copied out first: writing may come back here.
    let holding = HOLDING
        .try_with(|h| {
            let h = h.borrow();
            (!h.is_empty()).then(|| h.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>())
        })
        .ok()
        .flatten();
    for holder in holding.into_iter().flatten() {
        holder.write_held();
    }
}

/// Installs the calling thread's serving hook (see the module docs) until
/// the returned guard drops: `serve` runs some of the work queued for this
/// thread without waiting long, and tells whether it ran any.
pub(crate) fn serve_while_waiting(serve: impl Fn() -> bool + 'static) -> ServingHookGuard {
    SERVING_HOOK.with(|c| *c.borrow_mut() = Some(Rc::new(serve)));
    set_role(HOOKED, true);
    ServingHookGuard(())
}

/// The calling thread's serving hook, if its model installed one.
pub(crate) fn serving_hook() -> Option<Rc<dyn Fn() -> bool>> {
    if !has(HOOKED) {
        return None;
    }
    SERVING_HOOK.with(|c| c.borrow().clone())
}

/// Removes the calling thread's serving hook when dropped (see
/// [`serve_while_waiting`]).
#[derive(Debug)]
pub(crate) struct ServingHookGuard(());

impl Drop for ServingHookGuard {
    fn drop(&mut self) {
        SERVING_HOOK.with(|c| c.borrow_mut().take());
        set_role(HOOKED, false);
    }
}

/// Records that the calling thread owns `owner` (it entered it), until
/// [`disowns`].
pub(crate) fn owns(owner: Arc<dyn HandOver>) {
    OWNED.with(|o| o.borrow_mut().push(owner));
    set_role(OWNS, true);
}

/// The calling thread no longer owns `owner` (it left it).
pub(crate) fn disowns(owner: &Arc<dyn HandOver>) {
    OWNED.with(|o| {
        let mut owned = o.borrow_mut();
        if let Some(i) = owned.iter().rposition(|p| Arc::ptr_eq(p, owner)) {
            owned.remove(i);
        }
        set_role(OWNS, !owned.is_empty());
    });
}

/// Whether the calling thread owns nothing that takes hand-overs.
#[cfg(test)]
pub(crate) fn owns_nothing() -> bool {
    OWNED.with(|o| o.borrow().is_empty())
}

/// What the calling thread owns, marked as waiting for a reply until
/// dropped: work for it that other threads take is handed over to this
/// thread meanwhile, and its wait runs it ([`HandOvers::run_one`]).
#[derive(Default)]
pub(crate) struct HandOvers {
    owned: Vec<Arc<dyn HandOver>>,
}

impl std::fmt::Debug for HandOvers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandOvers")
            .field("owned", &self.owned.len())
            .finish()
    }
}

/// Marks what the calling thread owns as waiting (see [`HandOvers`]);
/// `None` when it owns nothing.
#[inline]
pub(crate) fn hand_overs() -> Option<HandOvers> {
    if !has(OWNS) {
        return None;
    }
    start_hand_overs()
}

/// [`hand_overs`] when the thread owns something.
fn start_hand_overs() -> Option<HandOvers> {
    // Not empty: `OWNS` says so.
    let owned = OWNED.with(|o| o.borrow().clone());
    for owner in &owned {
        owner.start_waiting();
    }
    Some(HandOvers { owned })
}

impl HandOvers {
    /// Runs one piece of work handed over to this thread, if any
    /// (innermost owner first). True if it ran one.
    pub(crate) fn run_one(&self) -> bool {
        self.owned.iter().rev().any(|owner| owner.clone().run_one())
    }
}

impl Drop for HandOvers {
    fn drop(&mut self) {
        for owner in &self.owned {
            owner.stop_waiting();
        }
    }
}

/// One of this thread's collocated oneways, posted and not run yet:
/// counted until dropped (run, or dropped unrun by a reactor that
/// stopped).
pub(crate) struct PostedOneway(Arc<RequestCount>);

impl Drop for PostedOneway {
    fn drop(&mut self) {
        self.0.leave();
    }
}

/// Counts a collocated oneway this thread posts.
pub(crate) fn posting_oneway() -> PostedOneway {
    POSTED.with(|posted| {
        posted.enter();
        PostedOneway(posted.clone())
    })
}

/// Waits until every collocated oneway this thread posted has run.
pub(crate) fn wait_for_posted_oneways() {
    POSTED.with(|posted| posted.wait_idle());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_serves_in_at_most_max_nested_serving_waits_at_once() {
        let outer: Vec<NestedServing> = (0..MAX_NESTED_SERVING)
            .map(|_| nested_serving().expect("within the bound"))
            .collect();
        assert!(nested_serving().is_none(), "one wait too deep serves not");
        drop(outer.into_iter().last());
        let again = nested_serving();
        assert!(again.is_some(), "an inner wait returned: serving again");
    }
}
