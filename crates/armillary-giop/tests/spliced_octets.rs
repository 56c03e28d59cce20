//! A `sequence<octet>` written from `bytes::Bytes`
//! (`CdrWriter::write_octet_seq_shared`) by a splicing writer (a message's
//! set to splice, as the ORB's requests and replies are) is spliced into
//! the output, not copied: the message
//! comes out as pieces (`SplicedBytes`), the value one of them, lying
//! where it was. Whatever the writer does around it (align, truncate,
//! patch a reserved ulong, flatten), its output is byte for byte a
//! copying writer's.

use armillary_giop::cdr::{SplicedBytes, SHARED_OCTETS_MIN};
use armillary_giop::giop::{FrameDecoder, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus};
use armillary_giop::{ByteOrder, CdrReader, CdrWriter, GiopVersion};
use bytes::Bytes;
use proptest::prelude::*;

/// A Reply whose body splices from `SHARED_OCTETS_MIN`, as the ORB's.
fn reply_builder(order: ByteOrder) -> MessageBuilder {
    let mut b = MessageBuilder::new(
        GiopVersion::V1_2,
        order,
        &MessageBody::Reply(ReplyHeader {
            request_id: 3,
            reply_status: ReplyStatus::NoException,
            service_contexts: Vec::new(),
        }),
    )
    .unwrap();
    b.body().set_splicing(Some(SHARED_OCTETS_MIN));
    b
}

#[test]
fn a_large_shared_sequence_is_a_piece_of_the_message_not_a_copy() {
    let data = Bytes::from(vec![0xA5; 64 << 10]);
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let mut b = reply_builder(order);
        b.body().write_octet(1);
        b.body().write_octet_seq_shared(&data).unwrap();
        b.body().write_long(-7);
        let message = b.finish_spliced(false);
        assert!(!message.is_contiguous());
        // The value is a piece of the message, at the address it had.
        let piece = message
            .segments()
            .find(|p| p.len() == data.len())
            .expect("the value stands as one piece");
        assert_eq!(piece.as_ptr(), data.as_ptr());

        // Read back, it is the message a copying finish makes.
        let mut b = reply_builder(order);
        b.body().write_octet(1);
        b.body().write_octet_seq_shared(&data).unwrap();
        b.body().write_long(-7);
        let whole = b.finish(false);
        assert_eq!(message.clone().into_vec(), whole);
        let mut decoder = FrameDecoder::default();
        decoder.handle_bytes(&whole).unwrap();
        let frame = decoder.poll_frame().expect("one frame");
        let (message, mut r) = frame.decode().unwrap();
        assert_eq!(message.header.size as usize, whole.len() - 12);
        assert_eq!(r.read_octet().unwrap(), 1);
        assert_eq!(r.read_octet_seq().unwrap(), &data[..]);
        assert_eq!(r.read_long().unwrap(), -7);
    }
}

#[test]
fn a_small_shared_sequence_or_a_plain_writer_copies() {
    let small = Bytes::from(vec![1; SHARED_OCTETS_MIN - 1]);
    let mut b = reply_builder(ByteOrder::Big);
    b.body().write_octet_seq_shared(&small).unwrap();
    assert!(b.finish_spliced(false).is_contiguous());

    let large = Bytes::from(vec![2; SHARED_OCTETS_MIN]);
    let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
    w.write_octet_seq_shared(&large).unwrap();
    assert!(w.clone().into_spliced().is_contiguous());
    assert_eq!(w.as_bytes().len(), 4 + SHARED_OCTETS_MIN);

    // A message's writer copies unless set to splice; and from when it is
    // set off again.
    let mut b = MessageBuilder::reply(
        GiopVersion::V1_2,
        ByteOrder::Big,
        1,
        ReplyStatus::NoException,
    );
    b.body().write_octet_seq_shared(&large).unwrap();
    assert!(b.finish_spliced(false).is_contiguous());
    let mut b = reply_builder(ByteOrder::Big);
    b.body().write_octet_seq_shared(&large).unwrap();
    b.body().set_splicing(None);
    b.body().write_octet_seq_shared(&large).unwrap();
    let message = b.finish_spliced(false);
    assert_eq!(
        message
            .segments()
            .filter(|p| p.len() == SHARED_OCTETS_MIN)
            .count(),
        1
    );
    assert_eq!(message.len(), 24 + 2 * (4 + SHARED_OCTETS_MIN));
}

#[test]
fn a_bounded_shared_sequence_past_its_bound_is_refused() {
    let data = Bytes::from(vec![0; 10]);
    let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2).with_splicing(1);
    assert!(w.write_bounded_octet_seq_shared(&data, 9).is_err());
    w.write_bounded_octet_seq_shared(&data, 10).unwrap();
    assert_eq!(w.len(), 14);
}

#[test]
fn a_writer_flattened_shows_its_whole_output() {
    let data = Bytes::from_static(b"0123456789");
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2).with_splicing(4);
    w.write_octet(9);
    w.write_octet_seq_shared(&data).unwrap();
    w.flatten();
    let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(r.read_octet().unwrap(), 9);
    assert_eq!(r.read_octet_seq().unwrap(), b"0123456789");
    // A flattened writer splices no more.
    w.write_octet_seq_shared(&data).unwrap();
    assert!(w.into_spliced().is_contiguous());
}

/// One thing a writer may be asked to do.
#[derive(Debug, Clone)]
enum Op {
    Octet(u8),
    Long(i32),
    LongLong(i64),
    Shared(usize),
    Align(usize),
    /// Truncate to this fraction (in 1/16ths) of what was written.
    Truncate(u8),
    /// Reserve a ulong now, patch it with this value at the end.
    Reserve(u32),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        any::<u8>().prop_map(Op::Octet),
        any::<i32>().prop_map(Op::Long),
        any::<i64>().prop_map(Op::LongLong),
        (0usize..40).prop_map(Op::Shared),
        prop::sample::select(vec![1usize, 2, 4, 8]).prop_map(Op::Align),
        (0u8..=16).prop_map(Op::Truncate),
        any::<u32>().prop_map(Op::Reserve),
    ]
}

fn run(w: &mut CdrWriter, ops: &[Op]) {
    let mut reserved = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Octet(v) => w.write_octet(v),
            Op::Long(v) => w.write_long(v),
            Op::LongLong(v) => w.write_longlong(v),
            Op::Shared(n) => {
                let data: Vec<u8> = (0..n).map(|k| (k + i) as u8).collect();
                w.write_octet_seq_shared(&Bytes::from(data)).unwrap();
            }
            Op::Align(n) => w.align(n),
            Op::Truncate(sixteenths) => {
                let len = w.len() * usize::from(sixteenths) / 16;
                w.truncate(len);
                reserved.retain(|&(at, _)| at + 4 <= len);
            }
            Op::Reserve(v) => reserved.push((w.reserve_ulong(), v)),
        }
    }
    for (at, v) in reserved {
        w.patch_ulong(at, v);
    }
}

proptest! {
    #[test]
    fn a_splicing_writer_writes_what_a_copying_one_does(
        ops in prop::collection::vec(op(), 0..40),
        base in 0usize..8,
        min in 0usize..12,
        little in any::<bool>(),
    ) {
        let order = if little { ByteOrder::Little } else { ByteOrder::Big };
        let mut copying = CdrWriter::new(order, GiopVersion::V1_2).with_align_base(base);
        let mut splicing = CdrWriter::new(order, GiopVersion::V1_2)
            .with_align_base(base)
            .with_splicing(min);
        run(&mut copying, &ops);
        run(&mut splicing, &ops);
        prop_assert_eq!(splicing.len(), copying.len());
        prop_assert_eq!(splicing.position(), copying.position());
        let expected = copying.into_bytes();
        let spliced: SplicedBytes = splicing.clone().into_spliced();
        prop_assert_eq!(spliced.len(), expected.len());
        let pieces: Vec<u8> = spliced.segments().flatten().copied().collect();
        prop_assert_eq!(&pieces, &expected);
        prop_assert_eq!(spliced.into_vec(), expected.clone());
        let mut flat = splicing.clone();
        flat.flatten();
        prop_assert_eq!(flat.as_bytes(), &expected[..]);
        prop_assert_eq!(splicing.into_bytes(), expected);
    }
}
