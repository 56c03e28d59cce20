//! How the server resolves a request's object key: through the ORB's
//! POAs, or the plain keys bound with [`Orb::bind_object_key`](super::Orb::bind_object_key)
//! (`ObjectAdapter`, which the server calls, so that the transport does
//! not depend on the ORB).

use std::sync::Arc;

use crate::poa::Resolution;
use crate::transport::server::{Located, ObjectAdapter};

use super::OrbCore;

impl ObjectAdapter for OrbCore {
    fn resolve(&self, key: &[u8], operation: &str) -> Resolution {
        // A POA's key goes to the POAs at once; any other may be a plain
        // key bound to one.
        if crate::poa::is_poa_key(key) {
            return self.registry.resolve(key, operation);
        }
        let mapped = self.mapped_key(key);
        self.registry
            .resolve(mapped.as_deref().unwrap_or(key), operation)
    }

    fn describe_key(&self, key: &[u8]) -> Option<(Vec<String>, crate::poa::ObjectId)> {
        let mapped = self.mapped_key(key);
        self.registry.describe(mapped.as_deref().unwrap_or(key))
    }

    fn locate_key(&self, key: &[u8]) -> Located {
        if self.key_table.read().contains_key(key) {
            return Located::Here;
        }
        match self.registry.resolve(key, "_locate") {
            Resolution::Upcall(_) | Resolution::Held(_) => Located::Here,
            Resolution::Forward(to) => Located::Forward(to),
            Resolution::Failed(_) | Resolution::NotAPoaKey => Located::Unknown,
        }
    }

    fn decoding_scope(&self) -> crate::object::DecodingScope {
        crate::object::DecodingScope::enter_token(&self.scope)
    }

    fn server_interceptors(&self) -> Option<&Arc<crate::interceptors::Interceptors>> {
        (!self.interceptors.server.is_empty()).then_some(&self.interceptors)
    }

    fn server_failed(&self) {
        let _guard = self.shutdown_lock.lock();
        self.shutdown_signal.notify_all();
    }
}
