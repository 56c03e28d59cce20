//! What the server needs from the ORB: the object adapters (the POAs) a
//! request is dispatched through, and someone to tell when it can serve no
//! more. The server depends on this trait, not on the ORB, which
//! implements it.

use crate::object::DecodingScope;
use crate::object::ObjectRef;
use crate::poa::Resolution;

/// Where a LocateRequest finds its object.
pub(crate) enum Located {
    /// The object is served here.
    Here,
    /// No such object here.
    Unknown,
    /// A servant manager forwards it.
    Forward(ObjectRef),
}

/// The ORB's object adapters, as the server sees them.
pub(crate) trait ObjectAdapter: Send + Sync {
    /// What a request for `operation` on the object named by `key` (a POA
    /// key, or a plain key bound with `corbaloc`) leads to.
    fn resolve(&self, key: &[u8], operation: &str) -> Resolution;

    /// Where the object `key` names is: a bound plain key or a live POA
    /// object is here; a servant manager may forward it.
    fn locate_key(&self, key: &[u8]) -> Located;

    /// The full name of the POA the object `key` names and the object id,
    /// without activating anything (what a request filter sees).
    fn describe_key(&self, key: &[u8]) -> Option<(Vec<String>, crate::poa::ObjectId)>;

    /// While alive, references decoded on this thread belong to this ORB
    /// (bound to it weakly: to none once it is gone).
    fn decoding_scope(&self) -> DecodingScope;

    /// The ORB's interceptors, when it has server request interceptors
    /// (`None`: requests are not intercepted).
    fn server_interceptors(&self) -> Option<&std::sync::Arc<crate::interceptors::Interceptors>>;

    /// The server's reactor failed: it serves nothing more (`Orb::run`,
    /// waiting for a shutdown, returns then).
    fn server_failed(&self);
}
