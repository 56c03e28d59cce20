//! The client's interception points: the interceptor trait, what it sees
//! of a request ([`ClientRequestInfo`]), and [`ClientInterception`], the
//! interception of one attempt at a request that the invocation engine
//! (and a collocated call) drives.

use std::sync::Arc;

use armillary_giop::any::Any;
use armillary_giop::giop::{ServiceContext, SyncScope};
use armillary_giop::system_exception::{CompletionStatus, SystemException};

use super::{add_context, contained, slot, Intercept, Interceptors, PiError, ReplyStatus, SlotId};
use armillary_giop::typecode::TypeCode;

use crate::dii::NvList;
use crate::object::ObjectRef;

/// A client request interceptor (`PortableInterceptor::ClientRequestInterceptor`).
/// Every point does nothing by default; see [`crate::interceptors`] for
/// when each runs and what an `Err` does.
pub trait ClientRequestInterceptor: Send + Sync + 'static {
    /// The interceptor's name, for diagnostics.
    fn name(&self) -> &str {
        ""
    }

    /// Before the request is sent: the starting point, where request
    /// service contexts are added.
    fn send_request(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// When the application polls for a deferred request's reply (a DII
    /// `poll_response` / `get_response`, an AMI poller).
    fn send_poll(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// A normal reply came.
    fn receive_reply(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// The request ends in a system or user exception.
    fn receive_exception(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// Anything else: a LOCATION_FORWARD, a re-send, a oneway with no
    /// reply.
    fn receive_other(&self, info: &mut ClientRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }
}

/// Which client interception point is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientPoint {
    /// `send_request`.
    SendRequest,
    /// `send_poll`.
    SendPoll,
    /// `receive_reply`.
    ReceiveReply,
    /// `receive_exception`.
    ReceiveException,
    /// `receive_other`.
    ReceiveOther,
}

/// One request as a client interceptor sees it
/// (`PortableInterceptor::ClientRequestInfo`).
#[derive(Debug)]
pub struct ClientRequestInfo {
    point: ClientPoint,
    request_id: u32,
    operation: String,
    response_expected: bool,
    sync_scope: SyncScope,
    target: ObjectRef,
    effective_target: ObjectRef,
    request_contexts: Vec<ServiceContext>,
    reply_contexts: Vec<ServiceContext>,
    reply_status: Option<ReplyStatus>,
    received_exception: Option<SystemException>,
    received_exception_id: Option<String>,
    forward_reference: Option<ObjectRef>,
    slots: Vec<Option<Any>>,
    arguments: Option<NvList>,
    result_type: Option<TypeCode>,
    result: Option<Any>,
}

impl ClientRequestInfo {
    /// The point running.
    pub fn point(&self) -> ClientPoint {
        self.point
    }

    /// The request's id: the GIOP request id of this attempt (a new one
    /// for each forward or re-send), or an id of the ORB's own for a call
    /// with no GIOP message.
    pub fn request_id(&self) -> u32 {
        self.request_id
    }

    /// The operation's name (`get_quote`, `_get_name`).
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// False for a oneway request.
    pub fn response_expected(&self) -> bool {
        self.response_expected
    }

    /// How far a oneway must get before the call returns (`WithTarget`
    /// for two-way requests).
    pub fn sync_scope(&self) -> SyncScope {
        self.sync_scope
    }

    /// The reference the call was made on.
    pub fn target(&self) -> &ObjectRef {
        &self.target
    }

    /// The reference this attempt is sent to: the target, or where
    /// forwards led.
    pub fn effective_target(&self) -> &ObjectRef {
        &self.effective_target
    }

    /// The request's service context with id `id`, if any.
    pub fn get_request_service_context(&self, id: u32) -> Option<&ServiceContext> {
        self.request_contexts.iter().find(|c| c.id == id)
    }

    /// The service contexts the interceptors added to the request.
    pub fn request_service_contexts(&self) -> &[ServiceContext] {
        &self.request_contexts
    }

    /// Adds a service context to the request (in `send_request` only),
    /// replacing one with its id when `replace` (else that is
    /// [`PiError::ContextExists`]).
    pub fn add_request_service_context(
        &mut self,
        context: ServiceContext,
        replace: bool,
    ) -> Result<(), PiError> {
        if self.point != ClientPoint::SendRequest {
            return Err(PiError::WrongPoint("add_request_service_context"));
        }
        add_context(&mut self.request_contexts, context, replace)
    }

    /// The reply's service context with id `id`, if any.
    pub fn get_reply_service_context(&self, id: u32) -> Option<&ServiceContext> {
        self.reply_contexts.iter().find(|c| c.id == id)
    }

    /// The reply's service contexts (in the ending points).
    pub fn reply_service_contexts(&self) -> &[ServiceContext] {
        &self.reply_contexts
    }

    /// How the request ended (in the ending points).
    pub fn reply_status(&self) -> Option<ReplyStatus> {
        self.reply_status
    }

    /// The system exception the request ended in, in `receive_exception`.
    pub fn received_exception(&self) -> Option<&SystemException> {
        self.received_exception.as_ref()
    }

    /// The repository id of the exception the request ended in (user or
    /// system), in `receive_exception`.
    pub fn received_exception_id(&self) -> Option<&str> {
        self.received_exception_id.as_deref()
    }

    /// Where a LOCATION_FORWARD sends the request, in `receive_other`.
    pub fn forward_reference(&self) -> Option<&ObjectRef> {
        self.forward_reference.as_ref()
    }

    /// The value slot `id` had on the calling thread when the request
    /// started.
    pub fn get_slot(&self, id: SlotId) -> Result<Option<Any>, PiError> {
        slot(&self.slots, id)
    }

    /// The arguments with their modes, where known as `any`s (a DII
    /// request's: the in and inout values from `send_request` on, the
    /// inout and out values returned in `receive_reply`); `None` for a
    /// stub's, whose arguments the ORB sees only encoded.
    pub fn arguments(&self) -> Option<&NvList> {
        self.arguments.as_ref()
    }

    /// The result, where known as an `any` (in `receive_reply` of a DII
    /// request); `None` otherwise.
    pub fn result(&self) -> Option<&Any> {
        self.result.as_ref()
    }

    /// Records `outcome` for the ending point that sees it; returns that
    /// point.
    fn record(&mut self, outcome: &ClientOutcome) -> ClientPoint {
        self.received_exception = None;
        self.received_exception_id = None;
        self.forward_reference = None;
        let (status, point) = match outcome {
            ClientOutcome::Reply => (ReplyStatus::Successful, ClientPoint::ReceiveReply),
            ClientOutcome::UserException(id) => {
                self.received_exception_id = Some(id.clone());
                (ReplyStatus::UserException, ClientPoint::ReceiveException)
            }
            ClientOutcome::System(e) => {
                self.received_exception = Some(e.clone());
                self.received_exception_id = Some(e.kind().repository_id().to_owned());
                (ReplyStatus::SystemException, ClientPoint::ReceiveException)
            }
            ClientOutcome::Forward(to) => {
                self.forward_reference = Some(to.clone());
                (ReplyStatus::LocationForward, ClientPoint::ReceiveOther)
            }
            ClientOutcome::Retry => (ReplyStatus::TransportRetry, ClientPoint::ReceiveOther),
            ClientOutcome::NoReply => (ReplyStatus::Successful, ClientPoint::ReceiveOther),
        };
        self.reply_status = Some(status);
        self.point = point;
        point
    }
}

/// How one attempt at a request came out, as the client's ending points
/// take it (and as they leave it).
#[derive(Debug, Clone)]
pub(crate) enum ClientOutcome {
    /// A normal reply (or a synchronised oneway acknowledged).
    Reply,
    /// A user exception with this repository id.
    UserException(String),
    /// A system exception.
    System(SystemException),
    /// A LOCATION_FORWARD to this reference.
    Forward(ObjectRef),
    /// The request is sent again.
    Retry,
    /// A oneway that gets no reply.
    NoReply,
}

impl From<Intercept> for ClientOutcome {
    fn from(e: Intercept) -> Self {
        match e {
            Intercept::System(e) => ClientOutcome::System(e),
            Intercept::ForwardRequest(to) => ClientOutcome::Forward(to),
        }
    }
}

/// What a client interception starts from (see the module docs, "How
/// collocation calls the interceptors").
#[derive(Debug)]
pub(crate) struct ClientCall<'a> {
    /// The GIOP request id, or [`Interceptors::next_request_id`].
    pub(crate) request_id: u32,
    pub(crate) operation: &'a str,
    pub(crate) response_expected: bool,
    pub(crate) sync_scope: SyncScope,
    /// The reference the call was made on.
    pub(crate) target: ObjectRef,
    /// Where this attempt goes.
    pub(crate) effective_target: ObjectRef,
    /// The calling thread's slots ([`Interceptors::thread_slots`]).
    pub(crate) slots: Vec<Option<Any>>,
    /// The arguments as `any`s, and the result's TypeCode, when known
    /// (a DII request's).
    pub(crate) arguments: Option<(NvList, TypeCode)>,
}

/// The interception of one attempt at a client request: its starting
/// point, then exactly one ending point on each interceptor whose
/// starting point completed.
#[derive(Debug)]
pub(crate) struct ClientInterception {
    interceptors: Arc<Interceptors>,
    /// How many interceptors completed `send_request`.
    started: usize,
    info: ClientRequestInfo,
}

impl ClientInterception {
    /// The interception of `call`; `None` when no client interceptor is
    /// registered.
    #[cfg_attr(not(test), allow(dead_code))] // The collocated path's.
    pub(crate) fn start(
        interceptors: &Arc<Interceptors>,
        call: ClientCall<'_>,
    ) -> Option<Box<Self>> {
        if interceptors.client.is_empty() {
            return None;
        }
        Some(Self::new(interceptors, call))
    }

    /// The interception of `call` by `interceptors` (which the caller
    /// knows has client interceptors).
    pub(crate) fn new(interceptors: &Arc<Interceptors>, call: ClientCall<'_>) -> Box<Self> {
        Box::new(ClientInterception {
            interceptors: interceptors.clone(),
            started: 0,
            info: ClientRequestInfo {
                point: ClientPoint::SendRequest,
                request_id: call.request_id,
                operation: call.operation.to_owned(),
                response_expected: call.response_expected,
                sync_scope: call.sync_scope,
                target: call.target,
                effective_target: call.effective_target,
                request_contexts: Vec::new(),
                reply_contexts: Vec::new(),
                reply_status: None,
                received_exception: None,
                received_exception_id: None,
                forward_reference: None,
                slots: call.slots,
                result_type: call.arguments.as_ref().map(|(_, t)| t.clone()),
                arguments: call.arguments.map(|(a, _)| a),
                result: None,
            },
        })
    }

    /// Whether a oneway that ended with no reply message to read was
    /// acknowledged (`SyncScope::WithServer` or `WithTarget`): its ending
    /// point is `receive_reply`, not `receive_other`.
    pub(crate) fn acknowledged(&self) -> bool {
        !self.info.response_expected && self.info.sync_scope != SyncScope::None
    }

    /// Runs `send_request` on each interceptor in order. `Err`: one
    /// failed it, and the attempt is to end with that outcome
    /// ([`conclude`](Self::conclude): the ending points of those before
    /// it run).
    pub(crate) fn send_request(&mut self) -> Result<(), ClientOutcome> {
        self.info.point = ClientPoint::SendRequest;
        let interceptors = self.interceptors.clone();
        for (i, interceptor) in interceptors.client.iter().enumerate() {
            contained(CompletionStatus::No, || {
                interceptor.send_request(&mut self.info)
            })?;
            self.started = i + 1;
        }
        Ok(())
    }

    /// Runs `send_poll` on each interceptor whose `send_request`
    /// completed. `Err`: the request is to end with that outcome.
    pub(crate) fn send_poll(&mut self) -> Result<(), ClientOutcome> {
        self.info.point = ClientPoint::SendPoll;
        let interceptors = self.interceptors.clone();
        for interceptor in &interceptors.client[..self.started] {
            contained(CompletionStatus::Maybe, || {
                interceptor.send_poll(&mut self.info)
            })?;
        }
        Ok(())
    }

    /// The service contexts the interceptors added to the request.
    pub(crate) fn request_contexts(&self) -> &[ServiceContext] {
        &self.info.request_contexts
    }

    /// The request id the interceptors saw.
    #[cfg_attr(not(test), allow(dead_code))] // The collocated path's.
    pub(crate) fn request_id(&self) -> u32 {
        self.info.request_id
    }

    /// What a dynamic request's normal reply is read with: its arguments
    /// and its result's TypeCode (`None` for a stub's request).
    pub(crate) fn signature(&self) -> Option<(&NvList, &TypeCode)> {
        self.info
            .arguments
            .as_ref()
            .zip(self.info.result_type.as_ref())
    }

    /// Records a dynamic request's result and returned arguments, read
    /// from its normal reply.
    pub(crate) fn set_results(&mut self, result: Any, arguments: NvList) {
        self.info.result = Some(result);
        self.info.arguments = Some(arguments);
    }

    /// Runs the ending points, in reverse order, on each interceptor whose
    /// `send_request` completed, each seeing the outcome as those before
    /// it left it (`reply_contexts`: the reply's service contexts).
    /// Returns the attempt's final outcome.
    pub(crate) fn conclude(
        mut self: Box<Self>,
        outcome: ClientOutcome,
        reply_contexts: Vec<ServiceContext>,
    ) -> ClientOutcome {
        self.info.reply_contexts = reply_contexts;
        let interceptors = self.interceptors.clone();
        let mut outcome = outcome;
        for interceptor in interceptors.client[..self.started].iter().rev() {
            let point = self.info.record(&outcome);
            let completed = match &outcome {
                ClientOutcome::Reply | ClientOutcome::UserException(_) => CompletionStatus::Yes,
                ClientOutcome::System(e) => e.completed(),
                ClientOutcome::Forward(_) | ClientOutcome::Retry => CompletionStatus::No,
                ClientOutcome::NoReply => CompletionStatus::Maybe,
            };
            let info = &mut self.info;
            let ran = contained(completed, || match point {
                ClientPoint::ReceiveReply => interceptor.receive_reply(info),
                ClientPoint::ReceiveException => interceptor.receive_exception(info),
                _ => interceptor.receive_other(info),
            });
            if let Err(e) = ran {
                outcome = e.into();
            }
        }
        outcome
    }
}
