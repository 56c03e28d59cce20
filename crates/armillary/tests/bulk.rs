//! Bulk data over IIOP (issue 23): `sequence<octet>` echoes of sizes
//! around the read buffer and the direct-read threshold, up to a few MiB,
//! between an Armillary client and an Armillary server in each model that
//! reads differently (the reactor; a thread per connection), and over
//! TLS. A large message's body is read straight into the buffer its frame
//! is handed out in (`FrameDecoder::lend_for_read`), and a reply the
//! socket does not take at once waits as it is, not copied
//! (`write_queue`): what each side gets must still be exactly what was
//! sent, whatever the split of the stream.

use std::sync::Arc;
use std::time::Duration;

use armillary::config::{Collocation, ConcurrencyModel, OrbConfig};
use armillary::runtime::ReplyBody;
use armillary::{Orb, Servant, ServerRequest, SystemException, WaitForCompletion};

/// Echoes `sequence<octet>`s and answers a `long long` (to check small
/// calls after large ones).
struct Bytes;

impl Servant for Bytes {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Bytes:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "echo_bytes" => {
                let data = req.decode_args(|r| r.read_octet_seq().map(<[u8]>::to_vec))?;
                req.encode_results(move |w| w.write_octet_seq(&data))
            }
            _ => {
                let v = req.decode_args(|r| r.read_longlong())?;
                req.encode_results(move |w| {
                    w.write_longlong(v);
                    Ok(())
                })
            }
        }
    }
}

/// Sizes: empty, around the 64 KiB read buffer and the direct-read
/// threshold, past one direct read (256 KiB), and some MiB.
const SIZES: [usize; 9] = [
    0,
    1,
    65_535,
    65_536 + 13,
    200_000,
    262_144 + 1,
    1 << 20,
    (3 << 20) + 7,
    8 << 20,
];

/// A pattern no two nearby sizes share, so a shifted or stale byte shows.
fn payload(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 8) ^ size) as u8)
        .collect()
}

fn echo_everything(server_config: OrbConfig, client_config: OrbConfig) {
    let server = Orb::with_config(server_config).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let servant: Arc<dyn Servant> = Arc::new(Bytes);
    let ior = server
        .object_to_string(&poa.servant_to_reference(&servant).unwrap())
        .to_string();
    // A call that hangs (a server waiting for more of a message it has
    // whole) fails here rather than hanging the test: the bound is far
    // beyond what the largest echo takes.
    let client = Orb::with_config(
        client_config
            .collocation(Collocation::None)
            .call_timeout(Duration::from_secs(30)),
    )
    .unwrap();
    let obj = client.string_to_object(&ior).unwrap();
    for round in 0..2 {
        for size in SIZES {
            let sent = payload(size);
            let back: Result<Vec<u8>, SystemException> = obj.invoke(
                "echo_bytes",
                &|w| w.write_octet_seq(&sent),
                |body| match body {
                    ReplyBody::Result(r) => Ok(Ok(r.read_octet_seq()?.to_vec())),
                    ReplyBody::UserException { .. } => panic!("no user exception"),
                },
            );
            let back = back.unwrap();
            assert_eq!(back.len(), size, "round {round}, {size} bytes");
            assert!(
                back == sent,
                "round {round}, {size} bytes: not what was sent"
            );
            let small: Result<i64, SystemException> = obj.invoke(
                "echo_longlong",
                &|w| {
                    w.write_longlong(size as i64);
                    Ok(())
                },
                |body| match body {
                    ReplyBody::Result(r) => Ok(Ok(r.read_longlong()?)),
                    ReplyBody::UserException { .. } => panic!("no user exception"),
                },
            );
            assert_eq!(small.unwrap(), size as i64);
        }
    }
    client.shutdown(WaitForCompletion::Yes).unwrap();
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

/// A server whose connections never time out: nothing but a request
/// read whole wakes a reading thread.
fn server(model: ConcurrencyModel) -> OrbConfig {
    OrbConfig::new()
        .concurrency(model)
        .idle_timeout(None)
        .message_timeout(None)
}

#[test]
fn bulk_echoes_are_exact_through_the_reactor() {
    echo_everything(
        server(ConcurrencyModel::SingleThreadedReactive),
        OrbConfig::new(),
    );
}

#[test]
fn bulk_echoes_are_exact_through_a_thread_per_connection() {
    echo_everything(
        server(ConcurrencyModel::ThreadPerConnection),
        OrbConfig::new(),
    );
}
