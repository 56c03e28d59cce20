//! Serving a message read: where the request filter routes it, resolving a
//! request through the object adapter (and its interceptors) and running
//! its upcall (`run_upcall`); locate requests and requests a POA manager held.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use armillary_giop::cdr::CdrWriter;
use armillary_giop::giop::{
    Frame, KnownServiceContext, LocateReplyHeader, LocateStatus, Message, MessageBody,
    MessageBuilder, ReplyHeader, ReplyStatus, SyncScope, TargetAddress,
};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::CdrEncode;

use crate::interceptors::{ServerInterception, ServerOutcome};
use crate::owed_reply::OwedReply;
use crate::poa::{Admission, Resolution, Upcall};
use crate::reactor::Reactor;
use crate::request_filter::{RequestFilter, RequestInfo, Route};
use crate::servant::Tasks;
use crate::servant::{ReplyKind, ServerRequest};
use crate::trace::UpcallRecord;
use crate::transport::server::adapter::{Located, ObjectAdapter};
use crate::transport::server::concurrency::{run_here, run_resolved, ResolvedRequest};
use crate::transport::server::lanes;

use super::read::ReadMessage;
use super::{InProgress, ServerConnection};

/// The object key a request addresses, in any of the three GIOP 1.2
/// forms (a profile or reference that is not IIOP has none).
pub(super) fn target_key(target: &TargetAddress) -> Option<Cow<'_, [u8]>> {
    let from_profile = |p: &armillary_giop::ior::TaggedProfile| {
        (p.tag == armillary_giop::ior::TAG_INTERNET_IOP)
            .then(|| armillary_giop::ior::ProfileBody::decode(&p.data).ok())
            .flatten()
            .map(|b| b.object_key)
    };
    match target {
        TargetAddress::Key(k) => Some(Cow::Borrowed(k)),
        TargetAddress::Profile(p) => from_profile(p).map(Cow::Owned),
        TargetAddress::Reference {
            selected_profile_index,
            ior,
        } => ior
            .profiles
            .get(*selected_profile_index as usize)
            .and_then(from_profile)
            .map(Cow::Owned),
    }
}

impl ServerConnection {
    /// Serves one message read: where the request filter routes it (the
    /// threading framework), else as the concurrency model does.
    /// `in_progress` counts a request read by a reactor thread as running
    /// until it is answered (it may be answered on another thread).
    #[inline]
    pub(super) fn serve(
        &self,
        reactor: &Arc<Reactor>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
    ) {
        let route = match (&self.shared.filter, &*read) {
            (Some(filter), Some((_, msg))) => self.route(filter.as_ref(), msg),
            _ => Route::Default,
        };
        self.place(reactor, read, in_progress, route);
    }

    /// Serves a message where `route` says: as the concurrency model does
    /// (`Default`: the target POA's model, else the ORB's), or where the
    /// request filter routed it, which comes first (see
    /// `request_filter`). The route stays with the request: one a holding
    /// POA manager parks is placed by it again when released.
    #[inline]
    fn place(
        &self,
        reactor: &Arc<Reactor>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
        route: Route,
    ) {
        let Some((_, msg)) = &*read else {
            return;
        };
        let answer = match &msg.body {
            MessageBody::Request(h) => Some((
                msg.header.version,
                msg.header.byte_order,
                h.request_id,
                h.response_expected(),
            )),
            _ => None,
        };
        let refuse = |ex: SystemException, in_progress: Option<InProgress>| {
            if let Some((version, order, request_id, true)) = answer {
                self.reply_exception(reactor, version, order, request_id, &ex);
            }
            drop(in_progress);
        };
        // The request served on another thread, which runs its upcall
        // itself; it counts as running until then.
        let elsewhere = |read: &mut ReadMessage, in_progress: Option<InProgress>, route| {
            let in_progress = in_progress.or_else(|| self.in_progress(reactor));
            let (conn, reactor) = (self.me.upgrade()?, reactor.clone());
            let mut read = read.take();
            let job: lanes::Job =
                Box::new(move || conn.handle(&reactor, &mut read, in_progress, route));
            Some(job)
        };
        match route {
            Route::Default | Route::IoThread => self.handle(reactor, read, in_progress, route),
            Route::Reject(ex) => refuse(ex, in_progress),
            Route::Lane(name) => {
                let route = Route::Lane(name.clone());
                let Some(job) = elsewhere(read, in_progress, route) else {
                    return;
                };
                if let Err(job) = self.shared.lanes.run(&name, job) {
                    drop(job);
                    refuse(
                        SystemException::obj_adapter(minor::UNKNOWN_LANE, CompletionStatus::No),
                        None,
                    );
                }
            }
            Route::NewThread => {
                let Some(job) = elsewhere(read, in_progress, Route::NewThread) else {
                    return;
                };
                if let Err(job) = lanes::run_on_new_thread("armillary-request", job) {
                    drop(job);
                    refuse(
                        SystemException::transient(minor::NO_THREAD, CompletionStatus::No),
                        None,
                    );
                }
            }
        }
    }

    /// What the request filter decides for a Request message (other
    /// messages are served as usual: `Default`).
    fn route(&self, filter: &dyn RequestFilter, msg: &Message) -> Route {
        let MessageBody::Request(h) = &msg.body else {
            return Route::Default;
        };
        let Some(adapter) = self.adapter.upgrade() else {
            return Route::Default;
        };
        let key = target_key(&h.target).unwrap_or_default();
        let info = RequestInfo {
            operation: &h.operation,
            object_key: &key,
            target: adapter.describe_key(&key),
            client: self.peer,
            service_contexts: &h.service_contexts,
            request_id: h.request_id,
            response_expected: h.response_expected(),
        };
        filter.route(&info)
    }

    /// Serves one message that was read (`msg`, decoded from `frame`) on
    /// this thread, running a request's upcall here too, unless its
    /// `route` is `Default` (then the concurrency model decides).
    #[inline]
    fn handle(
        &self,
        reactor: &Arc<Reactor>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
        route: Route,
    ) {
        let Some((_, msg)) = &*read else {
            return;
        };
        self.version.set(msg.header.version);
        let Some(adapter) = self.adapter.upgrade() else {
            return;
        };
        if matches!(msg.body, MessageBody::Request(_)) {
            self.request(reactor, &adapter, read, in_progress, route);
            return;
        }
        match &msg.body {
            MessageBody::Request(_) => {}
            MessageBody::LocateRequest { request_id, target } => {
                let key = target_key(target).unwrap_or_default();
                let (status, forward) = match adapter.locate_key(&key) {
                    Located::Here => (LocateStatus::ObjectHere, None),
                    Located::Unknown => (LocateStatus::UnknownObject, None),
                    Located::Forward(to) => (LocateStatus::ObjectForward, Some(to)),
                };
                let fields = MessageBody::LocateReply(LocateReplyHeader {
                    request_id: *request_id,
                    locate_status: status,
                });
                let (version, order) = (msg.header.version, msg.header.byte_order);
                if let Ok(mut b) = MessageBuilder::new(version, order, &fields) {
                    if let Some(to) = forward {
                        let _ = to.ior().encode(b.body());
                    }
                    self.send(reactor, b.finish_spliced(false));
                }
            }
            // The client sends nothing more: what it sent before is
            // answered, then the connection closes.
            MessageBody::CloseConnection => {
                self.eof.store(true, Ordering::SeqCst);
                self.close_if_finished(reactor);
            }
            MessageBody::MessageError => self.close(reactor),
            // A lone cancel, or one for a request already answered.
            MessageBody::CancelRequest { .. } => {}
            // Refused when read (`decode_read`).
            MessageBody::Reply(_) | MessageBody::LocateReply(_) | MessageBody::Fragment { .. } => {
                self.message_error(reactor)
            }
        }
    }

    /// Resolves a request to its servant and hands the upcall to the
    /// concurrency model, or answers it at once (no such object, a
    /// forward, a holding POA manager that parks it).
    #[inline]
    fn request(
        &self,
        reactor: &Arc<Reactor>,
        adapter: &Arc<dyn ObjectAdapter>,
        read: &mut ReadMessage,
        in_progress: Option<InProgress>,
        route: Route,
    ) {
        let Some((
            frame,
            msg @ Message {
                body: MessageBody::Request(h),
                ..
            },
        )) = &*read
        else {
            return;
        };
        for ctx in &h.service_contexts {
            if let Ok(Some(KnownServiceContext::CodeSets(cs))) = ctx.decode_known() {
                self.set_codesets(cs);
            }
        }
        let version = msg.header.version;
        let order = msg.header.byte_order;
        let expected = h.response_expected();
        let key = match target_key(&h.target) {
            Some(k) => k,
            None => {
                if expected {
                    let ex = SystemException::no_implement(0, CompletionStatus::No);
                    self.reply_exception(reactor, version, order, h.request_id, &ex);
                }
                return;
            }
        };
        let resolution = adapter.resolve(&key, &h.operation);
        // The server interceptors' starting point, once the request's
        // fate is known (a request a holding POA manager parks comes
        // back here when it runs). A request the POA answers at once is
        // answered through them too.
        let mut interception = None;
        if let Some(interceptors) = adapter.server_interceptors() {
            if !matches!(resolution, Resolution::Held(_)) {
                let mut started = ServerInterception::start(
                    interceptors,
                    h.request_id,
                    &h.operation,
                    expected,
                    h.sync_scope(),
                    h.service_contexts.clone(),
                );
                let early = match started
                    .as_mut()
                    .map(|i| i.receive_request_service_contexts())
                {
                    Some(Err(outcome)) => Some(outcome),
                    _ => match &resolution {
                        Resolution::Forward(to) => Some(ServerOutcome::Forward(to.clone())),
                        Resolution::Failed(ex) => Some(ServerOutcome::System(ex.clone())),
                        Resolution::NotAPoaKey => {
                            Some(ServerOutcome::System(SystemException::object_not_exist(
                                minor::UNREGISTERED_OBJECT,
                                CompletionStatus::No,
                            )))
                        }
                        Resolution::Upcall(_) | Resolution::Held(_) => None,
                    },
                };
                if let Some(outcome) = early {
                    let reply = match expected {
                        true => OwedReply::new(
                            self.reply_sink(reactor, None),
                            version,
                            order,
                            h.request_id,
                        ),
                        false => OwedReply::nothing(),
                    };
                    reply.intercepted(started).answer(outcome);
                    return;
                }
                interception = started;
            }
        }
        let upcall = match resolution {
            Resolution::Upcall(u) => u,
            Resolution::Held(manager) => {
                // Parked until the manager decides; answered then. Until
                // then the connection is not idle.
                let frame = frame.clone();
                let Some(conn) = self.me.upgrade() else {
                    // Unreachable: a thread serving the connection holds it.
                    self.answer_held(reactor, frame, Admission::Discard, route);
                    return;
                };
                self.held.fetch_add(1, Ordering::SeqCst);
                let reactor = reactor.clone();
                manager.hold(Box::new(move |admission| {
                    let reactor2 = reactor.clone();
                    reactor.post(Box::new(move || {
                        conn.answer_held(&reactor2, frame, admission, route);
                        conn.held.fetch_sub(1, Ordering::SeqCst);
                        conn.close_if_finished(&reactor2);
                        if conn.take_resumable() {
                            conn.read_ready(&reactor2);
                        } else {
                            conn.schedule_deadline(&reactor2);
                        }
                    }));
                }));
                return;
            }
            Resolution::Forward(to) => {
                if expected {
                    let fields = MessageBody::Reply(ReplyHeader {
                        request_id: h.request_id,
                        reply_status: ReplyStatus::LocationForward,
                        service_contexts: Vec::new(),
                    });
                    if let Ok(mut b) = MessageBuilder::new(version, order, &fields) {
                        let mut body =
                            CdrWriter::new(order, version).with_align_base(b.body_offset());
                        let _ = to.ior().encode(&mut body);
                        b.body().write_octets(body.as_bytes());
                        self.send(reactor, b.finish_spliced(false));
                    }
                }
                return;
            }
            Resolution::Failed(ex) => {
                if expected {
                    self.reply_exception(reactor, version, order, h.request_id, &ex);
                }
                return;
            }
            Resolution::NotAPoaKey => {
                if expected {
                    let ex = SystemException::object_not_exist(
                        minor::UNREGISTERED_OBJECT,
                        CompletionStatus::No,
                    );
                    self.reply_exception(reactor, version, order, h.request_id, &ex);
                }
                return;
            }
        };
        if h.sync_scope() == SyncScope::WithServer {
            // SYNC_WITH_SERVER: the server has it and the target exists;
            // acknowledge before the upcall.
            self.reply(
                reactor,
                version,
                order,
                h.request_id,
                ReplyKind::Normal,
                &[],
            );
        }
        // A request owed a reply counts as in progress until the reply is
        // written, wherever and whenever that is (an asynchronous servant
        // answers after its upcall): its guard lives in the reply's sink.
        // Any other request is done when its upcall returns.
        let (reply, in_progress) = if expected && h.sync_scope() != SyncScope::WithServer {
            let sink = self.reply_sink(reactor, in_progress);
            (OwedReply::new(sink, version, order, h.request_id), None)
        } else {
            (OwedReply::nothing(), in_progress)
        };
        let reply = reply.intercepted(interception);
        let elsewhere = route == Route::Default && !self.concurrency.runs_here(upcall.poa());
        let (upcall, reply) = if elsewhere {
            (upcall, reply)
        } else {
            // Here, on the reading thread (as the model would run it, or
            // where the request filter routed it), the request where it
            // was read.
            let here = run_here(upcall, reply, |upcall, reply| {
                let tasks = Tasks::Reactor(reactor);
                self.run_upcall(&**adapter, frame, msg, upcall, (reply, tasks));
            });
            match here {
                None => return drop(in_progress),
                Some(back) => back,
            }
        };
        let (Some(conn), Some((frame, msg))) = (self.me.upgrade(), read.take()) else {
            // Unreachable: a thread serving the connection holds it.
            return;
        };
        let adapter = adapter.clone();
        let reactor = reactor.clone();
        let run = move |upcall: Upcall, reply: OwedReply| {
            let tasks = Tasks::Reactor(&reactor);
            conn.run_upcall(&*adapter, &frame, &msg, upcall, (reply, tasks));
            drop(in_progress);
        };
        if elsewhere {
            let request = ResolvedRequest::new(upcall, reply, self.id, Box::new(run));
            self.concurrency.schedule(request);
        } else {
            // A SINGLE_THREAD_MODEL POA's, perhaps handed over.
            run_resolved(upcall, reply, run);
        }
    }

    /// Runs the upcall of the request in `frame` (resolved to `upcall`)
    /// on the calling thread and answers it through `owed` (the reply, the
    /// operation's name, and where an asynchronous servant's work goes
    /// on), unless its servant took the reply to answer later.
    fn run_upcall(
        &self,
        adapter: &dyn ObjectAdapter,
        frame: &Frame,
        msg: &Message,
        upcall: Upcall,
        owed: (OwedReply, Tasks<'_>),
    ) {
        let MessageBody::Request(h) = &msg.body else {
            // Unreachable: only requests are dispatched.
            return;
        };
        // The connection's code sets: the defaults until a GIOP 1.1+
        // request announced others, then those for every request on it
        // (a client does the same, whatever the message's version).
        let codesets = self.codesets.get();
        let version = msg.header.version;
        let order = msg.header.byte_order;
        let expected = h.response_expected();
        // The reply body's offset does not depend on its status.
        let body_offset = MessageBuilder::reply_body_offset(version);
        let args = frame.reader(msg).with_codesets(codesets);
        // Union default labels in the form the client's TypeCodes showed
        // (this request's, see `ServerRequest::results`, or an earlier
        // one's), else the configured one: GIOP does not say which ORB the
        // client is.
        let default_label = self
            .default_label_seen
            .get()
            .copied()
            .unwrap_or(self.shared().default_label);
        let (mut reply, tasks) = owed;
        let record =
            UpcallRecord::start(self.shared.metrics.as_ref(), h, version, self.peer, || {
                target_key(&h.target)
            });
        let _in_request = record.as_ref().map(|r| r.span().clone().entered());
        reply.record(record);
        // The servant writes its results straight into the reply message
        // (one buffer for the reply); a oneway's writer only if it writes.
        let (writer, message) = match reply.prepare() {
            Some(message) => {
                let (writer, shape) = message.into_parts();
                (writer, Some(shape))
            }
            None => (
                CdrWriter::new(order, version).with_align_base(body_offset),
                None,
            ),
        };
        let writer = writer
            .with_codesets(codesets)
            .with_default_label(default_label);
        // The servant sees the object id within its POA, not the whole key.
        let object_id = upcall.object_id().clone();
        // An intercepted request: `receive_request` on this thread, then
        // the request's PICurrent slots are the servant's.
        let mut request_scope = None;
        if let Some(interception) = reply.interception_mut() {
            interception.set_target(&object_id);
            match interception.receive_request() {
                Ok(()) => request_scope = Some(interception.enter_request_scope()),
                Err(outcome) => {
                    reply.answer(outcome);
                    return;
                }
            }
        }
        let mut request = ServerRequest::new(&h.operation, &object_id, args, expected, writer);
        request.owing(reply, tasks);
        request.in_message(message);
        let outcome = {
            let _scope = adapter.decoding_scope();
            upcall.run(&mut request)
        };
        drop(request_scope);
        if let Some(form) = request.default_label_seen() {
            // The first form shown stays: a client's ORB does not change.
            let _ = self.default_label_seen.set(form);
        }
        request.conclude(outcome);
    }

    /// Carries out the decision a POA manager took on a held request: run
    /// it now, where its `route` says (the request filter is not asked
    /// again), or answer TRANSIENT (discarding) or OBJ_ADAPTER (inactive).
    fn answer_held(
        &self,
        reactor: &Arc<Reactor>,
        frame: Frame,
        admission: Admission,
        route: Route,
    ) {
        let Ok(msg) = frame.message() else {
            return;
        };
        if admission == Admission::Run {
            let in_progress = self.in_progress(reactor);
            self.place(reactor, &mut Some((frame, msg)), in_progress, route);
            return;
        }
        let MessageBody::Request(h) = &msg.body else {
            return;
        };
        if !h.response_expected() {
            return;
        }
        let ex = if admission == Admission::Discard {
            SystemException::transient(minor::POA_DISCARDING, CompletionStatus::No)
        } else {
            SystemException::obj_adapter(minor::ADAPTER_INACTIVE, CompletionStatus::No)
        };
        let (version, order) = (msg.header.version, msg.header.byte_order);
        self.reply_exception(reactor, version, order, h.request_id, &ex);
    }
}
