//! The ORB's local objects: POA Current and the `RootPOA` reference,
//! whose requests run in-process ([`LocalInvoker`]); any other target
//! of a reference decoded from their replies goes to the ORB.

use std::sync::{Arc, Weak};

use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{CompletionStatus, SystemException};

use crate::object::{Invoker, Location, ObjectRef, OutgoingRequest, ReplyMessage};
use crate::pending::PendingReply;
use crate::poa::Poa;

use super::marshalled::CollocatedInvoker;
use crate::orb::core::shut_down_error;
use crate::orb::{Orb, OrbCore};

const POA_REPOSITORY_ID: &str = "IDL:omg.org/PortableServer/POA:2.3";

/// What the `RootPOA` initial reference is as an object: a local object
/// whose only remote-style use is `_is_a`; its operations are the Rust
/// methods of the [`Poa`] that [`Poa::narrow`] returns.
pub(crate) struct LocalPoaServant;

impl crate::Servant for LocalPoaServant {
    fn repository_id(&self) -> &'static str {
        POA_REPOSITORY_ID
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == POA_REPOSITORY_ID
    }

    fn dispatch(&self, _request: &mut crate::ServerRequest<'_>) -> Result<(), SystemException> {
        // A POA is a local object: call it through `Poa::narrow`.
        Err(SystemException::no_implement(0, CompletionStatus::No))
    }
}

impl Poa {
    /// `PortableServer::POA::_narrow` of the reference that
    /// `orb.resolve_initial_references("RootPOA")` returned: `orb`'s root
    /// POA. `None` for any other reference (a POA is a local object and is
    /// never reached through a remote reference).
    pub fn narrow(orb: &Orb, reference: &ObjectRef) -> Option<Poa> {
        let local = reference.ior().iiop_profiles().is_empty();
        (local && !reference.is_nil() && reference.type_id() == POA_REPOSITORY_ID)
            .then(|| orb.root_poa())
    }
}

/// The invoker of a local object the ORB hands out (POA Current): the
/// object's own operations run in-process, on the calling thread. A
/// reference decoded from their replies binds to this invoker (see
/// `object::DecodingScope`) yet belongs to the ORB, so requests for any
/// other target go to the ORB.
struct LocalInvoker {
    ior: Ior,
    local: CollocatedInvoker,
    orb: Weak<OrbCore>,
}

impl LocalInvoker {
    /// Runs `call` with the invoker a request to `target` goes through:
    /// the local object's own, or the ORB's (BAD_INV_ORDER once it is
    /// gone).
    fn route<T>(
        &self,
        target: &Ior,
        call: impl FnOnce(&dyn Invoker) -> Result<T, SystemException>,
    ) -> Result<T, SystemException> {
        if *target == self.ior {
            return call(&self.local);
        }
        call(&*self.orb.upgrade().ok_or_else(shut_down_error)?)
    }
}

impl Invoker for LocalInvoker {
    fn invoke(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        self.route(target, |invoker| invoker.invoke(target, request))
    }

    fn send_deferred(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.route(target, |invoker| invoker.send_deferred(target, request))
    }

    fn send_asynchronous(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.route(target, |invoker| invoker.send_asynchronous(target, request))
    }

    /// The local object is here (a collocated invoker's answer).
    fn locate(&self, target: &Ior) -> Result<Location, SystemException> {
        self.route(target, |invoker| invoker.locate(target))
    }
}

/// A reference to a local object of the ORB `core`, served on the calling
/// thread by `servant`.
pub(crate) fn local_reference(core: &Arc<OrbCore>, servant: Arc<dyn crate::Servant>) -> ObjectRef {
    let ior = CollocatedInvoker::new(servant.clone())
        .into_object_ref()
        .ior()
        .clone();
    let invoker = LocalInvoker {
        ior: ior.clone(),
        local: CollocatedInvoker::new(servant),
        orb: Arc::downgrade(core),
    };
    ObjectRef::new(ior, Arc::new(invoker))
}
