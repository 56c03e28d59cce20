//! `PortableInterceptor::Current`: the slots an ORB's initializers
//! allocated, one set per thread (the *thread scope*). A client request
//! takes a copy of them when it starts; a server request has its own set
//! (the *request scope*), which becomes the servant thread's for the
//! upcall ([`RequestScope`]).

use std::cell::RefCell;

use armillary_giop::any::Any;

use super::PiError;

/// A PICurrent slot, as [`OrbInitInfo::allocate_slot_id`](super::OrbInitInfo::allocate_slot_id)
/// gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotId(pub(crate) u32);

impl SlotId {
    /// The slot's index among its ORB's slots.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

thread_local! {
    /// Per ORB (its interceptors' `scope`), this thread's slots.
    static THREAD_SLOTS: RefCell<Vec<(u64, Vec<Option<Any>>)>> = const { RefCell::new(Vec::new()) };
}

/// One ORB's `PICurrent`: the calling thread's slots
/// ([`Orb::pi_current`](crate::Orb::pi_current)).
///
/// A slot holds an `any` or nothing (`None`, as a new thread's slots and a
/// new request's do).
#[derive(Debug, Clone)]
pub struct PiCurrent {
    scope: u64,
    slots: usize,
}

impl PiCurrent {
    pub(crate) fn new(scope: u64, slots: usize) -> Self {
        PiCurrent { scope, slots }
    }

    /// The value in slot `id` on this thread.
    pub fn get_slot(&self, id: SlotId) -> Result<Option<Any>, PiError> {
        self.check(id)?;
        Ok(THREAD_SLOTS.with(|t| {
            t.borrow()
                .iter()
                .find(|(scope, _)| *scope == self.scope)
                .and_then(|(_, slots)| slots.get(id.index()).cloned().flatten())
        }))
    }

    /// Puts `value` in slot `id` on this thread (`None` empties it).
    pub fn set_slot(&self, id: SlotId, value: impl Into<Option<Any>>) -> Result<(), PiError> {
        self.check(id)?;
        let value = value.into();
        THREAD_SLOTS.with(|t| {
            let mut t = t.borrow_mut();
            let at = match t.iter().position(|(scope, _)| *scope == self.scope) {
                Some(at) => at,
                None => {
                    t.push((self.scope, vec![None; self.slots]));
                    t.len() - 1
                }
            };
            t[at].1[id.index()] = value;
        });
        Ok(())
    }

    fn check(&self, id: SlotId) -> Result<(), PiError> {
        if id.index() < self.slots {
            Ok(())
        } else {
            Err(PiError::InvalidSlot(id))
        }
    }
}

/// A copy of this thread's `count` slots of the ORB `scope`.
pub(crate) fn thread_slots(scope: u64, count: usize) -> Vec<Option<Any>> {
    if count == 0 {
        return Vec::new();
    }
    THREAD_SLOTS.with(|t| {
        t.borrow()
            .iter()
            .find(|(s, _)| *s == scope)
            .map(|(_, slots)| slots.clone())
            .unwrap_or_else(|| vec![None; count])
    })
}

/// While alive, this thread's slots of one ORB are a request's (the
/// server's request scope, for the servant's upcall); dropped, the
/// thread's own come back.
#[must_use = "the request's slots are the thread's only while the scope lives"]
pub(crate) struct RequestScope {
    scope: u64,
    saved: Option<Vec<Option<Any>>>,
}

impl RequestScope {
    /// Makes `slots` the calling thread's slots of the ORB `scope`.
    pub(crate) fn enter(scope: u64, slots: Vec<Option<Any>>) -> Self {
        let saved = THREAD_SLOTS.with(|t| {
            let mut t = t.borrow_mut();
            match t.iter_mut().find(|(s, _)| *s == scope) {
                Some((_, there)) => Some(std::mem::replace(there, slots)),
                None => {
                    t.push((scope, slots));
                    None
                }
            }
        });
        RequestScope { scope, saved }
    }
}

impl Drop for RequestScope {
    fn drop(&mut self) {
        let saved = self.saved.take();
        // The thread-local may be gone while the thread ends.
        let _ = THREAD_SLOTS.try_with(|t| {
            let mut t = t.borrow_mut();
            if let Some(at) = t.iter().position(|(s, _)| *s == self.scope) {
                match saved {
                    Some(slots) => t[at].1 = slots,
                    None => {
                        t.swap_remove(at);
                    }
                }
            }
        });
    }
}
