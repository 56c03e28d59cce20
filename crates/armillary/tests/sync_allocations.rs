//! Heap allocations per synchronous call in the steady state, on each
//! side, counted by a counting global allocator (`stats_alloc`), for
//! `echo_longlong` and a string echo (issue 23).
//!
//! Each side is counted alone, against a peer played by hand that
//! allocates nothing while it is counted: the server's against a raw
//! socket writing requests made beforehand, the client's against a raw
//! socket server that reads into a buffer made beforehand and answers
//! with a reply made beforehand (its request id patched in). One call at
//! a time, after 100 to warm up; deterministic, no timing.
//! `cargo test -p armillary --test sync_allocations -- --nocapture`
//! prints the counts; `docs/performance.md` records them. The bounds
//! below are the figures reached, so that no change adds an allocation
//! unnoticed: two a call on each side (the message it sends, the frame it
//! reads), and for the string echo one more, the `String` that
//! `read_string` decodes (the application's value, as the IDL mapping has
//! it).

use std::alloc::System;
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Mutex;

use armillary::config::{Collocation, ConcurrencyModel, OrbConfig};
use armillary::runtime::{CdrWriter, ReplyBody};
use armillary::{Orb, Servant, ServerRequest, SystemException, WaitForCompletion};
use armillary_giop::giop::{MessageBuilder, ReplyStatus};
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::giop::{read_message_into, request_message};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Only one test counts at a time (the counter is process-wide).
static COUNTING: Mutex<()> = Mutex::new(());

const CALLS: u64 = 1_000;
const TEXT: &str = "hello, world";

/// The two operations, as the client writes their arguments and the
/// server its results.
#[derive(Debug, Clone, Copy)]
enum Echo {
    LongLong,
    String,
}

impl Echo {
    fn operation(self) -> &'static str {
        match self {
            Echo::LongLong => "echo_longlong",
            Echo::String => "echo_string",
        }
    }

    fn write(self, w: &mut CdrWriter) {
        match self {
            Echo::LongLong => w.write_longlong(42),
            Echo::String => w.write_string(TEXT).expect("Latin-1 text"),
        }
    }
}

struct EchoServant;

impl Servant for EchoServant {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Echo:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        if req.operation() == "echo_longlong" {
            let v = req.decode_args(|r| r.read_longlong())?;
            req.encode_results(move |w| {
                w.write_longlong(v);
                Ok(())
            })
        } else {
            // Checked, not kept: the reply is the text the test knows.
            let same = req.decode_args(|r| Ok(r.read_string()? == TEXT))?;
            assert!(same);
            req.encode_results(|w| w.write_string(TEXT))
        }
    }
}

/// Allocations per call on the server (single-threaded reactive model),
/// for requests from a raw socket.
fn server_allocations(echo: Echo) -> f64 {
    let _one = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let orb = Orb::with_config(
        OrbConfig::new()
            .collocation(Collocation::None)
            .concurrency(ConcurrencyModel::SingleThreadedReactive),
    )
    .unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let obj = poa
        .id_to_reference(poa.activate_object(EchoServant).unwrap())
        .unwrap();
    let key = obj.ior().iiop_profiles()[0].object_key.clone();
    let mut c = TcpStream::connect(("127.0.0.1", orb.endpoints()[0].port())).unwrap();
    c.set_nodelay(true).unwrap();
    let mut args = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    echo.write(&mut args);
    let request = request_message(
        GiopVersion::V1_2,
        ByteOrder::Little,
        1,
        &key,
        echo.operation(),
        args.as_bytes(),
    );
    let mut reply = vec![0u8; 4096];
    let mut round_trip = |c: &mut TcpStream| {
        c.write_all(&request).unwrap();
        read_message_into(c, &mut reply).unwrap();
        // NO_EXCEPTION (GIOP 1.2: request id, then status 0).
        assert_eq!(&reply[16..20], &[0, 0, 0, 0], "{echo:?}: a normal reply");
    };
    for _ in 0..100 {
        round_trip(&mut c);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..CALLS {
        round_trip(&mut c);
    }
    let change = region.change();
    drop(c);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    (change.allocations + change.reallocations) as f64 / CALLS as f64
}

/// Allocations per call on the client (a synchronous call through the
/// reference, the caller reading its reply), against a raw socket
/// server.
fn client_allocations(echo: Echo) -> f64 {
    let _one = COUNTING.lock().unwrap_or_else(|e| e.into_inner());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The reply, made now; each answer patches the request id in.
    let mut reply = MessageBuilder::reply(
        GiopVersion::V1_2,
        ByteOrder::Little,
        0,
        ReplyStatus::NoException,
    );
    echo.write(reply.body());
    let reply = reply.finish(false);
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut reply = reply;
        let mut request = vec![0u8; 4096];
        loop {
            if read_message_into(&mut s, &mut request).is_err() {
                return;
            }
            let header = &request[..12];
            if header[7] != 0 {
                // Not a Request (CloseConnection at the end): done.
                return;
            }
            // GIOP 1.2 Request: the request id opens the body, in the
            // message's byte order (the reply is little-endian).
            let id: [u8; 4] = request[12..16].try_into().unwrap();
            let id = match header[6] & 1 {
                1 => u32::from_le_bytes(id),
                _ => u32::from_be_bytes(id),
            };
            reply[12..16].copy_from_slice(&id.to_le_bytes());
            s.write_all(&reply).unwrap();
        }
    });
    let orb = Orb::with_config(OrbConfig::new()).unwrap();
    let obj = orb
        .string_to_object(&format!("corbaloc:iiop:1.2@127.0.0.1:{port}/echo"))
        .unwrap();
    let args = |w: &mut CdrWriter| {
        echo.write(w);
        Ok(())
    };
    let call = || match echo {
        Echo::LongLong => {
            let v: Result<i64, SystemException> =
                obj.invoke(echo.operation(), &args, |body| match body {
                    ReplyBody::Result(r) => Ok(Ok(r.read_longlong()?)),
                    ReplyBody::UserException { .. } => panic!("no user exception"),
                });
            assert_eq!(v.unwrap(), 42);
        }
        Echo::String => {
            let same: Result<bool, SystemException> =
                obj.invoke(echo.operation(), &args, |body| match body {
                    ReplyBody::Result(r) => Ok(Ok(r.read_string()? == TEXT)),
                    ReplyBody::UserException { .. } => panic!("no user exception"),
                });
            assert!(same.unwrap());
        }
    };
    for _ in 0..100 {
        call();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..CALLS {
        call();
    }
    let change = region.change();
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    server.join().unwrap();
    (change.allocations + change.reallocations) as f64 / CALLS as f64
}

#[test]
fn a_synchronous_call_allocates_at_most_the_figures_reached() {
    let figures = [
        (
            "client",
            Echo::LongLong,
            client_allocations(Echo::LongLong),
            2.0,
        ),
        (
            "client",
            Echo::String,
            client_allocations(Echo::String),
            3.0,
        ),
        (
            "server",
            Echo::LongLong,
            server_allocations(Echo::LongLong),
            2.0,
        ),
        (
            "server",
            Echo::String,
            server_allocations(Echo::String),
            3.0,
        ),
    ];
    println!("heap allocations per synchronous call (steady state):");
    for (side, echo, count, _) in figures {
        println!("  {side:6} {:14} {count:.2}", echo.operation());
    }
    for (side, echo, count, bound) in figures {
        assert!(
            count <= bound + 0.05,
            "{side} {}: {count:.2} allocations a call, more than {bound}",
            echo.operation()
        );
    }
}
