//! [`Forwarder`]: the servant locator of the groups' POA. Every request
//! on a group reference — any operation of any interface, `_is_a` and
//! `_non_existent` included, and a LocateRequest — reaches `preinvoke`,
//! which never returns a servant: it raises `ForwardRequest` with the
//! replica the policy picks, and the ORB answers the client with
//! LOCATION_FORWARD (OBJECT_FORWARD for a LocateRequest). So the locator
//! needs no IDL of the replicas: it never reads a request's arguments.

use std::sync::Arc;

use armillary::poa::{Cookie, ObjectId, Poa, ServantLocator, ServantManagerError};
use armillary::{CompletionStatus, Servant, SystemException};

use crate::groups::NoChoice;
use crate::{minor, Shared};

/// Forwards each request on a group reference to a replica of the group.
pub(crate) struct Forwarder {
    pub(crate) shared: Arc<Shared>,
}

impl ServantLocator for Forwarder {
    fn preinvoke(
        &self,
        object_id: &ObjectId,
        _poa: &Poa,
        _operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError> {
        let unknown = || {
            ServantManagerError::System(SystemException::object_not_exist(
                minor::UNKNOWN_GROUP,
                CompletionStatus::No,
            ))
        };
        let group = object_id.as_str().ok_or_else(unknown)?;
        match self.shared.groups.choose(group, &*self.shared.policy) {
            Ok(replica) => Err(ServantManagerError::Forward(replica)),
            Err(NoChoice::UnknownGroup) => Err(unknown()),
            // No replica now: the client may try again later.
            Err(NoChoice::Empty) => Err(ServantManagerError::System(SystemException::transient(
                minor::NO_REPLICA,
                CompletionStatus::No,
            ))),
        }
    }

    fn postinvoke(
        &self,
        _object_id: &ObjectId,
        _poa: &Poa,
        _operation: &str,
        _cookie: Cookie,
        _servant: Arc<dyn Servant>,
    ) {
        // `preinvoke` never gives a servant, so the POA never calls this.
    }
}
