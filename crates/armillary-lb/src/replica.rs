//! The replica's side: [`ReplicaRegistration`] adds a replica to a group
//! of a locator and reports its load every period from a thread of its
//! own, registering again whenever the locator does not know it (the
//! locator restarted, or dropped it after missed probes while it was
//! unreachable); [`RequestsInProgress`] is a load to report.
//!
//! ```
//! use std::time::Duration;
//! use armillary::Orb;
//! use armillary_lb::replica::{ReplicaRegistration, RequestsInProgress};
//! # use armillary::{Servant, ServerRequest, SystemException};
//! # struct Echo;
//! # impl Servant for Echo {
//! #     fn repository_id(&self) -> &'static str { "IDL:Echo:1.0" }
//! #     fn is_a(&self, id: &str) -> bool { id == "IDL:Echo:1.0" }
//! #     fn dispatch(&self, _: &mut ServerRequest<'_>) -> Result<(), SystemException> { Ok(()) }
//! # }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The locator (here in the same ORB; usually `armillary lb serve`).
//! let orb = Orb::with_config(Default::default())?;
//! let service = armillary_lb::start(&orb, armillary_lb::LocatorConfig::default())?;
//!
//! // A replica: its servant, registered, its load reported every second.
//! let poa = orb.root_poa();
//! poa.manager().activate()?;
//! let echo: std::sync::Arc<dyn Servant> = std::sync::Arc::new(Echo);
//! let replica = poa.servant_to_reference(&echo)?;
//! let busy = RequestsInProgress::default();
//! let load = busy.clone();
//! let registration = ReplicaRegistration::start(
//!     service.locator(),
//!     "echo",
//!     &replica,
//!     Duration::from_secs(1),
//!     move || load.load(),
//! )?;
//! assert_eq!(registration.group(), "echo");
//! // Clients call `registration.group_reference()`, the group's one reference.
//! registration.withdraw()?;
//! # drop(service);
//! # orb.shutdown(armillary::WaitForCompletion::Yes)?;
//! # Ok(())
//! # }
//! ```

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use armillary::{ObjectRef, SystemException};
use parking_lot::Mutex;

use crate::load_balancing::locator::{AddReplicaError, RemoveReplicaError, ReportLoadError};
use crate::load_balancing::Locator;
use crate::periodic::Periodic;

/// Why a replica could not register with a locator (or withdraw).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// The locator refused the group name (empty, or too long).
    #[error("the locator refused the group name {group:?}: {reason}")]
    InvalidName {
        /// The name.
        group: String,
        /// The locator's reason.
        reason: String,
    },
    /// The group's replicas implement another interface.
    #[error("group {group:?} serves {group_interface}, not {replica_interface}")]
    InterfaceMismatch {
        /// The group.
        group: String,
        /// The interface of the group.
        group_interface: String,
        /// The interface of this replica.
        replica_interface: String,
    },
    /// The locator refused the reference (nil, no IIOP profile, one of
    /// its own groups).
    #[error("the locator refused the replica: {reason}")]
    InvalidReplica {
        /// The locator's reason.
        reason: String,
    },
    /// When withdrawing: the locator no longer knows the replica (it
    /// dropped it, or restarted).
    #[error("the locator does not know replica {replica} of group {group:?}")]
    UnknownReplica {
        /// The group.
        group: String,
        /// The replica's id.
        replica: String,
    },
    /// The locator could not be reached, or failed.
    #[error("cannot reach the locator")]
    Unreachable(#[source] SystemException),
    /// The thread that reports the load could not start.
    #[error("cannot start the load-reporting thread")]
    Thread(#[source] std::io::Error),
}

impl From<AddReplicaError> for RegistrationError {
    fn from(e: AddReplicaError) -> Self {
        match e {
            AddReplicaError::InvalidName(e) => RegistrationError::InvalidName {
                group: e.group,
                reason: e.reason,
            },
            AddReplicaError::InterfaceMismatch(e) => RegistrationError::InterfaceMismatch {
                group: e.group,
                group_interface: e.group_interface,
                replica_interface: e.replica_interface,
            },
            AddReplicaError::InvalidReplica(e) => {
                RegistrationError::InvalidReplica { reason: e.reason }
            }
            AddReplicaError::System(e) => RegistrationError::Unreachable(e),
        }
    }
}

/// What the registration and its reporting thread share.
#[derive(Debug)]
struct Registered {
    locator: Locator,
    group: String,
    replica: ObjectRef,
    /// The id the locator gave the replica (a new one after registering
    /// again).
    id: Mutex<String>,
    /// Load reports the locator took.
    reports: AtomicU64,
    /// Times the replica registered again.
    re_registrations: AtomicU64,
}

impl Registered {
    /// Reports `load`; registers again if the locator does not know the
    /// replica. A locator that cannot be reached is tried again at the
    /// next period.
    fn report(&self, load: f64) {
        let id = self.id.lock().clone();
        match self.locator.report_load(&self.group, &id, load) {
            Ok(()) => {
                self.reports.fetch_add(1, Ordering::SeqCst);
            }
            Err(ReportLoadError::UnknownGroup(_) | ReportLoadError::UnknownReplica(_)) => {
                if let Ok(new_id) = self.locator.add_replica(&self.group, &self.replica) {
                    *self.id.lock() = new_id;
                    self.re_registrations.fetch_add(1, Ordering::SeqCst);
                }
            }
            Err(ReportLoadError::System(_)) => {}
        }
    }
}

/// A replica registered with a locator, its load reported every period
/// until this is dropped (which leaves the replica registered: the
/// locator drops it when it stops answering) or
/// [`withdraw`](Self::withdraw)n.
#[derive(Debug)]
pub struct ReplicaRegistration {
    registered: Arc<Registered>,
    group_reference: ObjectRef,
    _reporter: Periodic,
}

impl ReplicaRegistration {
    /// Adds `replica` to group `group` of `locator` (the group is created
    /// for the replica's interface if it does not exist), then reports
    /// `load()` every `report_period` from a thread of its own. Calls to
    /// the locator give up after `report_period` (at least a second).
    pub fn start(
        locator: &Locator,
        group: &str,
        replica: &ObjectRef,
        report_period: Duration,
        mut load: impl FnMut() -> f64 + Send + 'static,
    ) -> Result<ReplicaRegistration, RegistrationError> {
        let timeout = report_period.max(Duration::from_secs(1));
        let locator = Locator::from_object(locator.as_object().with_call_timeout(timeout));
        let id = locator.add_replica(group, replica)?;
        let group_reference = locator.group_reference(group).map_err(|e| match e {
            crate::load_balancing::locator::GroupReferenceError::System(e) => {
                RegistrationError::Unreachable(e)
            }
            // Removed between the two calls: it is there again at the
            // first report.
            crate::load_balancing::locator::GroupReferenceError::UnknownGroup(_) => {
                RegistrationError::UnknownReplica {
                    group: group.to_owned(),
                    replica: id.clone(),
                }
            }
        })?;
        let registered = Arc::new(Registered {
            locator,
            group: group.to_owned(),
            replica: replica.clone(),
            id: Mutex::new(id),
            reports: AtomicU64::new(0),
            re_registrations: AtomicU64::new(0),
        });
        let reporting = registered.clone();
        let reporter = Periodic::spawn("armillary-lb-report", report_period, move || {
            reporting.report(load());
        })
        .map_err(RegistrationError::Thread)?;
        Ok(ReplicaRegistration {
            registered,
            group_reference,
            _reporter: reporter,
        })
    }

    /// The group's name.
    pub fn group(&self) -> &str {
        &self.registered.group
    }

    /// The replica's id in its group (it changes when the replica
    /// registers again).
    pub fn replica_id(&self) -> String {
        self.registered.id.lock().clone()
    }

    /// The group's reference, the one clients call.
    pub fn group_reference(&self) -> &ObjectRef {
        &self.group_reference
    }

    /// Load reports the locator has taken so far.
    pub fn reports(&self) -> u64 {
        self.registered.reports.load(Ordering::SeqCst)
    }

    /// Times the replica registered again because the locator no longer
    /// knew it.
    pub fn re_registrations(&self) -> u64 {
        self.registered.re_registrations.load(Ordering::SeqCst)
    }

    /// Stops reporting and takes the replica out of its group.
    pub fn withdraw(self) -> Result<(), RegistrationError> {
        let ReplicaRegistration {
            registered,
            _reporter,
            ..
        } = self;
        drop(_reporter);
        let id = registered.id.lock().clone();
        registered
            .locator
            .remove_replica(&registered.group, &id)
            .map_err(|e| match e {
                RemoveReplicaError::UnknownGroup(_) | RemoveReplicaError::UnknownReplica(_) => {
                    RegistrationError::UnknownReplica {
                        group: registered.group.clone(),
                        replica: id.clone(),
                    }
                }
                RemoveReplicaError::System(e) => RegistrationError::Unreachable(e),
            })
    }
}

/// Counts a servant's requests in progress: a load for
/// [`ReplicaRegistration`] that goes with the least-loaded policy's
/// default forward weight of 1 (one forwarded client, one more request).
///
/// ```
/// use armillary_lb::replica::RequestsInProgress;
/// let busy = RequestsInProgress::default();
/// {
///     let _one = busy.enter();
///     let _two = busy.enter();
///     assert_eq!(busy.load(), 2.0);
/// }
/// assert_eq!(busy.count(), 0);
/// ```
#[derive(Debug, Clone, Default)]
pub struct RequestsInProgress(Arc<AtomicUsize>);

impl RequestsInProgress {
    /// Counts a request in until the guard is dropped.
    pub fn enter(&self) -> InProgress {
        self.0.fetch_add(1, Ordering::SeqCst);
        InProgress(self.0.clone())
    }

    /// Requests in progress now.
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// [`count`](Self::count) as a load.
    pub fn load(&self) -> f64 {
        self.count() as f64
    }
}

/// One request counted in by [`RequestsInProgress::enter`], until
/// dropped.
#[derive(Debug)]
#[must_use = "the request counts only while the guard lives"]
pub struct InProgress(Arc<AtomicUsize>);

impl Drop for InProgress {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
