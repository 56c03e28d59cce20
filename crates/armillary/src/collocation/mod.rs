//! Collocation: calls to objects served in this process, without IIOP.
//!
//! The strategies of Schmidt, Wang and Kuhns' *Collocation Optimizations
//! for CORBA* (`-ORBCollocation`, [`Collocation`]): one small trait,
//! [`CollocationStrategy`], a module per strategy, chosen in one place
//! ([`for_strategy`]):
//!
//! - [`thru_poa`]: through the target's POA on the calling thread, with
//!   every semantic of a remote call (the default);
//! - [`direct`]: straight to the servant found once in the active object
//!   map;
//! - [`none`]: not collocated at all (loopback IIOP, through
//!   `crate::invocation`).
//!
//! How a reference is found collocated, and the per-reference cache, is
//! the object model's (`crate::local_server`); the ORB core implements
//! its `LocalServer` here ([`server`]). A call carries its arguments as
//! a generated stub's typed closure (no CDR at all) or encoded, for
//! untyped calls, DII, and servants that offer no typed interface (DSI,
//! asynchronous servants): [`in_process`] runs those through the
//! servant's skeleton with in-process replies. [`handoff`] runs an upcall
//! on another thread when the call must not run on the caller's: a call
//! bounded by its timeout, or one the POA's concurrency model hands to
//! its own threads. [`oneway`] posts the oneways that return at once and
//! keeps a caller's requests in order around them.
//!
//! The ORB's own local objects (POA Current, the `RootPOA` reference) are
//! served by [`local_objects`] with [`marshalled::CollocatedInvoker`].

pub(crate) mod direct;
pub(crate) mod handoff;
pub(crate) mod in_process;
pub(crate) mod local_objects;
pub(crate) mod marshalled;
pub(crate) mod none;
pub(crate) mod oneway;
pub(crate) mod server;
pub(crate) mod thru_poa;

use std::sync::Arc;
use std::time::Instant;

use crate::config::Collocation;
use crate::local_server::{CallContexts, LocalAttempt, LocalBody, LocalTarget};
use crate::object::OutgoingRequest;
use crate::orb::OrbCore;

/// How a collocated call reaches its servant.
pub(crate) trait CollocationStrategy: Sync {
    /// Carries out one attempt at `request` on `target`, an object of
    /// `core` (which is not shut down), to end by `deadline`.
    fn call(
        &self,
        core: &Arc<OrbCore>,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        body: LocalBody<'_>,
        contexts: Option<&mut CallContexts>,
    ) -> LocalAttempt;
}

/// The strategy `collocation` names: the one place it is chosen.
pub(crate) fn for_strategy(collocation: Collocation) -> &'static dyn CollocationStrategy {
    match collocation {
        Collocation::None => &none::Loopback,
        Collocation::ThruPoa => &thru_poa::ThruPoa,
        Collocation::Direct => &direct::Direct,
    }
}
