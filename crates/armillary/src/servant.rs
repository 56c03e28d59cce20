//! Servants: the Rust objects that carry out requests, and the
//! [`ServerRequest`] through which a skeleton reads arguments and writes the
//! reply.
//!
//! A generated skeleton implements [`Servant`] for every IDL interface: it
//! finds the operation (in O(log n), by binary search over its sorted
//! operation names), decodes the arguments, calls the user's trait method
//! and encodes the result or exception. The standard operations `_is_a`,
//! `_non_existent` and `_interface`-less `_get_interface` rejections are
//! answered by [`Servant::dispatch_builtin`], which the ORB calls first.

use std::sync::Arc;

use armillary_giop::cdr::{CdrError, CdrReader, CdrWriter};
use armillary_giop::giop::{MessageShape, OperationName};
use armillary_giop::system_exception::{CompletionStatus, SystemException};
use armillary_giop::typecode::DefaultLabelForm;

use crate::amh::ResponseHandler;
use crate::exception::UserException;
use crate::owed_reply::OwedReply;
use crate::poa::ObjectId;
use crate::reactor::Reactor;
use crate::task_queue::TaskQueue;

/// The server side of an IDL interface.
///
/// The IDL compiler writes the implementation: each interface's skeleton
/// (`QuoterSkeleton`) is a `Servant` that decodes the arguments and calls
/// the application's servant trait (`QuoterServant`). Implement `Servant`
/// by hand only for an interface without IDL, such as a dynamic bridge.
///
/// # Examples
///
/// A hand-written servant for `interface Echo { string echo(in string text); };`:
///
/// ```
/// use armillary::config::OrbConfig;
/// use armillary::{minor, CompletionStatus, Orb, Servant, ServerRequest, SystemException};
///
/// struct Echo;
///
/// impl Servant for Echo {
///     fn repository_id(&self) -> &'static str {
///         "IDL:Demo/Echo:1.0"
///     }
///
///     fn is_a(&self, repository_id: &str) -> bool {
///         repository_id == self.repository_id()
///     }
///
///     fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
///         match request.operation() {
///             "echo" => {
///                 let text = request.decode_args(|args| args.read_string())?;
///                 request.encode_results(|results| results.write_string(&text))
///             }
///             _ => Err(SystemException::bad_operation(
///                 minor::UNKNOWN_OPERATION,
///                 CompletionStatus::No,
///             )),
///         }
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let orb = Orb::with_config(OrbConfig::default())?;
/// let poa = orb.root_poa();
/// poa.manager().activate()?;
/// let id = poa.activate_object(Echo)?;
/// let echo = poa.id_to_reference(&id)?;
///
/// let answer = echo.invoke_plain("echo", &|w| w.write_string("hello"), |r| r.read_string())?;
/// assert_eq!(answer, "hello");
/// let unknown = echo.invoke_plain("shout", &|_| Ok(()), |_| Ok(())).unwrap_err();
/// assert_eq!(unknown.minor(), minor::UNKNOWN_OPERATION);
/// orb.shutdown(armillary::WaitForCompletion::Yes)?;
/// # Ok(())
/// # }
/// ```
pub trait Servant: Send + Sync + 'static {
    /// The most derived repository id, e.g. `IDL:Stock/Quoter:1.0`.
    fn repository_id(&self) -> &'static str;

    /// True if this servant implements `repository_id` (itself, any base
    /// interface, or `IDL:omg.org/CORBA/Object:1.0`).
    fn is_a(&self, repository_id: &str) -> bool;

    /// Carries out one request: reads the arguments from `request.args()`
    /// and writes the reply with `request.results()` or `request.raise()`.
    /// An `Err` becomes a SYSTEM_EXCEPTION reply (BAD_OPERATION for an
    /// unknown operation).
    fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException>;

    /// The servant as the Rust interface trait a collocated stub calls
    /// with no CDR: for `interface`, the [`TypeId`](std::any::TypeId) of
    /// `Arc<dyn <I>Servant>` for an IDL interface `I` this servant
    /// implements (its own or a base), a reference to such an `Arc`.
    /// Generated skeletons answer it; the default, `None`, makes
    /// collocated calls go through [`dispatch`](Self::dispatch) with CDR
    /// (a DSI servant, an asynchronous one).
    fn local_interface(&self, interface: std::any::TypeId) -> Option<&dyn std::any::Any> {
        let _ = interface;
        None
    }

    /// Answers the operations every object has (`_is_a`, `_non_existent`);
    /// returns `Ok(false)` when the operation is not one of them.
    fn dispatch_builtin(&self, request: &mut ServerRequest<'_>) -> Result<bool, SystemException> {
        match request.operation() {
            "_is_a" => {
                let id = request
                    .args()
                    .read_string()
                    .map_err(|e| request.marshal_error(&e))?;
                let answer = self.is_a(&id) || id == OBJECT_REPOSITORY_ID;
                request.results().write_bool(answer);
                Ok(true)
            }
            "_non_existent" | "_not_existent" => {
                request.results().write_bool(false);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// Carries out `request` on `servant` (the operations every object has
/// first), the one place a server runs servant code: a panic in the
/// servant ends the request with UNKNOWN ([`minor::SERVANT_PANICKED`],
/// COMPLETED_MAYBE) instead of the thread that runs it, so the reactor,
/// pool worker or collocated caller goes on, and every other client is
/// served as before. The reply the servant may have begun is discarded
/// (the caller builds the exception reply afresh).
///
/// [`minor::SERVANT_PANICKED`]: armillary_giop::system_exception::minor::SERVANT_PANICKED
pub(crate) fn dispatch_contained(
    servant: &dyn Servant,
    request: &mut ServerRequest<'_>,
) -> Result<(), SystemException> {
    contain(CompletionStatus::Maybe, || {
        match servant.dispatch_builtin(request) {
            Ok(true) => Ok(()),
            Ok(false) => servant.dispatch(request),
            Err(e) => Err(e),
        }
    })
}

/// Runs application code the ORB calls on a request's way (a servant, a
/// servant manager, an adapter activator): a panic in it ends the request
/// with UNKNOWN ([`minor::SERVANT_PANICKED`], `completed`) instead of the
/// thread that runs it. The panic hook has reported the panic (on
/// standard error by default), and so does the event
/// `armillary.servant.panicked` (see [`crate::trace`]); the client learns
/// of it through the exception.
///
/// [`minor::SERVANT_PANICKED`]: armillary_giop::system_exception::minor::SERVANT_PANICKED
pub(crate) fn contain<T, E: From<SystemException>>(
    completed: CompletionStatus,
    f: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        crate::trace::servant_panicked(Some(&*panic));
        Err(SystemException::unknown(
            armillary_giop::system_exception::minor::SERVANT_PANICKED,
            completed,
        )
        .into())
    })
}

impl std::fmt::Debug for dyn Servant {
    /// The servant's most derived repository id, all that every servant
    /// can show; so that a struct holding an `Arc<dyn Servant>` can derive
    /// `Debug`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Servant")
            .field("repository_id", &self.repository_id())
            .finish_non_exhaustive()
    }
}

/// What a POA can activate: a servant by value (a generated skeleton such
/// as `QuoterSkeleton::new(prices)`), a shared typed servant (`Arc<S>`)
/// or an already type-erased one (`Arc<dyn Servant>`).
///
/// The POA keeps the servant as an `Arc<dyn Servant>`; its identity (for
/// UNIQUE_ID and `servant_to_id`) is that `Arc`'s allocation, so activate
/// an `Arc` you keep a clone of when you need to find the servant again.
pub trait IntoServant {
    /// The servant as the POA holds it.
    fn into_servant(self) -> Arc<dyn Servant>;
}

impl<S: Servant> IntoServant for S {
    fn into_servant(self) -> Arc<dyn Servant> {
        Arc::new(self)
    }
}

impl<S: Servant> IntoServant for Arc<S> {
    fn into_servant(self) -> Arc<dyn Servant> {
        self
    }
}

impl IntoServant for Arc<dyn Servant> {
    fn into_servant(self) -> Arc<dyn Servant> {
        self
    }
}

/// The repository id every interface inherits from.
pub const OBJECT_REPOSITORY_ID: &str = "IDL:omg.org/CORBA/Object:1.0";

/// How a reply being built will end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyKind {
    /// NO_EXCEPTION.
    Normal,
    /// USER_EXCEPTION.
    UserException,
    /// SYSTEM_EXCEPTION.
    SystemException,
}

impl ReplyKind {
    /// What a request answered this way came to, as traces and metrics
    /// say it.
    pub(crate) fn outcome(self) -> crate::trace::Outcome {
        match self {
            ReplyKind::Normal => crate::trace::Outcome::Normal,
            ReplyKind::UserException => crate::trace::Outcome::UserException,
            ReplyKind::SystemException => crate::trace::Outcome::SystemException,
        }
    }
}

/// One incoming request as a skeleton sees it: the operation, a reader at
/// the arguments, and a writer for the reply body.
///
/// The reply writer already holds whatever precedes the body (the ORB's
/// GIOP header and reply header); its body starts at `body_start`.
///
/// A request read from a connection carries the reply it is owed,
/// answered from what the skeleton wrote when its
/// `dispatch` returns, unless the skeleton took it out with
/// [`respond_later`](Self::respond_later) (asynchronous method handling).
pub struct ServerRequest<'a> {
    operation: &'a str,
    object_id: &'a ObjectId,
    args: CdrReader<'a>,
    response_expected: bool,
    reply: CdrWriter,
    body_start: usize,
    kind: ReplyKind,
    /// The reply owed, until answered or taken by `respond_later`; `None`
    /// for a request whose caller reads the reply out (`into_reply`).
    owed: Option<OwedReply>,
    /// Where an asynchronous servant's work goes on later (the server's
    /// reactor).
    tasks: Option<Tasks<'a>>,
    /// When `reply` is the reply message itself (its header written for a
    /// NO_EXCEPTION reply, the body following): what finishes it.
    message: Option<MessageShape>,
}

/// Where a request's asynchronous work goes on (an AMH servant's that
/// answers after its upcall): the server's reactor, borrowed for the
/// upcall and cloned only when a servant takes its reply to answer later
/// (most never do: no reference count is touched for them), or a queue
/// of its own.
pub(crate) enum Tasks<'a> {
    /// The server's reactor.
    Reactor(&'a Arc<Reactor>),
    /// A queue held for the request.
    Queue(Arc<dyn TaskQueue>),
}

impl Tasks<'_> {
    /// The queue, to keep past the upcall.
    pub(crate) fn to_queue(&self) -> Arc<dyn TaskQueue> {
        match self {
            Tasks::Reactor(reactor) => Arc::clone(reactor) as Arc<dyn TaskQueue>,
            Tasks::Queue(queue) => queue.clone(),
        }
    }
}

impl std::fmt::Debug for ServerRequest<'_> {
    /// The request's target and the state of its reply, without the
    /// argument and reply bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerRequest")
            .field("operation", &self.operation)
            .field("object_id", &self.object_id)
            .field("response_expected", &self.response_expected)
            .field("reply_kind", &self.kind)
            .field(
                "reply_body_len",
                &self.reply.len().saturating_sub(self.body_start),
            )
            .finish_non_exhaustive()
    }
}

impl<'a> ServerRequest<'a> {
    /// A request whose reply body is written into `reply`, starting at its
    /// current end.
    pub(crate) fn new(
        operation: &'a str,
        object_id: &'a ObjectId,
        args: CdrReader<'a>,
        response_expected: bool,
        reply: CdrWriter,
    ) -> Self {
        let body_start = reply.len();
        ServerRequest {
            operation,
            object_id,
            args,
            response_expected,
            reply,
            body_start,
            kind: ReplyKind::Normal,
            owed: None,
            tasks: None,
            message: None,
        }
    }

    /// Answers the request through `owed` (see
    /// [`conclude`](Self::conclude)), its asynchronous work (if its
    /// servant responds later) going on in `tasks`. (Set in place, as
    /// [`in_message`](Self::in_message): a request is a few hundred bytes,
    /// and the path of every request should not move it.)
    pub(crate) fn owing(&mut self, owed: OwedReply, tasks: Tasks<'a>) {
        self.owed = Some(owed);
        self.tasks = Some(tasks);
    }

    /// Says that the `reply` writer is the reply message split from
    /// [`OwedReply::prepare`] (shaped by `message`): a normal reply is
    /// then sent as written, without copying its body.
    pub(crate) fn in_message(&mut self, message: Option<MessageShape>) {
        self.message = message;
    }

    /// Answers the request with what the skeleton wrote (or with the
    /// exception its dispatch ended in), unless the skeleton took the
    /// reply out with [`respond_later`](Self::respond_later): its
    /// [`ResponseHandler`] answers then, and `outcome` is dropped (a
    /// servant locator's `postinvoke` failing after an asynchronous
    /// operation returned cannot change a reply that may be written
    /// already).
    pub(crate) fn conclude(&mut self, outcome: Result<(), SystemException>) {
        let Some(owed) = self.owed.take() else {
            return;
        };
        match outcome {
            Ok(()) => {
                let message = self.message.take();
                let (kind, start) = (self.kind, self.body_start);
                let fresh = CdrWriter::new(self.reply.byte_order(), self.reply.version());
                let mut w = std::mem::replace(&mut self.reply, fresh);
                match message {
                    Some(shape) if kind == ReplyKind::Normal => owed.reply_message(w, shape),
                    _ => {
                        w.flatten();
                        owed.reply(kind, &w.as_bytes()[start..])
                    }
                }
            }
            Err(ex) => owed.exception(&ex),
        }
    }

    /// Takes the reply out of the request, for asynchronous method
    /// handling (AMH): the ORB will not answer the request when the
    /// skeleton's `dispatch` returns; the returned handler answers it,
    /// from any thread, at any later time (see [`crate::amh`]).
    ///
    /// Read the arguments ([`decode_args`](Self::decode_args)) first. After
    /// this, `dispatch` should return `Ok(())`: an `Err` it returns is
    /// ignored, since the handler answers. Called twice, the second
    /// handler answers nothing (the first owns the reply). On a oneway
    /// request, or a request whose caller reads the reply out of the
    /// request itself (the ORB's local objects), the handler's answer goes
    /// nowhere.
    pub fn respond_later(&mut self) -> ResponseHandler {
        let version = self.reply.version();
        let order = self.reply.byte_order();
        let fresh = CdrWriter::new(order, version)
            .with_codesets(self.reply.codesets())
            .with_default_label(self.reply.default_label());
        let mut writer = std::mem::replace(&mut self.reply, fresh);
        writer.truncate(self.body_start);
        let message = self.message.take();
        if let Some(form) = self.args.default_label_seen() {
            writer.set_default_label(form);
        }
        let owed = self.owed.take().unwrap_or_else(OwedReply::nothing);
        owed.answered_later();
        ResponseHandler::new(
            owed,
            OperationName::from(self.operation),
            (writer, self.body_start, message),
            self.tasks.as_ref().map(Tasks::to_queue),
        )
    }

    /// The request's interception, when the ORB has server interceptors.
    pub(crate) fn interception_mut(
        &mut self,
    ) -> Option<&mut crate::interceptors::ServerInterception> {
        self.owed.as_mut().and_then(|owed| owed.interception_mut())
    }

    /// The operation name (`get_quote`, `_get_name`, `_is_a`).
    pub fn operation(&self) -> &'a str {
        self.operation
    }

    /// The object id the request was addressed to (within its POA).
    pub fn object_id(&self) -> &'a ObjectId {
        self.object_id
    }

    /// False for a oneway request: whatever is written is discarded.
    pub fn response_expected(&self) -> bool {
        self.response_expected
    }

    /// The reader positioned at the in and inout arguments.
    ///
    /// Prefer [`decode_args`](Self::decode_args), which reads them all at
    /// once: only it can resolve a GIOP 1.1 request whose fragments cut a
    /// block of 8-byte values (see `armillary::giop::cdr::fragments`);
    /// read here, such a block is a MARSHAL error.
    pub fn args(&mut self) -> &mut CdrReader<'a> {
        &mut self.args
    }

    /// Reads the in and inout arguments with `read`; a marshalling error
    /// becomes MARSHAL (or DATA_CONVERSION) with COMPLETED_NO.
    ///
    /// `read` may run more than once: a GIOP 1.1 request whose fragments
    /// can be read two ways is decoded in both, and the one that reads the
    /// arguments exactly to the end of the message is kept
    /// ([`CdrReader::decode_whole`]).
    pub fn decode_args<T>(
        &mut self,
        read: impl FnMut(&mut CdrReader<'a>) -> Result<T, CdrError>,
    ) -> Result<T, SystemException> {
        self.args
            .decode_whole(read)
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))
    }

    /// Writes a normal reply (the return value, then the out and inout
    /// parameters) with `write`; a marshalling error becomes MARSHAL (or
    /// DATA_CONVERSION) with COMPLETED_YES.
    pub fn encode_results(
        &mut self,
        write: impl FnOnce(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<(), SystemException> {
        write(self.results())
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::Yes))
    }

    /// Starts (or restarts) a normal reply and returns the writer for the
    /// return value and the out and inout parameters.
    ///
    /// The reply's TypeCodes label a union's default member the way the
    /// client's did in the arguments read so far, if they showed it (see
    /// [`CdrReader::default_label_seen`]); else as the connection's
    /// earlier requests showed, else as configured
    /// ([`UnionDefaultLabel`](crate::config::UnionDefaultLabel)). So do
    /// [`raise`](Self::raise)'s.
    ///
    /// The writer splices a large `Bytes` in rather than copying it (see
    /// [`CdrWriter::set_splicing`]): flatten it before reading back what
    /// was written with `as_bytes`.
    pub fn results(&mut self) -> &mut CdrWriter {
        self.reset(ReplyKind::Normal);
        &mut self.reply
    }

    /// Replaces the reply with a user exception.
    pub fn raise<E: UserException>(&mut self, exception: &E) -> Result<(), SystemException> {
        self.reset(ReplyKind::UserException);
        let written = self
            .reply
            .write_string(E::REPOSITORY_ID)
            .and_then(|()| exception.encode(&mut self.reply));
        written.map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::Yes))
    }

    /// Replaces the reply with a user exception given as an `any` of its
    /// exception TypeCode (a dynamic servant's `set_exception`).
    pub(crate) fn raise_any(
        &mut self,
        exception: &armillary_giop::any::Any,
    ) -> Result<(), SystemException> {
        self.reset(ReplyKind::UserException);
        exception
            .encode_value(&mut self.reply)
            .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::Yes))
    }

    /// Replaces the reply with a system exception.
    pub fn raise_system(&mut self, exception: &SystemException) {
        self.reset(ReplyKind::SystemException);
        // A system exception body is a string and two longs: only an
        // unrepresentable repository id could fail, and those are ASCII.
        let _ = exception.encode_body(&mut self.reply);
    }

    /// The system exception to raise for a marshalling error while reading
    /// the arguments (MARSHAL or DATA_CONVERSION, COMPLETED_NO).
    pub fn marshal_error(&self, error: &CdrError) -> SystemException {
        SystemException::from_cdr_error(error, CompletionStatus::No)
    }

    fn reset(&mut self, kind: ReplyKind) {
        self.reply.truncate(self.body_start);
        self.kind = kind;
        if let Some(form) = self.args.default_label_seen() {
            self.reply.set_default_label(form);
        }
    }

    /// How the client labels a union's default member, as far as the
    /// TypeCodes in the arguments read showed it.
    pub(crate) fn default_label_seen(&self) -> Option<DefaultLabelForm> {
        self.args.default_label_seen()
    }

    /// How the reply ends, the writer holding it, and where its body starts.
    pub(crate) fn into_reply(self) -> (ReplyKind, CdrWriter, usize) {
        (self.kind, self.reply, self.body_start)
    }
}
