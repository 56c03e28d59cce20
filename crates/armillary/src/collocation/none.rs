//! `none`: a collocated object is called as a remote one, over loopback
//! IIOP (`crate::invocation`). A reference with this strategy never
//! reaches the collocated path; were it to, it is sent back.

use std::sync::Arc;

use super::CollocationStrategy;
use crate::local_server::{LocalAttempt, LocalBody, LocalTarget};
use crate::object::OutgoingRequest;
use crate::orb::OrbCore;

/// Calls go over IIOP.
pub(crate) struct Loopback;

impl CollocationStrategy for Loopback {
    fn call(
        &self,
        _core: &Arc<OrbCore>,
        _target: &LocalTarget,
        _request: &OutgoingRequest<'_>,
        _deadline: Option<std::time::Instant>,
        _body: LocalBody<'_>,
        _contexts: Option<&mut crate::local_server::CallContexts>,
    ) -> LocalAttempt {
        LocalAttempt::NotHere
    }
}
