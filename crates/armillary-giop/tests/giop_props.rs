//! Property tests of GIOP messages and the frame decoder: every message
//! type round-trips in both byte orders and every version it exists in,
//! fragmented messages reassemble however the stream is split, and garbage
//! is a typed error, never a panic.

use armillary_giop::cdr::codeset::CodeSetContext;
use armillary_giop::giop::{
    fragment_message, FrameDecoder, FrameError, FrameLimits, LocateReplyHeader, LocateStatus,
    Message, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus, RequestHeader, ServiceContext,
    TargetAddress,
};
use armillary_giop::ior::{Ior, TaggedProfile};
use armillary_giop::{ByteOrder, GiopVersion};
use proptest::prelude::*;

fn version() -> impl Strategy<Value = GiopVersion> {
    (0u8..=2).prop_map(|m| GiopVersion::new(1, m))
}

fn order() -> impl Strategy<Value = ByteOrder> {
    any::<bool>().prop_map(|b| if b { ByteOrder::Big } else { ByteOrder::Little })
}

fn contexts() -> impl Strategy<Value = Vec<ServiceContext>> {
    prop::collection::vec(
        (any::<u32>(), prop::collection::vec(any::<u8>(), 0..12))
            .prop_map(|(id, data)| ServiceContext { id, data }),
        0..3,
    )
}

fn target(v: GiopVersion) -> BoxedStrategy<TargetAddress> {
    let key = prop::collection::vec(any::<u8>(), 0..80).prop_map(|k| TargetAddress::Key(k.into()));
    if v < GiopVersion::V1_2 {
        return key.boxed();
    }
    prop_oneof![
        key,
        (any::<u32>(), prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(tag, data)| TargetAddress::Profile(TaggedProfile { tag, data })),
        (any::<u32>(), "[a-zA-Z:/0-9.]{0,20}").prop_map(|(i, id)| TargetAddress::Reference {
            selected_profile_index: i,
            ior: Ior {
                type_id: id,
                profiles: vec![TaggedProfile {
                    tag: 0,
                    data: vec![1, 2, 3]
                }],
            },
        }),
    ]
    .boxed()
}

fn body(v: GiopVersion) -> BoxedStrategy<MessageBody> {
    let statuses: usize = if v < GiopVersion::V1_2 { 4 } else { 6 };
    let locates: usize = if v < GiopVersion::V1_2 { 3 } else { 6 };
    let reply_all = [
        ReplyStatus::NoException,
        ReplyStatus::UserException,
        ReplyStatus::SystemException,
        ReplyStatus::LocationForward,
        ReplyStatus::LocationForwardPerm,
        ReplyStatus::NeedsAddressingMode,
    ];
    let locate_all = [
        LocateStatus::UnknownObject,
        LocateStatus::ObjectHere,
        LocateStatus::ObjectForward,
        LocateStatus::ObjectForwardPerm,
        LocateStatus::LocSystemException,
        LocateStatus::LocNeedsAddressingMode,
    ];
    let flags = if v < GiopVersion::V1_2 {
        prop_oneof![Just(0u8), Just(3u8)].boxed()
    } else {
        prop_oneof![Just(0u8), Just(1u8), Just(3u8)].boxed()
    };
    let reserved = if v == GiopVersion::V1_0 {
        Just([0u8; 3]).boxed()
    } else {
        any::<[u8; 3]>().boxed()
    };
    prop_oneof![
        (
            any::<u32>(),
            flags,
            reserved,
            target(v),
            "[a-z_]{1,12}",
            contexts(),
            prop::collection::vec(any::<u8>(), 0..4)
        )
            .prop_map(move |(id, flags, reserved, target, op, sc, principal)| {
                MessageBody::Request(RequestHeader {
                    request_id: id,
                    response_flags: flags,
                    reserved,
                    target,
                    operation: op.into(),
                    service_contexts: sc,
                    requesting_principal: if v < GiopVersion::V1_2 {
                        principal
                    } else {
                        Vec::new()
                    },
                })
            }),
        (any::<u32>(), 0..statuses, contexts()).prop_map(move |(id, s, sc)| MessageBody::Reply(
            ReplyHeader {
                request_id: id,
                reply_status: reply_all[s],
                service_contexts: sc,
            }
        )),
        any::<u32>().prop_map(|id| MessageBody::CancelRequest { request_id: id }),
        (any::<u32>(), target(v)).prop_map(move |(id, target)| MessageBody::LocateRequest {
            request_id: id,
            target: match target {
                TargetAddress::Key(k) => TargetAddress::Key(k),
                other if v >= GiopVersion::V1_2 => other,
                _ => TargetAddress::Key(Default::default()),
            }
        }),
        (any::<u32>(), 0..locates).prop_map(move |(id, s)| MessageBody::LocateReply(
            LocateReplyHeader {
                request_id: id,
                locate_status: locate_all[s],
            }
        )),
        Just(MessageBody::CloseConnection),
        Just(MessageBody::MessageError),
    ]
    .boxed()
}

fn message() -> impl Strategy<Value = (GiopVersion, ByteOrder, MessageBody, Vec<u8>)> {
    (version(), order()).prop_flat_map(|(v, o)| {
        (
            Just(v),
            Just(o),
            body(v),
            prop::collection::vec(any::<u8>(), 0..40),
        )
    })
}

fn build(v: GiopVersion, o: ByteOrder, fields: &MessageBody, payload: &[u8]) -> Vec<u8> {
    let mut b = MessageBuilder::new(v, o, fields).unwrap();
    let has_body = matches!(
        fields,
        MessageBody::Request(_) | MessageBody::Reply(_) | MessageBody::LocateReply(_)
    );
    if has_body {
        b.body().write_octets(payload);
    }
    b.finish(false)
}

proptest! {
    #[test]
    fn every_message_round_trips((v, o, fields, payload) in message()) {
        let bytes = build(v, o, &fields, &payload);
        let msg = Message::decode(&bytes).unwrap();
        prop_assert_eq!(&msg.body, &fields);
        prop_assert_eq!(msg.header.version, v);
        prop_assert_eq!(msg.header.byte_order, o);
        prop_assert!(msg.stale_padding.is_empty());
        prop_assert_eq!(msg.encode(&bytes[msg.body_offset..]).unwrap(), bytes.clone());
        // GIOP 1.2 aligns a Request's and a Reply's body to 8, not a
        // LocateReply's (it follows its header at once).
        let aligned = matches!(fields, MessageBody::Request(_) | MessageBody::Reply(_));
        if v >= GiopVersion::V1_2 && aligned && msg.body_offset < bytes.len() {
            prop_assert_eq!(msg.body_offset % 8, 0);
        }
        // A reply's header fields read alone (a client's reply) are
        // what the whole decode reads.
        let alone = Message::decode_reply(&bytes, &[]).unwrap();
        match &fields {
            MessageBody::Reply(h) => {
                prop_assert_eq!(alone, Some((msg.header, h.clone(), msg.body_offset)));
            }
            _ => prop_assert_eq!(alone, None),
        }
    }

    #[test]
    fn any_split_of_a_stream_gives_the_same_frames(
        msgs in prop::collection::vec(message(), 1..6),
        big in prop::collection::vec(any::<u8>(), 0..3000),
        cuts in prop::collection::vec(1usize..200, 1..40),
        max_size in 32usize..600,
    ) {
        // A stream of ordinary messages plus one large 1.2 request that is
        // sent in fragments.
        let mut expected = Vec::new();
        let mut stream = Vec::new();
        for (v, o, fields, payload) in &msgs {
            let bytes = build(*v, *o, fields, payload);
            stream.extend_from_slice(&bytes);
            expected.push(bytes);
        }
        let request = MessageBody::Request(RequestHeader {
            request_id: 77,
            response_flags: 3,
            reserved: [0; 3],
            target: TargetAddress::Key(b"key"[..].into()),
            operation: "big".into(),
            service_contexts: vec![ServiceContext::code_sets(
                CodeSetContext { char_data: 0x0501_0001, wchar_data: 0x0001_0109 },
                GiopVersion::V1_2,
            )],
            requesting_principal: Vec::new(),
        });
        let mut b = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Big, &request).unwrap();
        b.body().write_octet_seq(&big).unwrap();
        let whole = b.finish(false);
        for piece in fragment_message(&whole, max_size).unwrap() {
            prop_assert!(piece.len() <= max_size.max(32));
            stream.extend_from_slice(&piece);
        }
        expected.push(whole);

        let mut decoder = FrameDecoder::new(FrameLimits::default());
        let mut got = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while at < stream.len() {
            let n = cuts[i % cuts.len()].min(stream.len() - at);
            i += 1;
            decoder.handle_bytes(&stream[at..at + n]).unwrap();
            at += n;
            while let Some(f) = decoder.poll_frame() {
                got.push(f.bytes);
            }
        }
        prop_assert_eq!(got, expected);
        prop_assert!(decoder.is_idle());
    }

    /// However a transport reads the stream (into a buffer the decoder
    /// lends, or its own), in whatever pieces, and however long it keeps
    /// the frames (whose large buffers the decoder reuses once dropped),
    /// the frames are the messages sent, byte for byte.
    #[test]
    fn lent_and_plain_reads_give_the_same_frames(
        sizes in prop::collection::vec(
            prop_oneof![0usize..200, 60_000usize..70_000, 100_000usize..400_000],
            1..8,
        ),
        steps in prop::collection::vec((1usize..300_000, any::<bool>()), 1..12),
        keep in prop::collection::vec(any::<bool>(), 1..8),
    ) {
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (k, body) in sizes.iter().enumerate() {
            let mut m = b"GIOP\x01\x02\x01\x00".to_vec();
            m.extend_from_slice(&(*body as u32).to_le_bytes());
            m.extend((0..*body).map(|i| (i * 13 + k * 101 + i / 253) as u8));
            stream.extend_from_slice(&m);
            expected.push(m);
        }
        let mut decoder = FrameDecoder::default();
        let (mut got, mut kept) = (Vec::new(), Vec::new());
        let (mut at, mut i) = (0, 0);
        while at < stream.len() {
            let (step, lend) = steps[i % steps.len()];
            i += 1;
            let step = step.min(stream.len() - at);
            let lent = if lend { decoder.lend_for_read(step) } else { None };
            match lent {
                Some(mut read) => {
                    let room = read.room();
                    prop_assert!(!room.is_empty());
                    let n = room.len().min(step);
                    room[..n].copy_from_slice(&stream[at..at + n]);
                    at += n;
                    decoder.handle_direct_read(read, n).unwrap();
                }
                None => {
                    decoder.handle_bytes(&stream[at..at + step]).unwrap();
                    at += step;
                }
            }
            while let Some(f) = decoder.poll_frame() {
                got.push(f.bytes.to_vec());
                if keep[got.len() % keep.len()] {
                    kept.push(f);
                }
            }
        }
        prop_assert_eq!(&got, &expected);
        prop_assert!(decoder.is_idle());
        // The frames kept are still their messages.
        for f in &kept {
            prop_assert!(expected.iter().any(|m| f.bytes == m[..]));
        }
    }

    #[test]
    fn garbage_never_panics(data in prop::collection::vec(any::<u8>(), 0..400), cut in 1usize..50) {
        let _ = Message::decode(&data);
        let mut decoder = FrameDecoder::new(FrameLimits {
            max_message_size: 256,
            max_fragments: 4,
            max_pending_bytes: 512,
            max_reassemblies: 2,
        });
        for chunk in data.chunks(cut) {
            if decoder.handle_bytes(chunk).is_err() {
                break;
            }
            while let Some(f) = decoder.poll_frame() {
                let _ = f.decode();
            }
        }
    }

    #[test]
    fn mutated_messages_never_panic((v, o, fields, payload) in message(), at in any::<usize>(), byte in any::<u8>()) {
        let mut bytes = build(v, o, &fields, &payload);
        let i = at % bytes.len();
        bytes[i] = byte;
        // A reply read alone agrees with the whole decode, whatever the
        // damage: the same reply, or no reply where it finds none.
        match (Message::decode(&bytes), Message::decode_reply(&bytes, &[])) {
            (Ok(msg), alone) => match msg.body {
                MessageBody::Reply(h) => {
                    prop_assert_eq!(alone, Ok(Some((msg.header, h, msg.body_offset))));
                }
                _ => prop_assert_eq!(alone, Ok(None)),
            },
            (Err(_), alone) => prop_assert!(!matches!(alone, Ok(Some(_)))),
        }
        let mut decoder = FrameDecoder::default();
        if decoder.handle_bytes(&bytes).is_ok() {
            while let Some(f) = decoder.poll_frame() {
                let _ = f.decode();
            }
        }
    }
}

fn header(version: (u8, u8), flags: u8, kind: u8, size: u32) -> Vec<u8> {
    let mut h = b"GIOP".to_vec();
    h.extend_from_slice(&[version.0, version.1, flags, kind]);
    h.extend_from_slice(&size.to_be_bytes());
    h
}

#[test]
fn malformed_streams_are_typed_errors() {
    type Expect = fn(&FrameError) -> bool;
    let cases: Vec<(Vec<u8>, Expect)> = vec![
        (b"HTTP/1.1 200 OK\r\n".to_vec(), |e| {
            matches!(e, FrameError::Header { .. })
        }),
        (header((1, 3), 0, 0, 0), |e| {
            matches!(e, FrameError::Header { .. })
        }),
        (header((1, 2), 0, 9, 0), |e| {
            matches!(e, FrameError::Header { .. })
        }),
        (header((1, 0), 0, 7, 0), |e| {
            matches!(e, FrameError::Header { .. })
        }),
        (header((1, 2), 0, 0, u32::MAX), |e| {
            matches!(e, FrameError::TooLarge { .. })
        }),
        ([header((1, 2), 0, 7, 4), vec![0, 0, 0, 9]].concat(), |e| {
            matches!(
                e,
                FrameError::OrphanFragment {
                    request_id: Some(9)
                }
            )
        }),
        (header((1, 1), 0, 7, 0), |e| {
            matches!(e, FrameError::OrphanFragment { request_id: None })
        }),
        (header((1, 2), 2, 5, 0), |e| {
            matches!(e, FrameError::BadFragmentation(_))
        }),
        (
            [
                header((1, 1), 2, 0, 4),
                vec![0; 4],
                header((1, 1), 2, 1, 4),
                vec![0; 4],
            ]
            .concat(),
            |e| matches!(e, FrameError::BadFragmentation(_)),
        ),
        (
            [
                header((1, 2), 2, 0, 4),
                vec![0, 0, 0, 1],
                // Same request id, little-endian this time.
                b"GIOP\x01\x02\x03\x07\x04\x00\x00\x00".to_vec(),
                vec![1, 0, 0, 0],
            ]
            .concat(),
            |e| matches!(e, FrameError::FragmentMismatch),
        ),
    ];
    for (i, (stream, expected)) in cases.into_iter().enumerate() {
        let mut decoder = FrameDecoder::new(FrameLimits {
            max_message_size: 1 << 20,
            ..FrameLimits::default()
        });
        let err = decoder
            .handle_bytes(&stream)
            .expect_err(&format!("case {i}"));
        assert!(expected(&err), "case {i}: {err}");
        // The error is final.
        assert!(decoder.handle_bytes(&[]).is_err());
    }
}

#[test]
fn limits_bound_fragment_counts_and_pending_bytes() {
    let mut decoder = FrameDecoder::new(FrameLimits {
        max_fragments: 3,
        ..FrameLimits::default()
    });
    let mut stream = [header((1, 2), 2, 0, 4), vec![0, 0, 0, 1]].concat();
    for _ in 0..3 {
        stream.extend([header((1, 2), 2, 7, 4), vec![0, 0, 0, 1]].concat());
    }
    assert_eq!(
        decoder.handle_bytes(&stream),
        Err(FrameError::TooManyFragments(3))
    );
    let mut decoder = FrameDecoder::new(FrameLimits {
        max_reassemblies: 2,
        ..FrameLimits::default()
    });
    let mut stream = Vec::new();
    for id in 0..3u8 {
        stream.extend([header((1, 2), 2, 0, 4), vec![0, 0, 0, id]].concat());
    }
    assert_eq!(
        decoder.handle_bytes(&stream),
        Err(FrameError::TooMuchPending)
    );
    // A CancelRequest drops the partial message it names.
    let mut decoder = FrameDecoder::default();
    let stream = [
        header((1, 2), 2, 0, 4),
        vec![0, 0, 0, 5],
        header((1, 2), 0, 2, 4),
        vec![0, 0, 0, 5],
    ]
    .concat();
    decoder.handle_bytes(&stream).unwrap();
    assert!(decoder.is_idle());
    assert!(matches!(
        decoder
            .poll_frame()
            .map(|f| Message::decode(&f.bytes).unwrap().body),
        Some(MessageBody::CancelRequest { request_id: 5 })
    ));
}

/// `MessageBuilder::reply` (which cannot fail) writes what `new` writes
/// for a Reply without service contexts, body included.
#[test]
fn the_infallible_reply_builder_writes_what_new_writes() {
    use armillary_giop::giop::{MessageBody, MessageBuilder, ReplyHeader, ReplyStatus};
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            for status in [ReplyStatus::NoException, ReplyStatus::SystemException] {
                let fields = MessageBody::Reply(ReplyHeader {
                    request_id: 77,
                    reply_status: status,
                    service_contexts: Vec::new(),
                });
                let mut a = MessageBuilder::new(version, order, &fields).unwrap();
                let mut b = MessageBuilder::reply(version, order, 77, status);
                assert_eq!(a.body_offset(), b.body_offset());
                for m in [&mut a, &mut b] {
                    m.body().write_longlong(-5);
                }
                assert_eq!(a.finish(false), b.finish(false), "{version} {order:?}");
            }
        }
    }
}

#[test]
fn a_reply_s_body_offset_is_known_without_building_one() {
    use armillary_giop::giop::{MessageBuilder, ReplyStatus};
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let built = MessageBuilder::reply(version, order, 7, ReplyStatus::NoException);
            assert_eq!(
                MessageBuilder::reply_body_offset(version),
                built.body_offset(),
                "{version:?}"
            );
        }
    }
}
