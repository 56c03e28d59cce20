//! The Portable Object Adapter: object ids, servants and references, and
//! the path from an incoming object key to the servant that serves it.
//!
//! A [`Poa`] owns an active object map (for RETAIN), a default servant or a
//! servant manager, and children; a [`PoaManager`] gates its requests.
//! Objects are named within their POA by an [`ObjectId`]. The ORB-wide
//! `PoaRegistry` numbers every POA in a slot table, so that an object key
//! (see `key.rs`) leads to its POA and servant in O(1).
//!
//! The parts: `registry.rs` (the table), `dispatch.rs` (the request path:
//! key to `Upcall`), `manager.rs`, the active object map (`aom.rs`) with
//! its per-object counts (`object_activity.rs`), `kept.rs` (what a
//! collocated reference keeps), `current.rs` (POA Current),
//! `single_thread.rs`, `key.rs`, `policy.rs`, `servant_manager.rs`; the
//! `Poa` itself (its operations) is here.
//!
//! **Invariant:** no POA lock is held while a servant, a servant manager or
//! an adapter activator runs.

mod aom;
pub mod current;
mod dispatch;
mod key;

/// Whether `key` is shaped as an Armillary POA's object key (it may still
/// name no object).
pub(crate) fn is_poa_key(key: &[u8]) -> bool {
    key.starts_with(&key::MAGIC)
}
mod kept;
mod manager;
mod object_activity;
mod policy;
mod registry;
mod servant_manager;
pub(crate) mod single_thread;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use armillary_giop::system_exception::{CompletionStatus, SystemException};
use parking_lot::{Condvar, Mutex, RwLock};

use crate::completion::WaitForCompletion;
use crate::object::{Interface, ObjectRef};
use crate::request_count::RequestCount;
use crate::servant::{contain, IntoServant, Servant, ServerRequest};
use crate::slots::{SlotRef, SlotTable};
use aom::{ActiveObjectMap, Entry};
use key::{ObjectKey, PoaName};
use object_activity::{ObjectActivity, ObjectRequest};

pub use crate::object_id::ObjectId;
pub use current::PoaCurrent;
pub(crate) use dispatch::{Resolution, Upcall};
pub(crate) use kept::{KeptSlot, KeptTarget};
pub(crate) use manager::Admission;
pub use manager::{PoaManager, PoaManagerState};
pub use policy::{
    IdAssignmentPolicy, IdUniquenessPolicy, ImplicitActivationPolicy, LifespanPolicy, Policies,
    Policy, RequestProcessingPolicy, ServantRetentionPolicy, ThreadPolicy,
};
pub(crate) use registry::PoaRegistry;
pub use servant_manager::{
    AdapterActivator, Cookie, ServantActivator, ServantLocator, ServantManagerError,
};

/// The POA's user exceptions (`PortableServer::POA::*`) and the ORB
/// exceptions its operations raise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoaError {
    /// `create_POA` with a name a child already has.
    #[error("a child POA with this name already exists")]
    AdapterAlreadyExists,
    /// `find_POA` of a child that does not exist and was not activated.
    #[error("no such POA")]
    AdapterNonExistent,
    /// The POA manager was deactivated; it cannot change state again.
    #[error("the POA manager is inactive")]
    AdapterInactive,
    /// A policy list with a bad combination; the index of the culprit.
    #[error("invalid policy at index {0}")]
    InvalidPolicy(usize),
    /// The operation is not allowed by the POA's policies.
    #[error("the POA's policies do not allow this operation")]
    WrongPolicy,
    /// The reference was not made by this POA.
    #[error("the reference belongs to another POA")]
    WrongAdapter,
    /// UNIQUE_ID and the servant already serves an object.
    #[error("the servant is already active")]
    ServantAlreadyActive,
    /// The object id is already active.
    #[error("the object is already active")]
    ObjectAlreadyActive,
    /// The object id is not active.
    #[error("the object is not active")]
    ObjectNotActive,
    /// The servant is not active (and implicit activation does not apply).
    #[error("the servant is not active")]
    ServantNotActive,
    /// No default servant / servant manager has been set.
    #[error("no servant has been set")]
    NoServant,
    /// POA Current was asked outside an upcall.
    #[error("not inside a request upcall")]
    NoContext,
    /// The POA was destroyed.
    #[error("the POA has been destroyed")]
    Destroyed,
    /// `wait_for_completion` from inside an upcall (BAD_INV_ORDER).
    #[error("cannot wait for completion from inside an upcall")]
    BadInvOrder,
    /// A typed reference to the current object was asked for an
    /// interface its servant does not implement (the repository id asked
    /// for).
    #[error("the servant does not implement {0}")]
    WrongInterface(&'static str),
    /// `activate_object_with_id` on a SYSTEM_ID POA with an id the POA
    /// did not assign (BAD_PARAM, as CORBA has it): such a POA's ids come
    /// from `activate_object` or `create_reference`.
    #[error("the object id was not assigned by this SYSTEM_ID POA")]
    ForeignObjectId,
}

/// The system exception a POA error becomes when it crosses an operation
/// (`?` in a servant method, or a service built on the POA), with the
/// CORBA minor codes where CORBA names one. Every mapping is
/// COMPLETED_NO: the POA refused before anything was done.
///
/// | `PoaError` | system exception |
/// |---|---|
/// | `AdapterInactive` | OBJ_ADAPTER, minor 1 (adapter inactive) |
/// | `WrongPolicy`, `WrongAdapter`, `ServantNotActive`, `ServantAlreadyActive`, `ObjectAlreadyActive` | OBJ_ADAPTER, minor 0 |
/// | `NoServant` | OBJ_ADAPTER, minor 3 (no default servant) |
/// | `ObjectNotActive` | OBJECT_NOT_EXIST, minor 1 (unregistered object) |
/// | `AdapterNonExistent`, `Destroyed` | OBJECT_NOT_EXIST, minor 2 (nonexistent adapter) |
/// | `AdapterAlreadyExists`, `WrongInterface`, `ForeignObjectId` | BAD_PARAM, minor 0 |
/// | `InvalidPolicy` | INV_POLICY, minor 0 |
/// | `NoContext`, `BadInvOrder` | BAD_INV_ORDER, minor 0 / 3 (would deadlock) |
///
/// ```
/// use armillary::poa::PoaError;
/// use armillary::{minor, SystemException, SystemExceptionKind};
///
/// let e = SystemException::from(PoaError::AdapterInactive);
/// assert_eq!(e.kind(), SystemExceptionKind::ObjAdapter);
/// assert_eq!(e.minor(), minor::ADAPTER_INACTIVE);
/// ```
impl From<PoaError> for SystemException {
    fn from(error: PoaError) -> SystemException {
        use armillary_giop::system_exception::{minor, omg_minor};
        let no = CompletionStatus::No;
        match error {
            PoaError::AdapterInactive => SystemException::obj_adapter(minor::ADAPTER_INACTIVE, no),
            PoaError::WrongPolicy
            | PoaError::WrongAdapter
            | PoaError::ServantNotActive
            | PoaError::ServantAlreadyActive
            | PoaError::ObjectAlreadyActive => SystemException::obj_adapter(0, no),
            PoaError::NoServant => SystemException::obj_adapter(omg_minor(3), no),
            PoaError::ObjectNotActive => {
                SystemException::object_not_exist(minor::UNREGISTERED_OBJECT, no)
            }
            PoaError::AdapterNonExistent | PoaError::Destroyed => {
                SystemException::object_not_exist(minor::NONEXISTENT_ADAPTER, no)
            }
            PoaError::AdapterAlreadyExists
            | PoaError::WrongInterface(_)
            | PoaError::ForeignObjectId => SystemException::bad_param(0, no),
            PoaError::InvalidPolicy(_) => SystemException::inv_policy(0, no),
            PoaError::NoContext => SystemException::bad_inv_order(0, no),
            PoaError::BadInvOrder => SystemException::bad_inv_order(minor::WOULD_DEADLOCK, no),
        }
    }
}

/// Whether destroying a POA (or deactivating its manager) etherealizes its
/// active objects: CORBA's `etherealize_objects` parameter, as a type
/// instead of a `bool`.
///
/// Only a POA with a servant activator (RETAIN and USE_SERVANT_MANAGER)
/// has anyone to tell; for the others both values behave alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[doc(alias = "etherealize_objects")]
pub enum Etherealize {
    /// Call the servant activator's `etherealize` for every active object
    /// (with `cleanup_in_progress` true).
    Yes,
    /// Forget the active objects without telling the servant activator.
    No,
}

/// Builds references for the POA: the ORB knows its endpoints and the IOR
/// layout; the POA knows the object key.
pub(crate) trait ReferenceFactory: Send + Sync + 'static {
    /// A reference with this type id and object key; `persistent` keys
    /// must be published on the ORB's fixed endpoint.
    fn make_reference(&self, type_id: &str, object_key: Vec<u8>, persistent: bool) -> ObjectRef;

    /// The object key inside a reference this ORB made, if any.
    fn object_key(&self, reference: &ObjectRef) -> Option<Vec<u8>>;
}

/// A servant manager of either kind.
#[derive(Clone)]
pub enum ServantManager {
    /// For RETAIN POAs.
    Activator(Arc<dyn ServantActivator>),
    /// For NON_RETAIN POAs.
    Locator(Arc<dyn ServantLocator>),
}

impl std::fmt::Debug for ServantManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The managers are application objects with no `Debug` of their
        // own: show the kind and which object it is.
        let (kind, address) = match self {
            ServantManager::Activator(a) => ("Activator", Arc::as_ptr(a) as *const ()),
            ServantManager::Locator(l) => ("Locator", Arc::as_ptr(l) as *const ()),
        };
        f.debug_tuple(kind).field(&address).finish()
    }
}

/// A POA. Cheap to clone; clones are the same POA.
///
/// The Portable Object Adapter maps object ids to servants: a request's
/// object key names the POA and the object id, the POA finds the servant
/// (in its active object map, or through a default servant or servant
/// manager, as its [`Policy`]s say) and the servant runs the operation.
/// [`Orb::root_poa`](crate::Orb::root_poa) is the root; the application
/// creates children with other policies.
///
/// # Examples
///
/// ```
/// use armillary::config::OrbConfig;
/// use armillary::poa::{IdAssignmentPolicy, LifespanPolicy, Policy};
/// use armillary::Orb;
/// # use armillary_quoter::{generated, QuoterImpl};
/// use generated::stock::{quoter::GetQuoteError, Quoter, QuoterSkeleton};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orb = Orb::with_config(OrbConfig::default())?;
/// let root = orb.root_poa();
///
/// // QuoterImpl implements the generated QuoterServant (a table of prices).
/// // A child POA whose objects have ids the application chooses and
/// // references that stay valid when the server restarts.
/// let quotes = root.create_poa(
///     "Quotes",
///     Some(root.manager()),
///     &[
///         Policy::IdAssignment(IdAssignmentPolicy::UserId),
///         Policy::Lifespan(LifespanPolicy::Persistent),
///     ],
/// )?;
/// quotes.activate_object_with_id(b"nyse", QuoterSkeleton::new(QuoterImpl::default()))?;
/// let reference = quotes.id_to_reference(b"nyse")?;
/// assert_eq!(quotes.reference_to_id(&reference)?, b"nyse");
/// assert_eq!(quotes.active_object_count(), 1);
///
/// // Requests run once the POA manager is active.
/// root.manager().activate()?;
/// let quoter = Quoter::from_object(reference);
/// assert_eq!(quoter.get_quote("ACME")?, 4217);
///
/// // Once deactivated, the object is gone: calls raise OBJECT_NOT_EXIST.
/// quotes.deactivate_object(b"nyse")?;
/// assert!(matches!(
///     quoter.get_quote("ACME"),
///     Err(GetQuoteError::System(e)) if e.is_object_not_exist()
/// ));
/// orb.shutdown(armillary::WaitForCompletion::Yes)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Poa {
    inner: Arc<PoaInner>,
}

struct PoaInner {
    name: String,
    path: Vec<String>,
    parent: Option<Weak<PoaInner>>,
    policies: Policies,
    manager: PoaManager,
    registry: Arc<PoaRegistry>,
    slot: RwLock<SlotRef>,
    state: RwLock<PoaState>,
    /// The serialisation of a SINGLE_THREAD_MODEL (or MAIN_THREAD_MODEL)
    /// POA's upcalls.
    single_thread: Option<Arc<single_thread::SingleThread>>,
    incarnating: Mutex<HashSet<ObjectId>>,
    incarnated: Condvar,
    next_id: AtomicU64,
    /// Requests of this POA in progress (admitted, not yet finished), for
    /// `destroy` and its manager's state changes with
    /// [`WaitForCompletion::Yes`].
    requests: RequestCount,
    /// `state.destroyed`, read without the lock (written under it) by the
    /// calls a reference keeps its target for (`KeptTarget`).
    destroyed: AtomicBool,
}

#[derive(Default)]
struct PoaState {
    aom: ActiveObjectMap,
    children: HashMap<String, Poa>,
    default_servant: Option<Arc<dyn Servant>>,
    servant_manager: Option<ServantManager>,
    adapter_activator: Option<Arc<dyn AdapterActivator>>,
    destroyed: bool,
}

impl std::fmt::Debug for Poa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Poa")
            .field("path", &self.inner.path)
            .field("policies", &self.inner.policies)
            .field("manager", &self.inner.manager.id())
            .finish_non_exhaustive()
    }
}

impl PartialEq for Poa {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

/// A servant activator's `etherealize` for an object deactivated with
/// its POA or manager (`cleanup_in_progress`), a panic in it contained
/// (the object is gone either way).
fn etherealize_contained(
    activator: &Arc<dyn ServantActivator>,
    object_id: &ObjectId,
    poa: &Poa,
    servant: Arc<dyn Servant>,
) {
    let _ = contain(CompletionStatus::Maybe, || {
        activator.etherealize(object_id, poa, servant, true, false);
        Ok::<(), SystemException>(())
    });
}

/// An adapter activator's `unknown_adapter`; a panic in it is a refusal.
fn contained_or_false(f: impl FnOnce() -> bool) -> bool {
    contain(CompletionStatus::No, || Ok::<bool, SystemException>(f())).unwrap_or(false)
}

fn not_exist() -> SystemException {
    SystemException::object_not_exist(0, CompletionStatus::No)
}

fn obj_adapter() -> SystemException {
    SystemException::obj_adapter(0, CompletionStatus::No)
}

/// A request to an object that is being deactivated, in a POA whose
/// servant activator will incarnate it again once that is done.
fn deactivating() -> SystemException {
    SystemException::transient(
        armillary_giop::system_exception::minor::OBJECT_DEACTIVATING,
        CompletionStatus::No,
    )
}

impl Poa {
    /// The POA's name (`RootPOA` for the root).
    #[doc(alias = "the_name")]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The names from the root down to this POA, root excluded.
    pub fn path(&self) -> &[String] {
        &self.inner.path
    }

    /// The parent POA (`None` for the root).
    #[doc(alias = "the_parent")]
    pub fn parent(&self) -> Option<Poa> {
        self.inner
            .parent
            .as_ref()
            .and_then(Weak::upgrade)
            .map(|inner| Poa { inner })
    }

    /// The POA manager.
    #[doc(alias = "the_POAManager")]
    #[doc(alias = "the_poa_manager")]
    pub fn manager(&self) -> PoaManager {
        self.inner.manager.clone()
    }

    /// The policies.
    pub fn policies(&self) -> Policies {
        self.inner.policies
    }

    /// A number that tells this POA apart from every other POA alive.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// The serialisation of this POA's upcalls, when its thread policy
    /// asks for one (SINGLE_THREAD_MODEL, MAIN_THREAD_MODEL).
    pub(crate) fn single_thread(&self) -> Option<&Arc<single_thread::SingleThread>> {
        self.inner.single_thread.as_ref()
    }

    /// The child POAs.
    #[doc(alias = "the_children")]
    pub fn children(&self) -> Vec<Poa> {
        self.inner.state.read().children.values().cloned().collect()
    }

    /// The adapter activator, if one is set.
    #[doc(alias = "the_activator")]
    pub fn activator(&self) -> Option<Arc<dyn AdapterActivator>> {
        self.inner.state.read().adapter_activator.clone()
    }

    /// Sets the adapter activator that creates missing children.
    pub fn set_activator(&self, activator: Option<Arc<dyn AdapterActivator>>) {
        self.inner.state.write().adapter_activator = activator;
    }

    fn live(&self) -> Result<(), PoaError> {
        if self.inner.state.read().destroyed {
            Err(PoaError::Destroyed)
        } else {
            Ok(())
        }
    }

    /// Creates a child POA. With `manager` `None` the child gets a new
    /// manager of its own (in the holding state). A manager of another
    /// ORB is refused with [`PoaError::WrongAdapter`].
    #[doc(alias = "create_POA")]
    pub fn create_poa(
        &self,
        name: &str,
        manager: Option<PoaManager>,
        policies: &[Policy],
    ) -> Result<Poa, PoaError> {
        self.live()?;
        let policies = Policies::from_list(policies).map_err(PoaError::InvalidPolicy)?;
        let mut state = self.inner.state.write();
        if state.children.contains_key(name) {
            return Err(PoaError::AdapterAlreadyExists);
        }
        let registry = &self.inner.registry;
        if manager.as_ref().is_some_and(|m| !m.belongs_to(registry)) {
            return Err(PoaError::WrongAdapter);
        }
        let manager = manager.unwrap_or_else(|| {
            PoaManager::new(name, Arc::downgrade(registry), registry.hold_limit)
        });
        let mut path = self.inner.path.clone();
        path.push(name.to_owned());
        let child = self.inner.registry.register(
            name.to_owned(),
            path,
            Some(Arc::downgrade(&self.inner)),
            policies,
            manager,
        );
        state.children.insert(name.to_owned(), child.clone());
        Ok(child)
    }

    /// The child POA `name` (`find_POA` with `activate_it` false).
    #[doc(alias = "find_POA")]
    pub fn find_poa(&self, name: &str) -> Result<Poa, PoaError> {
        self.inner
            .state
            .read()
            .children
            .get(name)
            .cloned()
            .ok_or(PoaError::AdapterNonExistent)
    }

    /// The child POA `name`, asking the adapter activator (see
    /// [`set_activator`](Self::set_activator)) to create it when it is
    /// missing (`find_POA` with `activate_it` true). Fails with
    /// [`PoaError::AdapterNonExistent`] when there is no activator or it
    /// did not create the child.
    pub fn find_or_activate_poa(&self, name: &str) -> Result<Poa, PoaError> {
        if let Ok(child) = self.find_poa(name) {
            return Ok(child);
        }
        let activator = self.inner.state.read().adapter_activator.clone();
        match activator {
            Some(activator) if contained_or_false(|| activator.unknown_adapter(self, name)) => {
                self.find_poa(name)
            }
            _ => Err(PoaError::AdapterNonExistent),
        }
    }

    fn new_system_id(&self) -> ObjectId {
        let n = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        if self.inner.policies.lifespan == LifespanPolicy::Persistent {
            // Unique across restarts too: the ORB token differs per run.
            let mut id = self.inner.registry.orb_token.to_be_bytes().to_vec();
            id.extend_from_slice(&n.to_be_bytes());
            ObjectId::from(id)
        } else {
            ObjectId::from(&n.to_be_bytes())
        }
    }

    /// Refuses, on a SYSTEM_ID POA, an id this POA did not assign
    /// ([`new_system_id`](Self::new_system_id)): one of another length,
    /// or a number it has not handed out yet. A persistent POA's id from
    /// an earlier run of the server (another ORB token) is taken: it was
    /// this POA's.
    fn require_assigned_here(&self, object_id: &ObjectId) -> Result<(), PoaError> {
        if self.inner.policies.id_assignment != IdAssignmentPolicy::SystemId {
            return Ok(());
        }
        let bytes = object_id.as_bytes();
        let number: Option<[u8; 8]> = match (self.inner.policies.lifespan, bytes.len()) {
            (LifespanPolicy::Persistent, 16) => {
                let (token, number) = bytes.split_at(8);
                if token != self.inner.registry.orb_token.to_be_bytes() {
                    return Ok(());
                }
                number.try_into().ok()
            }
            (LifespanPolicy::Transient, 8) => bytes.try_into().ok(),
            _ => None,
        };
        let handed_out = self.inner.next_id.load(Ordering::Relaxed);
        match number.map(u64::from_be_bytes) {
            Some(n) if n >= 1 && n < handed_out => Ok(()),
            _ => Err(PoaError::ForeignObjectId),
        }
    }

    fn require_retain(&self) -> Result<(), PoaError> {
        if self.inner.policies.retains() {
            Ok(())
        } else {
            Err(PoaError::WrongPolicy)
        }
    }

    /// Activates `servant` under a new system-assigned id (SYSTEM_ID and
    /// RETAIN). `servant` is a generated skeleton, an `Arc` of one, or an
    /// `Arc<dyn Servant>` (see [`IntoServant`]); a generated skeleton's
    /// `activate` does this and returns the typed reference.
    pub fn activate_object(&self, servant: impl IntoServant) -> Result<ObjectId, PoaError> {
        let servant = servant.into_servant();
        self.live()?;
        self.require_retain()?;
        if self.inner.policies.id_assignment != IdAssignmentPolicy::SystemId {
            return Err(PoaError::WrongPolicy);
        }
        let id = self.new_system_id();
        self.insert(id.clone(), servant)?;
        Ok(id)
    }

    /// Activates `servant` under `object_id` (RETAIN), which is anything
    /// that converts into an [`ObjectId`]:
    /// `poa.activate_object_with_id("fred", servant)`.
    ///
    /// On a SYSTEM_ID POA the id must be one the POA assigned (from
    /// [`create_reference`](Self::create_reference), or an object
    /// deactivated since); any other is refused with
    /// [`PoaError::ForeignObjectId`] (BAD_PARAM).
    pub fn activate_object_with_id(
        &self,
        object_id: impl Into<ObjectId>,
        servant: impl IntoServant,
    ) -> Result<(), PoaError> {
        let object_id = object_id.into();
        let servant = servant.into_servant();
        self.live()?;
        self.require_retain()?;
        self.require_assigned_here(&object_id)?;
        self.insert(object_id, servant).map(|_| ())
    }

    fn insert(&self, object_id: ObjectId, servant: Arc<dyn Servant>) -> Result<SlotRef, PoaError> {
        let mut state = self.inner.state.write();
        if state.aom.get(object_id.as_bytes()).is_some() {
            return Err(PoaError::ObjectAlreadyActive);
        }
        if self.inner.policies.id_uniqueness == IdUniquenessPolicy::UniqueId
            && state.aom.has_servant(&servant)
        {
            return Err(PoaError::ServantAlreadyActive);
        }
        Ok(state.aom.insert(object_id, servant))
    }

    /// Deactivates `object_id` (RETAIN). It returns at once; new requests
    /// for the object are not dispatched to its servant from now on, and
    /// once the requests already running on it have finished (at once if
    /// none is), the object leaves the active object map and the servant
    /// activator, if any, etherealizes the servant (CORBA 3.0 §11.3.9.15),
    /// on the thread that ends the last of them.
    ///
    /// Meanwhile a new request for the object gets OBJECT_NOT_EXIST, or is
    /// served by the default servant (USE_DEFAULT_SERVANT), or, where a
    /// servant activator would incarnate it again, gets TRANSIENT
    /// ([`minor::OBJECT_DEACTIVATING`], COMPLETED_NO: it may be sent
    /// again); the lookups (`id_to_servant`, `id_to_reference`,
    /// `servant_to_id`, and this method) treat the object as not active,
    /// while activating its id again, or (UNIQUE_ID) its servant, is
    /// refused with [`PoaError::ObjectAlreadyActive`] /
    /// [`PoaError::ServantAlreadyActive`] until it has left the map.
    ///
    /// [`minor::OBJECT_DEACTIVATING`]: armillary_giop::system_exception::minor::OBJECT_DEACTIVATING
    pub fn deactivate_object(&self, object_id: impl Into<ObjectId>) -> Result<(), PoaError> {
        let object_id = object_id.into();
        self.require_retain()?;
        let idle = {
            // The write lock: no request is between finding the object
            // and counting itself in while it is marked.
            let state = self.inner.state.write();
            let entry = state
                .aom
                .get_active(object_id.as_bytes())
                .ok_or(PoaError::ObjectNotActive)?;
            entry.activity.deactivate().then(|| entry.activity.clone())
        };
        if let Some(activity) = idle {
            self.complete_deactivation(&activity);
        }
        Ok(())
    }

    /// Removes the object `activity` belongs to from the active object map
    /// and has the servant activator, if any, etherealize it: the end of
    /// `deactivate_object`, once no request runs on the object. Does
    /// nothing when the object has left the map already (its deactivation
    /// was completed, or the POA destroyed or its manager deactivated).
    fn complete_deactivation(&self, activity: &ObjectActivity) {
        let object_id = activity.object_id().as_bytes();
        let (entry, manager, remaining) = {
            let mut state = self.inner.state.write();
            let same = state
                .aom
                .get(object_id)
                .is_some_and(|(_, entry)| std::ptr::eq(Arc::as_ptr(&entry.activity), activity));
            let Some(entry) = same.then(|| state.aom.remove(object_id)).flatten() else {
                return;
            };
            let remaining = state.aom.has_servant(&entry.servant);
            (entry, state.servant_manager.clone(), remaining)
        };
        if let Some(ServantManager::Activator(activator)) = manager {
            let _ = contain(CompletionStatus::Maybe, || {
                activator.etherealize(&entry.object_id, self, entry.servant, false, remaining);
                Ok::<(), SystemException>(())
            });
        }
    }

    pub(crate) fn make_reference(&self, object_id: &ObjectId, type_id: &str) -> ObjectRef {
        let object_slot = self
            .inner
            .state
            .read()
            .aom
            .get(object_id.as_bytes())
            .map_or(SlotRef::NONE, |(slot, _)| slot);
        let persistent = self.inner.policies.lifespan == LifespanPolicy::Persistent;
        let key = ObjectKey {
            poa: if persistent {
                PoaName::Persistent {
                    path: self.inner.path.clone(),
                }
            } else {
                PoaName::Transient {
                    orb_token: self.inner.registry.orb_token,
                }
            },
            poa_slot: *self.inner.slot.read(),
            object_slot,
            object_id: object_id.clone(),
        };
        self.inner
            .registry
            .factory
            .make_reference(type_id, key.encode(), persistent)
    }

    /// Activates `servant` under a new system-assigned id and returns a
    /// typed reference to it: what a generated skeleton's `activate` calls
    /// (`QuoterSkeleton::new(prices).activate(&poa)` gives a `Quoter`).
    pub fn activate_as<I: Interface>(&self, servant: impl IntoServant) -> Result<I, PoaError> {
        let servant = servant.into_servant();
        let type_id = servant.repository_id();
        let id = self.activate_object(servant)?;
        Ok(I::from_object(self.make_reference(&id, type_id)))
    }

    /// Activates `servant` under `object_id` and returns a typed reference
    /// to it (see [`activate_as`](Self::activate_as)).
    pub fn activate_with_id_as<I: Interface>(
        &self,
        object_id: impl Into<ObjectId>,
        servant: impl IntoServant,
    ) -> Result<I, PoaError> {
        let object_id = object_id.into();
        let servant = servant.into_servant();
        let type_id = servant.repository_id();
        self.activate_object_with_id(&object_id, servant)?;
        Ok(I::from_object(self.make_reference(&object_id, type_id)))
    }

    /// A reference for a new system-assigned id, with no servant yet.
    pub fn create_reference(&self, type_id: &str) -> Result<ObjectRef, PoaError> {
        self.live()?;
        if self.inner.policies.id_assignment != IdAssignmentPolicy::SystemId {
            return Err(PoaError::WrongPolicy);
        }
        Ok(self.make_reference(&self.new_system_id(), type_id))
    }

    /// A reference for `object_id`, active or not. (Unlike
    /// [`activate_object_with_id`](Self::activate_object_with_id), it
    /// takes any id on a SYSTEM_ID POA too, which CORBA allows: a default
    /// servant or servant manager may serve ids the application makes.)
    pub fn create_reference_with_id(
        &self,
        object_id: impl Into<ObjectId>,
        type_id: &str,
    ) -> Result<ObjectRef, PoaError> {
        self.live()?;
        Ok(self.make_reference(&object_id.into(), type_id))
    }

    /// The id `servant` serves, activating it implicitly where the policies
    /// allow; inside an upcall on a default servant, the current id.
    pub fn servant_to_id(&self, servant: &Arc<dyn Servant>) -> Result<ObjectId, PoaError> {
        let p = self.inner.policies;
        let unique = p.id_uniqueness == IdUniquenessPolicy::UniqueId;
        let implicit = p.implicit_activation == ImplicitActivationPolicy::ImplicitActivation;
        if p.retains() && (unique || implicit) {
            if unique {
                if let Some(id) = self
                    .inner
                    .state
                    .read()
                    .aom
                    .ids_of(servant)
                    .into_iter()
                    .next()
                {
                    return Ok(id);
                }
            }
            if implicit {
                return self.activate_object(servant.clone());
            }
        } else if p.request_processing != RequestProcessingPolicy::UseDefaultServant {
            return Err(PoaError::WrongPolicy);
        }
        let current = PoaCurrent;
        if let (Ok(poa), Ok(serving)) = (current.poa(), current.servant()) {
            if poa == *self && aom::servant_identity(&serving) == aom::servant_identity(servant) {
                return current.object_id();
            }
        }
        Err(PoaError::ServantNotActive)
    }

    /// A reference to the object `servant` serves (see
    /// [`servant_to_id`](Self::servant_to_id)).
    pub fn servant_to_reference(&self, servant: &Arc<dyn Servant>) -> Result<ObjectRef, PoaError> {
        let id = self.servant_to_id(servant)?;
        Ok(self.make_reference(&id, servant.repository_id()))
    }

    /// The object id inside a reference this POA made.
    pub fn reference_to_id(&self, reference: &ObjectRef) -> Result<ObjectId, PoaError> {
        let key = self
            .inner
            .registry
            .factory
            .object_key(reference)
            .and_then(|k| ObjectKey::decode(&k))
            .ok_or(PoaError::WrongAdapter)?;
        let mine = match &key.poa {
            PoaName::Transient { orb_token } => {
                *orb_token == self.inner.registry.orb_token
                    && key.poa_slot == *self.inner.slot.read()
            }
            PoaName::Persistent { path } => *path == self.inner.path,
        };
        if mine {
            Ok(key.object_id)
        } else {
            Err(PoaError::WrongAdapter)
        }
    }

    /// The servant serving the object a reference names.
    pub fn reference_to_servant(
        &self,
        reference: &ObjectRef,
    ) -> Result<Arc<dyn Servant>, PoaError> {
        self.id_to_servant(self.reference_to_id(reference)?)
    }

    /// The servant serving `object_id` (the active object map, then the
    /// default servant).
    pub fn id_to_servant(
        &self,
        object_id: impl Into<ObjectId>,
    ) -> Result<Arc<dyn Servant>, PoaError> {
        let object_id = object_id.into();
        let p = self.inner.policies;
        if !p.retains() && p.request_processing != RequestProcessingPolicy::UseDefaultServant {
            return Err(PoaError::WrongPolicy);
        }
        let state = self.inner.state.read();
        if let Some(entry) = state.aom.get_active(object_id.as_bytes()) {
            return Ok(entry.servant.clone());
        }
        if p.request_processing == RequestProcessingPolicy::UseDefaultServant {
            return state.default_servant.clone().ok_or(PoaError::NoServant);
        }
        Err(PoaError::ObjectNotActive)
    }

    /// A reference to an active object.
    pub fn id_to_reference(&self, object_id: impl Into<ObjectId>) -> Result<ObjectRef, PoaError> {
        let object_id = object_id.into();
        self.require_retain()?;
        let type_id = {
            let state = self.inner.state.read();
            let entry = state
                .aom
                .get_active(object_id.as_bytes())
                .ok_or(PoaError::ObjectNotActive)?;
            entry.servant.repository_id()
        };
        Ok(self.make_reference(&object_id, type_id))
    }

    /// The default servant (USE_DEFAULT_SERVANT only).
    #[doc(alias = "get_servant")]
    pub fn servant(&self) -> Result<Arc<dyn Servant>, PoaError> {
        if self.inner.policies.request_processing != RequestProcessingPolicy::UseDefaultServant {
            return Err(PoaError::WrongPolicy);
        }
        self.inner
            .state
            .read()
            .default_servant
            .clone()
            .ok_or(PoaError::NoServant)
    }

    /// Sets the default servant (USE_DEFAULT_SERVANT only).
    pub fn set_servant(&self, servant: Arc<dyn Servant>) -> Result<(), PoaError> {
        if self.inner.policies.request_processing != RequestProcessingPolicy::UseDefaultServant {
            return Err(PoaError::WrongPolicy);
        }
        self.inner.state.write().default_servant = Some(servant);
        Ok(())
    }

    /// The servant manager (USE_SERVANT_MANAGER only).
    #[doc(alias = "get_servant_manager")]
    pub fn servant_manager(&self) -> Result<Option<ServantManager>, PoaError> {
        if self.inner.policies.request_processing != RequestProcessingPolicy::UseServantManager {
            return Err(PoaError::WrongPolicy);
        }
        Ok(self.inner.state.read().servant_manager.clone())
    }

    /// Sets the servant manager: an activator for RETAIN POAs, a locator for
    /// NON_RETAIN ones (USE_SERVANT_MANAGER only).
    pub fn set_servant_manager(&self, manager: ServantManager) -> Result<(), PoaError> {
        let p = self.inner.policies;
        let fits = match manager {
            ServantManager::Activator(_) => p.retains(),
            ServantManager::Locator(_) => !p.retains(),
        };
        if p.request_processing != RequestProcessingPolicy::UseServantManager || !fits {
            return Err(PoaError::WrongPolicy);
        }
        self.inner.state.write().servant_manager = Some(manager);
        Ok(())
    }

    /// Destroys this POA and its children: references to their objects stop
    /// working (transient) or wait for a new POA of the same name
    /// (persistent). With [`Etherealize::Yes`], the servant activator
    /// etherealizes every active object.
    ///
    /// With [`WaitForCompletion::Yes`] it returns once the requests running
    /// in these POAs have finished, and etherealizes after them; from
    /// inside an upcall of the same ORB that would wait for itself, so it
    /// fails with [`PoaError::BadInvOrder`] (BAD_INV_ORDER, OMG minor 3)
    /// and destroys nothing. With [`WaitForCompletion::No`] it returns at
    /// once; a request still running keeps its servant alive until it
    /// ends.
    pub fn destroy(
        &self,
        etherealize: Etherealize,
        wait: WaitForCompletion,
    ) -> Result<(), PoaError> {
        if wait.is_yes() && current::in_upcall_of(&self.inner.registry) {
            return Err(PoaError::BadInvOrder);
        }
        let children = {
            let mut state = self.inner.state.write();
            if state.destroyed {
                return Ok(());
            }
            state.destroyed = true;
            // Before the wait below (see `RequestCount`).
            self.inner.destroyed.store(true, Ordering::SeqCst);
            let children: Vec<Poa> = state.children.drain().map(|(_, c)| c).collect();
            children
        };
        for child in children {
            child.destroy(etherealize, wait)?;
        }
        self.inner.registry.unregister(self);
        if let Some(parent) = self.parent() {
            parent.inner.state.write().children.remove(&self.inner.name);
        }
        if wait.is_yes() {
            self.wait_idle();
        }
        let (entries, manager) = {
            let mut state = self.inner.state.write();
            (state.aom.drain(), state.servant_manager.clone())
        };
        if let (Etherealize::Yes, Some(ServantManager::Activator(activator))) =
            (etherealize, manager)
        {
            for Entry {
                object_id, servant, ..
            } in entries
            {
                etherealize_contained(&activator, &object_id, self, servant);
            }
        }
        Ok(())
    }

    /// Etherealizes and forgets every active object, when the POA has a
    /// servant activator (its manager was deactivated with
    /// [`Etherealize::Yes`]).
    fn etherealize_all(&self) {
        let (entries, activator) = {
            let mut state = self.inner.state.write();
            match &state.servant_manager {
                Some(ServantManager::Activator(a)) => {
                    let a = a.clone();
                    (state.aom.drain(), a)
                }
                _ => return,
            }
        };
        for Entry {
            object_id, servant, ..
        } in entries
        {
            etherealize_contained(&activator, &object_id, self, servant);
        }
    }

    /// Waits until no request of this POA is in progress.
    fn wait_idle(&self) {
        self.inner.requests.wait_idle();
    }

    /// How many objects are active.
    pub fn active_object_count(&self) -> usize {
        self.inner.state.read().aom.len()
    }
}

#[cfg(test)]
mod tests;
