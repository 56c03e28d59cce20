//! The CORBA Naming Service (`CosNaming`) for Armillary: the directory in
//! which servers publish their objects under names (`Stock/Quoter`) and
//! clients look them up, so that only the naming service's address has to
//! be configured.
//!
//! - [`cos_naming`]: the types, stubs and skeletons generated from
//!   `idl/CosNaming.idl` by `armillary-idl` (in `build.rs`), for clients
//!   of any naming service (omniORB's `omniNames` included);
//! - [`start_persistent`]: a naming service whose bindings live in an
//!   SQLite database file and survive restarts and crashes, and whose
//!   references stay valid across them; [`start`]: one in memory, which
//!   lives as long as its ORB. Either is served by an ORB, reachable as
//!   `corbaloc:iiop:host:port/NameService` and as the ORB's `NameService`
//!   initial reference (`armillary naming serve` runs one);
//! - [`name`]: the stringified-name syntax (`a.kind/b`) and `corbaname:`
//!   URLs, without a round trip to a server;
//! - [`minor`]: the minor codes of the system exceptions it raises.
//!
//! ```
//! use armillary::Orb;
//! use armillary_naming::cos_naming::NamingContextExt;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A naming service in a server's ORB, with one context bound in it.
//! let server = Orb::with_config(Default::default())?;
//! let root = armillary_naming::start(&server)?;
//! let name = armillary_naming::name::to_name("apps.ctx")?;
//! let apps = root.bind_new_context(&name)?;
//! let ior = server.object_to_string(root.as_object());
//!
//! // A client ORB finds the service from its reference and resolves the name.
//! let client = Orb::with_config(Default::default())?;
//! let naming = NamingContextExt::narrow(&client.string_to_object(&ior)?)?
//!     .expect("a CosNaming::NamingContextExt");
//! assert!(naming.resolve_str("apps.ctx")?.is_equivalent(apps.as_object()));
//!
//! client.shutdown(armillary::WaitForCompletion::Yes)?;
//! server.shutdown(armillary::WaitForCompletion::Yes)?;
//! # Ok(())
//! # }
//! ```
//!
//! # Persistence
//!
//! A persistent service keeps every context and binding in its store (see
//! the `store` module's docs for the schema): each operation is one
//! SQLite transaction, committed (WAL journal, `synchronous=FULL`) before
//! its reply is sent, so a binding a client was told about survives the
//! service being killed. Its contexts are served by a POA with the
//! PERSISTENT lifespan and user-assigned object ids (`ctx/<n>`, `n` the
//! context's id in the store), so a reference to any context, taken
//! before a restart, reaches the same context after it, as long as the
//! service listens on the same endpoint (`-ORBListenEndpoints`, or
//! `--endpoint` of `armillary naming serve`). The contexts of the store
//! are incarnated on their first request after a restart.
//!
//! ```no_run
//! use armillary::config::{ListenEndpoint, OrbConfig};
//! use armillary::Orb;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A fixed endpoint: the references stay valid across restarts.
//! let config = OrbConfig::new().listen(ListenEndpoint::new("127.0.0.1", 2809));
//! let orb = Orb::with_config(config)?;
//! let root = armillary_naming::start_persistent(&orb, "names.db")?;
//! println!("{}", orb.object_to_string(root.as_object()));
//! orb.run()?;
//! # Ok(())
//! # }
//! ```
//!
//! Not here: the `corbaname:` resolution of `Orb::string_to_object`
//! (the ORB's own).

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod activator;
mod context;
mod fault;
mod iterator;
pub mod minor;
pub mod name;
mod store;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use armillary::poa::{
    IdAssignmentPolicy, LifespanPolicy, Poa, PoaError, Policy, RequestProcessingPolicy,
    ServantManager,
};
use armillary::Orb;

pub use context::{NamingContextImpl, MAX_ITERATORS};
pub use iterator::BindingIteratorImpl;
pub use store::{StoreError, STORE_BUSY_TIMEOUT};

armillary::include_idl!("cos_naming");

/// The name under which [`start`] registers the root context: the initial
/// reference (`resolve_initial_references`) and the object key
/// (`corbaloc:iiop:host:port/NameService`).
pub const NAME_SERVICE: &str = "NameService";

/// Why the naming service could not start. The POA's refusal is the
/// [`source`](std::error::Error::source), not part of the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// The `NameService` POA could not be made: most likely the ORB
    /// already runs a naming service ([`PoaError::AdapterAlreadyExists`]),
    /// or the root POA was destroyed.
    #[error("cannot create the NameService POA")]
    CreatePoa(#[source] PoaError),
    /// The POA manager could not be activated (it was deactivated).
    #[error("cannot activate the NameService POA manager")]
    ActivateManager(#[source] PoaError),
    /// The root context could not be activated: the POA's policies do not
    /// allow `activate_object_with_id` (it needs RETAIN), or it is
    /// destroyed, or it already serves a naming service.
    #[error("cannot activate the root naming context")]
    ActivateRoot(#[source] PoaError),
    /// SQLite could not make the in-memory database of the bindings
    /// (which happens only when memory runs out).
    #[error("cannot make the in-memory store of the naming service")]
    MemoryStore,
    /// The servant activator of a persistent service could not be set
    /// (the POA is destroyed).
    #[error("cannot set the servant activator of the NameService POA")]
    SetActivator(#[source] PoaError),
}

/// Why a persistent naming service could not start
/// ([`start_persistent`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PersistentStartError {
    /// The store could not be opened or created at `path`.
    #[error("cannot open the naming store {}", path.display())]
    OpenStore {
        /// The store's path.
        path: PathBuf,
        /// Why.
        #[source]
        source: StoreError,
    },
    /// The POA or the root context could not be set up.
    #[error(transparent)]
    Start(#[from] StartError),
}

/// Starts an in-memory naming service in `orb` and returns its root
/// context. Its contexts and bindings live as long as the ORB does, and
/// its references are transient (for a service that outlives its
/// process, see [`start_persistent`]).
///
/// The contexts are served by a child of the root POA named `NameService`
/// with a POA manager of its own, active from the start (so the service
/// does not wait for the application to activate the root POA's manager).
/// The root context is registered as the initial reference `NameService`
/// and bound to the object key `NameService`, so that other ORBs reach it
/// as `corbaloc:iiop:host:port/NameService` (omniORB:
/// `-ORBInitRef NameService=corbaloc::host:port/NameService`).
///
/// A servant of the service calls other servers only for names that lead
/// into their contexts; when a context of another server in this same
/// process is bound, serve with more than one thread
/// (`ConcurrencyModel::ThreadPool`).
pub fn start(orb: &Orb) -> Result<cos_naming::NamingContextExt, StartError> {
    let poa = orb
        .root_poa()
        .create_poa(
            NAME_SERVICE,
            None,
            &[Policy::IdAssignment(IdAssignmentPolicy::UserId)],
        )
        .map_err(StartError::CreatePoa)?;
    poa.manager()
        .activate()
        .map_err(StartError::ActivateManager)?;
    let root = activate_root(&poa)?;
    register(orb, &root);
    Ok(root)
}

/// Starts a persistent naming service in `orb`, whose contexts and
/// bindings live in the SQLite database at `path` (created, with its
/// parent directory, when missing), and returns its root context.
///
/// As [`start`] does, it serves the contexts from a `NameService` POA of
/// its own, registers the root as the `NameService` initial reference
/// and binds it to the object key `NameService`. The POA has the
/// PERSISTENT lifespan and the contexts keep their object ids across
/// runs, so the references it hands out stay valid when the service is
/// restarted on the same endpoint (give the ORB a fixed one:
/// `-ORBListenEndpoints iiop://host:port`). Every operation that changes
/// a binding is committed to the database before its reply is sent.
///
/// Several processes may open one store (SQLite serializes their
/// writes, each waiting up to [`STORE_BUSY_TIMEOUT`]), but each hands out
/// references to its own endpoint.
pub fn start_persistent(
    orb: &Orb,
    path: impl AsRef<Path>,
) -> Result<cos_naming::NamingContextExt, PersistentStartError> {
    let path = path.as_ref();
    let open_failed = |source| PersistentStartError::OpenStore {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| open_failed(StoreError::CreateDirectory(e)))?;
    }
    let store = store::Store::open(path).map_err(open_failed)?;
    let poa = orb
        .root_poa()
        .create_poa(
            NAME_SERVICE,
            None,
            &[
                Policy::IdAssignment(IdAssignmentPolicy::UserId),
                Policy::Lifespan(LifespanPolicy::Persistent),
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
            ],
        )
        .map_err(StartError::CreatePoa)?;
    let (shared, root) = context::Shared::start(&poa, store).map_err(StartError::ActivateRoot)?;
    let activator = activator::ContextActivator {
        shared: Arc::downgrade(&shared),
    };
    poa.set_servant_manager(ServantManager::Activator(Arc::new(activator)))
        .map_err(StartError::SetActivator)?;
    // Requests come in only now, with the activator in place.
    poa.manager()
        .activate()
        .map_err(StartError::ActivateManager)?;
    register(orb, &root);
    Ok(root)
}

/// Makes `root` the ORB's `NameService` initial reference and object key.
fn register(orb: &Orb, root: &cos_naming::NamingContextExt) {
    orb.register_initial_reference(NAME_SERVICE, root.as_object().clone());
    orb.bind_object_key(NAME_SERVICE, root.as_object().clone());
}

/// Activates the root context of a new, empty, in-memory naming service on `poa`,
/// which must have the RETAIN policy and will serve every context and
/// iterator of the service (under object ids `ctx/<n>` and `iter/<n>`).
/// Nothing is registered with the ORB; [`start`] is this plus a POA of its
/// own and the registrations.
pub fn activate_root(poa: &Poa) -> Result<cos_naming::NamingContextExt, StartError> {
    let store = store::Store::in_memory().map_err(|_| StartError::MemoryStore)?;
    let (_, root) = context::Shared::start(poa, store).map_err(StartError::ActivateRoot)?;
    Ok(root)
}
