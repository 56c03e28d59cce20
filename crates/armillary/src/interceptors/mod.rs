//! Portable interceptors (CORBA 3, chapter "Portable Interceptors"):
//! application code the ORB calls at fixed points of every request, on
//! the client and on the server, and when a POA makes a reference.
//!
//! An application registers them through an [`OrbInitializer`] given to
//! the configuration ([`OrbConfig::orb_initializer`](crate::config::OrbConfig::orb_initializer)); the ORB calls its
//! [`pre_init`](OrbInitializer::pre_init) and then its
//! [`post_init`](OrbInitializer::post_init) while it starts, with an
//! [`OrbInitInfo`] that adds interceptors and allocates [`PiCurrent`]
//! slots. Registration ends when the ORB has started: the lists do not
//! change afterwards.
//!
//! ```
//! use std::sync::Arc;
//! use armillary::config::OrbConfig;
//! use armillary::interceptors::{
//!     ClientRequestInfo, ClientRequestInterceptor, Intercept, OrbInitInfo, OrbInitializer,
//! };
//! use armillary::giop::giop::ServiceContext;
//!
//! /// Sends a context with every request.
//! struct Tagger;
//!
//! impl ClientRequestInterceptor for Tagger {
//!     fn send_request(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
//!         let tag = ServiceContext { id: 0x4152_0001, data: b"hello".to_vec() };
//!         info.add_request_service_context(tag, true)?;
//!         Ok(())
//!     }
//! }
//!
//! struct Setup;
//!
//! impl OrbInitializer for Setup {
//!     fn pre_init(&self, info: &mut OrbInitInfo) {
//!         info.add_client_request_interceptor(Arc::new(Tagger));
//!     }
//! }
//!
//! let config = OrbConfig::default().orb_initializer(Arc::new(Setup));
//! let orb = armillary::Orb::with_config(config)?;
//! // Every request this ORB sends now carries the context.
//! # orb.shutdown(armillary::WaitForCompletion::Yes)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Interception points and their flow
//!
//! Client side ([`ClientRequestInterceptor`]): every attempt at a request
//! (a forward or a transparent re-send is a new attempt, with a new
//! request id) runs one *starting point*, `send_request` (or `send_poll`,
//! which a deferred request's poll runs in between), then exactly one
//! *ending point* on each interceptor whose starting point completed, in
//! the reverse order: `receive_reply` (a normal reply; a oneway with
//! `SyncScope::WithServer` or `WithTarget` once acknowledged),
//! `receive_exception` (a system or user exception), or `receive_other`
//! (a LOCATION_FORWARD, a transparent re-send, a oneway that gets no
//! reply). Server side ([`ServerRequestInterceptor`]): the starting point
//! `receive_request_service_contexts`, then `receive_request` just
//! before the servant runs (on its thread), then one ending point, again
//! on the interceptors whose starting point completed and in reverse
//! order: `send_reply` (a normal reply, and a oneway whose servant
//! returned), `send_exception`, or `send_other` (a LOCATION_FORWARD).
//!
//! An interceptor that fails a point with [`Intercept`] changes the
//! request's outcome: `Intercept::System` makes it that system exception,
//! `Intercept::ForwardRequest` a LOCATION_FORWARD to the reference (the
//! client then sends the request there; the server answers
//! LOCATION_FORWARD). The interceptors after it in that point are not
//! called; the ending points that remain see the new outcome. One that
//! panics is contained: the request ends in UNKNOWN
//! ([`minor::INTERCEPTOR_PANICKED`])
//! and the ORB goes on.
//!
//! Where the points run: a synchronous call's on the calling thread; a
//! deferred or asynchronous call's `send_request` on the sending thread
//! and its ending point where the reply is concluded (the thread that
//! collects it, or the ORB thread that reads it for a future or a
//! callback). On the server, `receive_request_service_contexts` runs
//! where the request is read and resolved to its POA (after a servant
//! activator has run: Armillary resolves the object first), the others on
//! the thread that runs the upcall (`receive_request` before a servant
//! locator's `preinvoke`, which Armillary runs as part of the upcall); an
//! asynchronous (AMH) servant's ending point runs where its
//! `ResponseHandler` answers. A request that a POA manager discards or
//! refuses while holding it, a LocateRequest, and a request whose target
//! names no IIOP object key are not intercepted. A deferred request
//! dropped before its reply is collected runs no ending point.
//!
//! The ORB holds its interceptors for as long as it lives: an interceptor
//! that holds the [`Orb`](crate::Orb) itself keeps it from shutting down
//! when the application drops its own handles (shut it down explicitly).
//!
//! # PICurrent
//!
//! [`PiCurrent`] (`Orb::pi_current`) holds, per thread, the slots the
//! initializers allocated. On the client, `send_request` sees a copy of
//! the calling thread's slots ([`ClientRequestInfo::get_slot`]); on the
//! server, the request has slots of its own, which the server's
//! interceptors set ([`ServerRequestInfo::set_slot`]) and which become
//! the servant thread's `PiCurrent` for the upcall, after
//! `receive_request`.
//!
//! # IOR interceptors
//!
//! An [`IorInterceptor`] adds tagged components to the IIOP profile of
//! every reference the ORB's POAs make (GIOP 1.1 and later profiles: 1.0
//! has no components).
//!
//! # Cost
//!
//! With no interceptor registered the ORB branches once on an empty list
//! per request and side: no allocation, no copy of the service contexts.
//!
//! # How collocation calls the interceptors
//!
//! (For the ORB's own code; these items are crate-internal.) A collocated
//! call has no GIOP message: it drives the interception values itself
//! and hands the service contexts from one side to the other as vectors.
//! `interceptors: &Arc<Interceptors>` is the ORB's (`OrbCore::interceptors`).
//!
//! 1. Client: `ClientInterception::start(interceptors, ClientCall { request_id:
//!    interceptors.next_request_id(), operation, response_expected,
//!    sync_scope, target, effective_target, slots:
//!    interceptors.thread_slots(), arguments })` gives
//!    `Option<Box<ClientInterception>>`: `None` when no client
//!    interceptor is registered (then skip every client step).
//!    `arguments` is `Some((NvList, result TypeCode))` where the call's
//!    arguments are known as `any`s, else `None`.
//! 2. Client: `send_request() -> Result<(), ClientOutcome>`. An
//!    `Err(outcome)` ends the call there: go to step 6 with it (a system
//!    exception, or a forward: send the call there instead).
//! 3. Server: `ServerInterception::start(interceptors, request_id,
//!    operation, response_expected, sync_scope,
//!    client.request_contexts().to_vec())` (`None`: no server
//!    interceptor), then `receive_request_service_contexts() ->
//!    Result<(), ServerOutcome>`; an `Err(outcome)` skips the servant (go
//!    to step 5 with it).
//! 4. Server: `set_target(&object_id)`, `receive_request() -> Result<(),
//!    ServerOutcome>` (an `Err` skips the servant, as in 3), then run the
//!    servant while the guard of `enter_request_scope()` lives (the
//!    request's PICurrent slots are then the thread's).
//! 5. Server: `conclude(outcome: ServerOutcome) -> (ServerOutcome,
//!    Vec<ServiceContext>)`, the outcome being what the servant came to
//!    (`Reply`, `UserException(repository id)`, `System(e)`,
//!    `Forward(reference)`); it returns the final outcome and the reply's
//!    service contexts. For an AMH servant, attach the interception to
//!    its `OwedReply` instead (`OwedReply::intercepted(Some(it))`): the
//!    reply concludes it whenever the `ResponseHandler` answers.
//! 6. Client: `conclude(outcome: ClientOutcome, reply_contexts) ->
//!    ClientOutcome`, with the server's final outcome mapped one to one
//!    (`NoReply` for a oneway that waits for nothing, `Retry` for a
//!    re-send); the result is the call's outcome (a system exception or
//!    a forward may have replaced it).
//!
//! `interceptors/tests.rs` drives exactly this sequence.

mod client;
mod current;
mod init;
mod ior;
mod server;
#[cfg(test)]
mod tests;

pub(crate) use client::{ClientCall, ClientInterception, ClientOutcome};
pub use client::{ClientPoint, ClientRequestInfo, ClientRequestInterceptor};
pub(crate) use current::RequestScope;
pub use current::{PiCurrent, SlotId};
pub(crate) use init::initialize;
pub use init::{OrbInitInfo, OrbInitializer};
pub(crate) use ior::components as ior_components;
pub use ior::{IorInfo, IorInterceptor};
pub(crate) use server::{ServerInterception, ServerOutcome};
pub use server::{ServerPoint, ServerRequestInfo, ServerRequestInterceptor};

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use armillary_giop::any::Any;
use armillary_giop::giop::ServiceContext;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use crate::object::ObjectRef;

/// How an interceptor changes a request's outcome at an interception
/// point (CORBA's `SystemException` and `PortableInterceptor::ForwardRequest`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Intercept {
    /// The request ends in this system exception.
    System(SystemException),
    /// The request goes to this reference instead (a LOCATION_FORWARD).
    ForwardRequest(ObjectRef),
}

impl From<SystemException> for Intercept {
    fn from(e: SystemException) -> Self {
        Intercept::System(e)
    }
}

impl From<PiError> for Intercept {
    /// What the OMG raises for the misuse: BAD_PARAM for a slot that was
    /// not allocated or a context already there, BAD_INV_ORDER for an
    /// attribute asked for at a point where it is not available.
    fn from(e: PiError) -> Self {
        Intercept::System(e.to_system_exception())
    }
}

/// Why a request info or [`PiCurrent`] refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PiError {
    /// The slot was not allocated by this ORB's initializers
    /// (`PortableInterceptor::InvalidSlot`).
    #[error("slot {0:?} was not allocated")]
    InvalidSlot(SlotId),
    /// A service context with this id is there already and `replace` was
    /// false (BAD_INV_ORDER, minor 15 in the OMG's table).
    #[error("a service context with id {0:#x} is there already")]
    ContextExists(u32),
    /// Service contexts can be added to a request only in `send_request`
    /// (client) and to a reply only before it is sent (server).
    #[error("{0} cannot be done at this interception point")]
    WrongPoint(&'static str),
}

impl PiError {
    /// The system exception a CORBA ORB raises for it.
    pub fn to_system_exception(&self) -> SystemException {
        match self {
            PiError::InvalidSlot(_) => SystemException::bad_param(0, CompletionStatus::No),
            PiError::ContextExists(_) => SystemException::bad_inv_order(
                armillary_giop::system_exception::omg_minor(15),
                CompletionStatus::No,
            ),
            PiError::WrongPoint(_) => SystemException::bad_inv_order(
                armillary_giop::system_exception::omg_minor(14),
                CompletionStatus::No,
            ),
        }
    }
}

/// How a request ended, as its interceptors see it
/// (`PortableInterceptor::ReplyStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReplyStatus {
    /// A normal reply (`SUCCESSFUL`).
    Successful,
    /// A system exception (`SYSTEM_EXCEPTION`).
    SystemException,
    /// A user exception (`USER_EXCEPTION`).
    UserException,
    /// A LOCATION_FORWARD (`LOCATION_FORWARD`).
    LocationForward,
    /// The request is sent again (`TRANSPORT_RETRY`): the server closed
    /// the connection before it answered, or wants another addressing.
    TransportRetry,
}

/// One ORB's interceptors and PICurrent slots, fixed when it starts.
/// Public only as what [`Invoker::client_interceptors`](crate::runtime::Invoker::client_interceptors)
/// returns: nothing of it is usable outside the crate.
#[doc(hidden)]
pub struct Interceptors {
    pub(crate) client: Vec<Arc<dyn ClientRequestInterceptor>>,
    pub(crate) server: Vec<Arc<dyn ServerRequestInterceptor>>,
    pub(crate) ior: Vec<Arc<dyn IorInterceptor>>,
    /// How many PICurrent slots the initializers allocated.
    pub(crate) slots: usize,
    /// Which ORB's slots a thread's PICurrent holds (process-unique).
    pub(crate) scope: u64,
    /// The request ids of requests that have no GIOP id (collocated, or
    /// never sent).
    request_ids: AtomicU32,
}

impl std::fmt::Debug for Interceptors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interceptors")
            .field("client", &self.client.len())
            .field("server", &self.server.len())
            .field("ior", &self.ior.len())
            .field("slots", &self.slots)
            .finish()
    }
}

static SCOPES: AtomicU64 = AtomicU64::new(1);

impl Interceptors {
    pub(crate) fn new(
        client: Vec<Arc<dyn ClientRequestInterceptor>>,
        server: Vec<Arc<dyn ServerRequestInterceptor>>,
        ior: Vec<Arc<dyn IorInterceptor>>,
        slots: usize,
    ) -> Self {
        Interceptors {
            client,
            server,
            ior,
            slots,
            scope: SCOPES.fetch_add(1, Ordering::Relaxed),
            request_ids: AtomicU32::new(1),
        }
    }

    /// None at all (an ORB with no initializer).
    pub(crate) fn none() -> Self {
        Self::new(Vec::new(), Vec::new(), Vec::new(), 0)
    }

    /// A request id for a request that gets none from a connection (a
    /// collocated call, a request that found no connection).
    pub(crate) fn next_request_id(&self) -> u32 {
        self.request_ids.fetch_add(1, Ordering::Relaxed)
    }

    /// A copy of the calling thread's PICurrent slots (what a request
    /// carries from `send_request` on).
    pub(crate) fn thread_slots(&self) -> Vec<Option<Any>> {
        current::thread_slots(self.scope, self.slots)
    }

    /// This ORB's PICurrent.
    pub(crate) fn pi_current(&self) -> PiCurrent {
        PiCurrent::new(self.scope, self.slots)
    }
}

/// Runs one interceptor's point: a panic in it is UNKNOWN
/// ([`minor::INTERCEPTOR_PANICKED`], `completed`), as the ORB's other
/// application code is (`crate::servant::contain`).
fn contained(
    completed: CompletionStatus,
    point: impl FnOnce() -> Result<(), Intercept>,
) -> Result<(), Intercept> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(point)).unwrap_or_else(|_| {
        Err(Intercept::System(SystemException::unknown(
            minor::INTERCEPTOR_PANICKED,
            completed,
        )))
    })
}

/// Adds `context` to `list`, replacing one with its id when `replace`.
fn add_context(
    list: &mut Vec<ServiceContext>,
    context: ServiceContext,
    replace: bool,
) -> Result<(), PiError> {
    match list.iter_mut().find(|c| c.id == context.id) {
        Some(_) if !replace => Err(PiError::ContextExists(context.id)),
        Some(there) => {
            *there = context;
            Ok(())
        }
        None => {
            list.push(context);
            Ok(())
        }
    }
}

/// The slot `id` of `slots`.
fn slot(slots: &[Option<Any>], id: SlotId) -> Result<Option<Any>, PiError> {
    slots
        .get(id.index())
        .cloned()
        .ok_or(PiError::InvalidSlot(id))
}
