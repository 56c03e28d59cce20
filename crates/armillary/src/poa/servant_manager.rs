//! Servant managers and adapter activators: application objects the POA
//! calls to find servants (and POAs) on demand.

use std::any::Any;
use std::sync::Arc;

use armillary_giop::system_exception::SystemException;

use super::{ObjectId, Poa};
use crate::object::ObjectRef;
use crate::servant::Servant;

/// What a servant manager may answer instead of a servant.
///
/// `?` on a [`SystemException`] (or anything that converts into one, such
/// as a `PoaError`, through `SystemException::from`) gives `System`; its
/// [`source`](std::error::Error::source) is that exception.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ServantManagerError {
    /// `ForwardRequest`: the client is told to use this reference instead
    /// (a LOCATION_FORWARD reply).
    #[error("forward request to an object of type {:?}", .0.type_id())]
    Forward(ObjectRef),
    /// A system exception for the client.
    #[error("the servant manager raised a system exception")]
    System(#[source] SystemException),
}

impl From<SystemException> for ServantManagerError {
    fn from(e: SystemException) -> Self {
        ServantManagerError::System(e)
    }
}

/// Incarnates servants on first use for a RETAIN POA with
/// USE_SERVANT_MANAGER; the servant then stays in the active object map.
pub trait ServantActivator: Send + Sync + 'static {
    /// Makes the servant for `object_id`. The POA calls this at most once at
    /// a time per object id.
    fn incarnate(
        &self,
        object_id: &ObjectId,
        poa: &Poa,
    ) -> Result<Arc<dyn Servant>, ServantManagerError>;

    /// Called when the object is deactivated (or its POA destroyed) and
    /// the servant is no longer needed for it.
    fn etherealize(
        &self,
        object_id: &ObjectId,
        poa: &Poa,
        servant: Arc<dyn Servant>,
        cleanup_in_progress: bool,
        remaining_activations: bool,
    );
}

/// Whatever a locator wants back in `postinvoke`.
pub type Cookie = Box<dyn Any + Send>;

/// Finds a servant for every single request of a NON_RETAIN POA with
/// USE_SERVANT_MANAGER.
pub trait ServantLocator: Send + Sync + 'static {
    /// Returns the servant for this request and a cookie for `postinvoke`.
    fn preinvoke(
        &self,
        object_id: &ObjectId,
        poa: &Poa,
        operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError>;

    /// Called after the request, whatever its outcome.
    fn postinvoke(
        &self,
        object_id: &ObjectId,
        poa: &Poa,
        operation: &str,
        cookie: Cookie,
        servant: Arc<dyn Servant>,
    );
}

/// Creates child POAs on demand, when a request or `find_poa` names one
/// that does not exist.
pub trait AdapterActivator: Send + Sync + 'static {
    /// Creates the child `name` of `parent` and returns true if it did.
    fn unknown_adapter(&self, parent: &Poa, name: &str) -> bool;
}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use armillary_giop::system_exception::{CompletionStatus, SystemException};

    use super::ServantManagerError;
    use crate::object::ObjectRef;

    #[test]
    fn errors_display_and_expose_their_exception_as_source() {
        let ex = SystemException::transient(0, CompletionStatus::No);
        let e = ServantManagerError::from(ex.clone());
        assert_eq!(
            e.to_string(),
            "the servant manager raised a system exception"
        );
        let source = e.source().expect("a system exception is the source");
        assert_eq!(source.downcast_ref::<SystemException>(), Some(&ex));

        let forward = ServantManagerError::Forward(ObjectRef::nil());
        assert!(forward.to_string().starts_with("forward request"));
        assert!(forward.source().is_none());
    }
}
