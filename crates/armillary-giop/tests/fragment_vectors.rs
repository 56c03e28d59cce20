//! The GIOP 1.1 fragment captures in `tests/vectors/giop-1.1-fragments`
//! (`scripts/capture-fragment-vectors.sh`): omniORB's C++ library and
//! omniORBpy each talking to themselves, with blocks of 8-byte values cut
//! by fragment boundaries, laid out as each writes them (see
//! `armillary_giop::cdr::fragments`). Both read right with the whole-body
//! decoder; neither reads the other's way.

use std::collections::BTreeMap;
use std::path::Path;

use armillary_giop::any::{Any, DynValue};
use armillary_giop::cdr::{BlockLayout, CdrDecode, CdrError, CdrReader};
use armillary_giop::giop::{Frame, FrameDecoder, MessageBody};
use armillary_testkit::fragment_vectors_dir;
use serde_json::Value;

/// The whole messages of a session's connection, in each direction, with
/// the operation each request or reply is for.
fn frames(session: &str) -> Vec<(String, &'static str, Frame)> {
    let dir = fragment_vectors_dir().join(session);
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    let mut decoders: BTreeMap<(i64, String), FrameDecoder> = BTreeMap::new();
    let mut operations: BTreeMap<u32, String> = BTreeMap::new();
    let mut out = Vec::new();
    for entry in index["messages"].as_array().unwrap() {
        let key = (
            entry["conn"].as_i64().unwrap(),
            entry["dir"].as_str().unwrap().to_owned(),
        );
        let decoder = decoders.entry(key.clone()).or_default();
        decoder
            .handle_bytes(&read(&dir, entry["file"].as_str().unwrap()))
            .unwrap();
        while let Some(frame) = decoder.poll_frame() {
            let (kind, operation) = match frame.message().unwrap().body {
                MessageBody::Request(h) => {
                    operations.insert(h.request_id, h.operation.to_string());
                    ("Request", h.operation.to_string())
                }
                MessageBody::Reply(h) => ("Reply", operations[&h.request_id].clone()),
                _ => continue,
            };
            out.push((operation, kind, frame));
        }
    }
    out
}

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap()
}

/// The frame of `kind` (`Request` or `Reply`) for `operation`.
fn find<'a>(frames: &'a [(String, &str, Frame)], operation: &str, kind: &str) -> &'a Frame {
    frames
        .iter()
        .find(|(op, k, _)| op == operation && *k == kind)
        .map(|(_, _, f)| f)
        .unwrap_or_else(|| panic!("no {kind} for {operation}"))
}

fn body(frame: &Frame) -> CdrReader<'_> {
    frame.decode().unwrap().1
}

/// Issue 25's two cases as omniORBpy 4.3.3 sent them: each fragment inside
/// a block of long longs starts with 4 bytes of padding. Read as omniORB's
/// C++ library lays blocks out, the values after the first boundary come
/// out shifted (the wrong sum of the issue); the whole-body decoder reads
/// them right.
#[test]
fn omniorbpy_pads_every_fragment_inside_a_block() {
    let frames = frames("omniorbpy-4.3");
    let request = find(&frames, "sum_longlongs", "Request");
    assert!(request.fragments > 5);
    let expected: Vec<i64> = (0..10_000).collect();
    assert!(matches!(
        Vec::<i64>::decode(&mut body(request)),
        Err(CdrError::AmbiguousFragment { .. })
    ));
    let mut contiguous = body(request).with_block_layout(BlockLayout::Contiguous);
    let misread = Vec::<i64>::decode(&mut contiguous).unwrap();
    assert_ne!(misread.iter().sum::<i64>(), 49_995_000);
    let mut r = body(request);
    assert_eq!(r.decode_whole(|r| Vec::<i64>::decode(r)).unwrap(), expected);
    assert!(r.is_empty());

    let expected = DynValue::Sequence((0..3000).map(DynValue::LongLong).collect());
    for kind in ["Request", "Reply"] {
        let frame = find(&frames, "echo_any", kind);
        assert!(frame.fragments > 1, "{kind}");
        let mut r = body(frame);
        let any = r.decode_whole(Any::decode).unwrap();
        assert_eq!(any.value, expected, "{kind}");
        assert!(r.is_empty(), "{kind}");
    }
}

/// omniORB 4.2's C++ library runs a block of fewer than 16 KiB on,
/// unaligned, after each fragment header (and from the second boundary
/// on splits values between fragments): `echo_sequences` of 1,001
/// elements of every kind, both ways, reads as `diff_peer.cc` made it.
#[test]
fn omniorbs_cpp_library_runs_blocks_on_across_fragments() {
    let frames = frames("omniorb-4.2");
    for kind in ["Request", "Reply"] {
        let frame = find(&frames, "echo_sequences", kind);
        assert!(frame.fragments > 5, "{kind}");
        // The block of long longs is cut: the layouts differ.
        let mut r = body(frame);
        assert!(matches!(
            read_numbers(&mut r),
            Err(CdrError::AmbiguousFragment { .. })
        ));
        let mut r = body(frame);
        let numbers = r.decode_whole(|r| {
            let numbers = read_numbers(r)?;
            read_the_rest(r)?;
            Ok(numbers)
        });
        assert_eq!(numbers.unwrap(), expected_numbers(1001), "{kind}");
        assert!(r.is_empty());
    }
    // A block of 16 KiB or more goes in one fragment of its own.
    let request = find(&frames, "sum_longlongs", "Request");
    let mut r = body(request);
    let v = Vec::<i64>::decode(&mut r).unwrap();
    assert_eq!(
        v,
        (0..10_000i64)
            .map(|i| i * 1_000_003 - 7)
            .collect::<Vec<_>>()
    );
}

/// The numeric sequences of `Differential::Sequences` (after its lead
/// octet): shorts, ushorts, longs, ulongs, long longs, unsigned long
/// longs, floats, doubles.
type Numbers = (
    Vec<i16>,
    Vec<u16>,
    Vec<i32>,
    Vec<u32>,
    Vec<i64>,
    Vec<u64>,
    Vec<f32>,
    Vec<f64>,
);

fn read_numbers(r: &mut CdrReader<'_>) -> Result<Numbers, CdrError> {
    assert_eq!(r.read_octet()?, 7);
    Ok((
        r.read()?,
        r.read()?,
        r.read()?,
        r.read()?,
        r.read()?,
        r.read()?,
        r.read()?,
        r.read()?,
    ))
}

/// The rest of `Differential::Sequences`: booleans, chars, octets,
/// strings, points (two longs), samples (string, double, short, octet).
fn read_the_rest(r: &mut CdrReader<'_>) -> Result<(), CdrError> {
    let _: Vec<bool> = r.read()?;
    let _: Vec<char> = r.read()?;
    let _: Vec<u8> = r.read()?;
    let _: Vec<String> = r.read()?;
    r.read_seq_with(8, |r| Ok((r.read_long()?, r.read_long()?)))?;
    r.read_seq_with(16, |r| {
        Ok((
            r.read_string()?,
            r.read_double()?,
            r.read_short()?,
            r.read_octet()?,
        ))
    })?;
    Ok(())
}

/// What `make_sequences(n)` of `diff_peer.cc` puts in those sequences.
fn expected_numbers(n: u32) -> Numbers {
    let idx = 0..n;
    (
        idx.clone()
            .map(|i| i.wrapping_mul(7).wrapping_sub(3000) as i16)
            .collect(),
        idx.clone().map(|i| i.wrapping_mul(13) as u16).collect(),
        idx.clone()
            .map(|i| (i.wrapping_mul(7919) as i32).wrapping_sub(500_000))
            .collect(),
        idx.clone().map(|i| i.wrapping_mul(2_654_435_761)).collect(),
        idx.clone()
            .map(|i| i64::from(i) * 1_000_000_007 - 5_000_000_000)
            .collect(),
        idx.clone()
            .map(|i| u64::from(i).wrapping_mul(11_400_714_819_323_198_485))
            .collect(),
        idx.clone().map(|i| i as f32 * 0.25 - 100.0).collect(),
        idx.map(|i| f64::from(i) * 1.0e-3 - 1.0e6).collect(),
    )
}

/// A client reads its reply with `Frame::decode_reply`, not `decode`:
/// on every reply of both captures (fragmented GIOP 1.1 ones among them)
/// the two agree on the header fields and where the body starts, and
/// neither takes a request for a reply.
#[test]
fn a_reply_read_alone_is_the_reply_decode_reads() {
    for session in ["omniorbpy-4.3", "omniorb-4.2"] {
        let frames = frames(session);
        assert!(frames.iter().any(|(_, kind, _)| *kind == "Reply"));
        for (operation, kind, frame) in &frames {
            let (message, body) = frame.decode().unwrap();
            let alone = frame.decode_reply().unwrap();
            match (&message.body, alone) {
                (MessageBody::Reply(h), Some((header, reply, reader))) => {
                    assert_eq!(header, message.header, "{session} {operation}");
                    assert_eq!(&reply, h, "{session} {operation}");
                    assert_eq!(reader.index(), body.index(), "{session} {operation}");
                }
                (_, None) => assert_eq!(*kind, "Request", "{session} {operation}"),
                (_, Some(_)) => panic!("{session} {operation}: a request read as a reply"),
            }
        }
    }
}
