//! The Dynamic Invocation Interface: requests built at run time, without
//! generated stubs.
//!
//! [`ObjectRef::request`] starts a [`Request`] for an operation; its
//! arguments are `any`s in an [`NvList`] with their modes (in, inout, out),
//! and it declares the TypeCode of its result and of the user exceptions
//! the operation may raise. It can then be
//! - [`invoke`](Request::invoke)d: sent and waited for;
//! - sent as a oneway ([`send_oneway`](Request::send_oneway));
//! - sent now and collected later ([`send_deferred`](Request::send_deferred),
//!   then [`poll_response`](Request::poll_response) /
//!   [`get_response`](Request::get_response)), alone or several at once
//!   through the ORB ([`Orb::send_multiple_requests`],
//!   [`Orb::get_next_response`], [`Orb::poll_next_response`]).
//!
//! The request sent is the one a generated stub sends: the server cannot
//! tell them apart. The reply is read by TypeCode: the result and the out
//! and inout values become `any`s ([`Request::return_value`],
//! [`Request::arguments`]); a user exception becomes an `any` of the
//! declared exception TypeCode whose repository id it carries
//! ([`RequestError::User`]). Deferred requests honour the ORB's call
//! timeout (`-ORBClientCallTimeout`), counted from the send: past it the
//! response is TIMEOUT and the request's reply dispatcher is freed.
//!
//! Contexts (`CORBA::Context`) are not supported.
//!
//! ```no_run
//! use armillary::{Any, TypeCode};
//! use armillary::{ObjectRef, RequestError};
//!
//! # fn example(obj: &ObjectRef, failure: TypeCode) -> Result<(), RequestError> {
//! // long split(in long a, inout long b, out long c) raises (Failure);
//! let mut request = obj
//!     .request("split")
//!     .with_in(Any::from(7))
//!     .with_inout(Any::from(5))
//!     .with_out(TypeCode::long())
//!     .returns(TypeCode::long())
//!     .raises(failure);
//! request.invoke()?;
//! assert_eq!(request.return_value().and_then(|r| r.get::<i32>()), Some(12));
//! assert_eq!(request.arguments().value(1).and_then(|b| b.get::<i32>()), Some(10));
//! assert_eq!(request.arguments().value(2).and_then(|c| c.get::<i32>()), Some(2));
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::task::{Wake, Waker};

use armillary_giop::any::Any;
use armillary_giop::cdr::{CdrError, CdrWriter};
use armillary_giop::giop::SyncScope;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::typecode::{TCKind, TypeCode};

use crate::object::{DecodingScope, ObjectRef, OutgoingRequest, ReplyMessage, ReplyOutcome};
use crate::pending::PendingReply;
use crate::transport::reply::callback::Notify;
use crate::Orb;

/// The direction of a parameter (`CORBA::ARG_IN`, `ARG_OUT`,
/// `ARG_INOUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgMode {
    /// Sent with the request.
    In,
    /// Sent with the request and returned, possibly changed, with the
    /// reply.
    InOut,
    /// Returned with the reply.
    Out,
}

impl ArgMode {
    /// Whether the value travels with the request (in, inout).
    pub fn is_sent(self) -> bool {
        matches!(self, ArgMode::In | ArgMode::InOut)
    }

    /// Whether the value travels with the reply (inout, out).
    pub fn is_returned(self) -> bool {
        matches!(self, ArgMode::InOut | ArgMode::Out)
    }
}

/// One parameter of a dynamic request: its mode, its TypeCode and, once
/// known, its value (CORBA's `NamedValue`, without the name, which GIOP
/// does not carry).
#[derive(Debug, Clone, PartialEq)]
#[doc(alias = "NamedValue")]
pub struct Argument {
    mode: ArgMode,
    type_code: TypeCode,
    value: Option<Any>,
}

impl Argument {
    /// The parameter's direction.
    pub fn mode(&self) -> ArgMode {
        self.mode
    }

    /// The parameter's type.
    pub fn type_code(&self) -> &TypeCode {
        &self.type_code
    }

    /// The value: given (in, inout), read from the request (a dynamic
    /// servant's in and inout parameters), or read from the reply (a
    /// dynamic request's inout and out parameters). `None` while unknown.
    pub fn value(&self) -> Option<&Any> {
        self.value.as_ref()
    }
}

/// Why a value could not be stored in an [`NvList`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// The list has no parameter at this index.
    #[error("no parameter {index} (the list has {len})")]
    NoSuchArgument {
        /// The index asked for.
        index: usize,
        /// How many parameters the list has.
        len: usize,
    },
    /// The value's TypeCode is not equivalent to the parameter's.
    #[error("parameter {index} is of type {expected:?}, the value of type {found:?}")]
    TypeMismatch {
        /// The parameter's index.
        index: usize,
        /// The parameter's TypeCode.
        expected: TypeCode,
        /// The value's TypeCode.
        found: TypeCode,
    },
    /// The parameter is an `in` parameter: a dynamic servant cannot return
    /// a value for it.
    #[error("parameter {index} is an in parameter")]
    NotReturned {
        /// The parameter's index.
        index: usize,
    },
}

/// A system exception raised on the server for a dynamic servant that
/// stored a bad value: BAD_PARAM, COMPLETED_YES.
impl From<ArgumentError> for SystemException {
    fn from(_: ArgumentError) -> SystemException {
        SystemException::bad_param(0, CompletionStatus::Yes)
    }
}

/// The parameters of a dynamic request, in order (CORBA's `NVList`).
///
/// A DII client builds it with values for the in and inout parameters and
/// TypeCodes for the out ones; a dynamic servant declares every
/// parameter's mode and TypeCode and gets the in and inout values filled
/// in ([`DynamicRequest::arguments`](crate::dsi::DynamicRequest::arguments)).
///
/// ```
/// use armillary::{Any, TypeCode};
/// use armillary::dii::{ArgMode, NvList};
///
/// let list = NvList::new()
///     .with_in(Any::from("text"))
///     .with_out(TypeCode::long());
/// assert_eq!(list.len(), 2);
/// assert_eq!(list.get(1).map(|a| a.mode()), Some(ArgMode::Out));
/// assert_eq!(list.value(0).and_then(|v| v.get::<String>()).as_deref(), Some("text"));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[doc(alias = "NVList")]
pub struct NvList {
    arguments: Vec<Argument>,
}

impl NvList {
    /// An empty list.
    pub fn new() -> Self {
        NvList::default()
    }

    /// Adds an `in` parameter with its value (`add_in_arg`).
    #[doc(alias = "add_in_arg")]
    pub fn with_in(self, value: Any) -> Self {
        self.with_value(ArgMode::In, value)
    }

    /// Adds an `inout` parameter with its value (`add_inout_arg`).
    #[doc(alias = "add_inout_arg")]
    pub fn with_inout(self, value: Any) -> Self {
        self.with_value(ArgMode::InOut, value)
    }

    /// Adds an `out` parameter of type `type_code` (`add_out_arg`).
    #[doc(alias = "add_out_arg")]
    pub fn with_out(self, type_code: TypeCode) -> Self {
        self.with_param(ArgMode::Out, type_code)
    }

    /// Adds a parameter with its value; its TypeCode is the value's.
    pub fn with_value(mut self, mode: ArgMode, value: Any) -> Self {
        self.arguments.push(Argument {
            mode,
            type_code: value.type_code.clone(),
            value: Some(value),
        });
        self
    }

    /// Adds a parameter of type `type_code` whose value is not known yet
    /// (what a dynamic servant declares).
    pub fn with_param(mut self, mode: ArgMode, type_code: TypeCode) -> Self {
        self.arguments.push(Argument {
            mode,
            type_code,
            value: None,
        });
        self
    }

    /// How many parameters there are.
    pub fn len(&self) -> usize {
        self.arguments.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.arguments.is_empty()
    }

    /// The parameter at `index`.
    pub fn get(&self, index: usize) -> Option<&Argument> {
        self.arguments.get(index)
    }

    /// The value of the parameter at `index`, if known.
    pub fn value(&self, index: usize) -> Option<&Any> {
        self.get(index).and_then(Argument::value)
    }

    /// The parameters, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Argument> {
        self.arguments.iter()
    }

    /// Stores the value of the inout or out parameter at `index` (what a
    /// dynamic servant returns). The value's TypeCode must be equivalent
    /// to the parameter's.
    pub fn set_value(&mut self, index: usize, value: Any) -> Result<(), ArgumentError> {
        let len = self.arguments.len();
        let argument = self
            .arguments
            .get_mut(index)
            .ok_or(ArgumentError::NoSuchArgument { index, len })?;
        if !argument.mode.is_returned() {
            return Err(ArgumentError::NotReturned { index });
        }
        if !value.type_code.equivalent(&argument.type_code) {
            return Err(ArgumentError::TypeMismatch {
                index,
                expected: argument.type_code.clone(),
                found: value.type_code.clone(),
            });
        }
        argument.value = Some(value);
        Ok(())
    }

    /// Reads the values of the parameters that travel in `message`, in
    /// order, each by its TypeCode.
    pub(crate) fn read_values(
        &mut self,
        r: &mut armillary_giop::cdr::CdrReader<'_>,
        message: Message,
    ) -> Result<(), CdrError> {
        for argument in &mut self.arguments {
            if message.carries(argument.mode) {
                argument.value = Some(Any::decode_as(&argument.type_code, r)?);
            }
        }
        Ok(())
    }

    /// Writes the values of the parameters that travel in `message`, in
    /// order; one without a value is an error.
    pub(crate) fn write_values(&self, w: &mut CdrWriter, message: Message) -> Result<(), CdrError> {
        for argument in &self.arguments {
            if !message.carries(argument.mode) {
                continue;
            }
            match &argument.value {
                Some(value) => value.encode_value(w)?,
                None => {
                    return Err(CdrError::Invalid {
                        offset: w.len(),
                        what: "a parameter has no value",
                    })
                }
            }
        }
        Ok(())
    }
}

/// Which message parameter values travel in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Message {
    /// The request: in and inout values.
    Request,
    /// The normal reply: inout and out values (after the result).
    Reply,
}

impl Message {
    fn carries(self, mode: ArgMode) -> bool {
        match self {
            Message::Request => mode.is_sent(),
            Message::Reply => mode.is_returned(),
        }
    }
}

impl<'a> IntoIterator for &'a NvList {
    type Item = &'a Argument;
    type IntoIter = std::slice::Iter<'a, Argument>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// How a dynamic request failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A system exception: raised by the server, or by the ORB (the
    /// connection failed, the call timed out, the request was used out of
    /// order: BAD_INV_ORDER).
    #[error(transparent)]
    System(#[from] SystemException),
    /// A user exception the request declared ([`Request::raises`]): an
    /// `any` of its exception TypeCode, holding its members. A user
    /// exception the request did not declare is the system exception
    /// UNKNOWN (`minor::UNLISTED_USER_EXCEPTION`) instead.
    #[error("user exception {}", .0.type_code.id().unwrap_or("?"))]
    User(Any),
}

impl RequestError {
    /// The user exception, if it is one.
    pub fn user_exception(&self) -> Option<&Any> {
        match self {
            RequestError::User(any) => Some(any),
            RequestError::System(_) => None,
        }
    }

    /// The system exception, if it is one.
    pub fn system_exception(&self) -> Option<&SystemException> {
        match self {
            RequestError::System(e) => Some(e),
            RequestError::User(_) => None,
        }
    }
}

/// A user exception that reaches code which can only return a system
/// exception becomes UNKNOWN (`minor::UNLISTED_USER_EXCEPTION`,
/// COMPLETED_YES), as a stub does with an exception it does not know.
impl From<RequestError> for SystemException {
    fn from(error: RequestError) -> SystemException {
        match error {
            RequestError::System(e) => e,
            RequestError::User(_) => {
                SystemException::unknown(minor::UNLISTED_USER_EXCEPTION, CompletionStatus::Yes)
            }
        }
    }
}

/// Where a request is in its life.
enum State {
    /// Being built; not sent.
    Unsent,
    /// Sent with `send_deferred`; the reply is awaited.
    Deferred(PendingReply),
    /// Sent as a oneway.
    Oneway,
    /// The response arrived (or the request failed).
    Done(Result<(), RequestError>),
}

/// A request built at run time (`CORBA::Request`); see the [module
/// documentation](self).
pub struct Request {
    target: ObjectRef,
    operation: String,
    arguments: NvList,
    result_type: TypeCode,
    exceptions: Vec<TypeCode>,
    result: Option<Any>,
    state: State,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Unsent => "unsent",
            State::Deferred(_) => "deferred",
            State::Oneway => "oneway",
            State::Done(Ok(())) => "done",
            State::Done(Err(_)) => "failed",
        };
        f.debug_struct("Request")
            .field("target", &self.target)
            .field("operation", &self.operation)
            .field("arguments", &self.arguments)
            .field("result_type", &self.result_type)
            .field("exceptions", &self.exceptions)
            .field("state", &state)
            .finish()
    }
}

impl ObjectRef {
    /// A dynamic request for `operation` on this object (`_request`): no
    /// arguments, a `void` result and no user exceptions until the
    /// builder methods of [`Request`] add them.
    #[doc(alias = "_request")]
    #[doc(alias = "_create_request")]
    pub fn request(&self, operation: &str) -> Request {
        Request {
            target: self.clone(),
            operation: operation.to_owned(),
            arguments: NvList::new(),
            result_type: TypeCode::void(),
            exceptions: Vec::new(),
            result: None,
            state: State::Unsent,
        }
    }
}

impl Request {
    /// Adds an `in` argument (`add_in_arg`).
    #[doc(alias = "add_in_arg")]
    pub fn with_in(mut self, value: Any) -> Self {
        self.arguments = self.arguments.with_in(value);
        self
    }

    /// Adds an `inout` argument (`add_inout_arg`).
    #[doc(alias = "add_inout_arg")]
    pub fn with_inout(mut self, value: Any) -> Self {
        self.arguments = self.arguments.with_inout(value);
        self
    }

    /// Adds an `out` argument of type `type_code` (`add_out_arg`).
    #[doc(alias = "add_out_arg")]
    pub fn with_out(mut self, type_code: TypeCode) -> Self {
        self.arguments = self.arguments.with_out(type_code);
        self
    }

    /// Replaces the arguments with `arguments`.
    pub fn with_arguments(mut self, arguments: NvList) -> Self {
        self.arguments = arguments;
        self
    }

    /// Sets the TypeCode of the result (`set_return_type`; `void` until
    /// set).
    #[doc(alias = "set_return_type")]
    pub fn returns(mut self, type_code: TypeCode) -> Self {
        self.result_type = type_code;
        self
    }

    /// Declares a user exception the operation may raise, by its
    /// exception TypeCode (`exceptions().add`).
    pub fn raises(mut self, exception: TypeCode) -> Self {
        self.exceptions.push(exception);
        self
    }

    /// The target object.
    pub fn target(&self) -> &ObjectRef {
        &self.target
    }

    /// The operation name.
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// The arguments; after a normal reply, the inout and out values are
    /// the returned ones.
    pub fn arguments(&self) -> &NvList {
        &self.arguments
    }

    /// The TypeCode of the result.
    pub fn return_type(&self) -> &TypeCode {
        &self.result_type
    }

    /// The declared user exceptions.
    pub fn exceptions(&self) -> &[TypeCode] {
        &self.exceptions
    }

    /// The result, once a normal reply has arrived (an `any` of `void` for
    /// an operation without one).
    pub fn return_value(&self) -> Option<&Any> {
        self.result.as_ref()
    }

    /// Sends the request and waits for the reply (no longer than the ORB's
    /// call timeout). BAD_INV_ORDER (`minor::REQUEST_ALREADY_SENT`) if it
    /// was sent already.
    pub fn invoke(&mut self) -> Result<(), RequestError> {
        self.check_unsent()?;
        let outcome = {
            let arguments = &self.arguments;
            let args = |w: &mut CdrWriter| arguments.write_values(w, Message::Request);
            let request = two_way(
                &self.operation,
                &args,
                self.target.call_timeout(),
                Some((arguments, &self.result_type)),
            );
            self.target.route_invoke(&request).and_then(|reply| {
                reply.ok_or_else(|| SystemException::internal(0, CompletionStatus::Maybe))
            })
        };
        self.complete(outcome)
    }

    /// Sends the request as a oneway: returns once it is written, with no
    /// reply to wait for (the operation should be declared `oneway`).
    pub fn send_oneway(&mut self) -> Result<(), SystemException> {
        self.check_unsent()?;
        let arguments = &self.arguments;
        let args = |w: &mut CdrWriter| arguments.write_values(w, Message::Request);
        let request = OutgoingRequest {
            operation: &self.operation,
            response_expected: false,
            sync_scope: SyncScope::None,
            args: &args,
            call_timeout: self.target.call_timeout(),
            signature: Some((arguments, &self.result_type)),
        };
        self.target.route_invoke(&request)?;
        self.state = State::Oneway;
        Ok(())
    }

    /// Sends the request now; collect the response later with
    /// [`poll_response`](Self::poll_response) and
    /// [`get_response`](Self::get_response). Failures after the request
    /// left (the connection, the server, the call timeout) are reported by
    /// `get_response`; an error here means nothing was sent.
    pub fn send_deferred(&mut self) -> Result<(), SystemException> {
        self.send_later(false)
    }

    /// Sends the request to be collected later: by the caller, which
    /// reads the connection when it waits, or (`asynchronous`) with an ORB
    /// thread reading it meanwhile, for [`Orb::get_next_response`].
    fn send_later(&mut self, asynchronous: bool) -> Result<(), SystemException> {
        self.check_unsent()?;
        let pending = {
            let arguments = &self.arguments;
            let args = |w: &mut CdrWriter| arguments.write_values(w, Message::Request);
            let request = two_way(
                &self.operation,
                &args,
                self.target.call_timeout(),
                Some((arguments, &self.result_type)),
            );
            self.target.route_send(&request, asynchronous)?
        };
        self.state = State::Deferred(pending);
        Ok(())
    }

    /// Whether the response of a deferred request has arrived (then
    /// [`get_response`](Self::get_response) returns at once). Reads what
    /// has arrived on the connection, without blocking, if no other thread
    /// is reading it. BAD_INV_ORDER (`minor::REQUEST_NOT_SENT`) for a
    /// request that was not sent with `send_deferred`.
    pub fn poll_response(&mut self) -> Result<bool, SystemException> {
        match &mut self.state {
            State::Done(_) => Ok(true),
            State::Deferred(pending) => {
                let arguments = &self.arguments;
                let args = |w: &mut CdrWriter| arguments.write_values(w, Message::Request);
                let request = two_way(
                    &self.operation,
                    &args,
                    self.target.call_timeout(),
                    Some((arguments, &self.result_type)),
                );
                match pending.poll(&request) {
                    Some(outcome) => {
                        let _ = self.complete(outcome);
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
            State::Unsent | State::Oneway => Err(not_sent()),
        }
    }

    /// Waits for the response of a deferred request (no longer than the
    /// ORB's call timeout, counted from the send) and returns how the
    /// operation ended; the result and the returned arguments are then in
    /// [`return_value`](Self::return_value) and
    /// [`arguments`](Self::arguments). Asked again, it returns the same.
    /// BAD_INV_ORDER (`minor::REQUEST_NOT_SENT`) for a request that was
    /// not sent.
    pub fn get_response(&mut self) -> Result<(), RequestError> {
        match &mut self.state {
            State::Done(outcome) => outcome.clone(),
            State::Deferred(pending) => {
                let outcome = {
                    let arguments = &self.arguments;
                    let args = |w: &mut CdrWriter| arguments.write_values(w, Message::Request);
                    let request = two_way(
                        &self.operation,
                        &args,
                        self.target.call_timeout(),
                        Some((arguments, &self.result_type)),
                    );
                    pending.wait(&request)
                };
                self.complete(outcome)
            }
            State::Unsent | State::Oneway => Err(not_sent().into()),
        }
    }

    /// For a request sent with [`send_later`](Self::send_later): takes
    /// its response in if a reading thread dispatched it (true: it is
    /// complete), else has `waker` woken when it is.
    fn settle_or_watch(&mut self, waker: &Waker) -> bool {
        let State::Deferred(pending) = &mut self.state else {
            return true;
        };
        let arguments = &self.arguments;
        let args = |w: &mut CdrWriter| arguments.write_values(w, Message::Request);
        let request = two_way(
            &self.operation,
            &args,
            self.target.call_timeout(),
            Some((arguments, &self.result_type)),
        );
        loop {
            if let Some(outcome) = pending.settle(&request) {
                let _ = self.complete(outcome);
                return true;
            }
            // Registered, or there meanwhile: then look again.
            if pending.on_ready(Notify::Waker(waker.clone())).is_none() {
                return false;
            }
        }
    }

    fn check_unsent(&self) -> Result<(), SystemException> {
        match self.state {
            State::Unsent => Ok(()),
            _ => Err(SystemException::bad_inv_order(
                minor::REQUEST_ALREADY_SENT,
                CompletionStatus::No,
            )),
        }
    }

    /// Reads the reply (or keeps the failure) and records the outcome.
    fn complete(
        &mut self,
        reply: Result<ReplyMessage, SystemException>,
    ) -> Result<(), RequestError> {
        let outcome = match reply {
            Ok(reply) => self.read_reply(&reply),
            Err(e) => Err(e.into()),
        };
        self.state = State::Done(outcome.clone());
        outcome
    }

    fn read_reply(&mut self, reply: &ReplyMessage) -> Result<(), RequestError> {
        // References in the reply belong to the ORB that received it.
        let _scope = match self.target.invoker() {
            Ok(invoker) => Some(DecodingScope::enter(invoker)),
            Err(_) => None,
        };
        let marshal = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::Yes);
        let mut body = reply.body();
        match reply.outcome {
            ReplyOutcome::Normal => {
                // Each attempt reads into a list of its own: a GIOP 1.1
                // reply may be decoded more than once (`decode_whole`).
                let (result, arguments) = body
                    .decode_whole(|body| {
                        let result = Any::decode_as(&self.result_type, body)?;
                        let mut arguments = self.arguments.clone();
                        arguments.read_values(body, Message::Reply)?;
                        Ok((result, arguments))
                    })
                    .map_err(marshal)?;
                self.arguments = arguments;
                self.result = Some(result);
                Ok(())
            }
            ReplyOutcome::UserException => {
                let id = body.clone().read_string().map_err(marshal)?;
                let declared = self.exceptions.iter().find(|tc| {
                    tc.unalias().kind() == TCKind::Except
                        && tc.unalias().id().ok() == Some(id.as_str())
                });
                match declared {
                    Some(tc) => Err(RequestError::User(
                        body.decode_whole(|body| Any::decode_as(tc.unalias(), body))
                            .map_err(marshal)?,
                    )),
                    None => Err(SystemException::unknown(
                        minor::UNLISTED_USER_EXCEPTION,
                        CompletionStatus::Yes,
                    )
                    .into()),
                }
            }
        }
    }
}

/// The two-way request a dynamic request sends: the same as a stub's
/// (`call_timeout` is the target reference's).
fn two_way<'a>(
    operation: &'a str,
    args: &'a dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    call_timeout: Option<std::time::Duration>,
    signature: Option<(&'a NvList, &'a TypeCode)>,
) -> OutgoingRequest<'a> {
    OutgoingRequest {
        operation,
        response_expected: true,
        sync_scope: SyncScope::WithTarget,
        args,
        call_timeout,
        signature,
    }
}

fn not_sent() -> SystemException {
    SystemException::bad_inv_order(minor::REQUEST_NOT_SENT, CompletionStatus::No)
}

/// The deferred requests an ORB holds for
/// [`Orb::get_next_response`], oldest first, and what wakes a thread
/// waiting for one of them.
#[derive(Default)]
pub(crate) struct DeferredRequests {
    queue: parking_lot::Mutex<VecDeque<Request>>,
    activity: Arc<Activity>,
}

impl fmt::Debug for DeferredRequests {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeferredRequests")
            .field("outstanding", &self.queue.lock().len())
            .finish()
    }
}

impl DeferredRequests {
    /// Forgets every request (the ORB shuts down); their replies, should
    /// they come, are dropped.
    pub(crate) fn clear(&self) {
        let requests = std::mem::take(&mut *self.queue.lock());
        drop(requests);
        self.activity.wake_by_ref();
    }
}

/// Counts the responses of held requests as reading threads dispatch them
/// (each request's waker), so that a waiting thread misses none.
#[derive(Default)]
struct Activity {
    seen: parking_lot::Mutex<u64>,
    changed: parking_lot::Condvar,
}

impl Activity {
    /// How many responses have come so far.
    fn count(&self) -> u64 {
        *self.seen.lock()
    }

    /// Waits until more than `count` responses have come.
    fn wait_beyond(&self, count: u64) {
        let mut seen = self.seen.lock();
        while *seen == count {
            self.changed.wait(&mut seen);
        }
    }
}

impl Wake for Activity {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        *self.seen.lock() += 1;
        self.changed.notify_all();
    }
}

impl Orb {
    /// Sends every request with [`Request::send_deferred`]; the ORB holds
    /// them until [`get_next_response`](Self::get_next_response) hands
    /// them back, each once its response has arrived. A request that
    /// could not be sent comes back with that failure as its response
    /// (its [`Request::get_response`] returns it).
    ///
    /// BAD_INV_ORDER (`minor::ORB_SHUT_DOWN`) once the ORB has shut down.
    #[doc(alias = "send_multiple_requests_deferred")]
    pub fn send_multiple_requests(
        &self,
        requests: impl IntoIterator<Item = Request>,
    ) -> Result<(), SystemException> {
        if self.is_shut_down() {
            return Err(SystemException::bad_inv_order(
                minor::ORB_SHUT_DOWN,
                CompletionStatus::No,
            ));
        }
        let held = self.deferred_requests();
        let waker = Waker::from(held.activity.clone());
        let sent: Vec<Request> = requests
            .into_iter()
            .map(|mut request| {
                match request.send_later(true) {
                    Ok(()) => {
                        request.settle_or_watch(&waker);
                    }
                    Err(e) => request.state = State::Done(Err(e.into())),
                }
                request
            })
            .collect();
        held.queue.lock().extend(sent);
        Ok(())
    }

    /// Whether a request sent with
    /// [`send_multiple_requests`](Self::send_multiple_requests) has its
    /// response, so that [`get_next_response`](Self::get_next_response)
    /// returns at once. Reads what has arrived on their connections,
    /// without blocking. False when none is outstanding.
    pub fn poll_next_response(&self) -> bool {
        let mut queue = self.deferred_requests().queue.lock();
        let mut any = false;
        for request in queue.iter_mut() {
            // A request that failed to poll is complete with that failure.
            any |= request.poll_response().unwrap_or(true);
        }
        any
    }

    /// The next request sent with
    /// [`send_multiple_requests`](Self::send_multiple_requests) whose
    /// response has arrived, waiting for one if none has; read its outcome
    /// with [`Request::get_response`] (which returns at once). Each request
    /// ends within the ORB's call timeout, so with one set this never
    /// waits longer than that.
    ///
    /// ORB threads read the connections of these requests (one per
    /// connection with such requests), and a response wakes the waiting
    /// thread at once, whichever connection it came on: nothing is
    /// polled. BAD_INV_ORDER (`minor::REQUEST_NOT_SENT`) when no request is
    /// outstanding.
    pub fn get_next_response(&self) -> Result<Request, SystemException> {
        let held = self.deferred_requests();
        let waker = Waker::from(held.activity.clone());
        loop {
            let seen = held.activity.count();
            {
                let mut requests = held.queue.lock();
                if requests.is_empty() {
                    return Err(not_sent());
                }
                // The oldest first: responses mostly come in order.
                let ready = requests
                    .iter_mut()
                    .position(|request| request.settle_or_watch(&waker));
                if let Some(request) = ready.and_then(|i| requests.remove(i)) {
                    return Ok(request);
                }
            }
            let _waiting = crate::thread_role::waiting_for_reply();
            held.activity.wait_beyond(seen);
        }
    }
}
