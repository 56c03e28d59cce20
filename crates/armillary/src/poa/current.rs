//! POA Current: which POA, object id and servant the calling thread is
//! serving a request for.
//!
//! [`PoaCurrent`] is the Rust face of `PortableServer::Current`. The ORB
//! also hands it out as an object reference,
//! `resolve_initial_references("POACurrent")`, which
//! [`PoaCurrent::narrow`] turns back into a [`PoaCurrent`]; the reference
//! answers `get_object_id` and `get_reference` through CDR too (a local
//! object: the calls never leave the calling thread).

use std::cell::RefCell;
use std::sync::Arc;

use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
use armillary_giop::system_exception::{CompletionStatus, SystemException};

use super::{KeptTarget, ObjectId, Poa, PoaError};
use crate::exception::UserException;
use crate::object::{Interface, ObjectRef};
use crate::servant::{Servant, ServerRequest};

/// The repository id of `PortableServer::Current`.
pub const REPOSITORY_ID: &str = "IDL:omg.org/PortableServer/Current:2.3";

/// What the thread serves in one upcall.
enum Frame {
    /// A request located for this upcall alone: the frame owns its POA,
    /// object id and servant while it runs (see [`UpcallFrame::leave`]).
    Located {
        poa: Poa,
        object_id: ObjectId,
        servant: Arc<dyn Servant>,
    },
    /// A collocated call to the object a reference keeps (its servant is
    /// held by the caller while the upcall runs).
    Kept(Arc<KeptTarget>),
}

impl Frame {
    fn poa(&self) -> &Poa {
        match self {
            Frame::Located { poa, .. } => poa,
            Frame::Kept(target) => target.poa(),
        }
    }

    fn object_id(&self) -> &ObjectId {
        match self {
            Frame::Located { object_id, .. } => object_id,
            Frame::Kept(target) => target.object_id(),
        }
    }

    fn servant(&self) -> Option<Arc<dyn Servant>> {
        match self {
            Frame::Located { servant, .. } => Some(servant.clone()),
            Frame::Kept(target) => target.servant(),
        }
    }
}

/// The upcalls a thread serves, innermost last.
struct Stack {
    frames: Vec<Frame>,
    /// The kept target of the last collocated call this thread made,
    /// kept after it so that the next call to the same object, the
    /// common case, pushes its frame without touching a reference count.
    last_kept: Option<Arc<KeptTarget>>,
}

/// Pops this thread's innermost frame: the frame, or for a kept
/// target's (which stays as `last_kept`) the one it displaced. Dropped
/// by the caller, once the stack is no longer borrowed: what it holds
/// may be the last reference to a POA and its servants, whose `Drop`
/// may ask for POA Current.
fn pop() -> Option<Frame> {
    STACK.with(|s| {
        let mut stack = s.borrow_mut();
        match stack.frames.pop()? {
            Frame::Kept(target) => stack.last_kept.replace(target).map(Frame::Kept),
            located => Some(located),
        }
    })
}

thread_local! {
    static STACK: RefCell<Stack> = const {
        RefCell::new(Stack {
            frames: Vec::new(),
            last_kept: None,
        })
    };
}

/// Pops the frame pushed by [`enter`] when the upcall ends.
pub(crate) struct UpcallFrame(());

impl Drop for UpcallFrame {
    fn drop(&mut self) {
        pop();
    }
}

impl UpcallFrame {
    /// Pops the frame and gives back what [`enter`] put in it.
    pub(crate) fn leave(self) -> Option<(Poa, ObjectId, Arc<dyn Servant>)> {
        let frame = pop();
        std::mem::forget(self);
        match frame? {
            Frame::Located {
                poa,
                object_id,
                servant,
            } => Some((poa, object_id, servant)),
            Frame::Kept(_) => None,
        }
    }
}

/// Records that this thread now serves a request (nested upcalls stack).
pub(crate) fn enter(poa: Poa, object_id: ObjectId, servant: Arc<dyn Servant>) -> UpcallFrame {
    push(Frame::Located {
        poa,
        object_id,
        servant,
    })
}

/// Records that this thread now serves a collocated call to `target`.
pub(crate) fn enter_kept(target: &Arc<KeptTarget>) -> UpcallFrame {
    // Another object's, dropped once the stack is no longer borrowed (see
    // `pop`).
    let _displaced = STACK.with(|s| {
        let mut stack = s.borrow_mut();
        let (kept, displaced) = match stack.last_kept.take() {
            Some(last) if Arc::ptr_eq(&last, target) => (last, None),
            other => (target.clone(), other),
        };
        stack.frames.push(Frame::Kept(kept));
        displaced
    });
    UpcallFrame(())
}

fn push(frame: Frame) -> UpcallFrame {
    STACK.with(|s| s.borrow_mut().frames.push(frame));
    UpcallFrame(())
}

/// True while this thread runs an upcall (possibly nested under others)
/// of a POA of the ORB whose POAs `registry` holds: waiting there for
/// that ORB's requests to finish would wait for itself.
pub(crate) fn in_upcall_of(registry: &Arc<super::PoaRegistry>) -> bool {
    STACK.with(|s| {
        s.borrow()
            .frames
            .iter()
            .any(|frame| Arc::ptr_eq(&frame.poa().inner.registry, registry))
    })
}

/// True while this thread runs any upcall (of any ORB).
pub(crate) fn in_any_upcall() -> bool {
    STACK.with(|s| !s.borrow().frames.is_empty())
}

/// `PortableServer::Current`: answers only inside an upcall; elsewhere every
/// method fails with [`PoaError::NoContext`].
#[derive(Debug, Clone, Copy, Default)]
pub struct PoaCurrent;

impl PoaCurrent {
    fn with<T>(f: impl FnOnce(&Frame) -> Option<T>) -> Result<T, PoaError> {
        STACK.with(|s| {
            s.borrow()
                .frames
                .last()
                .and_then(f)
                .ok_or(PoaError::NoContext)
        })
    }

    /// The POA of the request being served.
    #[doc(alias = "get_POA")]
    #[doc(alias = "get_poa")]
    pub fn poa(&self) -> Result<Poa, PoaError> {
        Self::with(|f| Some(f.poa().clone()))
    }

    /// The object id of the request being served.
    #[doc(alias = "get_object_id")]
    pub fn object_id(&self) -> Result<ObjectId, PoaError> {
        Self::with(|f| Some(f.object_id().clone()))
    }

    /// The servant serving the request.
    #[doc(alias = "get_servant")]
    pub fn servant(&self) -> Result<Arc<dyn Servant>, PoaError> {
        Self::with(Frame::servant)
    }

    /// A reference to the object being served.
    #[doc(alias = "get_reference")]
    pub fn reference(&self) -> Result<ObjectRef, PoaError> {
        let (poa, oid, servant) =
            Self::with(|f| Some((f.poa().clone(), f.object_id().clone(), f.servant()?)))?;
        Ok(poa.make_reference(&oid, servant.repository_id()))
    }

    /// A typed reference to the object being served: the Rust form of
    /// C++'s `_this()` inside an upcall. In a servant method,
    /// `let me: Quoter = PoaCurrent.this()?;` (a `PoaError` converts into
    /// the method's error type). Fails with [`PoaError::NoContext`]
    /// outside an upcall and [`PoaError::WrongInterface`] when the
    /// servant does not implement `I`.
    #[doc(alias = "_this")]
    pub fn this<I: Interface>(&self) -> Result<I, PoaError> {
        let (poa, oid, servant) =
            Self::with(|f| Some((f.poa().clone(), f.object_id().clone(), f.servant()?)))?;
        if !servant.is_a(I::REPOSITORY_ID)
            && I::REPOSITORY_ID != crate::servant::OBJECT_REPOSITORY_ID
        {
            return Err(PoaError::WrongInterface(I::REPOSITORY_ID));
        }
        Ok(I::from_object(
            poa.make_reference(&oid, servant.repository_id()),
        ))
    }

    /// `PortableServer::Current::_narrow`: the POA Current behind a
    /// reference that `resolve_initial_references("POACurrent")` returned;
    /// `None` for any other reference (a remote object cannot be this
    /// thread's Current).
    pub fn narrow(reference: &ObjectRef) -> Option<PoaCurrent> {
        let local = reference.ior().iiop_profiles().is_empty();
        (local && !reference.is_nil() && reference.type_id() == REPOSITORY_ID).then_some(PoaCurrent)
    }
}

/// `PortableServer::Current::NoContext`, the user exception the reference
/// form of POA Current raises outside an upcall (the Rust methods return
/// [`PoaError::NoContext`] instead).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoContext;

impl CdrEncode for NoContext {
    fn encode(&self, _w: &mut CdrWriter) -> Result<(), CdrError> {
        Ok(())
    }
}

impl CdrDecode for NoContext {
    fn decode(_r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(NoContext)
    }
}

impl UserException for NoContext {
    const REPOSITORY_ID: &'static str = "IDL:omg.org/PortableServer/Current/NoContext:2.3";
}

/// The skeleton of the POA Current reference. It runs on the caller's
/// thread, so it sees the caller's upcall.
pub(crate) struct CurrentServant;

impl Servant for CurrentServant {
    fn repository_id(&self) -> &'static str {
        REPOSITORY_ID
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == REPOSITORY_ID || repository_id == "IDL:omg.org/CORBA/Current:1.0"
    }

    fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let marshal = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::Yes);
        let current = PoaCurrent;
        let answer = match request.operation() {
            "get_object_id" => current.object_id().map(|id| {
                request
                    .results()
                    .write_octet_seq(id.as_bytes())
                    .map_err(marshal)
            }),
            "get_reference" => current
                .reference()
                .map(|obj| obj.encode(request.results()).map_err(marshal)),
            // A POA is a local object: it has no CDR form (use `narrow`).
            "get_POA" | "get_servant" => {
                return Err(SystemException::no_implement(0, CompletionStatus::No))
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        };
        match answer {
            Ok(written) => written,
            Err(_) => request.raise(&NoContext),
        }
    }
}
