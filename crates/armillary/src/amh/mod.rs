//! Asynchronous method handling (AMH): a servant that answers a request
//! after its upcall has returned, from any thread, at any later time — the
//! server-side twin of AMI (Deshpande et al., "Asynchronous Method
//! Handling", the paper in `shared/papers`).
//!
//! A synchronous servant must answer before its method returns, so a
//! middle tier that waits on another server holds a thread per waiting
//! client. An AMH skeleton instead takes the reply out of the request
//! ([`ServerRequest::respond_later`](crate::ServerRequest::respond_later))
//! and hands the servant a [`ResponseHandler`]; the upcall returns at once,
//! and the handler answers when the servant has the answer (an AMI reply
//! from a sink, a timer, a queue).
//!
//! The IDL compiler writes typed responders over this handler
//! (`Builder::amh`, `armillary idl compile --amh`): one per operation,
//! consumed by `reply(…)` / `raise(…)`, so answering twice or with another
//! operation's values does not compile. Implement a hand-written
//! [`Servant`](crate::Servant) over the handler only for an interface
//! without IDL.
//!
//! What holds for every handler:
//! - **Exactly one answer.** Every answering method consumes the handler.
//!   Dropped unanswered, it answers by itself: NO_RESPONSE
//!   ([`minor::NO_REPLY`], COMPLETED_MAYBE), or UNKNOWN
//!   ([`minor::SERVANT_PANICKED`], COMPLETED_MAYBE) when a panic unwinds
//!   through it. The client never hangs.
//! - **Any thread, any time.** A handler is `Send + 'static`; the reply is
//!   written to the connection the request came on, whichever thread
//!   answers. Until then the request counts as in progress on its
//!   connection (`-ORBMaxOutstandingRequests` bounds how many one connection
//!   may have), so a client that closes its sending side still gets every
//!   answer before the server closes.
//! - **A client that has gone** is answered into nothing: the answer is
//!   dropped, nothing fails, the server goes on serving everyone else.
//! - **Oneway requests** get a handler too; its answer goes nowhere.
//! - **The POA's view.** For the POA the request ends when the upcall
//!   returns: a SINGLE_THREAD_MODEL POA takes its next request then, a
//!   deactivated object may be etherealized, POA Current is not set
//!   where the handler answers later. What the servant does after its
//!   upcall returned runs outside those rules, as an AMI reply handler
//!   does.
//!
//! # Futures
//!
//! [`ResponseHandler::answer_when`] is the foundation of the `async fn`
//! form of generated AMH servants: the ORB drives the future on its own
//! threads — the first poll on the upcall's thread, every later one on a
//! thread of the server's reactor, when the future is woken — with no
//! executor and no thread per pending request. Awaiting an AMI future
//! (`<op>_async`) inside it is how a middle tier forwards a request. A
//! future must not block: it shares the reactor's threads with every
//! connection. A panic while polling answers UNKNOWN
//! ([`minor::SERVANT_PANICKED`]).
//!
//! # Example
//!
//! A hand-written AMH servant for `interface Echo { string echo(in string
//! text); };` that answers from another thread:
//!
//! ```
//! use armillary::amh::ResponseHandler;
//! use armillary::config::OrbConfig;
//! use armillary::{minor, CompletionStatus, Orb, Servant, ServerRequest, SystemException};
//!
//! struct LaterEcho;
//!
//! impl Servant for LaterEcho {
//!     fn repository_id(&self) -> &'static str {
//!         "IDL:Demo/Echo:1.0"
//!     }
//!
//!     fn is_a(&self, repository_id: &str) -> bool {
//!         repository_id == self.repository_id()
//!     }
//!
//!     fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
//!         match request.operation() {
//!             "echo" => {
//!                 let text = request.decode_args(|args| args.read_string())?;
//!                 let handler: ResponseHandler = request.respond_later();
//!                 // The upcall returns now; another thread answers.
//!                 std::thread::spawn(move || handler.reply(|results| results.write_string(&text)));
//!                 Ok(())
//!             }
//!             _ => Err(SystemException::bad_operation(
//!                 minor::UNKNOWN_OPERATION,
//!                 CompletionStatus::No,
//!             )),
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Orb::with_config(OrbConfig::default())?;
//! let poa = server.root_poa();
//! poa.manager().activate()?;
//! let id = poa.activate_object(LaterEcho)?;
//! let ior = server.object_to_string(&poa.id_to_reference(&id)?);
//!
//! let client = Orb::with_config(OrbConfig::default())?;
//! let echo = client.string_to_object(&ior)?;
//! let answer = echo.invoke_plain("echo", &|w| w.write_string("hello"), |r| r.read_string())?;
//! assert_eq!(answer, "hello");
//! # client.shutdown(armillary::WaitForCompletion::Yes)?;
//! # server.shutdown(armillary::WaitForCompletion::Yes)?;
//! # Ok(())
//! # }
//! ```

mod task;

use std::future::Future;
use std::sync::Arc;

use armillary_giop::cdr::{CdrError, CdrWriter};
use armillary_giop::giop::{MessageShape, OperationName};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};

use crate::exception::UserException;
use crate::owed_reply::OwedReply;
use crate::servant::ReplyKind;
use crate::task_queue::TaskQueue;

/// The reply one request is owed, taken out of its
/// [`ServerRequest`](crate::ServerRequest) by an asynchronous skeleton
/// (see the [module docs](self)): every answering method consumes it, and
/// dropped unanswered it sends NO_RESPONSE ([`minor::NO_REPLY`],
/// COMPLETED_MAYBE).
#[must_use = "a response handler answers NO_RESPONSE when dropped unanswered"]
pub struct ResponseHandler {
    /// `None` once answered.
    pending: Option<Pending>,
    operation: OperationName,
    /// Where the work of [`answer_when`](Self::answer_when) goes on.
    tasks: Option<Arc<dyn TaskQueue>>,
}

/// What answering needs.
struct Pending {
    owed: OwedReply,
    /// Set up for the reply body (alignment, code sets, union labels);
    /// the body starts at `body_start`.
    writer: CdrWriter,
    body_start: usize,
    /// When `writer` is the reply message itself (see
    /// `ServerRequest::in_message`): what finishes it.
    message: Option<MessageShape>,
}

impl std::fmt::Debug for ResponseHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseHandler")
            .field("operation", &&*self.operation)
            .field("response_expected", &self.response_expected())
            .finish_non_exhaustive()
    }
}

impl ResponseHandler {
    pub(crate) fn new(
        owed: OwedReply,
        operation: OperationName,
        (writer, body_start, message): (CdrWriter, usize, Option<MessageShape>),
        tasks: Option<Arc<dyn TaskQueue>>,
    ) -> ResponseHandler {
        ResponseHandler {
            pending: Some(Pending {
                owed,
                writer,
                body_start,
                message,
            }),
            operation,
            tasks,
        }
    }

    /// The operation's name as the client sent it (`get_quote`, `_get_x`).
    pub fn operation(&self) -> &str {
        &self.operation
    }

    /// False for a oneway request: an answer goes nowhere.
    pub fn response_expected(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| p.owed.is_owed())
    }

    /// Answers normally: `write` writes the return value, then the out and
    /// inout values, in IDL order (what a synchronous skeleton writes with
    /// [`ServerRequest::encode_results`](crate::ServerRequest::encode_results)).
    /// A marshalling error is answered with MARSHAL (or DATA_CONVERSION),
    /// COMPLETED_YES, instead.
    pub fn reply(mut self, write: impl FnOnce(&mut CdrWriter) -> Result<(), CdrError>) {
        let Some(mut p) = self.pending.take() else {
            return;
        };
        match write(&mut p.writer) {
            Ok(()) => match p.message {
                Some(shape) => p.owed.reply_message(p.writer, shape),
                None => {
                    p.writer.flatten();
                    p.owed
                        .reply(ReplyKind::Normal, &p.writer.as_bytes()[p.body_start..]);
                }
            },
            Err(e) => p
                .owed
                .exception(&SystemException::from_cdr_error(&e, CompletionStatus::Yes)),
        }
    }

    /// Answers with the user exception `exception` (one the operation's
    /// `raises` clause names: the typed responders see to that).
    pub fn raise<E: UserException>(mut self, exception: &E) {
        let Some(mut p) = self.pending.take() else {
            return;
        };
        let written = p
            .writer
            .write_string(E::REPOSITORY_ID)
            .and_then(|()| exception.encode(&mut p.writer));
        match written {
            Ok(()) => {
                p.writer.flatten();
                p.owed.reply(
                    ReplyKind::UserException,
                    &p.writer.as_bytes()[p.body_start..],
                );
            }
            Err(e) => p
                .owed
                .exception(&SystemException::from_cdr_error(&e, CompletionStatus::Yes)),
        }
    }

    /// Answers with the system exception `exception`.
    pub fn raise_system(mut self, exception: &SystemException) {
        if let Some(p) = self.pending.take() {
            p.owed.exception(exception);
        }
    }

    /// Drives `future` on the ORB's own threads and, when it completes,
    /// calls `answer` with this handler and the future's output (see
    /// [Futures](self#futures)). The first poll happens now, on the
    /// calling thread.
    pub fn answer_when<F, A>(self, future: F, answer: A)
    where
        F: Future + Send + 'static,
        A: FnOnce(ResponseHandler, F::Output) + Send + 'static,
    {
        let tasks = self.tasks.clone();
        task::spawn(self, tasks, future, answer);
    }
}

impl Drop for ResponseHandler {
    fn drop(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        if std::thread::panicking() {
            // The owed reply answers UNKNOWN (SERVANT_PANICKED) itself.
            drop(p);
            return;
        }
        if p.owed.is_owed() {
            crate::trace::responder_dropped(&self.operation);
        }
        p.owed.exception(&SystemException::no_response(
            minor::NO_REPLY,
            CompletionStatus::Maybe,
        ));
    }
}
