//! The reply a request is owed, written exactly once whatever happens to
//! the request on its way: the architecture's invariant "every request
//! ends in exactly one reply or one exception", kept by a value rather
//! than by every path remembering it.
//!
//! The server makes an [`OwedReply`] for every two-way request it hands to
//! an upcall, and the request carries it wherever it runs (the concurrency
//! model's threads, a SINGLE_THREAD_MODEL owner's wait, the skeleton's
//! [`ServerRequest`](crate::ServerRequest), and, for an asynchronous
//! servant, its [`ResponseHandler`](crate::amh::ResponseHandler), on any
//! thread, for as long as the servant takes). Its sink holds what must
//! live until the reply is written (the connection's count of requests in
//! progress). It is consumed by
//! the reply ([`OwedReply::reply`]) or an exception
//! ([`OwedReply::exception`]); dropped unanswered it answers by itself:
//! UNKNOWN ([`minor::SERVANT_PANICKED`], COMPLETED_MAYBE) when a panic
//! unwinds through it (a servant locator's `postinvoke`, a servant
//! activator's `etherealize`, a fault of the ORB's), INTERNAL
//! ([`minor::NO_REPLY`], COMPLETED_MAYBE) when it is merely forgotten. A
//! reply that cannot be built (its header fields do not encode) becomes a
//! MARSHAL exception (COMPLETED_YES), whose header always builds
//! ([`MessageBuilder::reply`]).
//!
//! An intercepted request's owed reply also carries its
//! [`ServerInterception`]: whichever way it is answered (and when it is
//! not), the server interceptors' ending point runs first, sees the
//! outcome, may change it (an exception, a forward), and adds the reply's
//! service contexts. That is so for a oneway too, which writes nothing;
//! not for a reply a panic unwinding through it answers (an interceptor
//! panicking then would abort the process).
//!
//! An owed reply may also carry its upcall's [`UpcallRecord`] (its
//! `tracing` span, and its metrics when the ORB serves them): whichever
//! way it is answered, the record learns the outcome then.

use std::sync::Arc;

use armillary_giop::cdr::{CdrEncode, CdrReader, CdrWriter, SplicedBytes, SHARED_OCTETS_MIN};
use armillary_giop::giop::{
    MessageBody, MessageBuilder, MessageShape, ReplyHeader, ReplyStatus, ServiceContext,
};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::{ByteOrder, GiopVersion};

use crate::interceptors::{ServerInterception, ServerOutcome};
use crate::object::ObjectRef;
use crate::servant::ReplyKind;
use crate::trace::{Outcome, UpcallRecord};

/// Where a reply goes: the connection its request came on.
pub(crate) trait ReplySink: Send + Sync {
    /// Writes one whole reply message (its buffer is the sink's to keep).
    fn send_reply(&self, message: SplicedBytes);

    /// The reply will be written after the upcall returned, by whichever
    /// thread answers (an asynchronous servant's handler took it).
    fn answered_later(&self) {}
}

/// The reply one request is owed (see the module docs). `None` for a
/// request that expects none.
#[must_use = "an owed reply answers UNKNOWN or INTERNAL when dropped unanswered"]
pub(crate) struct OwedReply {
    owed: Option<Owed>,
    /// The server interceptors' view of the request, when intercepted.
    interception: Option<Box<ServerInterception>>,
    /// The upcall's span and metrics, when something wants them.
    record: Option<Box<UpcallRecord>>,
}

struct Owed {
    sink: Arc<dyn ReplySink>,
    version: GiopVersion,
    order: ByteOrder,
    request_id: u32,
}

impl std::fmt::Debug for OwedReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwedReply")
            .field("request_id", &self.owed.as_ref().map(|o| o.request_id))
            .finish()
    }
}

impl OwedReply {
    /// The reply owed to request `request_id` (of GIOP `version`, in byte
    /// `order`), to be written to `sink`.
    pub(crate) fn new(
        sink: Arc<dyn ReplySink>,
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
    ) -> OwedReply {
        OwedReply {
            owed: Some(Owed {
                sink,
                version,
                order,
                request_id,
            }),
            interception: None,
            record: None,
        }
    }

    /// The same reply, its request intercepted by `interception` (whose
    /// ending point runs when it is answered).
    pub(crate) fn intercepted(mut self, interception: Option<Box<ServerInterception>>) -> Self {
        self.interception = interception;
        self
    }

    /// Carries the upcall's `record` until the reply is written (see the
    /// module docs).
    pub(crate) fn record(&mut self, record: Option<Box<UpcallRecord>>) {
        self.record = record;
    }

    /// Tells the upcall's record what the request came to.
    fn settle(&mut self, outcome: Outcome, exception: Option<&SystemException>) {
        if let Some(record) = self.record.take() {
            record.finish(outcome, exception);
        }
    }

    /// The request's interception, if it is intercepted.
    pub(crate) fn interception_mut(&mut self) -> Option<&mut ServerInterception> {
        self.interception.as_deref_mut()
    }

    /// Answers with `outcome`, which an interceptor's starting point
    /// ended the request in (a system exception or a forward).
    pub(crate) fn answer(self, outcome: ServerOutcome) {
        match outcome {
            ServerOutcome::Forward(to) => self.forward(&to),
            ServerOutcome::System(e) => self.exception(&e),
            // Not what a starting point raises.
            ServerOutcome::Reply | ServerOutcome::UserException(_) => self.exception(
                &SystemException::internal(minor::NO_REPLY, CompletionStatus::No),
            ),
        }
    }

    /// Answers with a LOCATION_FORWARD to `to`.
    pub(crate) fn forward(mut self, to: &ObjectRef) {
        self.conclude(ServerOutcome::Forward(to.clone()), None);
    }

    /// Nothing owed: a oneway request, or one already acknowledged
    /// (SYNC_WITH_SERVER).
    pub(crate) fn nothing() -> OwedReply {
        OwedReply {
            owed: None,
            interception: None,
            record: None,
        }
    }

    /// Whether a reply is owed (false for a oneway request, and once
    /// answered).
    pub(crate) fn is_owed(&self) -> bool {
        self.owed.is_some()
    }

    /// Tells the sink that the reply will be written after the upcall
    /// returns, by whichever thread answers.
    pub(crate) fn answered_later(&self) {
        if let Some(owed) = &self.owed {
            owed.sink.answered_later();
        }
    }

    /// Answers with a reply of `kind` whose body is `body` (encoded for
    /// the message's body offset); a reply whose header does not build is
    /// answered with MARSHAL instead.
    pub(crate) fn reply(mut self, kind: ReplyKind, body: &[u8]) {
        if self.interception.is_some() {
            let outcome = match kind {
                ReplyKind::Normal => ServerOutcome::Reply,
                ReplyKind::UserException => ServerOutcome::UserException(
                    body_reader(&self, body).read_string().unwrap_or_default(),
                ),
                ReplyKind::SystemException => {
                    match SystemException::decode_body(&mut body_reader(&self, body)) {
                        Ok(e) => ServerOutcome::System(e),
                        Err(_) => ServerOutcome::System(SystemException::unknown(
                            0,
                            CompletionStatus::Maybe,
                        )),
                    }
                }
            };
            self.conclude(outcome, Some((kind, body)));
            return;
        }
        self.settle(kind.outcome(), None);
        if let Some(owed) = self.owed.take() {
            let message = reply_message(&owed, kind, body, |fields| {
                MessageBuilder::new(owed.version, owed.order, fields)
            });
            owed.sink.send_reply(message);
        }
    }

    /// The NO_EXCEPTION reply message this request is owed, its header
    /// written, for the servant to write its results into: split with
    /// [`MessageBuilder::into_parts`] and sent with
    /// [`reply_message`](Self::reply_message), the reply's one buffer.
    /// `None` when no reply is owed.
    pub(crate) fn prepare(&self) -> Option<MessageBuilder> {
        let owed = self.owed.as_ref()?;
        let mut message = MessageBuilder::reply(
            owed.version,
            owed.order,
            owed.request_id,
            ReplyStatus::NoException,
        );
        // A large `Bytes` result is spliced in, not copied: the reply
        // leaves as its pieces.
        message.body().set_splicing(Some(SHARED_OCTETS_MIN));
        Some(message)
    }

    /// Answers with the normal reply written into the message
    /// [`prepare`](Self::prepare) made (`w`, shaped by `shape`): sent as
    /// it is, unless the request is intercepted (the interceptors' ending
    /// point may change the reply and add contexts: then as
    /// [`reply`](Self::reply)).
    pub(crate) fn reply_message(mut self, mut w: CdrWriter, shape: MessageShape) {
        let body_start = shape.body_offset();
        if self.interception.is_some() || w.len() < body_start {
            w.flatten();
            let body = w.as_bytes().get(body_start..).unwrap_or_default();
            return self.reply(ReplyKind::Normal, body);
        }
        self.settle(Outcome::Normal, None);
        if let (Some(owed), Some(message)) = (self.owed.take(), MessageBuilder::resume(w, shape)) {
            owed.sink.send_reply(message.finish_spliced(false));
        }
    }

    /// Answers with `exception`.
    pub(crate) fn exception(mut self, exception: &SystemException) {
        if self.interception.is_some() {
            self.conclude(ServerOutcome::System(exception.clone()), None);
            return;
        }
        self.settle(Outcome::SystemException, Some(exception));
        if let Some(owed) = self.owed.take() {
            owed.sink.send_reply(exception_message(&owed, exception));
        }
    }
}

impl OwedReply {
    /// Runs the interceptors' ending point for `outcome` (`written`: the
    /// reply the servant wrote, when that is the outcome) and writes what
    /// it comes to, with the reply service contexts they added.
    fn conclude(&mut self, outcome: ServerOutcome, written: Option<(ReplyKind, &[u8])>) {
        let (outcome, contexts) = match self.interception.take() {
            Some(interception) => interception.conclude(outcome),
            None => (outcome, Vec::new()),
        };
        match &outcome {
            ServerOutcome::Reply => self.settle(Outcome::Normal, None),
            ServerOutcome::UserException(_) => self.settle(Outcome::UserException, None),
            ServerOutcome::Forward(_) => self.settle(Outcome::LocationForward, None),
            ServerOutcome::System(e) => self.settle(Outcome::SystemException, Some(e)),
        }
        let Some(owed) = self.owed.take() else {
            return;
        };
        let message = match (outcome, written) {
            (ServerOutcome::Reply, Some((kind @ ReplyKind::Normal, body)))
            | (ServerOutcome::UserException(_), Some((kind @ ReplyKind::UserException, body))) => {
                reply_with_contexts(&owed, kind, body, contexts)
            }
            (ServerOutcome::Forward(to), _) => {
                let mut body = CdrWriter::new(owed.order, owed.version);
                match to.ior().encode(&mut body) {
                    Ok(()) => forward_with_contexts(&owed, body.as_bytes(), contexts),
                    Err(_) => exception_message(
                        &owed,
                        &SystemException::marshal(minor::MALFORMED, CompletionStatus::No),
                    ),
                }
            }
            (ServerOutcome::System(e), _) => {
                let mut body = CdrWriter::new(owed.order, owed.version);
                let _ = e.encode_body(&mut body);
                reply_with_contexts(&owed, ReplyKind::SystemException, body.as_bytes(), contexts)
            }
            // Unreachable: interceptors change an outcome only into an
            // exception or a forward, and a written reply comes with its
            // own kind.
            (ServerOutcome::Reply | ServerOutcome::UserException(_), _) => exception_message(
                &owed,
                &SystemException::internal(minor::NO_REPLY, CompletionStatus::Maybe),
            ),
        };
        owed.sink.send_reply(message);
    }
}

/// A reader of a reply body written for `reply` (whose body starts
/// 8-aligned: see `reply_with_contexts`).
fn body_reader<'a>(reply: &OwedReply, body: &'a [u8]) -> CdrReader<'a> {
    let (order, version) = reply
        .owed
        .as_ref()
        .map_or((ByteOrder::NATIVE, GiopVersion::V1_2), |o| {
            (o.order, o.version)
        });
    CdrReader::new(body, order, version)
}

impl Drop for OwedReply {
    fn drop(&mut self) {
        if self.owed.is_none() && self.interception.is_none() && self.record.is_none() {
            return;
        }
        let exception = if std::thread::panicking() {
            // No interceptor runs while a panic unwinds: one that panicked
            // too would abort the process.
            self.interception = None;
            crate::trace::servant_panicked(None);
            SystemException::unknown(minor::SERVANT_PANICKED, CompletionStatus::Maybe)
        } else {
            SystemException::internal(minor::NO_REPLY, CompletionStatus::Maybe)
        };
        if self.owed.is_none() && self.interception.is_none() {
            // Nothing to write: a oneway's record only.
            self.settle(Outcome::SystemException, Some(&exception));
            return;
        }
        if self.interception.is_some() {
            self.conclude(ServerOutcome::System(exception), None);
        } else if let Some(owed) = self.owed.take() {
            self.settle(Outcome::SystemException, Some(&exception));
            owed.sink.send_reply(exception_message(&owed, &exception));
        }
    }
}

/// The id of the service context that pads a GIOP 1.0 or 1.1 reply
/// header carrying interceptors' contexts, so that the body (encoded for
/// a body at an 8-aligned offset) stays aligned: Armillary's vendor
/// service context id range, "AR" + 0xFF00.
pub(crate) const PADDING_CONTEXT: u32 = 0x4152_FF00;

/// A reply of `kind` with `body` (encoded for an 8-aligned body offset,
/// which a reply without contexts always has) and `contexts` in its
/// header. GIOP 1.2 aligns the body on 8 itself; an older reply whose
/// contexts leave the body elsewhere gets a padding context
/// ([`PADDING_CONTEXT`]).
fn reply_with_contexts(
    owed: &Owed,
    kind: ReplyKind,
    body: &[u8],
    contexts: Vec<ServiceContext>,
) -> SplicedBytes {
    if contexts.is_empty() {
        return reply_message(owed, kind, body, |fields| {
            MessageBuilder::new(owed.version, owed.order, fields)
        });
    }
    let status = match kind {
        ReplyKind::Normal => ReplyStatus::NoException,
        ReplyKind::UserException => ReplyStatus::UserException,
        ReplyKind::SystemException => ReplyStatus::SystemException,
    };
    with_contexts(owed, status, body, contexts)
}

/// A LOCATION_FORWARD reply whose body is the encoded reference.
fn forward_with_contexts(owed: &Owed, body: &[u8], contexts: Vec<ServiceContext>) -> SplicedBytes {
    with_contexts(owed, ReplyStatus::LocationForward, body, contexts)
}

fn with_contexts(
    owed: &Owed,
    reply_status: ReplyStatus,
    body: &[u8],
    contexts: Vec<ServiceContext>,
) -> SplicedBytes {
    let build = |service_contexts: Vec<ServiceContext>| {
        MessageBuilder::new(
            owed.version,
            owed.order,
            &MessageBody::Reply(ReplyHeader {
                request_id: owed.request_id,
                reply_status,
                service_contexts,
            }),
        )
    };
    let mut builder = match build(contexts.clone()) {
        Ok(b) => b,
        Err(_) => {
            return exception_message(
                owed,
                &SystemException::marshal(minor::MALFORMED, CompletionStatus::Yes),
            )
        }
    };
    // A padding context of 0 to 7 octets brings an old reply's body to
    // an 8-aligned offset.
    let mut padding = 0;
    while builder.body_offset() % 8 != 0 && padding < 8 {
        let mut padded = contexts.clone();
        padded.push(ServiceContext {
            id: PADDING_CONTEXT,
            data: vec![0; padding],
        });
        if let Ok(b) = build(padded) {
            if b.body_offset() % 8 == 0 {
                builder = b;
                break;
            }
        }
        padding += 1;
    }
    builder.body().write_octets(body);
    builder.finish_spliced(false)
}

/// The reply message for `kind` and `body`, its header made by `header`
/// (`MessageBuilder::new`, which may fail); MARSHAL (COMPLETED_YES) when
/// it fails.
fn reply_message(
    owed: &Owed,
    kind: ReplyKind,
    body: &[u8],
    header: impl FnOnce(&MessageBody) -> Result<MessageBuilder, armillary_giop::CdrError>,
) -> SplicedBytes {
    let reply_status = match kind {
        ReplyKind::Normal => ReplyStatus::NoException,
        ReplyKind::UserException => ReplyStatus::UserException,
        ReplyKind::SystemException => ReplyStatus::SystemException,
    };
    let fields = MessageBody::Reply(ReplyHeader {
        request_id: owed.request_id,
        reply_status,
        service_contexts: Vec::new(),
    });
    match header(&fields) {
        Ok(mut b) => {
            b.body().write_octets(body);
            b.finish_spliced(false)
        }
        Err(_) => exception_message(
            owed,
            &SystemException::marshal(minor::MALFORMED, CompletionStatus::Yes),
        ),
    }
}

/// A SYSTEM_EXCEPTION reply: always builds.
fn exception_message(owed: &Owed, exception: &SystemException) -> SplicedBytes {
    let mut b = MessageBuilder::reply(
        owed.version,
        owed.order,
        owed.request_id,
        ReplyStatus::SystemException,
    );
    // A system exception body is a string (an ASCII repository id) and
    // two ulongs: it encodes.
    let _ = exception.encode_body(b.body());
    b.finish_spliced(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use armillary_giop::giop::Message;
    use armillary_giop::CdrReader;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Sent(Mutex<Vec<Vec<u8>>>);

    impl ReplySink for Sent {
        fn send_reply(&self, message: SplicedBytes) {
            self.0.lock().push(message.into_vec());
        }
    }

    fn owed(sink: &Arc<Sent>) -> OwedReply {
        OwedReply::new(sink.clone(), GiopVersion::V1_2, ByteOrder::Little, 9)
    }

    /// The one reply `sink` got: its status and, for a system exception,
    /// the exception.
    fn only_reply(sink: &Sent) -> (ReplyStatus, Option<SystemException>) {
        let sent = sink.0.lock();
        assert_eq!(sent.len(), 1, "exactly one reply");
        let msg = Message::decode(&sent[0]).unwrap();
        let MessageBody::Reply(h) = &msg.body else {
            panic!("not a reply: {msg:?}");
        };
        assert_eq!(h.request_id, 9);
        let exception = (h.reply_status == ReplyStatus::SystemException).then(|| {
            let mut r = CdrReader::new(&sent[0], ByteOrder::Little, GiopVersion::V1_2)
                .with_position(msg.body_offset);
            SystemException::decode_body(&mut r).unwrap()
        });
        (h.reply_status, exception)
    }

    #[test]
    fn a_reply_is_written_once() {
        let sink = Arc::new(Sent::default());
        owed(&sink).reply(ReplyKind::Normal, &[1, 2, 3, 4]);
        assert_eq!(only_reply(&sink).0, ReplyStatus::NoException);
    }

    #[test]
    fn a_forgotten_reply_answers_internal() {
        let sink = Arc::new(Sent::default());
        drop(owed(&sink));
        let (_, e) = only_reply(&sink);
        assert_eq!(
            e,
            Some(SystemException::internal(
                minor::NO_REPLY,
                CompletionStatus::Maybe
            ))
        );
    }

    #[test]
    fn a_panic_through_the_request_answers_unknown() {
        let sink = Arc::new(Sent::default());
        let reply = owed(&sink);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _reply = reply;
            panic!("a servant locator's postinvoke panics");
        }));
        assert!(panicked.is_err());
        let (_, e) = only_reply(&sink);
        assert_eq!(
            e,
            Some(SystemException::unknown(
                minor::SERVANT_PANICKED,
                CompletionStatus::Maybe
            ))
        );
    }

    /// Issue 26: a reply whose header cannot be built left the client
    /// waiting for its timeout; it is MARSHAL now.
    #[test]
    fn a_reply_that_cannot_be_built_answers_marshal() {
        let sink = Arc::new(Sent::default());
        let owed = owed(&sink).owed.take().unwrap();
        let message = reply_message(&owed, ReplyKind::Normal, &[], |_| {
            Err(armillary_giop::CdrError::TooLong(usize::MAX))
        });
        owed.sink.send_reply(message);
        let (status, e) = only_reply(&sink);
        assert_eq!(status, ReplyStatus::SystemException);
        assert_eq!(
            e,
            Some(SystemException::marshal(
                minor::MALFORMED,
                CompletionStatus::Yes
            ))
        );
    }

    #[test]
    fn nothing_owed_writes_nothing() {
        OwedReply::nothing().reply(ReplyKind::Normal, &[]);
        drop(OwedReply::nothing());
    }
}
