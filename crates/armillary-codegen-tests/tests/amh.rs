//! Asynchronous method handling through generated code (`Builder::amh`),
//! served by one ORB and called over IIOP from another with the ordinary
//! stubs: responders answered later from other threads (values, user and
//! system exceptions, a dropped responder), an AMH interface that flattens
//! its base, one that mixes an AMH operation with a synchronous one, AMH
//! and synchronous servants in one POA, and the responder and `async fn`
//! forms in every concurrency model with every wait strategy it accepts
//! (the `async fn` form as the paper's middle tier, forwarding with AMI to
//! a synchronous sink in a third ORB).

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use armillary::config::{ConcurrencyModel, OrbConfig, WaitStrategy};
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::{minor, CompletionStatus, Orb, SystemException, WaitForCompletion};
use armillary_codegen_tests::amh::amh::{
    counter, mixed, Calculator, CalculatorAddResponder, CalculatorAmhServant,
    CalculatorAmhSkeleton, CalculatorGetLabelResponder, CalculatorGetTotalResponder,
    CalculatorNothingResponder, CalculatorSetTotalResponder, CalculatorSplitResponder, Counter,
    Mixed, MixedAmhServant, MixedAmhSkeleton, MixedSlowResponder, Refused,
};
use armillary_codegen_tests::quoter::stock::{
    quoter::GetQuoteError, InvalidStockSymbol, Quoter, QuoterAmhSkeleton, QuoterSkeleton,
};
use armillary_codegen_tests::{
    ForwardingQuoter, HeldQuoter, LaterQuoter, TableQuoter, DROPPED_SYMBOL, REFUSED_SYMBOL,
};
use armillary_testkit::wait_until;

/// An ORB serving whatever the test activates in its root POA, with a
/// thread driving it when its model wants the application to.
struct Server {
    orb: Orb,
    driver: Option<JoinHandle<()>>,
}

impl Server {
    fn start(config: OrbConfig) -> Server {
        let application = config.get_concurrency() == ConcurrencyModel::ApplicationThreads;
        let orb = Orb::with_config(config).unwrap();
        orb.root_poa().manager().activate().unwrap();
        let driver = application.then(|| {
            let orb = orb.clone();
            std::thread::spawn(move || orb.run().unwrap())
        });
        Server { orb, driver }
    }

    /// `reference`, as a client ORB sees it.
    fn seen_by<I: armillary::Interface>(&self, client: &Orb, reference: &I) -> I {
        let ior = self.orb.object_to_string(reference.as_object());
        I::from_object(client.string_to_object(&ior).unwrap())
    }

    fn stop(mut self) {
        self.orb.shutdown(WaitForCompletion::No).unwrap();
        if let Some(driver) = self.driver.take() {
            driver.join().unwrap();
        }
    }
}

fn client() -> Orb {
    Orb::with_config(OrbConfig::default()).unwrap()
}

fn no_response(e: &SystemException) -> bool {
    e.kind() == SystemExceptionKind::NoResponse
        && e.minor() == minor::NO_REPLY
        && e.completed() == CompletionStatus::Maybe
}

#[test]
fn a_held_responder_answers_from_another_thread_later() {
    let server = Server::start(OrbConfig::default());
    let quoter = Arc::new(HeldQuoter::default());
    let reference = QuoterAmhSkeleton::from_arc(Arc::clone(&quoter))
        .activate(&server.orb.root_poa())
        .unwrap();
    let client = client();
    let stub = server.seen_by(&client, &reference);

    // A value, answered by another thread after the upcall returned.
    let mut poller = stub.sendp_get_quote("ACME");
    wait_until("the servant holds the responder", || quoter.held() == 1);
    assert!(!poller.is_ready());
    let (responder, symbol) = quoter.take().unwrap();
    assert_eq!(symbol, "ACME");
    assert!(responder.response_expected());
    std::thread::spawn(move || responder.reply(4217))
        .join()
        .unwrap();
    assert_eq!(poller.take(), Ok(4217));

    // A user exception the operation declares.
    let mut poller = stub.sendp_get_quote("NOPE");
    wait_until("the servant holds the responder", || quoter.held() == 1);
    let (responder, _) = quoter.take().unwrap();
    responder.raise(InvalidStockSymbol {}.into());
    assert!(matches!(
        poller.take(),
        Err(GetQuoteError::InvalidStockSymbol(_))
    ));

    // A system exception.
    let mut poller = stub.sendp_get_quote("ACME");
    wait_until("the servant holds the responder", || quoter.held() == 1);
    let (responder, _) = quoter.take().unwrap();
    responder.raise(SystemException::no_permission(3, CompletionStatus::No).into());
    match poller.take() {
        Err(GetQuoteError::System(e)) => assert_eq!(
            (e.kind(), e.minor(), e.completed()),
            (SystemExceptionKind::NoPermission, 3, CompletionStatus::No)
        ),
        other => panic!("expected NO_PERMISSION, got {other:?}"),
    }

    // `answer` with a Result, from a synchronous call on another thread.
    let caller = std::thread::spawn(move || stub.get_quote("GLOBEX"));
    wait_until("the servant holds the responder", || quoter.held() == 1);
    let (responder, _) = quoter.take().unwrap();
    responder.answer(Ok(18_950));
    assert_eq!(caller.join().unwrap(), Ok(18_950));
    server.stop();
}

#[test]
fn a_dropped_responder_answers_no_response() {
    let server = Server::start(OrbConfig::default());
    let quoter = Arc::new(HeldQuoter::default());
    let reference = QuoterAmhSkeleton::from_arc(Arc::clone(&quoter))
        .activate(&server.orb.root_poa())
        .unwrap();
    let client = client();
    let stub = server.seen_by(&client, &reference);
    let mut poller = stub.sendp_get_quote("ACME");
    wait_until("the servant holds the responder", || quoter.held() == 1);
    drop(quoter.take());
    match poller.take() {
        Err(GetQuoteError::System(e)) => assert!(no_response(&e), "{e:?}"),
        other => panic!("expected NO_RESPONSE, got {other:?}"),
    }
    // The connection serves on.
    let mut poller = stub.sendp_get_quote("INITECH");
    wait_until("the servant holds the responder", || quoter.held() == 1);
    quoter.take().unwrap().0.reply(733);
    assert_eq!(poller.take(), Ok(733));
    server.stop();
}

/// Work for the calculator's thread, given its total.
type TotalJob = Box<dyn FnOnce(&mut i32) + Send>;

/// `Amh::Calculator` (and its base `Amh::Counter`, flattened in): every
/// call answered by a thread of the servant's own.
#[derive(Debug)]
struct LaterCalculator {
    work: Mutex<Sender<TotalJob>>,
    pokes: Arc<Mutex<Vec<i32>>>,
}

impl LaterCalculator {
    fn new() -> Self {
        let (work, jobs) = mpsc::channel::<TotalJob>();
        std::thread::spawn(move || {
            let mut total = 0;
            for job in jobs {
                job(&mut total);
            }
        });
        LaterCalculator {
            work: Mutex::new(work),
            pokes: Arc::default(),
        }
    }

    fn later(&self, job: impl FnOnce(&mut i32) + Send + 'static) {
        let _ = self.work.lock().unwrap().send(Box::new(job));
    }
}

impl CalculatorAmhServant for LaterCalculator {
    fn add(&self, responder: CalculatorAddResponder, n: i32) {
        self.later(move |total| {
            if n < 0 {
                return responder.raise(
                    Refused {
                        why: "negative".into(),
                    }
                    .into(),
                );
            }
            *total += n;
            responder.reply(*total);
        });
    }

    fn total(&self, responder: CalculatorGetTotalResponder) {
        self.later(move |total| responder.reply(*total));
    }

    fn set_total(&self, responder: CalculatorSetTotalResponder, value: i32) {
        self.later(move |total| {
            *total = value;
            responder.reply();
        });
    }

    fn label(&self, responder: CalculatorGetLabelResponder) {
        self.later(move |_| responder.reply("later".into()));
    }

    fn split(&self, responder: CalculatorSplitResponder, a: i32, b: i32) {
        self.later(move |_| responder.reply(a + b, b * 2, a - b));
    }

    fn nothing(&self, responder: CalculatorNothingResponder) {
        self.later(move |_| responder.answer(Ok(())));
    }

    fn poke(&self, n: i32) -> Result<(), SystemException> {
        self.pokes.lock().unwrap().push(n);
        Ok(())
    }
}

#[test]
fn a_derived_amh_interface_serves_its_base_calls_and_clients_cannot_tell() {
    let server = Server::start(OrbConfig::default());
    let calculator = LaterCalculator::new();
    let pokes = Arc::clone(&calculator.pokes);
    let reference = CalculatorAmhSkeleton::new(calculator)
        .activate(&server.orb.root_poa())
        .unwrap();
    let client = client();
    let object = server.seen_by(&client, &reference).into_object();
    // `_is_a` answers the interface's and its base's ids.
    let stub = Calculator::narrow(&object).unwrap().unwrap();
    let base = Counter::narrow(&object).unwrap().unwrap();
    assert!(!object.is_a("IDL:Amh/Mixed:1.0").unwrap());

    assert_eq!(base.add(5), Ok(5));
    assert_eq!(stub.add(2), Ok(7));
    match base.add(-1) {
        Err(counter::AddError::Refused(r)) => assert_eq!(r.why, "negative"),
        other => panic!("expected Refused, got {other:?}"),
    }
    assert_eq!(stub.total(), Ok(7));
    stub.set_total(40).unwrap();
    assert_eq!(base.total(), Ok(40));
    assert_eq!(stub.label().as_deref(), Ok("later"));
    let mut b = 5;
    assert_eq!(stub.split(7, &mut b), Ok((12, 2)));
    assert_eq!(b, 10);
    assert_eq!(stub.nothing(), Ok(()));
    stub.poke(9).unwrap();
    wait_until("the oneway is served", || *pokes.lock().unwrap() == [9]);
    server.stop();
}

/// `Amh::Mixed`: `slow` answered through its responder, `fast` by its
/// return value.
#[derive(Debug, Default)]
struct MixedImpl;

impl MixedAmhServant for MixedImpl {
    fn slow(&self, responder: MixedSlowResponder, text: String) {
        std::thread::spawn(move || {
            if text.is_empty() {
                responder.raise(mixed::SlowError::Refused(Refused {
                    why: "empty".into(),
                }));
            } else {
                responder.reply(text.to_uppercase());
            }
        });
    }

    fn fast(&self, text: String) -> Result<String, SystemException> {
        Ok(text)
    }
}

#[test]
fn one_interface_mixes_an_amh_operation_with_a_synchronous_one() {
    let server = Server::start(OrbConfig::default());
    let reference = MixedAmhSkeleton::new(MixedImpl)
        .activate(&server.orb.root_poa())
        .unwrap();
    let client = client();
    let stub: Mixed = server.seen_by(&client, &reference);
    assert_eq!(stub.slow("quiet").as_deref(), Ok("QUIET"));
    assert!(matches!(stub.slow(""), Err(mixed::SlowError::Refused(_))));
    assert_eq!(stub.fast("as is").as_deref(), Ok("as is"));
    server.stop();
}

#[test]
fn amh_and_synchronous_servants_share_a_poa() {
    let server = Server::start(OrbConfig::default());
    let poa = server.orb.root_poa();
    let sync = QuoterSkeleton::new(TableQuoter).activate(&poa).unwrap();
    let amh = QuoterAmhSkeleton::new(LaterQuoter::default())
        .activate(&poa)
        .unwrap();
    let client = client();
    for stub in [
        server.seen_by(&client, &sync),
        server.seen_by(&client, &amh),
    ] {
        assert_eq!(stub.get_quote("ACME"), Ok(4217));
        assert!(matches!(
            stub.get_quote("NOPE"),
            Err(GetQuoteError::InvalidStockSymbol(_))
        ));
    }
    server.stop();
}

/// The quoter's answers every form must give, called through `stub`.
fn check_quotes(stub: &Quoter, what: &str) {
    assert_eq!(stub.get_quote("ACME"), Ok(4217), "{what}");
    assert_eq!(stub.get_quote("INITECH"), Ok(733), "{what}");
    assert!(
        matches!(
            stub.get_quote("NOPE"),
            Err(GetQuoteError::InvalidStockSymbol(_))
        ),
        "{what}"
    );
    match stub.get_quote(REFUSED_SYMBOL) {
        Err(GetQuoteError::System(e)) => assert_eq!(
            (e.kind(), e.minor(), e.completed()),
            (SystemExceptionKind::NoPermission, 7, CompletionStatus::Yes),
            "{what}"
        ),
        other => panic!("{what}: expected NO_PERMISSION, got {other:?}"),
    }
}

/// Every concurrency model with every wait strategy it accepts.
fn every_combination(mut run: impl FnMut(ConcurrencyModel, WaitStrategy)) {
    let mut ran = 0;
    for model in ConcurrencyModel::menu(2) {
        for wait in [
            WaitStrategy::Read,
            WaitStrategy::Reactor,
            WaitStrategy::LeaderFollowers,
        ] {
            if wait.is_safe_with(model) {
                run(model, wait);
                ran += 1;
            }
        }
    }
    // Read with the thread pool and thread per request; reactor and
    // Leader/Followers with every model.
    assert_eq!(ran, 2 + 2 * ConcurrencyModel::menu(2).len());
}

#[test]
fn responders_answered_later_in_every_model_and_wait_strategy() {
    every_combination(|model, wait| {
        let server = Server::start(OrbConfig::new().concurrency(model).wait_strategy(wait));
        let reference = QuoterAmhSkeleton::new(LaterQuoter::default())
            .activate(&server.orb.root_poa())
            .unwrap();
        let client = client();
        let stub = server.seen_by(&client, &reference);
        let what = format!("{model} with {wait:?}");
        check_quotes(&stub, &what);
        match stub.get_quote(DROPPED_SYMBOL) {
            Err(GetQuoteError::System(e)) => assert!(no_response(&e), "{what}: {e:?}"),
            other => panic!("{what}: expected NO_RESPONSE, got {other:?}"),
        }
        client.shutdown(WaitForCompletion::No).unwrap();
        server.stop();
    });
}

#[test]
fn an_async_middle_tier_forwards_with_ami_in_every_model_and_wait_strategy() {
    // The sink: a synchronous quoter in an ORB of its own.
    let sink = Server::start(OrbConfig::default());
    let sink_reference = QuoterSkeleton::new(TableQuoter)
        .activate(&sink.orb.root_poa())
        .unwrap();
    every_combination(|model, wait| {
        let middle = Server::start(OrbConfig::new().concurrency(model).wait_strategy(wait));
        let to_sink = sink.seen_by(&middle.orb, &sink_reference);
        let reference = QuoterAmhSkeleton::from_async(ForwardingQuoter::new(to_sink))
            .activate(&middle.orb.root_poa())
            .unwrap();
        let client = client();
        let stub = middle.seen_by(&client, &reference);
        check_quotes(&stub, &format!("{model} with {wait:?}"));
        // Several at once: none waits for another's sink reply.
        let pending: Vec<_> = (0..8).map(|_| stub.get_quote_async("GLOBEX")).collect();
        for reply in pending {
            assert_eq!(pollster::block_on(reply), Ok(18_950));
        }
        client.shutdown(WaitForCompletion::No).unwrap();
        middle.stop();
    });
    sink.stop();
}
