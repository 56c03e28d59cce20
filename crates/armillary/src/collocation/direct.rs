//! `direct`: a collocated call is a plain call on the servant.
//!
//! The first call on a reference goes through the POA (`thru_poa`); when
//! it found the servant in the POA's active object map, the reference
//! keeps it and every later call goes straight to it on the calling
//! thread: no POA manager state, no object lookup (a generated stub's
//! typed call does not even leave the reference: `ObjectRef::invoke_typed`
//! calls the kept servant itself). The reference keeps the servant alive
//! as long as it lives. What `direct` gives up, exactly, of what
//! `thru-poa` keeps:
//!
//! - the POA manager's state (holding, discarding, inactive) and the
//!   POA's existence: calls go on while the servant lives;
//! - deactivation: a deactivated object's servant is still called;
//! - servant managers after the first call, and LOCATION_FORWARD from
//!   them;
//! - SINGLE_THREAD_MODEL serialisation and the POA's concurrency model:
//!   the call runs on the calling thread, concurrently with others;
//! - POA Current (not set in the servant);
//! - interceptors;
//! - oneway sync scopes: every oneway runs to its end before returning;
//! - the call timeout: the call runs on the calling thread until it ends;
//! - a panicking servant as UNKNOWN: a generated stub's call is a plain
//!   Rust call, and a panic in the servant unwinds into the caller (an
//!   untyped call, through CDR, still gets UNKNOWN).
//!
//! It keeps: the ORB not shut down (a shut-down ORB's objects are not
//! found collocated). Objects served
//! by a servant locator or a default servant are never kept: their calls
//! go through the POA every time.

use std::sync::Arc;
use std::time::Instant;

use armillary_giop::system_exception::{CompletionStatus, SystemException};

use super::in_process;
use super::{thru_poa, CollocationStrategy};
use crate::local_server::{CallContexts, LocalAttempt, LocalBody, LocalTarget};
use crate::object::OutgoingRequest;
use crate::orb::OrbCore;
use crate::poa::ObjectId;
use crate::servant::{contain, dispatch_contained, Servant};

/// Straight to the servant.
pub(crate) struct Direct;

impl CollocationStrategy for Direct {
    fn call(
        &self,
        core: &Arc<OrbCore>,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        body: LocalBody<'_>,
        contexts: Option<&mut CallContexts>,
    ) -> LocalAttempt {
        if let Some((servant, object_id)) = target.direct() {
            return call_servant(core, servant, object_id, request, deadline, body);
        }
        thru_poa::call(
            core,
            target.key(),
            request,
            deadline,
            body,
            contexts,
            |upcall| {
                if upcall.found_in_active_object_map() {
                    target.set_direct(upcall.servant().clone(), upcall.object_id().clone());
                }
            },
        )
    }
}

/// Calls `servant` on the calling thread: typed when it offers the
/// call's interface, else with encoded arguments.
fn call_servant(
    core: &Arc<OrbCore>,
    servant: &Arc<dyn Servant>,
    object_id: &ObjectId,
    request: &OutgoingRequest<'_>,
    deadline: Option<Instant>,
    body: LocalBody<'_>,
) -> LocalAttempt {
    if let LocalBody::Typed(call) = body {
        if let Some(view) = servant.local_interface(call.interface()) {
            return in_process::typed_ran(contain(CompletionStatus::Maybe, || {
                call.run(view);
                Ok::<(), SystemException>(())
            }));
        }
    }
    in_process::call_here(core, request, deadline, None, |operation, args, reply| {
        in_process::run_request(
            core,
            object_id,
            operation,
            (args, request.response_expected),
            reply,
            None,
            |request| dispatch_contained(&**servant, request),
        )
    })
}
