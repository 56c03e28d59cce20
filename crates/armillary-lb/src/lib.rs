//! Load balancing for Armillary: an object-group locator in the manner
//! of Visibroker's Smart Agent and TAO's `LoadManager`, built from
//! standard CORBA parts only, so that clients need no change — Armillary,
//! omniORB and any ORB that follows LOCATION_FORWARD.
//!
//! - Replicas of one interface register with the locator under a group
//!   name ([`load_balancing::Locator::add_replica`], or
//!   [`replica::ReplicaRegistration`], which also reports their load
//!   every period).
//! - Clients get the group's one reference
//!   ([`load_balancing::Locator::group_reference`]): an IOR whose profile
//!   is the locator's endpoint and whose object key names the group.
//! - The locator answers every request on that reference with
//!   LOCATION_FORWARD to a replica its policy picks
//!   ([`PolicyKind::RoundRobin`], or [`PolicyKind::LeastLoaded`] from the
//!   loads the replicas report). It is a servant locator on a NON_RETAIN
//!   POA whose `preinvoke` raises `ForwardRequest`, so any operation of
//!   any interface is forwarded without the locator knowing the
//!   replicas' IDL. The client's ORB sends the request again to the
//!   replica; omniORB keeps using the replica for later calls, Armillary
//!   asks the locator on every call. A LocateRequest on a group is
//!   answered OBJECT_FORWARD the same way (`forwarder.rs`).
//! - A replica that stops answering is dropped: the locator probes each
//!   replica with `_non_existent` every probe period, and drops one that
//!   is gone, or unreachable for [`LocatorConfig::failures_to_drop`]
//!   probes in a row. Clients of a dropped replica are forwarded to
//!   another on their next call: a client (omniORB's, Armillary's) goes
//!   back to the group reference when a forwarded one cannot be reached,
//!   and Armillary starts every call there anyway.
//!
//! `docs/load_balancing.md` tells the whole story, what a client sees
//! when its replica dies included; `armillary lb serve` and `armillary
//! lb list` are the command line.
//!
//! ```
//! use armillary::config::{Collocation, OrbConfig};
//! use armillary::{CompletionStatus, Orb, Servant, ServerRequest, SystemException};
//! use armillary_lb::{LocatorConfig, PolicyKind};
//!
//! /// A replica that answers `whoami` with its name.
//! struct Named(&'static str);
//! impl Servant for Named {
//!     fn repository_id(&self) -> &'static str { "IDL:Named:1.0" }
//!     fn is_a(&self, id: &str) -> bool { id == "IDL:Named:1.0" }
//!     fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
//!         let written = req.results().write_string(self.0);
//!         written.map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::Yes))
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The locator, in a server ORB of its own.
//! let lb_orb = Orb::with_config(OrbConfig::default())?;
//! let service = armillary_lb::start(&lb_orb, LocatorConfig::new().policy(PolicyKind::RoundRobin))?;
//!
//! // Two replicas in another ORB, registered in group "named".
//! let servers = Orb::with_config(OrbConfig::default())?;
//! let poa = servers.root_poa();
//! poa.manager().activate()?;
//! for name in ["a", "b"] {
//!     let servant: std::sync::Arc<dyn Servant> = std::sync::Arc::new(Named(name));
//!     service.locator().add_replica("named", &poa.servant_to_reference(&servant)?)?;
//! }
//! let group = lb_orb.object_to_string(&service.locator().group_reference("named")?);
//!
//! // A client (over IIOP, as from another process) calls the group.
//! let client = Orb::with_config(OrbConfig::new().collocation(Collocation::None))?;
//! let named = client.string_to_object(&group)?;
//! let whoami = || named.invoke_plain("whoami", &|_| Ok(()), |r| Ok(r.read_string()?));
//! assert_eq!([whoami()?, whoami()?, whoami()?], ["a", "b", "a"]);
//! # drop(service);
//! # for orb in [client, servers, lb_orb] { orb.shutdown(armillary::WaitForCompletion::Yes)?; }
//! # Ok(())
//! # }
//! ```
//!
//! Not here: the replicas' state (a group is of interchangeable,
//! stateless replicas, or of replicas that share their state elsewhere),
//! and persistence of the groups (they live as long as the locator;
//! replicas registered with [`replica::ReplicaRegistration`] register
//! again after a restart, and the group references stay valid when the
//! locator listens on a fixed endpoint).

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod forwarder;
mod groups;
mod liveness;
mod locator;
mod periodic;
pub mod policy;
pub mod replica;

use std::sync::Arc;
use std::time::Duration;

use armillary::poa::{
    IdAssignmentPolicy, LifespanPolicy, Poa, PoaError, Policy, RequestProcessingPolicy,
    ServantManager, ServantRetentionPolicy,
};
use armillary::{ObjectRef, Orb};

pub use policy::{PolicyKind, UnknownPolicy};

armillary::include_idl!("load_balancing");

/// The locator's object key and initial reference:
/// `corbaloc:iiop:HOST:PORT/LoadBalancer`.
pub const LOCATOR_KEY: &str = "LoadBalancer";

/// The port `armillary lb serve` listens on unless told otherwise (a
/// fixed one, so that group references outlive a restart).
pub const DEFAULT_PORT: u16 = 2810;

/// The longest group name, in bytes.
pub const MAX_GROUP_NAME: usize = 256;

/// The POA of the locator object (a child of the root POA).
const LOCATOR_POA: &str = "LoadBalancing";
/// The POA of the group references (a child of [`LOCATOR_POA`]).
const GROUPS_POA: &str = "Groups";

/// Minor codes of the system exceptions a group reference raises.
pub mod minor {
    use armillary::giop::system_exception::armillary_minor;

    /// OBJECT_NOT_EXIST: the locator has no group of that name.
    pub const UNKNOWN_GROUP: u32 = armillary_minor(60);
    /// TRANSIENT: the group has no replica now (none registered yet, or
    /// every one dropped); a later call may find one.
    pub const NO_REPLICA: u32 = armillary_minor(61);
}

/// How a locator balances and checks its replicas.
///
/// ```
/// use std::time::Duration;
/// use armillary_lb::{LocatorConfig, PolicyKind};
/// let config = LocatorConfig::new()
///     .policy(PolicyKind::LeastLoaded)
///     .probe_period(Duration::from_millis(200))
///     .failures_to_drop(1);
/// assert_eq!(config.get_policy(), PolicyKind::LeastLoaded);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LocatorConfig {
    policy: PolicyKind,
    forward_weight: f64,
    forward_memory: Duration,
    probe_period: Duration,
    probe_timeout: Duration,
    failures_to_drop: u32,
}

impl Default for LocatorConfig {
    fn default() -> Self {
        LocatorConfig {
            policy: PolicyKind::RoundRobin,
            forward_weight: 1.0,
            forward_memory: Duration::from_secs(1),
            probe_period: Duration::from_secs(1),
            probe_timeout: Duration::from_secs(1),
            failures_to_drop: 2,
        }
    }
}

impl LocatorConfig {
    /// Round robin, probes every second, each bounded by a second, a
    /// replica dropped after two missed probes in a row.
    pub fn new() -> Self {
        LocatorConfig::default()
    }

    /// The policy that picks a replica for each client.
    pub fn policy(mut self, policy: PolicyKind) -> Self {
        self.policy = policy;
        self
    }

    /// For [`PolicyKind::LeastLoaded`]: the load a forward adds to a
    /// replica's estimate when it is made (default 1; see
    /// [`policy::LeastLoaded`]).
    pub fn forward_weight(mut self, weight: f64) -> Self {
        self.forward_weight = weight;
        self
    }

    /// For [`PolicyKind::LeastLoaded`]: how long a forward keeps counting
    /// in a replica's estimate — its weight decays by a factor e per
    /// `memory` (default 1 s). A few of the replicas' report periods: by
    /// then their reports show the clients forwarded to them.
    /// `Duration::MAX` never forgets (the count of every forward ever
    /// made); zero forgets at once (the reports alone decide).
    pub fn forward_memory(mut self, memory: Duration) -> Self {
        self.forward_memory = memory;
        self
    }

    /// How often every replica is probed (default 1 s).
    pub fn probe_period(mut self, period: Duration) -> Self {
        self.probe_period = period;
        self
    }

    /// How long a probe waits for its answer (default 1 s); a replica
    /// that takes longer missed the probe.
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Missed probes in a row after which a replica is dropped (default
    /// 2; 0 counts as 1). A replica whose server says it no longer
    /// exists is dropped at once.
    pub fn failures_to_drop(mut self, failures: u32) -> Self {
        self.failures_to_drop = failures;
        self
    }

    /// The policy.
    pub fn get_policy(&self) -> PolicyKind {
        self.policy
    }

    /// The probe period.
    pub fn get_probe_period(&self) -> Duration {
        self.probe_period
    }
}

/// What the locator's servant, its servant locator and its probes share.
#[derive(Debug)]
struct Shared {
    groups: groups::Groups,
    policy: Box<dyn policy::BalancingPolicy>,
}

/// Why the locator could not start. The POA's refusal is the
/// [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// A POA could not be made: most likely the ORB already runs a
    /// locator ([`PoaError::AdapterAlreadyExists`]), or the root POA was
    /// destroyed.
    #[error("cannot create the locator's POAs")]
    CreatePoa(#[source] PoaError),
    /// The POA manager could not be activated, or the servant locator
    /// set.
    #[error("cannot set up the locator's POAs")]
    SetUp(#[source] PoaError),
    /// The locator object could not be activated.
    #[error("cannot activate the locator")]
    Activate(#[source] PoaError),
    /// The probes' thread could not start.
    #[error("cannot start the liveness probes")]
    Probes(#[source] std::io::Error),
}

/// A running locator: its reference, and its liveness probes, which stop
/// when this is dropped (the locator itself is served as long as its ORB
/// runs).
#[derive(Debug)]
pub struct LocatorService {
    locator: load_balancing::Locator,
    groups_poa: Poa,
    shared: Arc<Shared>,
    _probes: periodic::Periodic,
}

impl LocatorService {
    /// The locator's reference.
    pub fn locator(&self) -> &load_balancing::Locator {
        &self.locator
    }

    /// The reference of group `name`, if it exists (without a call).
    pub fn group_reference(&self, name: &str) -> Option<ObjectRef> {
        let repository_id = self.shared.groups.repository_id(name)?;
        locator::group_reference(&self.groups_poa, name, &repository_id).ok()
    }

    /// The policy's name.
    pub fn policy(&self) -> &'static str {
        self.shared.policy.name()
    }
}

/// Starts a locator in `orb`: the locator object and the group
/// references are served by two persistent POAs (`LoadBalancing` and its
/// child `Groups`) with a POA manager of their own, active from the
/// start. The locator is registered as the initial reference and object
/// key [`LOCATOR_KEY`] (`corbaloc:iiop:HOST:PORT/LoadBalancer`). With a
/// fixed endpoint (`-ORBListenEndpoints`) its reference and the group
/// references stay valid across restarts.
pub fn start(orb: &Orb, config: LocatorConfig) -> Result<LocatorService, StartError> {
    let persistent = [
        Policy::Lifespan(LifespanPolicy::Persistent),
        Policy::IdAssignment(IdAssignmentPolicy::UserId),
    ];
    let locator_poa = orb
        .root_poa()
        .create_poa(LOCATOR_POA, None, &persistent)
        .map_err(StartError::CreatePoa)?;
    let groups_poa = locator_poa
        .create_poa(
            GROUPS_POA,
            Some(locator_poa.manager()),
            &[
                persistent[0],
                persistent[1],
                Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
            ],
        )
        .map_err(StartError::CreatePoa)?;
    let shared = Arc::new(Shared {
        groups: groups::Groups::new(config.forward_memory),
        policy: config.policy.build(config.forward_weight),
    });
    groups_poa
        .set_servant_manager(ServantManager::Locator(Arc::new(forwarder::Forwarder {
            shared: shared.clone(),
        })))
        .map_err(StartError::SetUp)?;
    locator_poa
        .manager()
        .activate()
        .map_err(StartError::SetUp)?;
    let servant = locator::LocatorImpl {
        shared: shared.clone(),
        groups_poa: groups_poa.clone(),
    };
    let locator = load_balancing::LocatorSkeleton::new(servant)
        .activate_with_id(&locator_poa, "Locator")
        .map_err(StartError::Activate)?;
    orb.register_initial_reference(LOCATOR_KEY, locator.as_object().clone());
    orb.bind_object_key(LOCATOR_KEY, locator.as_object().clone());
    let probes = liveness::start(&shared, &config).map_err(StartError::Probes)?;
    Ok(LocatorService {
        locator,
        groups_poa,
        shared,
        _probes: probes,
    })
}
