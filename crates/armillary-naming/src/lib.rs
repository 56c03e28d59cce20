//! The CORBA Naming Service (`CosNaming`) for Armillary: the directory in
//! which servers publish their objects under names (`Stock/Quoter`) and
//! clients look them up, so that only the naming service's address has to
//! be configured.
//!
//! - [`cos_naming`]: the types, stubs and skeletons generated from
//!   `idl/CosNaming.idl` by `armillary-idl` (in `build.rs`), for clients
//!   of any naming service (omniORB's `omniNames` included);
//! - [`start`]: an in-memory naming service ([`NamingContextImpl`]) served
//!   by an ORB, reachable as `corbaloc:iiop:host:port/NameService` and as
//!   the ORB's `NameService` initial reference;
//! - [`name`]: the stringified-name syntax (`a.kind/b`) and `corbaname:`
//!   URLs, without a round trip to a server.
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
//! Not here: persistence (the contexts live as long as the process), and
//! the `corbaname:` resolution of `Orb::string_to_object`.

#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

mod context;
mod fault;
mod iterator;
pub mod name;

use armillary::poa::{IdAssignmentPolicy, Poa, PoaError, Policy};
use armillary::Orb;

pub use context::{NamingContextImpl, MAX_ITERATORS};
pub use iterator::BindingIteratorImpl;

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
}

/// Starts an in-memory naming service in `orb` and returns its root
/// context.
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
    orb.register_initial_reference(NAME_SERVICE, root.as_object().clone());
    orb.bind_object_key(NAME_SERVICE, root.as_object().clone());
    Ok(root)
}

/// Activates the root context of a new, empty naming service on `poa`,
/// which must have the RETAIN policy and will serve every context and
/// iterator of the service (under object ids `ctx/<n>` and `iter/<n>`).
/// Nothing is registered with the ORB; [`start`] is this plus a POA of its
/// own and the registrations.
pub fn activate_root(poa: &Poa) -> Result<cos_naming::NamingContextExt, StartError> {
    let root = context::Shared::start(poa).map_err(StartError::ActivateRoot)?;
    Ok(cos_naming::NamingContextExt::from_object(
        root.into_object(),
    ))
}
