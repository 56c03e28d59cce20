//! Asynchronous method handling at the runtime level (`armillary::amh`):
//! a hand-written servant takes the reply out of its request with
//! `ServerRequest::respond_later` and answers through the
//! `ResponseHandler` later, from another thread or from a future the ORB
//! drives. (Generated AMH skeletons and typed responders are tested in
//! `armillary-codegen-tests`.)
//!
//! No test depends on timing: a thread that answers later waits for the
//! handler to be handed to it; every wait is bounded only to turn a hang
//! into a failure.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::pin::Pin;
use std::sync::mpsc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use armillary::amh::ResponseHandler;
use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::giop::{Message, MessageBody, ReplyStatus};
use armillary::runtime::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, ReplyBody};
use armillary::{
    minor, CompletionStatus, ObjectRef, Orb, Servant, ServerRequest, SystemException,
    UserException, WaitForCompletion,
};
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::giop::{read_message, request_message};
use parking_lot::Mutex;

/// Far beyond what a working server needs: reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

#[derive(Debug, PartialEq)]
struct Oops {
    code: i32,
}

impl CdrEncode for Oops {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_long(self.code);
        Ok(())
    }
}

impl CdrDecode for Oops {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Oops {
            code: r.read_long()?,
        })
    }
}

impl UserException for Oops {
    const REPOSITORY_ID: &'static str = "IDL:Test/Oops:1.0";
}

/// A one-shot value another thread sets, as a future.
#[derive(Default)]
struct Oneshot {
    state: Mutex<(Option<i32>, Option<Waker>)>,
}

impl Oneshot {
    fn set(&self, v: i32) {
        let waker = {
            let mut s = self.state.lock();
            s.0 = Some(v);
            s.1.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    fn get(self: Arc<Self>) -> impl Future<Output = i32> + Send {
        OneshotFuture(self)
    }
}

struct OneshotFuture(Arc<Oneshot>);

impl Future for OneshotFuture {
    type Output = i32;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<i32> {
        let mut s = self.0.state.lock();
        match s.0 {
            Some(v) => Poll::Ready(v),
            None => {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Pending once (waking itself at once), then ready: its second poll
/// runs on a thread of the server's reactor.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The operations:
/// - `later(v)` → `2v`, answered by the thread that takes the handler
///   from `handlers`;
/// - `drop_it` → the handler is dropped unanswered;
/// - `fail(code)` → the user exception `Oops { code }`;
/// - `panic_holding` → the servant panics holding the handler;
/// - `when_set(v)` → a future that awaits `oneshot`, answering `v + it`;
/// - `panicking_future` → a future that panics when polled again;
/// - `yield_then(v)` → `v`, from a future's second poll;
/// - `forward(v)` → what `sink` answers to `echo_long(v)`, awaited in a
///   future (an AMI call inside the asynchronous operation).
struct Later {
    handlers: Mutex<Option<mpsc::Sender<(ResponseHandler, i32)>>>,
    oneshot: Arc<Oneshot>,
    sink: Mutex<Option<ObjectRef>>,
}

impl Later {
    fn new(handlers: mpsc::Sender<(ResponseHandler, i32)>) -> Later {
        Later {
            handlers: Mutex::new(Some(handlers)),
            oneshot: Arc::default(),
            sink: Mutex::new(None),
        }
    }
}

fn read_long(r: &mut CdrReader<'_>) -> Result<i32, CdrError> {
    r.read_long()
}

impl Servant for Later {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Later:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "later" => {
                let v = req.decode_args(read_long)?;
                let handler = req.respond_later();
                if let Some(tx) = &*self.handlers.lock() {
                    let _ = tx.send((handler, v));
                }
            }
            "drop_it" => drop(req.respond_later()),
            "fail" => {
                let code = req.decode_args(read_long)?;
                req.respond_later().raise(&Oops { code });
            }
            "panic_holding" => {
                let _handler = req.respond_later();
                panic!("the servant panics holding its response handler");
            }
            "when_set" => {
                let v = req.decode_args(read_long)?;
                let value = self.oneshot.clone().get();
                req.respond_later()
                    .answer_when(async move { v + value.await }, |handler, sum| {
                        handler.reply(|w| {
                            w.write_long(sum);
                            Ok(())
                        })
                    });
            }
            "panicking_future" => {
                req.respond_later().answer_when(
                    async {
                        YieldOnce(false).await;
                        panic!("the future panics on its second poll");
                    },
                    |handler, ()| handler.reply(|_| Ok(())),
                );
            }
            "yield_then" => {
                let v = req.decode_args(read_long)?;
                req.respond_later().answer_when(
                    async move {
                        YieldOnce(false).await;
                        v
                    },
                    |handler, v| {
                        handler.reply(|w| {
                            w.write_long(v);
                            Ok(())
                        })
                    },
                );
            }
            "forward" => {
                let v = req.decode_args(read_long)?;
                let Some(sink) = self.sink.lock().clone() else {
                    return Err(SystemException::no_implement(0, CompletionStatus::No));
                };
                let reply = sink.send_future(
                    "echo_long",
                    move |w| {
                        w.write_long(v);
                        Ok(())
                    },
                    |body| match body {
                        ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
                        ReplyBody::UserException { .. } => Ok(Err(SystemException::unknown(
                            minor::UNLISTED_USER_EXCEPTION,
                            CompletionStatus::Yes,
                        ))),
                    },
                );
                req.respond_later().answer_when(
                    reply,
                    |handler, answer: Result<i32, SystemException>| match answer {
                        Ok(v) => handler.reply(|w| {
                            w.write_long(v);
                            Ok(())
                        }),
                        Err(e) => handler.raise_system(&e),
                    },
                );
            }
            _ => {
                return Err(SystemException::bad_operation(
                    minor::UNKNOWN_OPERATION,
                    CompletionStatus::No,
                ))
            }
        }
        Ok(())
    }
}

/// A synchronous echo: the sink a forwarding operation calls.
struct Echo;

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let v = req.decode_args(read_long)?;
        req.encode_results(|w| {
            w.write_long(v * 10);
            Ok(())
        })
    }
}

/// A server with a `Later` servant, in `config`, its handlers answered
/// (`2v`) by a thread of the test's; and a client ORB.
struct Setup {
    server: Orb,
    client: Orb,
    servant: Arc<Later>,
    later: ObjectRef,
    key: Vec<u8>,
    port: u16,
    runner: Option<std::thread::JoinHandle<()>>,
    answerer: Option<std::thread::JoinHandle<()>>,
}

impl Setup {
    fn start(config: OrbConfig) -> Setup {
        let driven = config.get_concurrency() == ConcurrencyModel::ApplicationThreads;
        let server = Orb::with_config(config.call_timeout(DEADLINE)).unwrap();
        let poa = server.root_poa();
        poa.manager().activate().unwrap();
        let (tx, rx) = mpsc::channel::<(ResponseHandler, i32)>();
        let answerer = std::thread::spawn(move || {
            for (handler, v) in rx {
                handler.reply(|w| {
                    w.write_long(2 * v);
                    Ok(())
                });
            }
        });
        let servant = Arc::new(Later::new(tx));
        let as_servant: Arc<dyn Servant> = servant.clone();
        let obj = poa.servant_to_reference(&as_servant).unwrap();
        let key = obj.ior().iiop_profiles()[0].object_key.clone();
        let port = server.endpoints()[0].port();
        let runner = driven.then(|| {
            let orb = server.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        let client = Orb::with_config(OrbConfig::new().call_timeout(DEADLINE)).unwrap();
        let later = client
            .string_to_object(&server.object_to_string(&obj))
            .unwrap();
        Setup {
            server,
            client,
            servant,
            later,
            key,
            port,
            runner,
            answerer: Some(answerer),
        }
    }

    fn call(&self, operation: &str, v: i32) -> Result<i32, SystemException> {
        self.later.invoke_plain(
            operation,
            &|w| {
                w.write_long(v);
                Ok(())
            },
            read_long,
        )
    }

    fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s
    }

    fn request(&self, id: u32, operation: &str, v: i32) -> Vec<u8> {
        let mut body = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
        body.write_long(v);
        request_message(
            GiopVersion::V1_2,
            ByteOrder::Little,
            id,
            &self.key,
            operation,
            body.as_bytes(),
        )
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.client.shutdown(WaitForCompletion::Yes).unwrap();
        self.server.shutdown(WaitForCompletion::Yes).unwrap();
        // The answering thread ends with its channel.
        self.servant.handlers.lock().take();
        if let Some(a) = self.answerer.take() {
            let _ = a.join();
        }
        if let Some(r) = self.runner.take() {
            let _ = r.join();
        }
    }
}

fn every_model() -> Vec<ConcurrencyModel> {
    vec![
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPool(2),
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ApplicationThreads,
        ConcurrencyModel::ThreadPerRequest(None),
        ConcurrencyModel::WorkerPool {
            workers: 2,
            queue: 64,
        },
        ConcurrencyModel::ThreadPerObject,
        ConcurrencyModel::Locality(2),
    ]
}

#[test]
fn handlers_answer_from_another_thread_in_every_model() {
    for model in every_model() {
        let setup = Setup::start(OrbConfig::new().concurrency(model));
        assert_eq!(setup.call("later", 21).unwrap(), 42, "{model}");
        // Eight clients at once: their handlers wait together for the one
        // answering thread.
        std::thread::scope(|s| {
            for t in 0..8 {
                let setup = &setup;
                s.spawn(move || {
                    for i in 0..20 {
                        let v = t * 100 + i;
                        assert_eq!(setup.call("later", v).unwrap(), 2 * v, "{model}");
                    }
                });
            }
        });
        // A future the ORB drives, woken by another thread.
        let value = setup.servant.oneshot.clone();
        let setter = std::thread::spawn(move || {
            // Sets it whenever it runs: before or after the first poll.
            value.set(5);
        });
        assert_eq!(setup.call("when_set", 10).unwrap(), 15, "{model}");
        setter.join().unwrap();
        assert_eq!(setup.call("yield_then", 7).unwrap(), 7, "{model}");
    }
}

#[test]
fn a_dropped_handler_answers_no_response() {
    let setup = Setup::start(OrbConfig::new());
    let e = setup.call("drop_it", 0).unwrap_err();
    assert_eq!(
        e,
        SystemException::no_response(minor::NO_REPLY, CompletionStatus::Maybe)
    );
    // The server goes on.
    assert_eq!(setup.call("later", 1).unwrap(), 2);
}

#[test]
fn a_user_exception_goes_through_the_handler() {
    let setup = Setup::start(OrbConfig::new());
    let got: Result<i32, Oops> = setup.later.invoke(
        "fail",
        &|w| {
            w.write_long(7);
            Ok(())
        },
        |body| match body {
            ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
            ReplyBody::UserException { id, members } => {
                assert_eq!(id, Oops::REPOSITORY_ID);
                Ok(Err(Oops::decode(members)?))
            }
        },
    );
    assert_eq!(got.unwrap_err(), Oops { code: 7 });
}

impl From<SystemException> for Oops {
    fn from(e: SystemException) -> Oops {
        panic!("a system exception where a user exception was due: {e:?}")
    }
}

#[test]
fn a_panic_holding_the_handler_or_in_its_future_answers_unknown() {
    let setup = Setup::start(OrbConfig::new());
    let unknown = SystemException::unknown(minor::SERVANT_PANICKED, CompletionStatus::Maybe);
    assert_eq!(setup.call("panic_holding", 0).unwrap_err(), unknown);
    assert_eq!(setup.call("panicking_future", 0).unwrap_err(), unknown);
    assert_eq!(setup.call("later", 3).unwrap(), 6);
}

#[test]
fn a_future_awaits_an_ami_call_to_another_server() {
    let sink_orb = Orb::with_config(OrbConfig::new()).unwrap();
    let sink_poa = sink_orb.root_poa();
    sink_poa.manager().activate().unwrap();
    let sink_id = sink_poa.activate_object(Echo).unwrap();
    let sink_ior = sink_orb.object_to_string(&sink_poa.id_to_reference(&sink_id).unwrap());
    for model in every_model() {
        let setup = Setup::start(OrbConfig::new().concurrency(model));
        *setup.servant.sink.lock() = Some(setup.server.string_to_object(&sink_ior).unwrap());
        std::thread::scope(|s| {
            for t in 0..4 {
                let setup = &setup;
                s.spawn(move || {
                    for i in 0..10 {
                        let v = t * 100 + i;
                        assert_eq!(setup.call("forward", v).unwrap(), 10 * v, "{model}");
                    }
                });
            }
        });
    }
    sink_orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A reply to a client that has gone goes nowhere, and the server serves
/// everyone else as before.
#[test]
fn a_client_that_has_gone_is_answered_into_nothing() {
    let (tx, rx) = mpsc::channel();
    let setup = Setup::start(OrbConfig::new());
    // Handlers go to the test, not to the answering thread.
    *setup.servant.handlers.lock() = Some(tx);
    let mut gone = setup.connect();
    gone.write_all(&setup.request(1, "later", 4)).unwrap();
    let (handler, v) = rx.recv_timeout(DEADLINE).unwrap();
    assert!(handler.response_expected());
    drop(gone);
    // The server cannot tell a client gone from one that closed only its
    // sending side: it keeps the connection for the answer it owes, and
    // closes it once that is written (into nothing).
    handler.reply(|w| {
        w.write_long(v);
        Ok(())
    });
    armillary_testkit::wait_until("the server closed the connection", || {
        setup
            .server
            .server_stats()
            .is_some_and(|s| s.connections_open == 0)
    });

    // Another client, answered by the test in turn.
    let caller = std::thread::spawn({
        let later = setup.later.clone();
        move || {
            later.invoke_plain(
                "later",
                &|w| {
                    w.write_long(9);
                    Ok(())
                },
                read_long,
            )
        }
    });
    let (handler, v) = rx.recv_timeout(DEADLINE).unwrap();
    handler.reply(|w| {
        w.write_long(v + 1);
        Ok(())
    });
    assert_eq!(caller.join().unwrap().unwrap(), 10);
}

/// Requests answered later count as in progress on their connection: with
/// room for one at a time, the server reads the next only once the
/// reactor thread that read the first has answered it in a later turn;
/// and a client that closes its sending side gets every answer before the
/// server closes.
#[test]
fn answers_given_later_by_the_reading_thread_let_reading_go_on() {
    let setup = Setup::start(
        OrbConfig::new()
            .concurrency(ConcurrencyModel::SingleThreadedReactive)
            .max_outstanding_requests(1),
    );
    let mut c = setup.connect();
    let batch: Vec<u8> = (0..5)
        .flat_map(|i| setup.request(i, "yield_then", i as i32 * 3))
        .collect();
    c.write_all(&batch).unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    for i in 0..5 {
        let reply = read_message(&mut c).unwrap().expect("a reply, not the end");
        let msg = Message::decode(&reply).unwrap();
        let MessageBody::Reply(h) = &msg.body else {
            panic!("not a reply: {msg:?}");
        };
        assert_eq!(
            (h.request_id, h.reply_status),
            (i, ReplyStatus::NoException)
        );
        assert_eq!(msg.body_reader(&reply).read_long().unwrap(), i as i32 * 3);
    }
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the server closes after the last answer");
}
