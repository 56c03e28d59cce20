//! Asynchronous method invocation (AMI): a two-way request sent now whose
//! reply is collected later, in the three forms CORBA Messaging and Rust
//! users expect. Generated stubs (`sendp_<op>`, `<op>_async`,
//! `sendc_<op>`) call the hooks [`ObjectRef::send_poller`](crate::ObjectRef::send_poller),
//! [`ObjectRef::send_future`](crate::ObjectRef::send_future) and
//! [`ObjectRef::send_callback`](crate::ObjectRef::send_callback).
//!
//! - [`Poller`] (the polling model): the owner asks [`is_ready`](Poller::is_ready),
//!   [`wait`](Poller::wait)s or [`take`](Poller::take)s; it reads the
//!   connection itself when nobody else does.
//! - [`ReplyFuture`] (a Rust `Future`): usable from any executor; the ORB
//!   spawns nothing per call and wakes the task when the reply is in.
//! - callbacks ([`ObjectRef::send_callback`](crate::ObjectRef::send_callback)): the reply (decoded) or an
//!   [`ExceptionHolder`] is handed to a delivery closure, which generated
//!   code points at a reply handler's operation. A generated reply
//!   handler's servant trait implements every method by default (a reply
//!   is ignored, an exception reported by [`unhandled_exception`]), so a
//!   handler implements only the replies it wants.
//!
//! What all three share (the runtime facts):
//! - They send exactly the GIOP Request the synchronous call sends, through
//!   the same path: profile choice, code sets, LOCATION_FORWARD,
//!   NEEDS_ADDRESSING_MODE, the transparent re-send after an orderly close,
//!   back-pressure (`-ORBClientMaxOutstanding`: sending blocks while the
//!   connection has that many requests outstanding), and the call timeout
//!   (the reference's, else the sending thread's, else the ORB's; see
//!   [`CallTimeout`](crate::CallTimeout)), counted from the send. Past it
//!   the request ends in TIMEOUT ([`minor::CALL_TIMEOUT`](crate::minor::CALL_TIMEOUT),
//!   COMPLETED_MAYBE once sent, COMPLETED_NO while it waited to be written)
//!   and its reply dispatcher is unbound, so a late reply is dropped.
//! - No thread exists per outstanding request: each is a reply dispatcher
//!   in its connection's table, found by request id in O(1). Futures and
//!   callbacks have no owner reading the connection, so the ORB gives such
//!   a connection one reader thread while they are outstanding on it
//!   (when none remain it parks, not reading, and takes the next ones on,
//!   so one-at-a-time calls start no thread each; it ends after 2 s idle,
//!   and at shutdown); a thread that is waiting on
//!   the same connection for a synchronous reply reads for them meanwhile.
//!   That reader wakes at the earliest deadline of what is outstanding
//!   (a request sent with an earlier one wakes it), so a future or
//!   callback times out at its deadline; with nothing due it does not
//!   wake at all. (Where the ORB's reactor reads instead, in an ORB with
//!   a server, the connection asks the reactor for a round of ticks at
//!   the earliest deadline, and the request times out then.) While two or
//!   more are outstanding on a connection,
//!   requests are written by the connection's writer thread, many per
//!   write and in the order they were sent: sending one is queueing it
//!   (no system call). It parks when there is nothing to write and ends
//!   after 2 s idle, and at shutdown (once what was queued, and the
//!   CloseConnection, are written). A request's deadline bounds its write
//!   too: a queued request whose deadline passes is never written, and a
//!   write that runs past the deadline of a request it carries closes the
//!   connection; a request none of whose bytes left a connection that
//!   broke is sent again on a new one.
//! - A callback runs on the thread that read its reply, after that thread
//!   let go of the connection (so it may call the ORB, and a forward or
//!   re-send it causes goes out from there), except under
//!   [`ConcurrencyModel::ApplicationThreads`](crate::config::ConcurrencyModel::ApplicationThreads):
//!   then it waits in a queue, [`Orb::work_pending`](crate::Orb::work_pending)
//!   says true, and [`Orb::run`](crate::Orb::run) /
//!   [`Orb::perform_work`](crate::Orb::perform_work) run it, in a pure client
//!   as in a server.
//! - A future or poller that is dropped unbinds its dispatcher (its reply,
//!   should it come, is dropped). A callback cannot be withdrawn.
//! - [`Orb::shutdown`](crate::Orb::shutdown) ends every outstanding
//!   asynchronous request with BAD_INV_ORDER
//!   ([`minor::ORB_SHUT_DOWN`](crate::minor::ORB_SHUT_DOWN)): the
//!   connection closes, and the re-send a close would cause is refused.
//!   Callbacks still queued for application threads are run by the
//!   shutting-down thread, so each handler hears exactly once.
//! - An invoker that cannot defer (a collocated object) runs the request
//!   at once: the poller or future is ready at once, and the callback runs
//!   before `send_callback` returns.
//!
//! # Example
//!
//! The three forms of the crate example's `quoter.get_quote` (the README
//! shows the same code):
//!
//! ```
//! # use armillary_quoter::generated;
//! use generated::stock::{AmiQuoterHandlerServant, AmiQuoterHandlerSkeleton};
//! use armillary::SystemException;
//!
//! // A reply handler implements only the replies it wants: by default a
//! // reply is ignored and an exception is reported as a warning (tracing).
//! struct PrintPrice;
//! impl AmiQuoterHandlerServant for PrintPrice {
//!     fn get_quote(&self, cents: i32) -> Result<(), SystemException> {
//!         println!("ACME: {cents}");
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let orb = armillary::Orb::with_config(armillary::config::OrbConfig::default())?;
//! # let poa = orb.root_poa();
//! # poa.manager().activate()?;
//! # let quoter = generated::stock::QuoterSkeleton::new(armillary_quoter::QuoterImpl::default())
//! #     .activate(&poa)?;
//! // Futures, on any executor: the ORB's own threads read the replies.
//! let cents = pollster::block_on(quoter.get_quote_async("ACME"))?;
//! let same = futures::executor::block_on(quoter.get_quote_async("ACME"))?;
//! // A poller: `is_ready()`, `wait(timeout)`, `take()`.
//! let mut poller = quoter.sendp_get_quote("ACME");
//! let again = poller.take()?;
//! // A callback: the reply goes to a reply handler, a CORBA object.
//! let handler = AmiQuoterHandlerSkeleton::new(PrintPrice).activate(&poa)?;
//! quoter.sendc_get_quote(&handler, "ACME")?;
//! # assert_eq!((cents, same, again), (4217, 4217, 4217));
//! # fn is_send<T: Send>(_: &T) {}
//! # is_send(&quoter.get_quote_async("ACME"));
//! # orb.shutdown(armillary::WaitForCompletion::Yes)?;
//! # Ok(())
//! # }
//! ```

mod callback;
mod future;
mod holder;
mod poller;
mod unhandled;

use std::sync::Arc;
use std::time::Duration;

use armillary_giop::cdr::{CdrError, CdrWriter};
use armillary_giop::giop::SyncScope;

pub(crate) use callback::{CallbackCall, CallbackQueue};
pub use future::ReplyFuture;
pub use holder::{ExceptionHolder, UserExceptionSet, EXCEPTION_HOLDER_ID};
pub use poller::Poller;
pub use unhandled::unhandled_exception;

use crate::object::OutgoingRequest;

/// A request's argument encoder, owned: it may run again (a forward, a
/// re-send after an orderly close) long after the call that made it.
pub(crate) type OwnedArgs = Arc<dyn Fn(&mut CdrWriter) -> Result<(), CdrError> + Send + Sync>;

/// A two-way request an asynchronous form keeps to send it again.
pub(crate) struct OwnedRequest {
    operation: &'static str,
    args: OwnedArgs,
    /// The reference's call timeout, else the sending thread's, fixed at
    /// the send (a re-send from another thread keeps it).
    call_timeout: Option<Duration>,
}

impl OwnedRequest {
    /// The request for `operation` through a reference whose own call
    /// timeout is `reference_timeout`, sent now from this thread.
    pub(crate) fn new(
        operation: &'static str,
        args: OwnedArgs,
        reference_timeout: Option<Duration>,
    ) -> Self {
        OwnedRequest {
            operation,
            args,
            call_timeout: crate::timeout::effective(reference_timeout, None),
        }
    }

    /// The request as invokers take it.
    pub(crate) fn get(&self) -> OutgoingRequest<'_> {
        OutgoingRequest {
            operation: self.operation,
            response_expected: true,
            sync_scope: SyncScope::WithTarget,
            args: &*self.args,
            call_timeout: self.call_timeout,
            signature: None,
        }
    }
}
