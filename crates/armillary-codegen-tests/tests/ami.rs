//! Asynchronous method invocation through generated code, against an
//! Armillary server in another ORB: the polling, future and callback
//! forms of `Interop::Everything` (return values, inout and out
//! parameters, user and system exceptions, attributes), a reply handler
//! that is a CORBA object of a third ORB, and one future driven by two
//! executors.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use armillary::ami::ExceptionHolder;
use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::{Orb, SystemException};
use armillary_codegen_tests::interop::interop::{
    everything::FailError, AmiBaseHandlerServant, AmiEverythingHandlerServant,
    AmiEverythingHandlerSkeleton, Everything, EverythingSkeleton,
};
use armillary_codegen_tests::quoter::stock::{
    quoter::GetQuoteError, AmiQuoterHandler, AmiQuoterHandlerServant, AmiQuoterHandlerSkeleton,
    InvalidStockSymbol, Quoter, QuoterServant, QuoterSkeleton,
};
use armillary_codegen_tests::EverythingImpl;

/// A server ORB serving an `Everything`, and a reference to it in a
/// client ORB (so that calls go over IIOP).
fn server_and_client() -> (Orb, Orb, Everything) {
    let server =
        Orb::with_config(OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(2))).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let reference = EverythingSkeleton::new(EverythingImpl::default())
        .activate(&poa)
        .unwrap();
    let ior = server.object_to_string(reference.as_object());
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let object = client.string_to_object(&ior).unwrap();
    (server, client, Everything::from_object(object))
}

#[test]
fn pollers_give_the_typed_results() {
    let (_server, _client, e) = server_and_client();
    let mut long = e.sendp_echo_long(-42);
    assert!(long.wait(Duration::from_secs(10)));
    assert!(long.is_ready());
    assert_eq!(long.take().unwrap(), -42);
    // The reply's values: the return value, then inout and out.
    let mut split = e.sendp_split(7, 5);
    assert_eq!(split.take().unwrap(), (12, 10, 2));
    let mut strings = e.sendp_echo_strings(&["a".into(), "b".into()]);
    assert_eq!(strings.take().unwrap(), vec!["a", "b"]);
    match e.sendp_fail(3).take() {
        Err(FailError::Failure(f)) => {
            assert_eq!((f.code, f.reason.as_str()), (3, "failed on purpose"))
        }
        other => panic!("expected Failure, got {other:?}"),
    }
    assert!(matches!(e.sendp_fail(0).take(), Err(FailError::Empty(_))));
    let system = e.sendp_fail_system(7).take().unwrap_err();
    assert_eq!(
        (system.kind(), system.minor()),
        (SystemExceptionKind::NoPermission, 7)
    );
    // Attributes.
    e.sendp_set_counter(41).take().unwrap();
    assert_eq!(e.sendp_get_counter().take().unwrap(), 41);
    assert_eq!(e.sendp_get_name().take().unwrap(), e.name().unwrap());
}

#[test]
fn futures_give_the_typed_results_on_two_executors() {
    let (_server, _client, e) = server_and_client();
    assert_eq!(futures_executor::block_on(e.echo_long_async(5)).unwrap(), 5);
    assert_eq!(pollster::block_on(e.echo_long_async(6)).unwrap(), 6);
    assert_eq!(pollster::block_on(e.split_async(1, 2)).unwrap(), (3, 4, -1));
    let (shape, name) = futures_executor::block_on(e.out_shape_async()).unwrap();
    assert_eq!((shape.name.as_str(), name.as_str()), ("triangle", "out"));
    assert!(matches!(
        pollster::block_on(e.fail_async(2)),
        Err(FailError::Failure(f)) if f.code == 2
    ));
    pollster::block_on(e.set_counter_async(9)).unwrap();
    assert_eq!(
        futures_executor::block_on(e.get_counter_async()).unwrap(),
        9
    );
    // One future, polled first by one executor and finished by another.
    let mut future = e.echo_string_async("moved");
    let waker = futures_executor::block_on(futures_lite_waker());
    let mut cx = std::task::Context::from_waker(&waker);
    let first = std::pin::Pin::new(&mut future).poll(&mut cx);
    let result = match first {
        std::task::Poll::Ready(result) => result,
        std::task::Poll::Pending => pollster::block_on(future),
    };
    assert_eq!(result.unwrap(), "moved");
}

/// A waker that does nothing (the first poll only registers interest).
async fn futures_lite_waker() -> std::task::Waker {
    std::task::Waker::noop().clone()
}

use std::future::Future as _;

/// What a reply handler heard, in order.
#[derive(Default)]
struct Heard {
    events: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Heard {
    fn push(&self, event: String) {
        self.events.lock().unwrap().push(event);
        self.changed.notify_all();
    }

    /// Waits (up to a generous deadline) until `n` events are in.
    fn wait_for(&self, n: usize) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut events = self.events.lock().unwrap();
        while events.len() < n {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "only {events:?} arrived");
            events = self.changed.wait_timeout(events, left).unwrap().0;
        }
        events.clone()
    }
}

struct Handler(Arc<Heard>);

impl AmiQuoterHandlerServant for Handler {
    fn get_quote(&self, ami_return_val: i32) -> Result<(), SystemException> {
        self.0.push(format!("quote {ami_return_val}"));
        Ok(())
    }

    fn get_quote_excep(
        &self,
        excep_holder: ExceptionHolder<GetQuoteError>,
    ) -> Result<(), SystemException> {
        let event = match excep_holder.raise() {
            GetQuoteError::InvalidStockSymbol(_) => "invalid symbol".to_owned(),
            GetQuoteError::System(e) => format!("system {:?}", e.kind()),
        };
        self.0.push(event);
        Ok(())
    }
}

struct Stocks;

impl QuoterServant for Stocks {
    fn get_quote(&self, stock_name: String) -> Result<i32, GetQuoteError> {
        match stock_name.as_str() {
            "ACME" => Ok(42),
            "DOWN" => Err(SystemException::transient(3, armillary::CompletionStatus::No).into()),
            _ => Err(InvalidStockSymbol {}.into()),
        }
    }
}

/// A quoter served by one ORB, called by a second, whose replies go to a
/// reply handler served by a third (its reference passed across as a
/// string, as it would be to another process).
#[test]
fn callbacks_reach_a_reply_handler_in_another_orb() {
    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let quoter = QuoterSkeleton::new(Stocks).activate(&poa).unwrap();
    let quoter_ior = server.object_to_string(quoter.as_object());

    let handler_orb = Orb::with_config(OrbConfig::default()).unwrap();
    let handler_poa = handler_orb.root_poa();
    handler_poa.manager().activate().unwrap();
    let heard = Arc::new(Heard::default());
    let handler = AmiQuoterHandlerSkeleton::new(Handler(heard.clone()))
        .activate(&handler_poa)
        .unwrap();
    let handler_ior = handler_orb.object_to_string(handler.as_object());

    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let quoter = Quoter::from_object(client.string_to_object(&quoter_ior).unwrap());
    let handler = AmiQuoterHandler::narrow(&client.string_to_object(&handler_ior).unwrap())
        .unwrap()
        .expect("a reply handler");
    assert!(handler
        .as_object()
        .is_a("IDL:omg.org/Messaging/ReplyHandler:1.0")
        .unwrap());
    assert_eq!(
        AmiQuoterHandler::REPOSITORY_ID,
        "IDL:Stock/AMI_QuoterHandler:1.0"
    );

    quoter.sendc_get_quote(&handler, "ACME").unwrap();
    assert_eq!(heard.wait_for(1), ["quote 42"]);
    quoter.sendc_get_quote(&handler, "NOPE").unwrap();
    assert_eq!(heard.wait_for(2)[1], "invalid symbol");
    quoter.sendc_get_quote(&handler, "DOWN").unwrap();
    assert_eq!(heard.wait_for(3)[2], "system Transient");
}

/// A reply handler for `Everything` (some forty operations) that
/// implements one method, and leaves the others to their default bodies.
struct EchoLongOnly(Arc<Heard>);

impl AmiBaseHandlerServant for EchoLongOnly {}

impl AmiEverythingHandlerServant for EchoLongOnly {
    fn echo_long(&self, ami_return_val: i32) -> Result<(), SystemException> {
        self.0.push(format!("echo_long {ami_return_val}"));
        Ok(())
    }
}

/// The handler hears the replies it implements; the default bodies take
/// the rest: a reply is ignored, an exception is reported on standard
/// error, and either way the handler's operation succeeds.
#[test]
fn a_handler_implementing_one_reply_hears_it_and_the_defaults_take_the_rest() {
    let (_server, client, e) = server_and_client();
    let poa = client.root_poa();
    poa.manager().activate().unwrap();
    let heard = Arc::new(Heard::default());
    let handler = AmiEverythingHandlerSkeleton::new(EchoLongOnly(heard.clone()))
        .activate(&poa)
        .unwrap();
    e.sendc_echo_string(&handler, "left to the default")
        .unwrap();
    e.sendc_fail(&handler, 3).unwrap();
    e.sendc_echo_long(&handler, 1).unwrap();
    e.sendc_echo_long(&handler, 2).unwrap();
    let mut events = heard.wait_for(2);
    events.sort();
    assert_eq!(events, ["echo_long 1", "echo_long 2"]);
    // The defaults, called through the handler's stub: they succeed.
    handler.echo_string("ignored").unwrap();
    let failure = ExceptionHolder::from_system_exception(&SystemException::transient(
        1,
        armillary::CompletionStatus::No,
    ));
    handler.fail_excep(&failure).unwrap();
    handler
        .echo_long_excep(&ExceptionHolder::from_system_exception(
            &SystemException::transient(2, armillary::CompletionStatus::No),
        ))
        .unwrap();
    handler.echo_long(3).unwrap();
    let mut events = heard.wait_for(3);
    events.sort();
    assert_eq!(events, ["echo_long 1", "echo_long 2", "echo_long 3"]);
}

/// A quoter served by one ORB, and a client ORB the application drives
/// (`-ORBConcurrency application`, calls time out after 20 s) that serves
/// the reply handler itself: the server, the client, the client's quoter
/// reference, the handler's reference and what the handler hears.
fn quoter_and_own_handler() -> (Orb, Orb, Quoter, AmiQuoterHandler, Arc<Heard>) {
    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let quoter = QuoterSkeleton::new(Stocks).activate(&poa).unwrap();
    let quoter_ior = server.object_to_string(quoter.as_object());

    let client = Orb::with_config(
        OrbConfig::new()
            .concurrency(ConcurrencyModel::ApplicationThreads)
            .call_timeout(Duration::from_secs(20)),
    )
    .unwrap();
    let client_poa = client.root_poa();
    client_poa.manager().activate().unwrap();
    let heard = Arc::new(Heard::default());
    let handler = AmiQuoterHandlerSkeleton::new(Handler(heard.clone()))
        .activate(&client_poa)
        .unwrap();
    let quoter = Quoter::from_object(client.string_to_object(&quoter_ior).unwrap());
    (server, client, quoter, handler, heard)
}

/// The paper's callback client: the reply handler is a servant of the
/// client's own ORB, which the application drives (`-ORBConcurrency
/// application`): the thread that sends also runs `perform_work` until the
/// handler has heard. A future of the same ORB, awaited by a thread that
/// does not drive it, completes too (it once waited for ever: the
/// application's reactor was left to read it). Bounded: a hang fails the
/// test after 20 s.
#[test]
fn a_handler_in_the_clients_own_application_driven_orb_hears_its_replies() {
    let (_server, client, quoter, handler, heard) = quoter_and_own_handler();
    let deadline = Instant::now() + Duration::from_secs(20);
    for (n, (symbol, event)) in [
        ("ACME", "quote 42"),
        ("NOPE", "invalid symbol"),
        ("DOWN", "system Transient"),
    ]
    .into_iter()
    .enumerate()
    {
        quoter.sendc_get_quote(&handler, symbol).unwrap();
        while heard.events.lock().unwrap().len() <= n {
            assert!(
                Instant::now() < deadline,
                "the handler never heard {symbol}"
            );
            client.perform_work().unwrap();
        }
        assert_eq!(heard.events.lock().unwrap()[n], event);
    }
    // A future awaited by a thread that does not drive the ORB completes
    // all the same: the application's reactor is not what reads it.
    let (tx, rx) = std::sync::mpsc::channel();
    let q = quoter.clone();
    std::thread::spawn(move || {
        let _ = tx.send(futures_executor::block_on(q.get_quote_async("ACME")));
    });
    let got = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the future never completed");
    assert_eq!(got.unwrap(), 42);
    client.shutdown(armillary::WaitForCompletion::Yes).unwrap();
}

/// The paper's throughput client: one thread sends many requests (at most
/// 100 awaiting their reply), another runs the event loop that delivers
/// the replies to a handler served by the same application-driven ORB.
#[test]
fn one_thread_sends_and_another_delivers_to_a_handler_of_the_same_orb() {
    let (_server, client, quoter, handler, heard) = quoter_and_own_handler();
    let event_loop = {
        let orb = client.clone();
        std::thread::spawn(move || orb.run())
    };
    let calls = 2_000;
    let deadline = Instant::now() + Duration::from_secs(60);
    for sent in 0..calls {
        while sent - heard.events.lock().unwrap().len() >= 100 {
            assert!(
                Instant::now() < deadline,
                "replies stopped after {sent} calls"
            );
            let events = heard.events.lock().unwrap();
            drop(
                heard
                    .changed
                    .wait_timeout(events, Duration::from_millis(100)),
            );
        }
        quoter.sendc_get_quote(&handler, "ACME").unwrap();
    }
    let events = heard.wait_for(calls);
    assert!(events.iter().all(|e| e == "quote 42"));
    client.shutdown(armillary::WaitForCompletion::Yes).unwrap();
    event_loop.join().unwrap().unwrap();
}
