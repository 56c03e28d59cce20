//! How a client connection writes: pipelined AMI requests leave through
//! the connection's writer thread, in the order they were sent, and every
//! request arrives whole however many threads send at once (writes
//! combine: one thread writes what the others queued meanwhile).
//!
//! The server is `armillary_testkit::raw::HeldServer`, which records every
//! Request as it came off the wire and answers when told (each reply's
//! result is its request id).

use std::time::Duration;

use armillary::config::OrbConfig;
use armillary::giop::cdr::CdrError;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_testkit::raw::{HeldServer, Received};

/// Far beyond what a working client needs: reached only on failure.
const DEADLINE: Duration = Duration::from_secs(30);

fn read_long(reply: ReplyBody<'_, '_>) -> Result<Result<i32, SystemException>, CdrError> {
    match reply {
        ReplyBody::Result(r) => Ok(Ok(r.read_long()?)),
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    }
}

/// A client ORB and its reference to an object on `server`.
fn client_of(server: &HeldServer) -> (Orb, ObjectRef) {
    let orb = Orb::with_config(
        OrbConfig::new()
            .call_timeout(DEADLINE)
            .client_max_outstanding(10_000),
    )
    .unwrap();
    let obj = orb.string_to_object(&server.corbaloc("held")).unwrap();
    (orb, obj)
}

/// One thread sends 500 futures without waiting: from the second on they
/// are pipelined, left to the writer thread. They reach the server in
/// the order they were sent (request ids rising), each whole, and every
/// future gets its own reply.
#[test]
fn pipelined_requests_leave_in_the_order_they_were_sent() {
    let server = HeldServer::start();
    let (orb, obj) = client_of(&server);
    let futures: Vec<_> = (0..500)
        .map(|i: i32| {
            obj.send_future(
                "echo_long",
                move |w| {
                    w.write_long(i);
                    Ok(())
                },
                read_long,
            )
        })
        .collect();
    let received: Vec<Received> = (0..500).map(|_| server.next()).collect();
    for pair in received.windows(2) {
        assert!(
            pair[0].id < pair[1].id,
            "request {} arrived before {}",
            pair[0].id,
            pair[1].id
        );
    }
    assert!(received.iter().all(|r| r.header.operation == "echo_long"));
    // Answered in reverse, in one write: each future gets its own id.
    let reversed: Vec<Received> = received.iter().rev().cloned().collect();
    server.answer(&reversed);
    let ids: Vec<i32> = futures
        .into_iter()
        .map(|f| pollster::block_on(f).unwrap())
        .collect();
    let sent: Vec<i32> = received.iter().map(|r| r.id as i32).collect();
    assert_eq!(ids, sent);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Eight threads at once, each mixing synchronous calls with a burst of
/// futures, against a server that answers each request as it comes:
/// every call gets its own reply.
#[test]
fn requests_from_many_threads_at_once_all_arrive_whole() {
    let server = HeldServer::start();
    let (orb, obj) = client_of(&server);
    const THREADS: usize = 8;
    const ROUNDS: usize = 20;
    const BURST: usize = 10;
    let total = THREADS * ROUNDS * (1 + BURST);
    let answering = std::thread::spawn(move || {
        for _ in 0..total {
            let request = server.next();
            server.answer(&[request]);
        }
    });
    let callers: Vec<_> = (0..THREADS)
        .map(|_| {
            let obj = obj.clone();
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    let id = obj.invoke("echo_long", &|_| Ok(()), read_long).unwrap();
                    assert!(id > 0);
                    let burst: Vec<_> = (0..BURST)
                        .map(|_| obj.send_future("echo_long", |_| Ok(()), read_long))
                        .collect();
                    let mut ids: Vec<i32> = burst
                        .into_iter()
                        .map(|f| pollster::block_on(f).unwrap())
                        .collect();
                    ids.dedup();
                    assert_eq!(ids.len(), BURST, "each future its own reply");
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    answering.join().unwrap();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
