//! AMI replies read by the ORB's reactor: with `-ORBWaitStrategy reactor`
//! or `lf`, an ORB that has a server reads the connections its
//! asynchronous requests wait on through its reactor instead of a reader
//! thread per connection. With application threads, `Orb::perform_work`
//! then reads the reply and runs the callback, and nothing else does:
//! the callback runs on the thread that drives the ORB.
//!
//! Bounded waits only: the test drives the ORB until the callback ran or
//! a generous limit passes.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use armillary::config::{ConcurrencyModel, OrbConfig, WaitStrategy};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::{Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_giop::cdr::CdrError;

/// Answers `echo_long` with its argument.
struct Echo;

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Test/Echo:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        if req.operation() != "echo_long" {
            return Err(SystemException::bad_operation(0, CompletionStatus::No));
        }
        let v = req.args().read_long().map_err(bad)?;
        req.results().write_long(v);
        Ok(())
    }
}

/// An ORB serving an `Echo`, and the reference to it.
fn serve(config: OrbConfig) -> (Orb, String) {
    let orb = Orb::with_config(config).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Echo);
    let ior = orb.object_to_string(&poa.servant_to_reference(&servant).unwrap());
    (orb, ior)
}

#[test]
fn perform_work_reads_an_ami_reply_and_runs_its_callback() {
    let (server, ior) = serve(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::ThreadPool(2)),
    );
    for wait in [WaitStrategy::Reactor, WaitStrategy::LeaderFollowers] {
        // The client serves too (so it has a reactor), driven by this
        // thread only.
        let (client, _) = serve(
            OrbConfig::new()
                .collocation(armillary::config::Collocation::None)
                .concurrency(ConcurrencyModel::ApplicationThreads)
                .wait_strategy(wait)
                .call_timeout(Duration::from_secs(20)),
        );
        let obj = client.string_to_object(&ior).unwrap();
        let outcome: Arc<Mutex<Option<(i32, ThreadId)>>> = Arc::default();
        for v in [7, 8] {
            let delivered = outcome.clone();
            obj.send_callback::<i32, SystemException>(
                "echo_long",
                move |w| {
                    w.write_long(v);
                    Ok(())
                },
                |r| r.read_long(),
                move |result| {
                    let v = result.map_err(|h| h.raise()).unwrap();
                    *delivered.lock().unwrap() = Some((v, std::thread::current().id()));
                },
            )
            .unwrap();
            let limit = Instant::now() + armillary_testkit::WAIT_LIMIT;
            while outcome.lock().unwrap().is_none() {
                assert!(Instant::now() < limit, "{wait:?}: the callback never ran");
                client.perform_work().unwrap();
            }
            let (got, thread) = outcome.lock().unwrap().take().unwrap();
            assert_eq!(got, v, "{wait:?}");
            assert_eq!(thread, std::thread::current().id(), "{wait:?}");
        }
        client.shutdown(WaitForCompletion::Yes).unwrap();
    }
    server.shutdown(WaitForCompletion::Yes).unwrap();
}
