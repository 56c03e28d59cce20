//! The server's interception points: the interceptor trait, what it sees
//! of a request ([`ServerRequestInfo`]), and [`ServerInterception`], the
//! interception of one request that the server (and a collocated call)
//! drives. A request's [`OwedReply`](crate::owed_reply::OwedReply)
//! carries it, so that the ending point runs wherever and whenever the
//! reply is written (an AMH servant's handler, a drop).

use std::sync::Arc;

use armillary_giop::any::Any;
use armillary_giop::giop::{ServiceContext, SyncScope};
use armillary_giop::system_exception::{CompletionStatus, SystemException};

use super::{add_context, contained, slot, Intercept, Interceptors, PiError, ReplyStatus, SlotId};
use crate::dii::NvList;
use crate::object::ObjectRef;
use crate::object_id::ObjectId;

/// A server request interceptor (`PortableInterceptor::ServerRequestInterceptor`).
/// Every point does nothing by default; see [`crate::interceptors`] for
/// when each runs and what an `Err` does.
pub trait ServerRequestInterceptor: Send + Sync + 'static {
    /// The interceptor's name, for diagnostics.
    fn name(&self) -> &str {
        ""
    }

    /// The request has arrived: the starting point, where the request's
    /// service contexts are read (and slots set from them).
    fn receive_request_service_contexts(
        &self,
        info: &mut ServerRequestInfo,
    ) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// Just before the servant runs, on its thread.
    fn receive_request(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// Before a normal reply is sent (and when a oneway's servant
    /// returned).
    fn send_reply(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// Before a system or user exception is sent.
    fn send_exception(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }

    /// Before a LOCATION_FORWARD is sent.
    fn send_other(&self, info: &mut ServerRequestInfo) -> Result<(), Intercept> {
        let _ = info;
        Ok(())
    }
}

/// Which server interception point is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerPoint {
    /// `receive_request_service_contexts`.
    ReceiveRequestServiceContexts,
    /// `receive_request`.
    ReceiveRequest,
    /// `send_reply`.
    SendReply,
    /// `send_exception`.
    SendException,
    /// `send_other`.
    SendOther,
}

/// One request as a server interceptor sees it
/// (`PortableInterceptor::ServerRequestInfo`).
#[derive(Debug)]
pub struct ServerRequestInfo {
    point: ServerPoint,
    request_id: u32,
    operation: String,
    response_expected: bool,
    sync_scope: SyncScope,
    object_id: Option<ObjectId>,
    request_contexts: Vec<ServiceContext>,
    reply_contexts: Vec<ServiceContext>,
    reply_status: Option<ReplyStatus>,
    sending_exception: Option<SystemException>,
    sending_exception_id: Option<String>,
    forward_reference: Option<ObjectRef>,
    slots: Vec<Option<Any>>,
    arguments: Option<NvList>,
    result: Option<Any>,
}

impl ServerRequestInfo {
    /// The point running.
    pub fn point(&self) -> ServerPoint {
        self.point
    }

    /// The request's id (its GIOP request id on its connection).
    pub fn request_id(&self) -> u32 {
        self.request_id
    }

    /// The operation's name.
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// False for a oneway request.
    pub fn response_expected(&self) -> bool {
        self.response_expected
    }

    /// The request's sync scope.
    pub fn sync_scope(&self) -> SyncScope {
        self.sync_scope
    }

    /// The target's object id within its POA (from `receive_request` on;
    /// `None` before, and for a request that reached no object).
    pub fn object_id(&self) -> Option<&ObjectId> {
        self.object_id.as_ref()
    }

    /// The request's service context with id `id`, if any.
    pub fn get_request_service_context(&self, id: u32) -> Option<&ServiceContext> {
        self.request_contexts.iter().find(|c| c.id == id)
    }

    /// The request's service contexts, as they came.
    pub fn request_service_contexts(&self) -> &[ServiceContext] {
        &self.request_contexts
    }

    /// The reply's service context with id `id`, if an interceptor added
    /// one.
    pub fn get_reply_service_context(&self, id: u32) -> Option<&ServiceContext> {
        self.reply_contexts.iter().find(|c| c.id == id)
    }

    /// Adds a service context to the reply (at any point), replacing one
    /// with its id when `replace` (else that is
    /// [`PiError::ContextExists`]).
    pub fn add_reply_service_context(
        &mut self,
        context: ServiceContext,
        replace: bool,
    ) -> Result<(), PiError> {
        add_context(&mut self.reply_contexts, context, replace)
    }

    /// How the request is ending (in the ending points).
    pub fn reply_status(&self) -> Option<ReplyStatus> {
        self.reply_status
    }

    /// The system exception being sent, in `send_exception`.
    pub fn sending_exception(&self) -> Option<&SystemException> {
        self.sending_exception.as_ref()
    }

    /// The repository id of the exception being sent (user or system),
    /// in `send_exception`.
    pub fn sending_exception_id(&self) -> Option<&str> {
        self.sending_exception_id.as_deref()
    }

    /// Where a LOCATION_FORWARD sends the client, in `send_other`.
    pub fn forward_reference(&self) -> Option<&ObjectRef> {
        self.forward_reference.as_ref()
    }

    /// The request's slot `id` (its request scope).
    pub fn get_slot(&self, id: SlotId) -> Result<Option<Any>, PiError> {
        slot(&self.slots, id)
    }

    /// Sets the request's slot `id`; after `receive_request` the request's
    /// slots are the servant thread's `PiCurrent`.
    pub fn set_slot(&mut self, id: SlotId, value: impl Into<Option<Any>>) -> Result<(), PiError> {
        let there = self
            .slots
            .get_mut(id.index())
            .ok_or(PiError::InvalidSlot(id))?;
        *there = value.into();
        Ok(())
    }

    /// The arguments with their modes, where known as `any`s (a DSI
    /// servant's, in the ending points, once it has read them); `None`
    /// for a skeleton's, whose arguments the ORB sees only encoded.
    pub fn arguments(&self) -> Option<&NvList> {
        self.arguments.as_ref()
    }

    /// The result, where known as an `any` (a DSI servant's, in
    /// `send_reply`); `None` otherwise.
    pub fn result(&self) -> Option<&Any> {
        self.result.as_ref()
    }

    fn record(&mut self, outcome: &ServerOutcome) -> ServerPoint {
        self.sending_exception = None;
        self.sending_exception_id = None;
        self.forward_reference = None;
        let (status, point) = match outcome {
            ServerOutcome::Reply => (ReplyStatus::Successful, ServerPoint::SendReply),
            ServerOutcome::UserException(id) => {
                self.sending_exception_id = Some(id.clone());
                (ReplyStatus::UserException, ServerPoint::SendException)
            }
            ServerOutcome::System(e) => {
                self.sending_exception = Some(e.clone());
                self.sending_exception_id = Some(e.kind().repository_id().to_owned());
                (ReplyStatus::SystemException, ServerPoint::SendException)
            }
            ServerOutcome::Forward(to) => {
                self.forward_reference = Some(to.clone());
                (ReplyStatus::LocationForward, ServerPoint::SendOther)
            }
        };
        self.reply_status = Some(status);
        self.point = point;
        point
    }
}

/// How a request came out, as the server's ending points take it (and
/// leave it).
#[derive(Debug, Clone)]
pub(crate) enum ServerOutcome {
    /// A normal reply (or a oneway's servant returned).
    Reply,
    /// A user exception with this repository id.
    UserException(String),
    /// A system exception.
    System(SystemException),
    /// A LOCATION_FORWARD.
    Forward(ObjectRef),
}

impl From<Intercept> for ServerOutcome {
    fn from(e: Intercept) -> Self {
        match e {
            Intercept::System(e) => ServerOutcome::System(e),
            Intercept::ForwardRequest(to) => ServerOutcome::Forward(to),
        }
    }
}

/// The interception of one request on the server.
#[derive(Debug)]
pub(crate) struct ServerInterception {
    interceptors: Arc<Interceptors>,
    /// How many interceptors completed `receive_request_service_contexts`.
    started: usize,
    info: ServerRequestInfo,
}

impl ServerInterception {
    /// The interception of a request that came with `contexts`; `None`
    /// when no server interceptor is registered.
    pub(crate) fn start(
        interceptors: &Arc<Interceptors>,
        request_id: u32,
        operation: &str,
        response_expected: bool,
        sync_scope: SyncScope,
        contexts: Vec<ServiceContext>,
    ) -> Option<Box<Self>> {
        if interceptors.server.is_empty() {
            return None;
        }
        Some(Box::new(ServerInterception {
            interceptors: interceptors.clone(),
            started: 0,
            info: ServerRequestInfo {
                point: ServerPoint::ReceiveRequestServiceContexts,
                request_id,
                operation: operation.to_owned(),
                response_expected,
                sync_scope,
                object_id: None,
                request_contexts: contexts,
                reply_contexts: Vec::new(),
                reply_status: None,
                sending_exception: None,
                sending_exception_id: None,
                forward_reference: None,
                slots: vec![None; interceptors.slots],
                arguments: None,
                result: None,
            },
        }))
    }

    /// Runs `receive_request_service_contexts` on each interceptor in
    /// order. `Err`: one failed it; the request is to end with that
    /// outcome without reaching its servant ([`conclude`](Self::conclude)).
    pub(crate) fn receive_request_service_contexts(&mut self) -> Result<(), ServerOutcome> {
        self.info.point = ServerPoint::ReceiveRequestServiceContexts;
        let interceptors = self.interceptors.clone();
        for (i, interceptor) in interceptors.server.iter().enumerate() {
            contained(CompletionStatus::No, || {
                interceptor.receive_request_service_contexts(&mut self.info)
            })?;
            self.started = i + 1;
        }
        Ok(())
    }

    /// The target the request reached.
    pub(crate) fn set_target(&mut self, object_id: &ObjectId) {
        self.info.object_id = Some(object_id.clone());
    }

    /// The arguments and the result as `any`s, where known (a DSI
    /// servant's).
    pub(crate) fn set_results(&mut self, arguments: Option<NvList>, result: Option<Any>) {
        self.info.arguments = arguments;
        self.info.result = result;
    }

    /// Runs `receive_request` on each interceptor in order, just before
    /// the servant. `Err`: the servant is not to run, and the request is
    /// to end with that outcome.
    pub(crate) fn receive_request(&mut self) -> Result<(), ServerOutcome> {
        self.info.point = ServerPoint::ReceiveRequest;
        let interceptors = self.interceptors.clone();
        for interceptor in &interceptors.server[..self.started] {
            contained(CompletionStatus::No, || {
                interceptor.receive_request(&mut self.info)
            })?;
        }
        Ok(())
    }

    /// Makes the request's slots the calling thread's `PiCurrent` while
    /// the returned guard lives (the servant's upcall).
    pub(crate) fn enter_request_scope(&self) -> super::RequestScope {
        super::RequestScope::enter(self.interceptors.scope, self.info.slots.clone())
    }

    /// Runs the ending points, in reverse order, on each interceptor whose
    /// `receive_request_service_contexts` completed, each seeing the
    /// outcome as those before it left it. Returns the final outcome and
    /// the reply's service contexts.
    pub(crate) fn conclude(
        mut self: Box<Self>,
        outcome: ServerOutcome,
    ) -> (ServerOutcome, Vec<ServiceContext>) {
        let interceptors = self.interceptors.clone();
        let mut outcome = outcome;
        for interceptor in interceptors.server[..self.started].iter().rev() {
            let point = self.info.record(&outcome);
            let completed = match &outcome {
                ServerOutcome::Reply | ServerOutcome::UserException(_) => CompletionStatus::Yes,
                ServerOutcome::System(e) => e.completed(),
                ServerOutcome::Forward(_) => CompletionStatus::No,
            };
            let info = &mut self.info;
            let ran = contained(completed, || match point {
                ServerPoint::SendReply => interceptor.send_reply(info),
                ServerPoint::SendException => interceptor.send_exception(info),
                _ => interceptor.send_other(info),
            });
            if let Err(e) = ran {
                outcome = e.into();
            }
        }
        (outcome, std::mem::take(&mut self.info.reply_contexts))
    }
}
