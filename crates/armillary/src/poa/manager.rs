//! POA managers: the switch in front of one or more POAs that decides
//! whether their requests run, wait, are discarded or are refused.

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::current;
use super::PoaError;

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
pub enum Admission {
    /// Dispatch it now.
    Run,
    /// Answer TRANSIENT (discarding, or the holding queue is full).
    Discard,
    /// Answer OBJ_ADAPTER (inactive).
    Reject,
}

/// A request parked while its manager holds: called once with the decision
/// when the manager leaves the holding state.
pub type HeldRequest = Box<dyn FnOnce(Admission) + Send>;

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
/// use armillary::poa::PoaManagerState;
/// use armillary::Orb;
/// # use armillary_quoter::{generated, QuoterImpl};
/// use generated::stock::{quoter::GetQuoteError, QuoterSkeleton};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orb = Orb::with_config(OrbConfig::default())?;
/// let poa = orb.root_poa();
/// // QuoterImpl implements the generated QuoterServant (a table of prices).
/// let quoter = QuoterSkeleton::new(QuoterImpl::default()).activate(&poa)?;
///
/// let manager = poa.the_poa_manager();
/// assert_eq!(manager.state(), PoaManagerState::Holding);
/// manager.activate()?;
/// assert_eq!(quoter.get_quote("ACME")?, 4217);
///
/// // Discarding: calls fail with TRANSIENT, and did not run.
/// manager.discard_requests(false)?;
/// let refused = quoter.get_quote("ACME").unwrap_err();
/// assert!(matches!(&refused, GetQuoteError::System(e) if e.is_transient() && e.is_completed_no()));
/// manager.activate()?;
///
/// // Inactive is final.
/// manager.deactivate(true)?;
/// assert_eq!(manager.state(), PoaManagerState::Inactive);
/// assert!(manager.activate().is_err());
/// orb.shutdown(true);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PoaManager {
    inner: Arc<ManagerInner>,
}

struct ManagerInner {
    id: String,
    hold_limit: usize,
    state: Mutex<ManagerShared>,
    idle: Condvar,
}

struct ManagerShared {
    state: PoaManagerState,
    held: VecDeque<HeldRequest>,
    in_flight: usize,
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

/// Counts a request as in flight until dropped, so that
/// `wait_for_completion` can wait for it.
pub(crate) struct InFlight {
    manager: PoaManager,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut shared = self.manager.inner.state.lock();
        shared.in_flight -= 1;
        if shared.in_flight == 0 {
            self.manager.inner.idle.notify_all();
        }
    }
}

impl PoaManager {
    /// A new manager in the holding state; at most `hold_limit` requests
    /// wait in its queue.
    pub fn new(id: impl Into<String>, hold_limit: usize) -> Self {
        PoaManager {
            inner: Arc::new(ManagerInner {
                id: id.into(),
                hold_limit,
                state: Mutex::new(ManagerShared {
                    state: PoaManagerState::Holding,
                    held: VecDeque::new(),
                    in_flight: 0,
                }),
                idle: Condvar::new(),
            }),
        }
    }

    /// The manager's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The current state.
    pub fn state(&self) -> PoaManagerState {
        self.inner.state.lock().state
    }

    fn transition(&self, to: PoaManagerState, wait_for_completion: bool) -> Result<(), PoaError> {
        let released = {
            let mut shared = self.inner.state.lock();
            if shared.state == PoaManagerState::Inactive {
                return Err(PoaError::AdapterInactive);
            }
            shared.state = to;
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
        if wait_for_completion {
            self.wait_for_completion()?;
        }
        Ok(())
    }

    /// Lets requests through, releasing those that were held.
    pub fn activate(&self) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Active, false)
    }

    /// Queues new requests until the manager is activated again.
    pub fn hold_requests(&self, wait_for_completion: bool) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Holding, wait_for_completion)
    }

    /// Answers new (and held) requests with TRANSIENT.
    pub fn discard_requests(&self, wait_for_completion: bool) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Discarding, wait_for_completion)
    }

    /// Refuses requests from now on, for good (OBJ_ADAPTER). Etherealizing
    /// the objects of the POAs concerned is their own business (see
    /// [`Poa::destroy`](super::Poa::destroy)).
    pub fn deactivate(&self, wait_for_completion: bool) -> Result<(), PoaError> {
        self.transition(PoaManagerState::Inactive, wait_for_completion)
    }

    fn wait_for_completion(&self) -> Result<(), PoaError> {
        if current::in_upcall() {
            // Waiting from inside an upcall would wait for ourselves.
            return Err(PoaError::BadInvOrder);
        }
        let mut shared = self.inner.state.lock();
        while shared.in_flight > 0 {
            self.inner.idle.wait(&mut shared);
        }
        Ok(())
    }

    /// Decides what happens to a request now: `Ok` with a guard that counts
    /// it as in flight, or the reason it cannot run now — `Err(Run)` means
    /// "the manager holds: park it with [`hold`](Self::hold)".
    pub(crate) fn admit(&self) -> Result<InFlight, Admission> {
        let mut shared = self.inner.state.lock();
        match shared.state {
            PoaManagerState::Active => {
                shared.in_flight += 1;
                Ok(InFlight {
                    manager: self.clone(),
                })
            }
            PoaManagerState::Holding => Err(Admission::Run),
            PoaManagerState::Discarding => Err(Admission::Discard),
            PoaManagerState::Inactive => Err(Admission::Reject),
        }
    }

    /// Parks a request while the manager holds. If the manager stopped
    /// holding in the meantime, or the queue is full, the request is called
    /// at once with the decision (`Discard` for a full queue).
    pub fn hold(&self, request: HeldRequest) {
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

    /// How many requests are parked.
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
        let manager = PoaManager::new("m", 2);
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
        let guard = manager.admit().unwrap();
        drop(guard);
        manager.discard_requests(true).unwrap();
        assert!(matches!(manager.admit(), Err(Admission::Discard)));
        manager.deactivate(false).unwrap();
        assert!(matches!(manager.admit(), Err(Admission::Reject)));
        assert_eq!(manager.activate(), Err(PoaError::AdapterInactive));
    }
}
