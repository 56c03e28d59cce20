//! [`Forwarder`]: the servant locator of the groups' POA. Every request
//! on a group reference — any operation of any interface, `_is_a` and
//! `_non_existent` included — reaches `preinvoke`, which raises
//! `ForwardRequest` with the replica the policy picks, and the ORB
//! answers the client with LOCATION_FORWARD. So the locator needs no IDL
//! of the replicas: it never reads a request's arguments.
//!
//! A LocateRequest (which reaches `preinvoke` as the operation
//! `_locate`, a name no IDL operation can have) is answered as a request
//! is: OBJECT_FORWARD to the replica the policy picks (omniORB sends one
//! before its first call on a reference, and then goes to the replica
//! directly), UNKNOWN_OBJECT for a group the locator does not have, and
//! OBJECT_HERE for a group with no replica now (the request that follows
//! gets TRANSIENT).

use std::sync::Arc;

use armillary::poa::{Cookie, ObjectId, Poa, ServantLocator, ServantManagerError};
use armillary::{CompletionStatus, Servant, ServerRequest, SystemException};

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
        operation: &str,
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
            Err(NoChoice::Empty) if operation == LOCATE => {
                Ok((Arc::new(Placeholder), Box::new(())))
            }
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
        // `preinvoke` gives a servant only to answer a LocateRequest,
        // which runs no upcall: the POA never calls this.
    }
}

/// The operation name with which a LocateRequest reaches `preinvoke`.
const LOCATE: &str = "_locate";

/// What `preinvoke` gives for a LocateRequest on a group with no replica
/// now: its presence makes the answer OBJECT_HERE; it is never invoked.
struct Placeholder;

impl Servant for Placeholder {
    fn repository_id(&self) -> &'static str {
        "IDL:omg.org/CORBA/Object:1.0"
    }

    fn is_a(&self, _repository_id: &str) -> bool {
        false
    }

    fn dispatch(&self, _request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        Err(SystemException::object_not_exist(
            minor::UNKNOWN_GROUP,
            CompletionStatus::No,
        ))
    }
}
