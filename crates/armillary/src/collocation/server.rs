//! The ORB core as the object model's [`LocalServer`]: how a collocated
//! call reaches this ORB's objects, and the ORB's entry in the process's
//! table of serving ORBs (made when its server starts, removed when it
//! stops).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::{for_strategy, thru_poa};
use crate::config::Collocation;
use crate::local_server::{self, CallContexts, LocalAttempt, LocalBody, LocalServer, LocalTarget};
use crate::object::{Invoker, OutgoingRequest};
use crate::orb::OrbCore;
use crate::pending::PendingReply;
use crate::transport::server::ObjectAdapter;

impl LocalServer for OrbCore {
    fn call(
        self: Arc<Self>,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        strategy: Collocation,
        body: LocalBody<'_>,
        contexts: Option<&mut CallContexts>,
    ) -> LocalAttempt {
        if self.shut_down.load(Ordering::SeqCst) {
            return LocalAttempt::NotHere;
        }
        let _scope = ObjectAdapter::decoding_scope(&*self);
        for_strategy(strategy).call(&self, target, request, deadline, body, contexts)
    }

    fn intercepts(&self) -> bool {
        !self.interceptors.server.is_empty()
    }

    fn send(
        &self,
        target: &LocalTarget,
        request: &OutgoingRequest<'_>,
        deadline: Option<Instant>,
        strategy: Collocation,
        caller: &Arc<dyn Invoker>,
    ) -> Option<PendingReply> {
        if strategy == Collocation::None {
            return None;
        }
        thru_poa::send(&self.serving()?, target.key(), request, deadline, caller)
    }

    fn max_forwards(&self) -> u32 {
        self.config.max_forwards
    }
}

impl OrbCore {
    /// This ORB, while it serves (not shut down).
    fn serving(&self) -> Option<Arc<OrbCore>> {
        if self.shut_down.load(Ordering::SeqCst) {
            return None;
        }
        self.me.upgrade()
    }

    /// Enters the endpoints `server` publishes in the process's table of
    /// serving ORBs.
    pub(crate) fn register_local(&self, server: &crate::transport::server::Server) {
        let mut endpoints = server.published();
        endpoints.extend(server.published_tls());
        let me: Weak<dyn LocalServer> = self.me.clone();
        local_server::register(endpoints, me, self.scope.clone());
    }

    /// Removes this ORB from the process's table of serving ORBs.
    pub(crate) fn unregister_local(&self) {
        let me: Weak<dyn LocalServer> = self.me.clone();
        local_server::unregister(&me);
    }
}
