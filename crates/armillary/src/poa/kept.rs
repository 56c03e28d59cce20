//! [`KeptTarget`]: an active object that a collocated reference found in
//! its POA's active object map, kept by the reference so that its later
//! `thru-poa` calls skip the lookup (the object key decoded, the POA and
//! the map searched under their locks) and take no lock at all.
//!
//! What a kept call still checks, each time, is what could have changed
//! since: the POA not destroyed, its manager letting requests through,
//! the object not deactivated (a new activation under the same id is a
//! new entry, so an old target never reaches a new servant), the servant
//! still there. It counts itself in on the POA and on the object as a
//! request read from a connection does (`RequestCount`,
//! `ObjectActivity::try_enter`), so that waits for completion and
//! deactivations wait for it, and it runs with everything else an upcall
//! gets ([`KeptCall::run`]). When one of the checks fails nothing has
//! happened, and the call goes the whole way through the POA, which
//! answers it as it would any request.
//!
//! A target holds its servant weakly: a reference does not keep a
//! deactivated object's servant alive. A reference keeps its targets in
//! a [`KeptSlot`].

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, Weak};

use arc_swap::ArcSwapOption;

use super::object_activity::ObjectActivity;
use super::{current, ObjectId, Poa, Upcall};
use crate::servant::Servant;

/// An active object as a collocated reference keeps it (see the module
/// docs).
pub(crate) struct KeptTarget {
    poa: Poa,
    object_id: ObjectId,
    servant: Weak<dyn Servant>,
    activity: Arc<ObjectActivity>,
}

impl std::fmt::Debug for KeptTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptTarget")
            .field("poa", &self.poa)
            .field("object_id", &self.object_id)
            .finish_non_exhaustive()
    }
}

impl KeptTarget {
    /// The target of `upcall`, when its servant came from the active
    /// object map (not a servant locator's or a default servant, which
    /// answer for one request at a time).
    pub(crate) fn of(upcall: &Upcall) -> Option<Arc<KeptTarget>> {
        if !upcall.found_in_active_object_map() {
            return None;
        }
        Some(Arc::new(KeptTarget {
            poa: upcall.poa().clone(),
            object_id: upcall.object_id().clone(),
            servant: Arc::downgrade(upcall.servant()),
            activity: upcall.activity()?.clone(),
        }))
    }

    /// The POA the object lives in.
    pub(crate) fn poa(&self) -> &Poa {
        &self.poa
    }

    /// The object's id.
    pub(crate) fn object_id(&self) -> &ObjectId {
        &self.object_id
    }

    /// The servant, while it is alive.
    pub(crate) fn servant(&self) -> Option<Arc<dyn Servant>> {
        self.servant.upgrade()
    }

    /// True once the target can never be called again: its object was
    /// deactivated, its POA destroyed, or its servant dropped.
    pub(crate) fn is_stale(&self) -> bool {
        self.activity.is_deactivating()
            || self.poa.inner.destroyed.load(Ordering::SeqCst)
            || self.servant.strong_count() == 0
    }

    /// Lets one call in, when the object can take a request now: counted
    /// in on the POA and the object, with its servant (see the module
    /// docs); `None`, with nothing done, when it cannot.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<KeptCall<'_>> {
        let servant = self.servant.upgrade()?;
        let poa = &self.poa.inner;
        // Counted in before the checks (see `RequestCount`).
        poa.requests.enter();
        let in_poa = InPoa(self);
        if poa.destroyed.load(Ordering::SeqCst) || poa.manager.admit().is_err() {
            return None;
        }
        if !self.activity.try_enter(&self.poa) {
            return None;
        }
        Some(KeptCall {
            target: self,
            servant,
            _in_object: InObject(self),
            _in_poa: in_poa,
        })
    }
}

/// One call let in on a kept target ([`KeptTarget::admit`]), counted
/// in until it has run or is dropped.
pub(crate) struct KeptCall<'a> {
    target: &'a Arc<KeptTarget>,
    servant: Arc<dyn Servant>,
    // Dropped in this order, as an upcall's counts are (see `Upcall`).
    _in_object: InObject<'a>,
    _in_poa: InPoa<'a>,
}

impl KeptCall<'_> {
    /// Runs `call` on the servant as [`Upcall::run_with`] does: the
    /// SINGLE_THREAD_MODEL serialisation, POA Current, the counts. `call`
    /// contains the servant's panics itself.
    pub(crate) fn run<T>(self, call: impl FnOnce(&dyn Servant) -> T) -> T {
        let serial = self
            .target
            .poa
            .inner
            .single_thread
            .as_ref()
            .map(|s| s.enter());
        let frame = current::enter_kept(self.target);
        let outcome = call(&*self.servant);
        drop(frame);
        drop(serial);
        outcome
    }
}

/// Counts a kept call out of its POA when dropped.
struct InPoa<'a>(&'a KeptTarget);

impl Drop for InPoa<'_> {
    fn drop(&mut self) {
        self.0.poa.inner.requests.leave();
    }
}

/// Counts a kept call out of its object when dropped.
struct InObject<'a>(&'a KeptTarget);

impl Drop for InObject<'_> {
    fn drop(&mut self) {
        self.0.activity.leave(&self.0.poa);
    }
}

/// Where a reference keeps its target: the first one found, read with no
/// atomic operation but a load, and, once that one is stale (its object
/// deactivated and activated again), the latest one.
#[derive(Default)]
pub(crate) struct KeptSlot {
    first: OnceLock<Arc<KeptTarget>>,
    later: ArcSwapOption<KeptTarget>,
}

impl std::fmt::Debug for KeptSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptSlot")
            .field("first", &self.first.get())
            .field("later", &*self.later.load())
            .finish()
    }
}

impl KeptSlot {
    /// True when no target that can still be called is kept.
    pub(crate) fn is_vacant(&self) -> bool {
        match self.first.get() {
            None => true,
            Some(first) if !first.is_stale() => false,
            Some(_) => self.later.load().as_ref().is_none_or(|t| t.is_stale()),
        }
    }

    /// Keeps `target`, for later calls.
    pub(crate) fn keep(&self, target: Arc<KeptTarget>) {
        if let Err(target) = self.first.set(target) {
            self.later.store(Some(target));
        }
    }

    /// Runs `call` on the kept target's servant ([`KeptTarget::admit`],
    /// [`KeptCall::run`]); `None`, with nothing done, when nothing is
    /// kept or the target cannot take the call now.
    pub(crate) fn run<T>(&self, call: impl FnOnce(&dyn Servant) -> T) -> Option<T> {
        let first = self.first.get()?;
        if let Some(admitted) = first.admit() {
            return Some(admitted.run(call));
        }
        if !first.is_stale() {
            return None;
        }
        let later = self.later.load();
        let target = later.as_ref()?;
        if let Some(admitted) = target.admit() {
            return Some(admitted.run(call));
        }
        if target.is_stale() {
            // Forgotten, unless a newer one took its place meanwhile.
            let _ = self.later.compare_and_swap(target, None);
        }
        None
    }
}
