//! POA Current: which POA, object id and servant the calling thread is
//! serving a request for.

use std::cell::RefCell;
use std::sync::Arc;

use super::{Poa, PoaError};
use crate::object::ObjectRef;
use crate::servant::Servant;

struct Frame {
    poa: Poa,
    object_id: Vec<u8>,
    servant: Arc<dyn Servant>,
}

thread_local! {
    static STACK: RefCell<Vec<Frame>> = const { RefCell::new(Vec::new()) };
}

/// Pops the frame pushed by [`enter`] when the upcall ends.
pub(crate) struct UpcallFrame(());

impl Drop for UpcallFrame {
    fn drop(&mut self) {
        STACK.with(|s| s.borrow_mut().pop());
    }
}

/// Records that this thread now serves a request (nested upcalls stack).
pub(crate) fn enter(poa: Poa, object_id: Vec<u8>, servant: Arc<dyn Servant>) -> UpcallFrame {
    STACK.with(|s| {
        s.borrow_mut().push(Frame {
            poa,
            object_id,
            servant,
        })
    });
    UpcallFrame(())
}

/// True while this thread runs a servant upcall.
pub fn in_upcall() -> bool {
    STACK.with(|s| !s.borrow().is_empty())
}

/// `PortableServer::Current`: answers only inside an upcall; elsewhere every
/// method fails with [`PoaError::NoContext`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PoaCurrent;

impl PoaCurrent {
    fn with<T>(f: impl FnOnce(&Frame) -> T) -> Result<T, PoaError> {
        STACK.with(|s| s.borrow().last().map(f).ok_or(PoaError::NoContext))
    }

    /// The POA of the request being served.
    pub fn get_poa(&self) -> Result<Poa, PoaError> {
        Self::with(|f| f.poa.clone())
    }

    /// The object id of the request being served.
    pub fn get_object_id(&self) -> Result<Vec<u8>, PoaError> {
        Self::with(|f| f.object_id.clone())
    }

    /// The servant serving the request.
    pub fn get_servant(&self) -> Result<Arc<dyn Servant>, PoaError> {
        Self::with(|f| f.servant.clone())
    }

    /// A reference to the object being served.
    pub fn get_reference(&self) -> Result<ObjectRef, PoaError> {
        let (poa, oid, servant) =
            Self::with(|f| (f.poa.clone(), f.object_id.clone(), f.servant.clone()))?;
        Ok(poa.make_reference(&oid, servant.repository_id()))
    }
}
