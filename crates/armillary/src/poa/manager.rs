//! POA managers: the switch in front of one or more POAs that decides
//! whether their requests run, wait, are discarded or are refused.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::{current, Etherealize, Poa, PoaError, PoaInner, PoaRegistry};
use crate::completion::WaitForCompletion;

/// The four states of a POA manager (CORBA 3.0 §11.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoaManagerState {
    /// Requests are queued (up to a bound) until the manager is activated.
    Holding,
    /// Requests are dispatched.
    Active,
    /// Requests are refused with TRANSIENT.
    Discarding,
    /// Requests are refused with OBJ_ADAPTER; the manager cannot come back.
    Inactive,
}

/// What a manager decides for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Dispatch it now.
    Run,
    /// Answer TRANSIENT (discarding, or the holding queue is full).
    Discard,
    /// Answer OBJ_ADAPTER (inactive).
    Reject,
}

/// A request parked while its manager holds: called once with the decision
/// when the manager leaves the holding state.
pub(crate) type HeldRequest = Box<dyn FnOnce(Admission) + Send>;

/// A POA manager. Cheap to clone; clones control the same manager.
///
/// A manager starts [`Holding`](PoaManagerState::Holding): requests to its
/// POAs wait until it is activated. Discarding refuses them with TRANSIENT
/// (clients may try again later), deactivating refuses them for good.
///
/// # Examples
///
/// ```
/// use armillary::config::OrbConfig;
/// use armillary::poa::{Etherealize, PoaManagerState};
/// use armillary::{Orb, WaitForCompletion};
/// # use armillary_quoter::{generated, QuoterImpl};
/// use generated::stock::{quoter::GetQuoteError, QuoterSkeleton};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orb = Orb::with_config(OrbConfig::default())?;
/// let poa = orb.root_poa();
/// // QuoterImpl implements the generated QuoterServant (a table of prices).
/// let quoter = QuoterSkeleton::new(QuoterImpl::default()).activate(&poa)?;
///
/// let manager = poa.manager();
/// assert_eq!(manager.state(), PoaManagerState::Holding);
/// manager.activate()?;
/// assert_eq!(quoter.get_quote("ACME")?, 4217);
///
/// // Discarding: calls fail with TRANSIENT, and did not run.
/// manager.discard_requests(WaitForCompletion::No)?;
/// let refused = quoter.get_quote("ACME").unwrap_err();
/// assert!(matches!(&refused, GetQuoteError::System(e) if e.is_transient() && e.is_completed_no()));
/// manager.activate()?;
///
/// // Inactive is final.
/// manager.deactivate(Etherealize::Yes, WaitForCompletion::Yes)?;
/// assert_eq!(manager.state(), PoaManagerState::Inactive);
/// assert!(manager.activate().is_err());
/// orb.shutdown(armillary::WaitForCompletion::Yes)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PoaManager {
    inner: Arc<ManagerInner>,
}

struct ManagerInner {
    id: String,
    /// The ORB (its POA registry) whose POAs this manager gates; weak, as
    /// the registry owns the POAs that own their managers.
    registry: Weak<PoaRegistry>,
    hold_limit: usize,
    state: Mutex<ManagerShared>,
    /// `state.state`, for a request's admission without the lock (written
    /// under it).
    admitting: AtomicU8,
    /// The POAs this manager gates: their requests in progress are the
    /// manager's (waits for completion), and `deactivate` with
    /// etherealization etherealizes their objects.
    poas: Mutex<Vec<Weak<PoaInner>>>,
}

struct ManagerShared {
    state: PoaManagerState,
    held: VecDeque<HeldRequest>,
}

impl PoaManagerState {
    fn to_u8(self) -> u8 {
        match self {
            PoaManagerState::Holding => 0,
            PoaManagerState::Active => 1,
            PoaManagerState::Discarding => 2,
            PoaManagerState::Inactive => 3,
        }
    }

    fn from_u8(state: u8) -> PoaManagerState {
        match state {
            0 => PoaManagerState::Holding,
            1 => PoaManagerState::Active,
            2 => PoaManagerState::Discarding,
            _ => PoaManagerState::Inactive,
        }
    }
}

impl std::fmt::Debug for PoaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PoaManager")
            .field("id", &self.inner.id)
            .field("state", &self.state())
            .finish()
    }
}

impl PartialEq for PoaManager {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl PoaManager {
    /// A new manager for POAs of `registry`, in the holding state; at most
    /// `hold_limit` requests wait in its queue.
    pub(crate) fn new(
        id: impl Into<String>,
        registry: Weak<PoaRegistry>,
        hold_limit: usize,
    ) -> Self {
        PoaManager {
            inner: Arc::new(ManagerInner {
                id: id.into(),
                registry,
                hold_limit,
                state: Mutex::new(ManagerShared {
                    state: PoaManagerState::Holding,
                    held: VecDeque::new(),
                }),
                admitting: AtomicU8::new(PoaManagerState::Holding.to_u8()),
                poas: Mutex::new(Vec::new()),
            }),
        }
    }

    /// True when this manager gates POAs of `registry`'s ORB.
    pub(crate) fn belongs_to(&self, registry: &Arc<PoaRegistry>) -> bool {
        std::ptr::eq(self.inner.registry.as_ptr(), Arc::as_ptr(registry))
    }

    /// Records that `poa` is gated by this manager.
    pub(crate) fn attach(&self, poa: &Poa) {
        let mut poas = self.inner.poas.lock();
        poas.retain(|p| p.strong_count() > 0);
        poas.push(Arc::downgrade(&poa.inner));
    }

    /// The manager's id (the name of the POA it was made for:
    /// `RootPOAManager` for the root POA's).
    #[doc(alias = "get_id")]
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The current state.
    #[doc(alias = "get_state")]
    pub fn state(&self) -> PoaManagerState {
        PoaManagerState::from_u8(self.inner.admitting.load(Ordering::SeqCst))
    }

    fn transition(&self, to: PoaManagerState, wait: WaitForCompletion) -> Result<(), PoaError> {
        if wait.is_yes() {
            // Checked before anything changes, as CORBA requires.
            self.check_can_wait()?;
        }
        let released = {
            let mut shared = self.inner.state.lock();
            if shared.state == PoaManagerState::Inactive {
                return Err(PoaError::AdapterInactive);
            }
            shared.state = to;
            // Before the wait below: a request counted in after this sees
            // the new state (see `RequestCount`).
            self.inner.admitting.store(to.to_u8(), Ordering::SeqCst);
            if to == PoaManagerState::Holding {
                VecDeque::new()
            } else {
                std::mem::take(&mut shared.held)
            }
        };
        let decision = match to {
            PoaManagerState::Active => Admission::Run,
            PoaManagerState::Discarding => Admission::Discard,
            PoaManagerState::Inactive => Admission::Reject,
            PoaManagerState::Holding => Admission::Run,
        };
        for request in released {
            request(decision);
        }
        if wait.is_yes() {
            self.wait_idle();
        }
        Ok(())
    }

    /// Lets requests through, releasing those that were held.
    pub fn activate(&self) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Active, WaitForCompletion::No)
    }

    /// Queues new requests until the manager is activated again. With
    /// [`WaitForCompletion::Yes`] it returns once the requests already
    /// running have finished; from inside an upcall of the same ORB that
    /// would wait for itself, so it fails with [`PoaError::BadInvOrder`]
    /// (BAD_INV_ORDER, OMG minor 3) and changes nothing.
    pub fn hold_requests(&self, wait: WaitForCompletion) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Holding, wait)
    }

    /// Answers new (and held) requests with TRANSIENT; `wait` as for
    /// [`hold_requests`](Self::hold_requests).
    pub fn discard_requests(&self, wait: WaitForCompletion) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Discarding, wait)
    }

    /// Refuses requests from now on, for good (OBJ_ADAPTER); `wait` as for
    /// [`hold_requests`](Self::hold_requests). With [`Etherealize::Yes`],
    /// every POA of this manager that has a servant activator etherealizes
    /// its active objects (after the running requests, when waiting) and
    /// forgets them.
    pub fn deactivate(
        &self,
        etherealize: Etherealize,
        wait: WaitForCompletion,
    ) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Inactive, wait)?;
        if etherealize == Etherealize::Yes {
            for poa in self.poas() {
                poa.etherealize_all();
            }
        }
        Ok(())
    }

    /// BAD_INV_ORDER when the calling thread runs an upcall of this
    /// manager's ORB: waiting for completion would wait for itself.
    fn check_can_wait(&self) -> Result<(), PoaError> {
        let registry = self.inner.registry.upgrade();
        if registry.is_some_and(|r| current::in_upcall_of(&r)) {
            Err(PoaError::BadInvOrder)
        } else {
            Ok(())
        }
    }

    /// Waits until no request of this manager's POAs is in progress.
    fn wait_idle(&self) {
        for poa in self.poas() {
            poa.wait_idle();
        }
    }

    /// The POAs this manager gates that are still there.
    fn poas(&self) -> Vec<Poa> {
        self.inner
            .poas
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .map(|inner| Poa { inner })
            .collect()
    }

    /// Decides what happens to a request now, without a lock: `Ok` to run
    /// it, or the reason it cannot run now — `Err(Run)` means "the
    /// manager holds: park it with `hold`". The request must be counted in
    /// its POA already (see `RequestCount`), so that a state change that
    /// waits for completion waits for it when this lets it through.
    pub(crate) fn admit(&self) -> Result<(), Admission> {
        match self.state() {
            PoaManagerState::Active => Ok(()),
            PoaManagerState::Holding => Err(Admission::Run),
            PoaManagerState::Discarding => Err(Admission::Discard),
            PoaManagerState::Inactive => Err(Admission::Reject),
        }
    }

    /// Parks a request while the manager holds. If the manager stopped
    /// holding in the meantime, or the queue is full, the request is called
    /// at once with the decision (`Discard` for a full queue).
    pub(crate) fn hold(&self, request: HeldRequest) {
        let decision = {
            let mut shared = self.inner.state.lock();
            match shared.state {
                PoaManagerState::Holding if shared.held.len() < self.inner.hold_limit => {
                    shared.held.push_back(request);
                    return;
                }
                PoaManagerState::Holding | PoaManagerState::Discarding => Admission::Discard,
                PoaManagerState::Active => Admission::Run,
                PoaManagerState::Inactive => Admission::Reject,
            }
        };
        request(decision);
    }

    /// How many requests are parked while the manager holds (bounded by
    /// the ORB's `hold_limit`).
    pub fn held_count(&self) -> usize {
        self.inner.state.lock().held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn held_requests_are_released_on_activate_and_bounded() {
        let manager = PoaManager::new("m", Weak::new(), 2);
        assert_eq!(manager.state(), PoaManagerState::Holding);
        assert!(matches!(manager.admit(), Err(Admission::Run)));
        let ran = Arc::new(AtomicUsize::new(0));
        let discarded = Arc::new(AtomicUsize::new(0));
        for _ in 0..3 {
            let (ran, discarded) = (ran.clone(), discarded.clone());
            manager.hold(Box::new(move |a| match a {
                Admission::Run => {
                    ran.fetch_add(1, Ordering::SeqCst);
                }
                _ => {
                    discarded.fetch_add(1, Ordering::SeqCst);
                }
            }));
        }
        assert_eq!(manager.held_count(), 2);
        assert_eq!(discarded.load(Ordering::SeqCst), 1);
        manager.activate().unwrap();
        assert_eq!(ran.load(Ordering::SeqCst), 2);
        manager.admit().unwrap();
        manager.discard_requests(WaitForCompletion::Yes).unwrap();
        assert!(matches!(manager.admit(), Err(Admission::Discard)));
        manager
            .deactivate(Etherealize::No, WaitForCompletion::No)
            .unwrap();
        assert!(matches!(manager.admit(), Err(Admission::Reject)));
        assert_eq!(manager.activate(), Err(PoaError::AdapterInactive));
    }
}
