//! A received `sequence<octet>` read as `bytes::Bytes`
//! (`CdrReader::read_octet_seq_shared`, the IDL compiler's
//! `octet_sequences_as_bytes` mapping): from a frame's reader, one of
//! `SHARED_OCTETS_MIN` octets or more is a slice of the frame's own buffer
//! (no copy), whatever way the message arrived: whole, in uneven reads,
//! read straight into its buffer, or in GIOP 1.2 fragments. A smaller one,
//! or one read where the reader does not know the buffer, is a copy. The
//! value is the same either way.

use armillary_giop::cdr::SHARED_OCTETS_MIN;
use armillary_giop::giop::{
    fragment_message, FrameDecoder, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus,
};
use armillary_giop::{ByteOrder, CdrReader, GiopVersion};
use bytes::Bytes;

/// A GIOP 1.2 Reply whose body is a `long` and then a `sequence<octet>`
/// of `data`.
fn reply_with(order: ByteOrder, data: &[u8]) -> Vec<u8> {
    let mut b = MessageBuilder::new(
        GiopVersion::V1_2,
        order,
        &MessageBody::Reply(ReplyHeader {
            request_id: 9,
            reply_status: ReplyStatus::NoException,
            service_contexts: Vec::new(),
        }),
    )
    .unwrap();
    b.body().write_long(-5);
    b.body().write_octet_seq(data).unwrap();
    b.finish(false)
}

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}

/// True when `part` lies inside `whole`'s memory.
fn within(part: &Bytes, whole: &Bytes) -> bool {
    let (p, w) = (part.as_ptr() as usize, whole.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

/// Feeds `wire` (one or more wire messages back to back) to a decoder in
/// reads of `step` bytes, lending large messages' buffers as the
/// transports do, and checks the one frame's octet sequence.
fn check(wire: &[u8], step: usize, expected: &[u8]) {
    let mut d = FrameDecoder::default();
    let mut at = 0;
    while at < wire.len() {
        if let Some(mut read) = d.lend_for_read(step) {
            let room = read.room();
            let n = room.len().min(wire.len() - at);
            room[..n].copy_from_slice(&wire[at..at + n]);
            at += n;
            d.handle_direct_read(read, n).unwrap();
        } else {
            let n = step.min(wire.len() - at);
            d.handle_bytes(&wire[at..at + n]).unwrap();
            at += n;
        }
    }
    let frame = d.poll_frame().expect("one frame");
    let (_, mut r) = frame.decode().unwrap();
    assert_eq!(r.read_long().unwrap(), -5);
    let octets = r.read_octet_seq_shared().unwrap();
    assert_eq!(octets, expected);
    assert_eq!(
        within(&octets, &frame.bytes),
        expected.len() >= SHARED_OCTETS_MIN,
        "{} octets: shared from the frame only from {SHARED_OCTETS_MIN} on",
        expected.len()
    );
    // The slice outlives the frame it came from.
    drop(frame);
    assert_eq!(octets, expected);
}

#[test]
fn large_octet_sequences_are_slices_of_the_frame() {
    for order in [ByteOrder::Big, ByteOrder::Little] {
        for n in [
            0,
            1,
            SHARED_OCTETS_MIN - 1,
            SHARED_OCTETS_MIN,
            70_000,
            1 << 20,
        ] {
            let expected = data(n);
            let wire = reply_with(order, &expected);
            for step in [wire.len(), 4093, 65_536] {
                check(&wire, step, &expected);
            }
        }
    }
}

#[test]
fn octet_sequences_reassembled_from_fragments_are_slices_too() {
    let expected = data(300_000);
    let whole = reply_with(ByteOrder::Little, &expected);
    let wire: Vec<u8> = fragment_message(&whole, 16 * 1024).unwrap().concat();
    assert!(wire.len() > whole.len(), "split into fragments");
    check(&wire, 8191, &expected);
}

#[test]
fn a_reader_without_the_shared_buffer_copies() {
    let expected = data(5000);
    let wire = Bytes::from(reply_with(ByteOrder::Big, &expected));
    let offset = MessageBuilder::reply_body_offset(GiopVersion::V1_2);
    let read = |r: &mut CdrReader<'_>| {
        assert_eq!(r.read_long().unwrap(), -5);
        r.read_octet_seq_shared().unwrap()
    };
    let mut plain = CdrReader::new(&wire, ByteOrder::Big, GiopVersion::V1_2).with_position(offset);
    let copied = read(&mut plain);
    assert_eq!(copied, expected);
    assert!(!within(&copied, &wire));
    let mut shared = CdrReader::new(&wire, ByteOrder::Big, GiopVersion::V1_2)
        .with_position(offset)
        .with_source(&wire);
    let sliced = read(&mut shared);
    assert_eq!(sliced, expected);
    assert!(within(&sliced, &wire));
    // A source that is not the reader's buffer is ignored, not trusted.
    let other = Bytes::from(vec![0u8; wire.len()]);
    let mut wrong = CdrReader::new(&wire, ByteOrder::Big, GiopVersion::V1_2)
        .with_position(offset)
        .with_source(&other);
    let copied = read(&mut wrong);
    assert_eq!(copied, expected);
    assert!(!within(&copied, &other) && !within(&copied, &wire));
}
