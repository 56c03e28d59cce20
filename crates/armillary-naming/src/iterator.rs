//! [`BindingIteratorImpl`]: the bindings that `list` did not return at
//! once, handed out a few at a time.

use std::collections::VecDeque;
use std::sync::Arc;

use armillary::poa::PoaError;
use armillary::{CompletionStatus, SystemException};
use parking_lot::Mutex;

use crate::context::{iterator_id, Shared};
use crate::cos_naming::{
    Binding, BindingIteratorServant, BindingIteratorSkeleton, BindingList, BindingType,
};
use crate::minor;

/// A `CosNaming::BindingIterator` over a snapshot of a context's bindings
/// taken by `list`. It is activated on the naming service's POA and
/// deactivated by `destroy` (or, when more than
/// [`MAX_ITERATORS`](crate::MAX_ITERATORS) are alive, when it is the
/// oldest).
pub struct BindingIteratorImpl {
    shared: Arc<Shared>,
    id: u64,
    rest: Mutex<VecDeque<Binding>>,
}

impl std::fmt::Debug for BindingIteratorImpl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BindingIteratorImpl")
            .field("id", &self.id)
            .field("left", &self.rest.lock().len())
            .finish()
    }
}

impl BindingIteratorImpl {
    /// The skeleton of iterator `id` over `rest`, ready for activation.
    pub(crate) fn skeleton(
        shared: Arc<Shared>,
        id: u64,
        rest: VecDeque<Binding>,
    ) -> BindingIteratorSkeleton<BindingIteratorImpl> {
        BindingIteratorSkeleton::new(BindingIteratorImpl {
            shared,
            id,
            rest: Mutex::new(rest),
        })
    }
}

impl BindingIteratorServant for BindingIteratorImpl {
    fn next_one(&self) -> Result<(bool, Binding), SystemException> {
        Ok(match self.rest.lock().pop_front() {
            Some(binding) => (true, binding),
            // The binding is undefined when there is none; send an empty one.
            None => (
                false,
                Binding {
                    binding_name: Vec::new(),
                    binding_type: BindingType::Nobject,
                },
            ),
        })
    }

    fn next_n(&self, how_many: u32) -> Result<(bool, BindingList), SystemException> {
        if how_many == 0 {
            return Err(SystemException::bad_param(
                minor::ZERO_BINDINGS_ASKED,
                CompletionStatus::No,
            ));
        }
        let mut rest = self.rest.lock();
        let count = rest
            .len()
            .min(usize::try_from(how_many).unwrap_or(usize::MAX));
        let list: BindingList = rest.drain(..count).collect();
        Ok((!list.is_empty(), list))
    }

    fn destroy(&self) -> Result<(), SystemException> {
        self.shared.forget_iterator(self.id);
        match self.shared.poa().deactivate_object(iterator_id(self.id)) {
            Ok(()) | Err(PoaError::ObjectNotActive) => Ok(()),
            Err(e) => Err(SystemException::from(e)),
        }
    }
}
