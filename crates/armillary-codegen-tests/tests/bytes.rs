//! `sequence<octet>` as `armillary::Bytes` (`Builder::octet_sequences_as_bytes`,
//! `idl/bytes.idl`): every place an octet sequence can stand (a typedef,
//! a bounded typedef, a struct member, an anonymous member, an exception
//! member, a sequence of them; in, out, inout, return, attribute; an AMH
//! operation) carries the same values as the `Vec<u8>` mapping, over IIOP
//! and collocated, and with AMI. Over IIOP, a large argument the server
//! receives is a slice of the request message, not a copy: two arguments
//! of one request lie exactly where the message put them. The other way,
//! a large `in` argument (`&Bytes`) or result is spliced into the message
//! it leaves in, not copied (`bytes_allocations.rs` counts what a call
//! allocates).

use armillary::config::{Collocation, ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::{Bytes, IdlType, Orb, SystemException, WaitForCompletion};
use armillary_codegen_tests::bytes::octets::{
    blob_from_any, blob_to_any, label_to_any, store::TagOfError, Blob, BlobList, Label, Record,
    Store, StoreAmhServant, StoreAmhSkeleton, StoreEchoResponder, TooLong,
};
use armillary_codegen_tests::PassThroughStore;
use std::sync::Mutex;

/// Keeps the last blob set; echoes through a responder (AMH).
#[derive(Default)]
struct StoreImpl {
    last: Mutex<Blob>,
}

impl StoreAmhServant for StoreImpl {
    fn echo(&self, responder: StoreEchoResponder, b: Blob) {
        std::thread::spawn(move || responder.reply(b));
    }

    fn distance(&self, a: Blob, b: Blob) -> Result<i64, SystemException> {
        if a.is_empty() || b.is_empty() {
            return Ok(0);
        }
        Ok(b.as_ptr() as i64 - a.as_ptr() as i64)
    }

    fn swap(&self, r: Record, io: &mut Blob) -> Result<(Record, Label), SystemException> {
        let old_tag = r.tag.clone();
        let swapped = Record {
            tag: Bytes::from_static(b"new"),
            body: std::mem::replace(io, r.body),
            note: r.note,
        };
        Ok((swapped, old_tag))
    }

    fn split(&self, b: Blob, parts: i32) -> Result<BlobList, SystemException> {
        let size = b.len().div_ceil(parts.max(1) as usize).max(1);
        Ok(b.chunks(size).map(Bytes::copy_from_slice).collect())
    }

    fn tag_of(&self, b: Blob) -> Result<Label, TagOfError> {
        if b.len() > 16 {
            return Err(TagOfError::TooLong(TooLong {
                sample: b.slice(..4),
            }));
        }
        Ok(b)
    }

    fn last(&self) -> Result<Blob, SystemException> {
        Ok(self.last.lock().unwrap().clone())
    }

    fn set_last(&self, value: Blob) -> Result<(), SystemException> {
        *self.last.lock().unwrap() = value;
        Ok(())
    }
}

fn data(n: usize) -> Bytes {
    (0..n).map(|i| (i * 13 + i / 509) as u8).collect()
}

/// `servant` served by `server`, and a stub for it from `client` (the
/// same ORB for a collocated call).
fn store(server: &Orb, client: &Orb, servant: impl StoreAmhServant + 'static) -> Store {
    server.root_poa().manager().activate().unwrap();
    let reference = StoreAmhSkeleton::new(servant)
        .activate(&server.root_poa())
        .unwrap();
    let ior = server.object_to_string(reference.as_object());
    Store::from_object(client.string_to_object(&ior).unwrap())
}

/// A server ORB and a client ORB that calls it over IIOP.
struct OverIiop {
    server: Orb,
    client: Orb,
}

impl OverIiop {
    fn start() -> OverIiop {
        OverIiop {
            server: Orb::with_config(OrbConfig::default()).unwrap(),
            client: Orb::with_config(OrbConfig::default().collocation(Collocation::None)).unwrap(),
        }
    }

    fn store(&self, servant: impl StoreAmhServant + 'static) -> Store {
        store(&self.server, &self.client, servant)
    }

    fn stop(self) {
        self.server.shutdown(WaitForCompletion::Yes).unwrap();
        self.client.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// Every operation, with values checked.
fn exercise(store: &Store) {
    for n in [0, 5, 1023, 1024, 300_000, (2 << 20) + 3] {
        let payload = data(n);
        assert_eq!(store.echo(&payload).unwrap(), payload, "{n} octets");
    }
    let record = Record {
        tag: Bytes::from_static(b"old"),
        body: data(70_000),
        note: Bytes::from_static(b"kept"),
    };
    let mut io = data(3000);
    let (swapped, old_tag) = store.swap(&record, &mut io).unwrap();
    assert_eq!(old_tag, "old");
    assert_eq!(swapped.tag, "new");
    assert_eq!(swapped.body, data(3000));
    assert_eq!(swapped.note, "kept");
    assert_eq!(io, data(70_000));

    let parts = store.split(&data(10_000), 3).unwrap();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts.concat(), data(10_000));

    assert_eq!(
        store.tag_of(&Bytes::from_static(b"short")).unwrap(),
        "short"
    );
    match store.tag_of(&data(20_000)) {
        Err(TagOfError::TooLong(e)) => assert_eq!(e.sample, data(4)),
        other => panic!("expected TooLong, got {other:?}"),
    }
    store.set_last(&data(5000)).unwrap();
    assert_eq!(store.last().unwrap(), data(5000));

    // A Label is bounded to 16 octets: the client refuses to send more,
    // as it does for any bounded sequence (BAD_PARAM).
    let over = Record {
        tag: data(17),
        ..record
    };
    let e = store.swap(&over, &mut io).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadParam, "{e:?}");
}

#[test]
fn octet_sequences_as_bytes_over_iiop() {
    let orbs = OverIiop::start();
    let store = orbs.store(StoreImpl::default());
    exercise(&store);
    orbs.stop();
}

#[test]
fn octet_sequences_as_bytes_collocated() {
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let store = store(&orb, &orb, StoreImpl::default());
    exercise(&store);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_large_argument_is_a_slice_of_the_request() {
    let orbs = OverIiop::start();
    let store = orbs.store(StoreImpl::default());
    for n in [1024, 4096, 100_000, 1 << 20] {
        // b's length follows a's octets (a multiple of 4: no padding),
        // and b's octets follow their length: 4 bytes after a's end, in
        // the request's buffer. Two copies could not be laid out so.
        let distance = store.distance(&data(n), &data(n)).unwrap();
        assert_eq!(distance, n as i64 + 4, "{n} octets");
    }
    orbs.stop();
}

/// Replies of many spliced pieces (a list of 40 blobs, each shared, not
/// copied), several megabytes each, eight outstanding at once: the
/// server's socket fills, the rest of each reply waits in its write queue
/// as its pieces, and each arrives whole, in every server model.
#[test]
fn pipelined_replies_of_many_pieces_arrive_whole() {
    for model in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPerConnection,
        ConcurrencyModel::ThreadPerConnectionUpTo(64),
        ConcurrencyModel::ThreadPool(2),
    ] {
        let orbs = OverIiop {
            server: Orb::with_config(OrbConfig::default().concurrency(model)).unwrap(),
            client: Orb::with_config(OrbConfig::default().collocation(Collocation::None)).unwrap(),
        };
        let store = orbs.store(StoreImpl::default());
        let payloads: Vec<Bytes> = (0..8).map(|i| data((2 << 20) + i * 4099)).collect();
        let futures: Vec<_> = payloads.iter().map(|p| store.split_async(p, 40)).collect();
        for (payload, future) in payloads.iter().zip(futures) {
            let parts = pollster::block_on(future).unwrap();
            assert_eq!(parts.len(), 40, "{model:?}");
            assert_eq!(parts.concat(), *payload, "{model:?}");
        }
        orbs.stop();
    }
}

/// Over TLS, a message's spliced pieces are sealed together (sealing
/// copies anyway): the same values, both ways, in a reactive and a
/// threaded server.
#[test]
fn octet_sequences_as_bytes_over_tls() {
    use armillary::tls::{ClientAuth, TlsConfig};
    use armillary_testkit::tls::Pki;
    let pki = Pki::generate();
    for model in [
        ConcurrencyModel::SingleThreadedReactive,
        ConcurrencyModel::ThreadPerConnectionUpTo(64),
    ] {
        let server_tls = TlsConfig::default()
            .listen(armillary::config::ListenEndpoint::new("127.0.0.1", 0))
            .certificate_pem(pki.server.cert.as_bytes())
            .private_key_pem(pki.server.key.as_bytes())
            .trusted_roots_pem(pki.ca.as_bytes())
            .client_auth(ClientAuth::None);
        let client_tls = TlsConfig::default().trusted_roots_pem(pki.ca.as_bytes());
        let orbs = OverIiop {
            server: Orb::with_config(OrbConfig::new().concurrency(model).tls(server_tls)).unwrap(),
            client: Orb::with_config(
                OrbConfig::new()
                    .collocation(Collocation::None)
                    .tls(client_tls),
            )
            .unwrap(),
        };
        let store = orbs.store(StoreImpl::default());
        exercise(&store);
        let parts = store.split(&data(1 << 20), 20).unwrap();
        assert_eq!(parts.concat(), data(1 << 20), "{model:?}");
        orbs.stop();
    }
}

#[test]
fn ami_forms_carry_bytes() {
    let orbs = OverIiop::start();
    let store = orbs.store(StoreImpl::default());
    let payload = data(200_000);
    let mut poller = store.sendp_echo(&payload);
    assert_eq!(poller.take().unwrap(), payload);
    let future = store.echo_async(&payload);
    assert_eq!(pollster::block_on(future).unwrap(), payload);
    orbs.stop();
}

#[test]
fn a_reply_over_the_bound_is_bad_param() {
    let orbs = OverIiop::start();
    // It answers `tag_of` with more octets than a `Label` may hold.
    let store = orbs.store(PassThroughStore);
    match store.tag_of(&data(17)) {
        Err(TagOfError::System(e)) => assert_eq!(e.kind(), SystemExceptionKind::BadParam),
        other => panic!("expected BAD_PARAM, got {other:?}"),
    }
    // The connection serves on.
    assert_eq!(store.tag_of(&data(16)).unwrap(), data(16));
    orbs.stop();
}

#[test]
fn bytes_go_into_an_any() {
    let blob = data(3000);
    let any = blob.to_any().unwrap();
    assert_eq!(Bytes::from_any(&any).unwrap(), blob);
    let typed = blob_to_any(&blob).unwrap();
    assert_eq!(blob_from_any(&typed).unwrap(), blob);
    // A Label's bound holds in an any too.
    assert!(label_to_any(&blob).is_err());
}
