//! [`ContextActivator`]: the servant activator of a persistent naming
//! service's POA, which brings back, on their first request after a
//! restart, the contexts that an earlier run of the service made.
//!
//! A context made in this run is activated when it is made; the
//! activator is asked only for object ids the POA has no servant for: a
//! context of the store not yet seen in this run gets its servant, and
//! anything else (a destroyed context, an iterator of an earlier run, an
//! id the service never made) is OBJECT_NOT_EXIST, as it would be
//! without an activator.

use std::sync::{Arc, Weak};

use armillary::giop::system_exception::minor as orb_minor;
use armillary::poa::{ObjectId, Poa, ServantActivator, ServantManagerError};
use armillary::{CompletionStatus, Servant, SystemException};

use crate::context::{context_number, Shared};

/// Incarnates the contexts of a persistent service's store. It holds the
/// service weakly: the POA holds the activator, and the service holds
/// the POA.
pub(crate) struct ContextActivator {
    pub(crate) shared: Weak<Shared>,
}

impl ServantActivator for ContextActivator {
    fn incarnate(
        &self,
        object_id: &ObjectId,
        _poa: &Poa,
    ) -> Result<Arc<dyn Servant>, ServantManagerError> {
        let not_exist = || {
            SystemException::object_not_exist(orb_minor::UNREGISTERED_OBJECT, CompletionStatus::No)
        };
        let shared = self.shared.upgrade().ok_or_else(not_exist)?;
        let n = context_number(object_id).ok_or_else(not_exist)?;
        if !shared.context_exists(n)? {
            return Err(not_exist().into());
        }
        Ok(shared.servant(n).into_servant())
    }

    fn etherealize(
        &self,
        _object_id: &ObjectId,
        _poa: &Poa,
        _servant: Arc<dyn Servant>,
        _cleanup_in_progress: bool,
        _remaining_activations: bool,
    ) {
        // The servant holds nothing but its context's number.
    }
}
