//! The requests running on one active object, and the deactivation that
//! waits for them (CORBA 3.0 §11.3.9.15, `deactivate_object`): a
//! deactivated object leaves the active object map, and its servant is
//! etherealized, only once no request is active on it.
//!
//! Each active object map entry has an [`ObjectActivity`]. A request that
//! finds the entry counts itself in ([`ObjectActivity::enter`], under the
//! POA's state lock, only while the object is not deactivating) and out
//! when its [`ObjectRequest`] is dropped, after its upcall.
//! `Poa::deactivate_object` marks the entry under the write lock, so no
//! request enters after it; whichever of it and the last request to leave
//! sees the count at zero completes the deactivation
//! (`Poa::complete_deactivation`, which does it once).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use super::{ObjectId, Poa};

/// The requests in progress on one active object, and whether it is being
/// deactivated.
pub(crate) struct ObjectActivity {
    object_id: ObjectId,
    running: AtomicUsize,
    deactivating: AtomicBool,
}

impl ObjectActivity {
    /// The activity of a newly activated object.
    pub(crate) fn new(object_id: ObjectId) -> Arc<ObjectActivity> {
        Arc::new(ObjectActivity {
            object_id,
            running: AtomicUsize::new(0),
            deactivating: AtomicBool::new(false),
        })
    }

    /// The object's id.
    pub(crate) fn object_id(&self) -> &ObjectId {
        &self.object_id
    }

    /// True once `deactivate_object` was called for the object: new
    /// requests are not dispatched to it.
    pub(crate) fn is_deactivating(&self) -> bool {
        self.deactivating.load(Ordering::SeqCst)
    }

    /// Counts a request in until the returned guard is dropped. Call while
    /// holding `poa`'s state lock, having checked that the object is not
    /// deactivating.
    pub(crate) fn enter(self: &Arc<Self>, poa: &Poa) -> ObjectRequest {
        self.running.fetch_add(1, Ordering::SeqCst);
        ObjectRequest {
            poa: poa.clone(),
            activity: self.clone(),
        }
    }

    /// Counts a request in without the POA's lock: true when the object
    /// is not deactivating (the request must [`leave`](Self::leave)
    /// after its upcall), false (counted out again) when it is. As with
    /// [`deactivate`](Self::deactivate), of the two at least one sees
    /// the other: a request let in here is waited for.
    pub(crate) fn try_enter(&self, poa: &Poa) -> bool {
        self.running.fetch_add(1, Ordering::SeqCst);
        if self.is_deactivating() {
            self.leave(poa);
            return false;
        }
        true
    }

    /// Counts a request out; the last to leave an object being
    /// deactivated completes the deactivation, on this thread.
    pub(crate) fn leave(&self, poa: &Poa) {
        let last = self.running.fetch_sub(1, Ordering::SeqCst) == 1;
        if last && self.is_deactivating() {
            poa.complete_deactivation(self);
        }
    }

    /// Marks the object deactivating; call while holding the POA's state
    /// lock for writing. True when no request is running on it: the
    /// caller completes the deactivation now; otherwise the last request
    /// to leave does.
    pub(crate) fn deactivate(&self) -> bool {
        // SeqCst on both sides: of this store-then-load and a leaving
        // request's decrement-then-load, at least one sees the other's
        // write, so the deactivation is completed (perhaps twice, which
        // `complete_deactivation` tolerates).
        self.deactivating.store(true, Ordering::SeqCst);
        self.running.load(Ordering::SeqCst) == 0
    }
}

/// One request counted in on an active object (see
/// [`ObjectActivity::enter`]). Dropping it counts it out and, when it is
/// the last request on an object being deactivated, completes the
/// deactivation: the object leaves the map and the servant activator, if
/// any, etherealizes it, on the dropping thread, after the upcall.
pub(crate) struct ObjectRequest {
    poa: Poa,
    activity: Arc<ObjectActivity>,
}

impl ObjectRequest {
    /// The object's activity.
    pub(crate) fn activity(&self) -> &Arc<ObjectActivity> {
        &self.activity
    }
}

impl Drop for ObjectRequest {
    fn drop(&mut self) {
        self.activity.leave(&self.poa);
    }
}
