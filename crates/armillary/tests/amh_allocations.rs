//! Heap allocations per request on the server, counted by a counting
//! global allocator: a synchronous servant, an AMH servant answering
//! through its `ResponseHandler` (in its upcall, and from another
//! thread), and the future form (`answer_when`). The paper's AMH lagged
//! at zero sink delay because it allocated its response handlers on the
//! heap; Armillary's handler is the request's own reply state moved out
//! of the request, so the responder form allocates nothing more than a
//! synchronous request does (which is why it offers no pooled
//! responders: there is no allocation for a pool to save).
//!
//! The client is a raw socket writing a request prepared beforehand and
//! reading its reply into a buffer allocated beforehand, one request at a
//! time, so what is counted is the server's work (and the answering
//! thread's). `cargo test -p armillary --test amh_allocations --
//! --nocapture` prints the counts; `docs/performance.md` records them.

use std::alloc::System;
use std::io::Write;
use std::net::TcpStream;
use std::sync::mpsc;
use std::sync::Mutex;

use armillary::amh::ResponseHandler;
use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::runtime::CdrWriter;
use armillary::{
    minor, CompletionStatus, Orb, Servant, ServerRequest, SystemException, WaitForCompletion,
};
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::giop::{read_message_into, request_message};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Only one test counts at a time (the counter is process-wide).
static COUNTING: Mutex<()> = Mutex::new(());

const REQUESTS: u64 = 2_000;

/// `echo(v)` → `v`, in each of the ways a servant may answer.
struct Echo {
    /// Where `echo_elsewhere` sends its handlers.
    elsewhere: Mutex<mpsc::Sender<(ResponseHandler, i32)>>,
}

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let v = req.decode_args(|r| r.read_long())?;
        let write = move |w: &mut CdrWriter| {
            w.write_long(v);
            Ok(())
        };
        match req.operation() {
            "echo_sync" => req.encode_results(write)?,
            "echo_handler" => req.respond_later().reply(write),
            "echo_elsewhere" => {
                let handler = req.respond_later();
                let _ = self.elsewhere.lock().unwrap().send((handler, v));
            }
            "echo_future" => req
                .respond_later()
                .answer_when(async move { v }, |handler, v| {
                    handler.reply(|w| {
                        w.write_long(v);
                        Ok(())
                    })
                }),
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

/// Allocations per request for `operation`, in the single-threaded
/// reactive model.
fn allocations_per_request(operation: &str) -> f64 {
    let _one = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let server = Orb::with_config(
        OrbConfig::new()
            .collocation(armillary::config::Collocation::None)
            .concurrency(ConcurrencyModel::SingleThreadedReactive),
    )
    .unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let (tx, rx) = mpsc::channel::<(ResponseHandler, i32)>();
    let answerer = std::thread::spawn(move || {
        for (handler, v) in rx {
            handler.reply(|w| {
                w.write_long(v);
                Ok(())
            });
        }
    });
    let id = poa
        .activate_object(Echo {
            elsewhere: Mutex::new(tx),
        })
        .unwrap();
    let obj = poa.id_to_reference(&id).unwrap();
    let key = obj.ior().iiop_profiles()[0].object_key.clone();
    let mut c = TcpStream::connect(("127.0.0.1", server.endpoints()[0].port())).unwrap();
    c.set_nodelay(true).unwrap();
    let mut args = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    args.write_long(7);
    let request = request_message(
        GiopVersion::V1_2,
        ByteOrder::Little,
        1,
        &key,
        operation,
        args.as_bytes(),
    );
    let mut reply = vec![0u8; 4096];
    let mut round_trip = |c: &mut TcpStream| {
        c.write_all(&request).unwrap();
        read_message_into(c, &mut reply).unwrap();
        // NO_EXCEPTION (GIOP 1.2: request id, then status 0).
        assert_eq!(&reply[16..20], &[0, 0, 0, 0], "{operation}: a normal reply");
    };
    // Warm up: the connection's first requests set up what it keeps.
    for _ in 0..100 {
        round_trip(&mut c);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..REQUESTS {
        round_trip(&mut c);
    }
    let change = region.change();
    let allocations = change.allocations + change.reallocations;
    drop(c);
    server.shutdown(WaitForCompletion::Yes).unwrap();
    drop(server);
    drop(poa);
    let _ = answerer.join();
    allocations as f64 / REQUESTS as f64
}

#[test]
fn an_amh_request_allocates_no_more_than_a_synchronous_one() {
    let sync = allocations_per_request("echo_sync");
    let handler = allocations_per_request("echo_handler");
    let elsewhere = allocations_per_request("echo_elsewhere");
    let future = allocations_per_request("echo_future");
    println!("heap allocations per request (server side, reactive model):");
    println!("  synchronous servant                      {sync:.2}");
    println!("  AMH, answered in the upcall              {handler:.2}");
    println!("  AMH, answered by another thread          {elsewhere:.2}");
    println!("  AMH future (answer_when), ready at once  {future:.2}");
    // The handler is the request's reply state, moved: nothing more.
    assert!(
        handler <= sync + 0.05,
        "AMH in the upcall {handler} vs synchronous {sync}"
    );
    // Another thread: what the channel to it allocates, at most one a
    // message.
    assert!(
        elsewhere <= sync + 1.05,
        "AMH elsewhere {elsewhere} vs synchronous {sync}"
    );
    // The future's task and its pinned box.
    assert!(
        future <= sync + 2.05,
        "AMH future {future} vs synchronous {sync}"
    );
}
