//! Object references and the calls made through them.
//!
//! An [`ObjectRef`] pairs an [`Ior`] with the [`Invoker`] that carries its
//! requests: the ORB's invocation engine (`crate::invocation`, over IIOP)
//! for every reference the ORB makes or decodes, its own objects'
//! included; an in-process invoker (`crate::collocation`) for the ORB's
//! local objects (POA Current, `RootPOA`). Generated stubs call
//! [`ObjectRef::invoke`] with two closures — one writes the arguments, one
//! reads the reply — and never see the transport. How a call finds its
//! way, to an object of this process or through the invoker, is
//! `routing.rs`.

use std::cell::RefCell;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use armillary_giop::any::{Origin, OriginGuard};
use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
use armillary_giop::giop::SyncScope;
use armillary_giop::ior::Ior;
use armillary_giop::system_exception::{CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, CodeSets, GiopVersion};
use bytes::Bytes;

use crate::config::Collocation;
use crate::local_server::LocalCache;
use crate::pending::PendingReply;

mod routing;

/// One request as a stub describes it: the operation and how to write its
/// arguments. `args` may be called more than once (a LOCATION_FORWARD or a
/// transparent retry re-encodes the request for another target).
pub struct OutgoingRequest<'a> {
    /// The operation name as it goes on the wire (`get_quote`, `_get_name`).
    pub operation: &'a str,
    /// False for oneway operations.
    pub response_expected: bool,
    /// For a oneway: how far it must get before the call returns.
    /// Two-way calls always use `WithTarget`.
    pub sync_scope: SyncScope,
    /// Writes the arguments into the request body.
    pub args: &'a dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    /// The call timeout set on the reference the request is made through
    /// ([`ObjectRef::with_call_timeout`]), if any: it overrides the
    /// thread's and the ORB's (see [`CallTimeout`](crate::CallTimeout)).
    pub call_timeout: Option<Duration>,
    /// A dynamic (DII) request's parameters and result TypeCode, which
    /// the ORB's portable interceptors see as `any`s
    /// ([`ClientRequestInfo::arguments`](crate::interceptors::ClientRequestInfo::arguments));
    /// `None` for a stub's request.
    pub signature: Option<(
        &'a crate::dii::NvList,
        &'a armillary_giop::typecode::TypeCode,
    )>,
}

impl OutgoingRequest<'_> {
    /// The timeout that applies to this request if it is sent now on an
    /// ORB whose own call timeout is `orb_timeout`: the reference's if set,
    /// else the current thread's, else the ORB's (`None`: no limit). Every
    /// way of sending a request (synchronous, oneway, deferred, and the
    /// asynchronous forms) takes its deadline from here.
    pub fn effective_timeout(&self, orb_timeout: Option<Duration>) -> Option<Duration> {
        crate::timeout::effective(self.call_timeout, orb_timeout)
    }
}

impl fmt::Debug for OutgoingRequest<'_> {
    /// The request without its argument encoder (a closure).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutgoingRequest")
            .field("operation", &self.operation)
            .field("response_expected", &self.response_expected)
            .field("sync_scope", &self.sync_scope)
            .field("call_timeout", &self.call_timeout)
            .finish_non_exhaustive()
    }
}

/// How a reply ended, when it did not end in a system exception.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyOutcome {
    /// NO_EXCEPTION: the body holds the return value and out parameters.
    Normal,
    /// USER_EXCEPTION: the body holds the repository id and the members.
    UserException,
}

/// A reply that arrived, owned, with what is needed to decode its body.
#[derive(Debug, Clone)]
pub struct ReplyMessage {
    /// The whole GIOP message (or, for a collocated call, a buffer laid out
    /// the same way). Shared: octet sequences decoded as [`Bytes`] are
    /// slices of it.
    pub bytes: Bytes,
    /// Where the body starts in `bytes`; alignment counts from `bytes[0]`.
    pub body_offset: usize,
    /// The reply's byte order.
    pub byte_order: ByteOrder,
    /// The reply's GIOP version.
    pub version: GiopVersion,
    /// The connection's negotiated code sets.
    pub codesets: CodeSets,
    /// Normal result or user exception.
    pub outcome: ReplyOutcome,
    /// GIOP 1.1 only: where each fragment's data starts in `bytes`, as in
    /// [`Frame::fragment_starts`](armillary_giop::giop::Frame::fragment_starts);
    /// alignment restarts at each. Empty otherwise.
    pub fragment_starts: Vec<usize>,
}

impl ReplyMessage {
    /// A reader positioned at the body.
    pub fn body(&self) -> CdrReader<'_> {
        CdrReader::new(&self.bytes, self.byte_order, self.version)
            .with_codesets(self.codesets)
            .with_position(self.body_offset)
            .with_fragment_starts(&self.fragment_starts)
            .with_source(&self.bytes)
    }
}

/// A reply body as a stub's decoding closure sees it.
pub enum ReplyBody<'a, 'r> {
    /// The return value, then the out and inout parameters, in order.
    Result(&'r mut CdrReader<'a>),
    /// A user exception: its repository id and a reader at its members.
    UserException {
        /// The exception's repository id.
        id: String,
        /// A reader positioned at the exception's members.
        members: &'r mut CdrReader<'a>,
    },
}

impl fmt::Debug for ReplyBody<'_, '_> {
    /// The kind of body and, for a user exception, its repository id; not
    /// the bytes the reader holds.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplyBody::Result(_) => f.debug_tuple("Result").finish_non_exhaustive(),
            ReplyBody::UserException { id, .. } => f
                .debug_struct("UserException")
                .field("id", id)
                .finish_non_exhaustive(),
        }
    }
}

/// The invoker of an asynchronous call that could not be sent: nothing
/// is ever decoded through it.
struct NoInvoker;

impl Invoker for NoInvoker {
    fn invoke(
        &self,
        _target: &Ior,
        _request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        Err(SystemException::inv_objref(0, CompletionStatus::No))
    }
}

/// Decodes `reply` with a stub's `result` closure, references in it binding
/// to `invoker`'s ORB: what every form of a two-way call (synchronous, DII,
/// AMI) does with its reply. A body that does not decode is MARSHAL,
/// COMPLETED_YES. `result` may run more than once: a GIOP 1.1 body whose
/// fragments can be read two ways is decoded in both
/// ([`CdrReader::decode_whole`]).
pub(crate) fn decode_reply<T, E>(
    invoker: &Arc<dyn Invoker>,
    reply: &ReplyMessage,
    mut result: impl FnMut(ReplyBody<'_, '_>) -> Result<Result<T, E>, CdrError>,
) -> Result<T, E>
where
    E: From<SystemException>,
{
    let _scope = DecodingScope::enter(invoker);
    let decoded = reply.body().decode_whole(|body| match reply.outcome {
        ReplyOutcome::Normal => result(ReplyBody::Result(body)),
        ReplyOutcome::UserException => {
            let id = body.read_string()?;
            result(ReplyBody::UserException { id, members: body })
        }
    });
    match decoded {
        Ok(outcome) => outcome,
        Err(e) => Err(SystemException::from_cdr_error(&e, CompletionStatus::Yes).into()),
    }
}

/// Where a LocateRequest found an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// The server has it (`OBJECT_HERE`).
    Here,
    /// The server does not know it (`UNKNOWN_OBJECT`).
    Unknown,
    /// It is elsewhere (`OBJECT_FORWARD` / `_PERM`).
    Forward(ObjectRef),
}

/// What carries requests to an object: the ORB's invocation engine, or an
/// in-process invoker for a local object. Implementations handle
/// forwarding and retries themselves and turn SYSTEM_EXCEPTION replies
/// into `Err`.
pub trait Invoker: Send + Sync + 'static {
    /// Sends `request` to `target` and, if a response is expected, waits for
    /// the reply. Returns `Ok(None)` for a oneway call once it is sent as far
    /// as its sync scope requires.
    fn invoke(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException>;

    /// Sends the two-way `request` to `target` now; its reply is collected
    /// later from the [`PendingReply`] (DII `send_deferred`). An invoker
    /// that cannot defer runs the request at once, which is what this
    /// default does.
    fn send_deferred(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        let outcome = self.invoke(target, request).and_then(|reply| {
            reply.ok_or_else(|| SystemException::internal(0, CompletionStatus::Maybe))
        });
        Ok(PendingReply::ready(outcome))
    }

    /// Sends the two-way `request` to `target` now for an AMI future or
    /// callback: like [`send_deferred`](Self::send_deferred), except that
    /// nobody will read the connection for the reply, so the invoker must
    /// (the ORB reads it with a thread per connection that has such
    /// requests). An invoker that cannot defer runs the request at once,
    /// which is what this default does.
    fn send_asynchronous(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.send_deferred(target, request)
    }

    /// Asks where `target` is without invoking it (a LocateRequest). An
    /// invoker with no such notion says the object is here.
    fn locate(&self, _target: &Ior) -> Result<Location, SystemException> {
        Ok(Location::Here)
    }

    /// How the references this invoker carries reach objects served in
    /// this process, unless a reference says otherwise
    /// ([`ObjectRef::with_collocation`]): the ORB's `-ORBCollocation`.
    /// `None` when this invoker carries no collocated calls at all,
    /// whatever a reference says: it is no ORB, or an ORB shut down (a
    /// call through it fails as a remote one does).
    fn collocation(&self) -> Option<Collocation> {
        None
    }

    /// Runs an AMI callback's delivery (`work` calls the application)
    /// where this invoker's ORB runs callbacks: at once, unless its
    /// concurrency model queues them for the application's threads.
    fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        work();
    }

    /// This invoker's ORB's own call timeout (`-ORBClientCallTimeout`),
    /// which a reference's or the thread's overrides: how a collocated
    /// call reckons its deadline.
    fn call_timeout(&self) -> Option<Duration> {
        None
    }

    /// This invoker's ORB's client request interceptors, when it has any
    /// (what a collocated call runs, as the invocation engine does for a
    /// remote one). For the ORB's own invokers.
    #[doc(hidden)]
    fn client_interceptors(&self) -> Option<Arc<crate::interceptors::Interceptors>> {
        None
    }
}

/// The ORBs that unbound references may bind to, oldest first: each
/// ORB registers itself when it starts ([`register_default_invoker`]) and
/// removes its own entry when it shuts down. Weak, so that this
/// process-wide list keeps no ORB alive.
static DEFAULT_INVOKERS: Mutex<Vec<Weak<dyn Invoker>>> = Mutex::new(Vec::new());

/// The token a [`DecodingScope`] installs as the decoding thread's
/// [`Origin`]: the invoker of the ORB whose message is being decoded.
/// References read from a reply or from a request's arguments belong to
/// the ORB that received them, and so do those read later from an `any`
/// decoded meanwhile (the `any` keeps its origin), while that ORB is
/// there (weak: an `any` keeps no ORB alive).
struct ReceivingInvoker(Weak<dyn Invoker>);

thread_local! {
    /// The token this thread made last: the next scope of the same ORB
    /// (the common case: a connection's messages) reuses it instead of
    /// allocating one.
    static LAST_TOKEN: RefCell<Option<Arc<ReceivingInvoker>>> = const { RefCell::new(None) };
}

/// While alive, references decoded on this thread bind to `invoker`
/// (nested scopes restore the outer one when dropped).
pub(crate) struct DecodingScope {
    _origin: OriginGuard,
}

impl DecodingScope {
    pub(crate) fn enter(invoker: &Arc<dyn Invoker>) -> Self {
        let token = LAST_TOKEN.with(|last| {
            let mut last = last.borrow_mut();
            match &*last {
                Some(token) if std::ptr::addr_eq(token.0.as_ptr(), Arc::as_ptr(invoker)) => {
                    token.clone()
                }
                _ => {
                    let token = Arc::new(ReceivingInvoker(Arc::downgrade(invoker)));
                    *last = Some(token.clone());
                    token
                }
            }
        });
        DecodingScope {
            _origin: Origin::new(token).enter(),
        }
    }

    /// Enters the scope `token` stands for (made once, see
    /// [`ScopeToken`]): no lookup, no allocation.
    pub(crate) fn enter_token(token: &ScopeToken) -> Self {
        DecodingScope {
            _origin: Origin::new(token.0.clone()).enter(),
        }
    }
}

/// A [`DecodingScope`] of one ORB made ahead, for a path that enters it
/// on every call (a collocated typed call): entering it only clones the
/// token, where [`DecodingScope::enter`] needs the ORB's invoker, and so
/// the ORB upgraded from a weak reference, first. Weak, as every token.
#[derive(Clone)]
pub(crate) struct ScopeToken(Arc<ReceivingInvoker>);

impl ScopeToken {
    /// The token of `invoker`'s scope.
    pub(crate) fn new(invoker: Weak<dyn Invoker>) -> ScopeToken {
        ScopeToken(Arc::new(ReceivingInvoker(invoker)))
    }
}

impl std::fmt::Debug for ScopeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ScopeToken(..)")
    }
}

/// The invoker of the ORB that received what is being decoded on this
/// thread, if any (and still there).
fn receiving_invoker() -> Option<Arc<dyn Invoker>> {
    Origin::current()?
        .token()
        .downcast_ref::<ReceivingInvoker>()
        .and_then(|r| r.0.upgrade())
}

/// Makes `invoker` (an ORB) the one that references decoded from CDR
/// without one bind to, until it is unregistered; the ORB registered last
/// and still alive wins.
pub(crate) fn register_default_invoker(invoker: Weak<dyn Invoker>) {
    let mut list = DEFAULT_INVOKERS.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|w| w.strong_count() > 0);
    list.push(invoker);
}

/// Removes `invoker`'s own registration (and no other ORB's).
pub(crate) fn unregister_default_invoker(invoker: &Weak<dyn Invoker>) {
    let mut list = DEFAULT_INVOKERS.lock().unwrap_or_else(|e| e.into_inner());
    list.retain(|w| w.strong_count() > 0 && !Weak::ptr_eq(w, invoker));
}

/// The invoker of the newest ORB that is still running, if any.
fn default_invoker() -> Option<Arc<dyn Invoker>> {
    let list = DEFAULT_INVOKERS.lock().unwrap_or_else(|e| e.into_inner());
    list.iter().rev().find_map(Weak::upgrade)
}

/// A typed object reference: what the IDL compiler generates for each
/// interface (`Quoter`), and [`ObjectRef`] itself for `Object`. Generic
/// code uses it to make typed references from untyped ones, e.g.
/// [`PoaCurrent::this`](crate::poa::PoaCurrent::this) and the generated
/// skeletons' `activate`.
pub trait Interface: Sized {
    /// The interface's repository id (`IDL:Stock/Quoter:1.0`).
    const REPOSITORY_ID: &'static str;

    /// Wraps a reference without checking its type.
    fn from_object(object: ObjectRef) -> Self;

    /// The untyped reference.
    fn as_object(&self) -> &ObjectRef;

    /// A new reference to the same object whose calls have their own call
    /// timeout, overriding the thread's and the ORB's (CORBA's
    /// `_set_policy_overrides` with a `RelativeRoundtripTimeoutPolicy`);
    /// see [`ObjectRef::with_call_timeout`]. Works on generated stubs
    /// (`quoter.with_call_timeout(…)` gives a `Quoter`).
    #[must_use = "the timeout applies to the returned reference only"]
    fn with_call_timeout(&self, timeout: Duration) -> Self {
        Self::from_object(self.as_object().with_call_timeout(timeout))
    }

    /// A new reference to the same object whose calls reach it, when it
    /// is served in this process, as `collocation` says; see
    /// [`ObjectRef::with_collocation`]. Works on generated stubs.
    #[must_use = "the strategy applies to the returned reference only"]
    fn with_collocation(&self, collocation: Collocation) -> Self {
        Self::from_object(self.as_object().with_collocation(collocation))
    }
}

impl Interface for ObjectRef {
    const REPOSITORY_ID: &'static str = crate::servant::OBJECT_REPOSITORY_ID;

    fn from_object(object: ObjectRef) -> Self {
        object
    }

    fn as_object(&self) -> &ObjectRef {
        self
    }
}

/// A reference to a CORBA object (`CORBA::Object`). Cheap to clone.
///
/// Generated stubs (`Quoter`) wrap an `ObjectRef` and call
/// [`invoke`](Self::invoke) for each operation; the operations every object
/// has (`_is_a`, `_non_existent`, LocateRequest) are methods here.
///
/// # Examples
///
/// ```
/// use armillary::config::OrbConfig;
/// use armillary::{ObjectRef, Orb};
/// # use armillary_quoter::{generated, QuoterImpl};
/// use generated::stock::QuoterSkeleton;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orb = Orb::with_config(OrbConfig::default())?;
/// let poa = orb.root_poa();
/// poa.manager().activate()?;
/// // A Stock::Quoter served by this ORB (the crate docs show how);
/// // QuoterImpl implements the generated QuoterServant.
/// let quoter = QuoterSkeleton::new(QuoterImpl::default()).activate(&poa)?;
/// let ior = orb.object_to_string(quoter.as_object());
///
/// let object: ObjectRef = orb.string_to_object(&ior)?;
/// assert_eq!(object.type_id(), "IDL:Stock/Quoter:1.0");
/// assert!(object.is_a("IDL:Stock/Quoter:1.0")?);
/// assert!(!object.non_existent()?);
///
/// // What the generated stub does for `long get_quote(in string stock_name)`.
/// let cents = object.invoke_plain(
///     "get_quote",
///     &|w| w.write_string("ACME"),
///     |reply| reply.read_long(),
/// )?;
/// assert_eq!(cents, 4217);
///
/// orb.shutdown(armillary::WaitForCompletion::Yes)?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ObjectRef {
    inner: Arc<ObjectInner>,
}

/// What a reference is: its IOR (its identity: equality and the hash read
/// nothing else) and what carries its requests. Nothing in it changes
/// after it is made, so a reference is a sound map key: an unbound
/// reference's binding lives in the [`BindsOnFirstUse`] invoker it
/// carries, not here.
struct ObjectInner {
    ior: Ior,
    invoker: Arc<dyn Invoker>,
    /// The reference-level call timeout override, if one is set.
    call_timeout: Option<Duration>,
    /// The reference-level collocation strategy, if one is set.
    collocation: Option<Collocation>,
    /// Whether the object is served in this process, once looked up
    /// (shared by the references made from this one).
    local: Arc<dyn LocalCache>,
}

/// The invoker of an unbound reference: on first use it binds to the ORB
/// started last among those still running (OBJ_ADAPTER while there is
/// none) and carries every request through it from then on.
struct BindsOnFirstUse {
    bound: OnceLock<Arc<dyn Invoker>>,
}

impl BindsOnFirstUse {
    /// The ORB this reference is bound to, binding it now if it is not.
    fn bound(&self) -> Result<&Arc<dyn Invoker>, SystemException> {
        if let Some(invoker) = self.bound.get() {
            return Ok(invoker);
        }
        let invoker = default_invoker()
            .ok_or_else(|| SystemException::obj_adapter(0, CompletionStatus::No))?;
        Ok(self.bound.get_or_init(|| invoker))
    }
}

impl Invoker for BindsOnFirstUse {
    fn invoke(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<Option<ReplyMessage>, SystemException> {
        self.bound()?.invoke(target, request)
    }

    fn send_deferred(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.bound()?.send_deferred(target, request)
    }

    fn send_asynchronous(
        &self,
        target: &Ior,
        request: &OutgoingRequest<'_>,
    ) -> Result<PendingReply, SystemException> {
        self.bound()?.send_asynchronous(target, request)
    }

    fn locate(&self, target: &Ior) -> Result<Location, SystemException> {
        self.bound()?.locate(target)
    }

    fn collocation(&self) -> Option<Collocation> {
        self.bound().ok().and_then(|invoker| invoker.collocation())
    }

    fn deliver(&self, work: Box<dyn FnOnce() + Send>) {
        match self.bound() {
            Ok(invoker) => invoker.deliver(work),
            Err(_) => work(),
        }
    }

    fn call_timeout(&self) -> Option<Duration> {
        self.bound().ok().and_then(|invoker| invoker.call_timeout())
    }

    fn client_interceptors(&self) -> Option<Arc<crate::interceptors::Interceptors>> {
        self.bound()
            .ok()
            .and_then(|invoker| invoker.client_interceptors())
    }
}

impl fmt::Debug for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectRef")
            .field("type_id", &self.inner.ior.type_id)
            .field("profiles", &self.inner.ior.profiles.len())
            .field("call_timeout", &self.inner.call_timeout)
            .finish()
    }
}

impl PartialEq for ObjectRef {
    /// Two references are equal when their IORs are identical (CORBA's
    /// `_is_equivalent` without asking the server). Which ORB carries
    /// them does not matter.
    fn eq(&self, other: &Self) -> bool {
        self.inner.ior == other.inner.ior
    }
}

/// The nil reference, as CORBA initializes object references.
impl Default for ObjectRef {
    fn default() -> Self {
        ObjectRef::nil()
    }
}

/// Equality is IOR identity, which is an equivalence relation.
impl Eq for ObjectRef {}

/// Hashes the IOR, as [`PartialEq`] compares it, so references can key a
/// `HashMap` or fill a `HashSet`. (For CORBA's `_hash`, which is the same
/// for merely equivalent references, see [`ObjectRef::hash_within`].)
///
/// A reference holds nothing that changes after it is made (an unbound
/// one binds to its ORB inside the invoker it carries), so such maps need
/// no `allow` of Clippy's `mutable_key_type`.
///
/// ```
/// use std::collections::HashSet;
/// use armillary::ObjectRef;
///
/// let mut seen = HashSet::new();
/// assert!(seen.insert(ObjectRef::nil()));
/// assert!(!seen.insert(ObjectRef::nil()));
/// ```
impl std::hash::Hash for ObjectRef {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::hash::Hash::hash(&self.inner.ior, state);
    }
}

impl ObjectRef {
    /// A reference carried by `invoker`.
    pub fn new(ior: Ior, invoker: Arc<dyn Invoker>) -> Self {
        ObjectRef {
            inner: Arc::new(ObjectInner {
                ior,
                invoker,
                call_timeout: None,
                collocation: None,
                local: crate::local_server::cache(),
            }),
        }
    }

    /// A new reference to the same object (and carried by the same ORB)
    /// whose calls have the call timeout `timeout`, whatever the thread's
    /// and the ORB's are (CORBA's `_set_policy_overrides` with a
    /// `RelativeRoundtripTimeoutPolicy`). `Duration::ZERO` or
    /// `Duration::MAX`: no limit for its calls. This reference keeps its
    /// own; the two compare equal (the IOR is the same).
    ///
    /// A call that runs out of time fails with TIMEOUT
    /// ([`minor::CALL_TIMEOUT`](crate::minor::CALL_TIMEOUT)),
    /// COMPLETED_MAYBE once the request has left and COMPLETED_NO before.
    /// Levels and precedence: [`CallTimeout`](crate::CallTimeout).
    ///
    /// ```
    /// use std::time::Duration;
    /// use armillary::ObjectRef;
    ///
    /// let plain = ObjectRef::nil();
    /// let hasty = plain.with_call_timeout(Duration::from_millis(100));
    /// assert_eq!(hasty.call_timeout(), Some(Duration::from_millis(100)));
    /// assert_eq!(plain.call_timeout(), None);
    /// assert_eq!(plain, hasty);
    /// ```
    #[must_use = "the timeout applies to the returned reference only"]
    pub fn with_call_timeout(&self, timeout: Duration) -> ObjectRef {
        ObjectRef {
            inner: Arc::new(ObjectInner {
                ior: self.inner.ior.clone(),
                invoker: self.inner.invoker.clone(),
                call_timeout: Some(timeout),
                collocation: self.inner.collocation,
                local: self.inner.local.clone(),
            }),
        }
    }

    /// A new reference to the same object whose calls reach it, when it is
    /// served in this process, the way `collocation` says, whatever its
    /// ORB's `-ORBCollocation` is (see [`Collocation`]); the two compare
    /// equal. `Collocation::None` makes a collocated object's calls go
    /// over loopback IIOP, as a remote one's.
    ///
    /// ```
    /// use armillary::config::Collocation;
    /// use armillary::ObjectRef;
    ///
    /// let plain = ObjectRef::nil();
    /// let remote = plain.with_collocation(Collocation::None);
    /// assert_eq!(remote.collocation(), Some(Collocation::None));
    /// assert_eq!(plain.collocation(), None);
    /// assert_eq!(plain, remote);
    /// ```
    #[must_use = "the strategy applies to the returned reference only"]
    pub fn with_collocation(&self, collocation: Collocation) -> ObjectRef {
        ObjectRef {
            inner: Arc::new(ObjectInner {
                ior: self.inner.ior.clone(),
                invoker: self.inner.invoker.clone(),
                call_timeout: self.inner.call_timeout,
                collocation: Some(collocation),
                local: self.inner.local.clone(),
            }),
        }
    }

    /// The collocation strategy set on this reference
    /// ([`with_collocation`](Self::with_collocation)), if any.
    pub fn collocation(&self) -> Option<Collocation> {
        self.inner.collocation
    }

    /// The call timeout set on this reference
    /// ([`with_call_timeout`](Self::with_call_timeout)), if any.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.inner.call_timeout
    }

    /// A reference with no ORB yet: on first use it binds to the ORB
    /// started last among those still running (OBJ_ADAPTER if there is
    /// none). A reference made from it with
    /// [`with_call_timeout`](Self::with_call_timeout) shares its binding.
    pub fn unbound(ior: Ior) -> Self {
        Self::new(
            ior,
            Arc::new(BindsOnFirstUse {
                bound: OnceLock::new(),
            }),
        )
    }

    /// The nil reference.
    pub fn nil() -> Self {
        Self::unbound(Ior::nil())
    }

    /// True for the nil reference.
    pub fn is_nil(&self) -> bool {
        self.inner.ior.is_nil()
    }

    /// The IOR behind this reference.
    pub fn ior(&self) -> &Ior {
        &self.inner.ior
    }

    /// The repository id the IOR names (may be empty, e.g. from corbaloc).
    pub fn type_id(&self) -> &str {
        &self.inner.ior.type_id
    }

    pub(crate) fn invoker(&self) -> Result<&Arc<dyn Invoker>, SystemException> {
        if self.is_nil() {
            return Err(SystemException::inv_objref(0, CompletionStatus::No));
        }
        Ok(&self.inner.invoker)
    }

    /// Makes a two-way call. `args` writes the in and inout arguments;
    /// `result` reads the reply body and returns the operation's result or
    /// its typed error. Marshalling failures become MARSHAL (or
    /// DATA_CONVERSION) system exceptions.
    pub fn invoke<T, E>(
        &self,
        operation: &str,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
        result: impl FnMut(ReplyBody<'_, '_>) -> Result<Result<T, E>, CdrError>,
    ) -> Result<T, E>
    where
        E: From<SystemException>,
    {
        let request = OutgoingRequest {
            operation,
            response_expected: true,
            sync_scope: SyncScope::WithTarget,
            args,
            call_timeout: self.call_timeout(),
            signature: None,
        };
        let invoker = self.invoker()?;
        let reply = self
            .route_invoke(&request)?
            .ok_or_else(|| SystemException::internal(0, CompletionStatus::Maybe))?;
        decode_reply(invoker, &reply, result)
    }

    /// Sends a two-way call now and returns a [`Poller`](crate::ami::Poller)
    /// to collect its reply (the hook behind a generated `sendp_<op>`; see
    /// [`ami`](crate::ami) for the semantics). `args` writes the in and
    /// inout arguments and may run again (a forward, a re-send after an
    /// orderly close); `result` decodes the reply as for
    /// [`invoke`](Self::invoke). A failure to send is the poller's outcome.
    pub fn send_poller<R, E>(
        &self,
        operation: &'static str,
        args: impl Fn(&mut CdrWriter) -> Result<(), CdrError> + Send + Sync + 'static,
        result: impl FnMut(ReplyBody<'_, '_>) -> Result<Result<R, E>, CdrError> + Send + 'static,
    ) -> crate::ami::Poller<R, E>
    where
        E: From<SystemException>,
    {
        let request = crate::ami::OwnedRequest::new(operation, Arc::new(args), self.call_timeout());
        let (invoker, pending) = self.send_with(&request, false);
        crate::ami::Poller::new(request, pending, invoker, Box::new(result))
    }

    /// Sends a two-way call now and returns a
    /// [`ReplyFuture`](crate::ami::ReplyFuture) of its outcome, usable from
    /// any executor (the hook behind a generated `<op>_async`; see
    /// [`ami`](crate::ami)). `args` and `result` as for
    /// [`send_poller`](Self::send_poller). A failure to send is the
    /// future's outcome.
    pub fn send_future<R, E>(
        &self,
        operation: &'static str,
        args: impl Fn(&mut CdrWriter) -> Result<(), CdrError> + Send + Sync + 'static,
        result: impl FnMut(ReplyBody<'_, '_>) -> Result<Result<R, E>, CdrError> + Send + 'static,
    ) -> crate::ami::ReplyFuture<R, E>
    where
        E: From<SystemException>,
    {
        let request = crate::ami::OwnedRequest::new(operation, Arc::new(args), self.call_timeout());
        let (invoker, pending) = self.send_with(&request, true);
        crate::ami::ReplyFuture::new(request, pending, invoker, Box::new(result))
    }

    /// Sends a two-way call now; its outcome goes to `deliver` later (the
    /// hook behind a generated `sendc_<op>`, whose `deliver` calls the reply
    /// handler's `<op>` or `<op>_excep`; see [`ami`](crate::ami) for where
    /// and when it runs). `result` decodes a normal reply (return value,
    /// then out and inout parameters); a user or system exception reaches
    /// `deliver` as an [`ExceptionHolder`](crate::ami::ExceptionHolder).
    ///
    /// Fails only for what fails before the request is on its way (the ORB
    /// is shut down, no connection could be opened, the call timeout passed
    /// while waiting under back-pressure); everything later, including the
    /// call timeout, goes to `deliver`, exactly once.
    pub fn send_callback<R, E>(
        &self,
        operation: &'static str,
        args: impl Fn(&mut CdrWriter) -> Result<(), CdrError> + Send + Sync + 'static,
        result: impl FnMut(&mut CdrReader<'_>) -> Result<R, CdrError> + Send + 'static,
        deliver: impl FnOnce(Result<R, crate::ami::ExceptionHolder<E>>) + Send + 'static,
    ) -> Result<(), SystemException>
    where
        R: Send + 'static,
        E: crate::ami::UserExceptionSet,
    {
        let request = crate::ami::OwnedRequest::new(operation, Arc::new(args), self.call_timeout());
        let invoker = self.invoker()?.clone();
        let mut pending = self.route_send(&request.get(), true)?;
        if let Some(e) = pending.failed_before_sending() {
            return Err(e);
        }
        crate::ami::CallbackCall::new(
            request,
            pending,
            invoker,
            Box::new(result),
            Box::new(deliver),
        )
        .step();
        Ok(())
    }

    /// Sends `request` for a poller (`asynchronous` false: its owner reads)
    /// or a future (true: the ORB reads); a failure to send becomes the
    /// outcome.
    fn send_with(
        &self,
        request: &crate::ami::OwnedRequest,
        asynchronous: bool,
    ) -> (Arc<dyn Invoker>, PendingReply) {
        let invoker = match self.invoker() {
            Ok(invoker) => invoker.clone(),
            Err(e) => return (Arc::new(NoInvoker), PendingReply::ready(Err(e))),
        };
        let sent = self.route_send(&request.get(), asynchronous);
        (
            invoker,
            sent.unwrap_or_else(|e| PendingReply::ready(Err(e))),
        )
    }

    /// Makes a two-way call to an operation that raises no user
    /// exceptions: `args` writes the in and inout arguments, `result` reads
    /// the reply body. A user exception in the reply (the server's IDL
    /// differs) is UNKNOWN with minor `UNLISTED_USER_EXCEPTION`.
    pub fn invoke_plain<T>(
        &self,
        operation: &str,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
        mut result: impl FnMut(&mut CdrReader<'_>) -> Result<T, CdrError>,
    ) -> Result<T, SystemException> {
        self.invoke(operation, args, |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(result(r)?)),
            ReplyBody::UserException { .. } => Ok(Err(SystemException::unknown(
                armillary_giop::system_exception::minor::UNLISTED_USER_EXCEPTION,
                CompletionStatus::Yes,
            ))),
        })
    }

    /// Makes a oneway call: no reply, no user exceptions. Returns once the
    /// request is handed to the transport (`SYNC_WITH_TRANSPORT`).
    pub fn invoke_oneway(
        &self,
        operation: &str,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<(), SystemException> {
        self.invoke_oneway_with(SyncScope::None, operation, args)
    }

    /// Makes a oneway call with a chosen sync scope: `None` (or with
    /// transport) returns once the request is written; `WithServer` once
    /// the server has it, before the upcall; `WithTarget` once the upcall
    /// is done. The latter two surface system exceptions raised on the way
    /// (OBJECT_NOT_EXIST, TRANSIENT from a discarding POA, ...).
    pub fn invoke_oneway_with(
        &self,
        sync_scope: SyncScope,
        operation: &str,
        args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<(), SystemException> {
        let request = OutgoingRequest {
            operation,
            response_expected: false,
            sync_scope,
            args,
            call_timeout: self.call_timeout(),
            signature: None,
        };
        self.route_invoke(&request).map(|_| ())
    }

    /// Asks the object whether it supports `repository_id` (`_is_a`). The
    /// answer is local when the IOR's own type id matches.
    pub fn is_a(&self, repository_id: &str) -> Result<bool, SystemException> {
        if !self.type_id().is_empty() && self.type_id() == repository_id {
            return Ok(true);
        }
        self.invoke(
            "_is_a",
            &|w| w.write_string(repository_id),
            |reply| match reply {
                ReplyBody::Result(r) => Ok(Ok(r.read_bool()?)),
                ReplyBody::UserException { .. } => {
                    Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
                }
            },
        )
    }

    /// `_is_equivalent`: true when both references are known, without
    /// asking anyone, to denote the same object (identical IORs, or the
    /// same IIOP endpoint and object key).
    pub fn is_equivalent(&self, other: &ObjectRef) -> bool {
        if self == other {
            return true;
        }
        let key = |o: &ObjectRef| {
            o.ior()
                .iiop_profiles()
                .into_iter()
                .next()
                .map(|p| (p.host, p.port, p.object_key))
        };
        matches!((key(self), key(other)), (Some(a), Some(b)) if a == b)
    }

    /// CORBA's `_hash`: a value in `0..=maximum` that is the same for
    /// [equivalent](Self::is_equivalent) references (it hashes the first
    /// IIOP endpoint and object key). To key a map, use the reference itself:
    /// it implements [`Hash`](std::hash::Hash) and [`Eq`].
    #[doc(alias = "_hash")]
    pub fn hash_within(&self, maximum: u32) -> u32 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match self.ior().iiop_profiles().into_iter().next() {
            Some(p) => (p.host, p.port, p.object_key).hash(&mut h),
            None => self.ior().hash(&mut h),
        }
        match maximum {
            u32::MAX => h.finish() as u32,
            m => (h.finish() % (u64::from(m) + 1)) as u32,
        }
    }

    /// Asks the server where the object is, without invoking it
    /// (GIOP LocateRequest).
    pub fn locate(&self) -> Result<Location, SystemException> {
        self.invoker()?.locate(self.ior())
    }

    /// Asks whether the object no longer exists (`_non_existent`): true
    /// when its server says so, either by answering true or by raising
    /// OBJECT_NOT_EXIST (what a POA does for a deactivated object), as
    /// CORBA and omniORB's `_non_existent` have it. Any other failure
    /// (the server cannot be reached, say) is an `Err`: it tells nothing
    /// of the object.
    ///
    /// ```
    /// use armillary::config::OrbConfig;
    /// use armillary::{ObjectRef, Orb};
    /// # use armillary_quoter::{generated, QuoterImpl};
    /// use generated::stock::QuoterSkeleton;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let orb = Orb::with_config(OrbConfig::default())?;
    /// let poa = orb.root_poa();
    /// poa.manager().activate()?;
    /// let id = poa.activate_object(QuoterSkeleton::new(QuoterImpl::default()))?;
    /// let quoter: ObjectRef = poa.id_to_reference(&id)?;
    /// assert!(!quoter.non_existent()?);
    ///
    /// poa.deactivate_object(&id)?;
    /// assert!(quoter.non_existent()?);
    /// orb.shutdown(armillary::WaitForCompletion::Yes)?;
    /// # Ok(())
    /// # }
    /// ```
    #[doc(alias = "_non_existent")]
    pub fn non_existent(&self) -> Result<bool, SystemException> {
        let asked = self.invoke("_non_existent", &|_| Ok(()), |reply| match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_bool()?)),
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        });
        match asked {
            Err(e) if e.is_object_not_exist() => Ok(true),
            other => other,
        }
    }
}

impl CdrEncode for ObjectRef {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        self.inner.ior.encode(w)
    }
}

impl CdrDecode for ObjectRef {
    const MIN_SIZE: usize = Ior::MIN_SIZE;

    /// A decoded reference belongs to the ORB whose message is being
    /// decoded on this thread (or, taken out of an `any`, to the ORB that
    /// received the `any`); outside any, it binds on first use to the
    /// default invoker.
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let ior = Ior::decode(r)?;
        Ok(match receiving_invoker() {
            Some(invoker) => ObjectRef::new(ior, invoker),
            None => ObjectRef::unbound(ior),
        })
    }
}
