use super::*;

/// A GIOP 1.2 little-endian Request header announcing `body` bytes.
fn request_of(body: usize) -> Vec<u8> {
    let mut m = b"GIOP\x01\x02\x01\x00".to_vec();
    m.extend_from_slice(&(body as u32).to_le_bytes());
    m.resize(HEADER_SIZE + body, 0);
    m
}

#[test]
fn a_reply_s_request_id_is_read_as_the_whole_decode_reads_it() {
    use super::super::message::{
        LocateReplyHeader, LocateStatus, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus,
    };
    use crate::giop::ServiceContext;
    let frame_of = |bytes: Vec<u8>| Frame {
        bytes: Bytes::from(bytes),
        fragments: 1,
        fragment_starts: Vec::new(),
    };
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        for order in [ByteOrder::Big, ByteOrder::Little] {
            let contexts = vec![ServiceContext {
                id: 1,
                data: vec![0; 5],
            }];
            let bodies = [
                MessageBody::Reply(ReplyHeader {
                    request_id: 0x0102_0304,
                    reply_status: ReplyStatus::NoException,
                    service_contexts: contexts.clone(),
                }),
                MessageBody::Reply(ReplyHeader {
                    request_id: 77,
                    reply_status: ReplyStatus::SystemException,
                    service_contexts: Vec::new(),
                }),
                MessageBody::LocateReply(LocateReplyHeader {
                    request_id: 0xfffe_fdfc,
                    locate_status: LocateStatus::ObjectHere,
                }),
            ];
            for body in bodies {
                let bytes = MessageBuilder::new(version, order, &body)
                    .unwrap()
                    .finish(false);
                let frame = frame_of(bytes);
                let whole = frame.message().unwrap().body.request_id();
                assert_eq!(frame.reply_request_id(), whole, "{version:?} {order:?}");
                assert!(whole.is_some());
            }
        }
    }
    // Not a reply: none, though the message carries an id.
    assert_eq!(frame_of(request_of(16)).reply_request_id(), None);
    // A reply too short to decode: none either.
    let mut cut = b"GIOP\x01\x02\x01\x01".to_vec();
    cut.extend_from_slice(&2u32.to_le_bytes());
    cut.extend_from_slice(&[1, 0]);
    assert_eq!(frame_of(cut).reply_request_id(), None);
}

#[test]
fn a_large_message_leaves_no_large_buffer_behind() {
    let message = request_of(8 << 20);
    let mut d = FrameDecoder::default();
    for chunk in message.chunks(64 * 1024) {
        d.handle_bytes(chunk).unwrap();
        // Never much more than the message itself is reserved.
        assert!(d.held_capacity() <= message.len() + SPARE_CAPACITY);
    }
    let frame = d.poll_frame().unwrap();
    assert_eq!(frame.bytes, message);
    assert!(d.is_idle());
    assert!(d.held_capacity() <= SPARE_CAPACITY, "{}", d.held_capacity());
}

#[test]
fn a_message_refused_as_too_large_names_its_request_when_its_bytes_say_it() {
    let limits = FrameLimits {
        max_message_size: 1024,
        ..FrameLimits::default()
    };
    // GIOP 1.2: the id follows the header.
    let mut message = request_of(4096);
    message[12..16].copy_from_slice(&7u32.to_le_bytes());
    let mut d = FrameDecoder::new(limits);
    assert!(matches!(
        d.handle_bytes(&message[..100]),
        Err(FrameError::TooLarge {
            size: 4108,
            limit: 1024
        })
    ));
    assert_eq!(d.refused_request_id(), Some(7));
    // The header alone: refused, the id unknown.
    let mut d = FrameDecoder::new(limits);
    assert!(d.handle_bytes(&message[..HEADER_SIZE]).is_err());
    assert_eq!(d.refused_request_id(), None);
    // GIOP 1.0: the id follows the service contexts.
    let mut reply = b"GIOP\x01\x00\x01\x01".to_vec();
    reply.extend_from_slice(&4096u32.to_le_bytes());
    reply.extend_from_slice(&1u32.to_le_bytes()); // one context
    reply.extend_from_slice(&9u32.to_le_bytes()); // its id
    reply.extend_from_slice(&3u32.to_le_bytes()); // 3 octets
    reply.extend_from_slice(&[1, 2, 3, 0]); // and padding
    reply.extend_from_slice(&11u32.to_le_bytes()); // the request id
    let mut d = FrameDecoder::new(limits);
    assert!(d.handle_bytes(&reply).is_err());
    assert_eq!(d.refused_request_id(), Some(11));
    let mut d = FrameDecoder::new(limits);
    assert!(d.handle_bytes(&reply[..reply.len() - 1]).is_err());
    assert_eq!(d.refused_request_id(), None);
}

#[test]
fn an_announced_size_alone_reserves_nothing() {
    let message = request_of(60 << 20);
    let mut d = FrameDecoder::default();
    d.handle_bytes(&message[..100]).unwrap();
    assert!(d.held_capacity() < 4096, "{}", d.held_capacity());
}

#[test]
fn a_large_message_read_straight_into_its_buffer_is_handed_out_without_a_copy() {
    let mut message = request_of(1 << 20);
    for (i, b) in message.iter_mut().enumerate().skip(HEADER_SIZE) {
        *b = i as u8;
    }
    let small = request_of(40);
    let mut d = FrameDecoder::default();
    // A small message, then the large one's first bytes: through
    // `handle_bytes`, as a read of the socket brings them.
    let mut first = small.clone();
    first.extend_from_slice(&message[..1000]);
    d.handle_bytes(&first).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, small);
    // The rest, read straight into the message's buffer in uneven
    // pieces (a read may bring less than there is room for).
    let mut at = 1000;
    let mut base = None;
    let mut lent = 0;
    while let Some(mut read) = d.lend_for_read(300 * 1024) {
        lent += 1;
        assert!(read.room().len() <= 300 * 1024);
        base.get_or_insert(read.buf.as_ptr());
        assert_eq!(base, Some(read.buf.as_ptr()), "one buffer throughout");
        let room = read.room();
        let n = room.len().min(77_777);
        room[..n].copy_from_slice(&message[at..at + n]);
        at += n;
        d.handle_direct_read(read, n).unwrap();
    }
    assert_eq!(at, message.len());
    assert!(lent > 10);
    let frame = d.poll_frame().unwrap();
    assert_eq!(frame.bytes, message);
    assert_eq!(Some(frame.bytes.as_ptr()), base, "no copy");
    assert!(d.is_idle());
    // Nothing to lend between messages, nor for a small one.
    assert!(d.lend_for_read(1024).is_none());
    d.handle_bytes(&small[..20]).unwrap();
    assert!(d.lend_for_read(1024).is_none());
}

#[test]
fn a_lent_buffer_given_back_unread_changes_nothing() {
    let message = request_of(200 * 1024);
    let mut d = FrameDecoder::default();
    d.handle_bytes(&message[..HEADER_SIZE + 10]).unwrap();
    let read = d.lend_for_read(1 << 20).unwrap();
    d.handle_direct_read(read, 0).unwrap();
    assert_eq!(d.pending_bytes(), HEADER_SIZE + 10);
    d.handle_bytes(&message[HEADER_SIZE + 10..]).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, message);
    // A message over the limit is refused before anything is lent.
    let mut d = FrameDecoder::new(FrameLimits {
        max_message_size: 100 * 1024,
        ..FrameLimits::default()
    });
    assert!(d.handle_bytes(&message[..HEADER_SIZE]).is_err());
    assert!(d.lend_for_read(1 << 20).is_none());
}

/// Reads `message` into `d` as a transport does: straight into a lent
/// buffer where one is lent, in reads of at most `step` bytes; returns
/// the buffers read into.
fn read_lending(d: &mut FrameDecoder, message: &[u8], step: usize) -> Vec<*const u8> {
    let mut at = 0;
    let mut lent = Vec::new();
    while at < message.len() {
        if let Some(mut read) = d.lend_for_read(step) {
            lent.push(read.buf.as_ptr());
            let room = read.room();
            assert!(room.len() <= message.len() - at, "never past the message");
            let n = room.len().min(step);
            room[..n].copy_from_slice(&message[at..at + n]);
            at += n;
            d.handle_direct_read(read, n).unwrap();
        } else {
            let n = step.min(message.len() - at).min(HEADER_SIZE + 100);
            d.handle_bytes(&message[at..at + n]).unwrap();
            at += n;
        }
    }
    lent
}

fn numbered(mut message: Vec<u8>, seed: usize) -> Vec<u8> {
    for (i, b) in message.iter_mut().enumerate().skip(HEADER_SIZE) {
        *b = (i * 31 + seed) as u8;
    }
    message
}

#[test]
fn a_dropped_large_frame_s_buffer_takes_the_next_large_message() {
    let mut d = FrameDecoder::default();
    let first = numbered(request_of(1 << 20), 1);
    read_lending(&mut d, &first, 256 * 1024);
    let frame = d.poll_frame().unwrap();
    assert_eq!(frame.bytes, first);
    let buffer = frame.bytes.as_ptr();
    // While the frame lives, the next message gets a buffer of its own.
    let second = numbered(request_of(900_000), 2);
    let lent = read_lending(&mut d, &second, 256 * 1024);
    assert!(!lent.contains(&buffer));
    let second_frame = d.poll_frame().unwrap();
    assert_eq!(second_frame.bytes, second);
    // Dropped (slices and all), its buffer is read into next, from
    // the first lent read on, and the message is exactly its own
    // bytes, though the buffer held a longer one's.
    let slice = frame.bytes.slice(1000..2000);
    drop(frame);
    assert!(d.recycler.held() == 0, "a slice keeps the frame alive");
    drop(slice);
    assert!(d.recycler.held() >= first.len());
    let third = numbered(request_of(700_000), 3);
    let lent = read_lending(&mut d, &third, 256 * 1024);
    assert!(lent.iter().all(|p| *p == buffer), "{lent:?}");
    let third_frame = d.poll_frame().unwrap();
    assert_eq!(third_frame.bytes, third);
    assert_eq!(third_frame.bytes.as_ptr(), buffer);
    assert!(d.is_idle());
    // The larger of two dropped buffers is kept.
    drop(second_frame);
    drop(third_frame);
    assert!(d.recycler.held() >= second.len());
    // Bytes fed the usual way in the middle of a recycled read are
    // still the same message.
    let fourth = numbered(request_of(800_000), 4);
    d.handle_bytes(&fourth[..HEADER_SIZE]).unwrap();
    let mut read = d.lend_for_read(100_000).unwrap();
    // Room to the end: a recycled buffer is not zeroed, so `max` does
    // not bound it.
    assert_eq!(read.room().len(), fourth.len() - HEADER_SIZE);
    let n = 100_000;
    read.room()[..n].copy_from_slice(&fourth[HEADER_SIZE..HEADER_SIZE + n]);
    d.handle_direct_read(read, n).unwrap();
    assert_eq!(d.pending_bytes(), HEADER_SIZE + n);
    d.handle_bytes(&fourth[HEADER_SIZE + n..]).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, fourth);
    assert!(d.is_idle());
}

#[test]
fn a_large_message_s_first_read_goes_straight_into_a_recycled_buffer() {
    let mut d = FrameDecoder::default();
    let first = numbered(request_of(1 << 20), 5);
    read_lending(&mut d, &first, 256 * 1024);
    let frame = d.poll_frame().unwrap();
    let buffer = frame.bytes.as_ptr();
    drop(frame);
    // The next large message's first 64 KiB, as a read into the
    // transport's own buffer brings them: copied once, into the
    // recycled buffer, and not into the decoder's.
    let second = numbered(request_of(900_000), 6);
    let first_read = 64 * 1024;
    d.handle_bytes(&second[..first_read]).unwrap();
    assert!(d.buf.is_empty());
    assert_eq!(d.pending_bytes(), first_read);
    assert!(d.poll_frame().is_none());
    // Every read of the rest is lent, into that buffer.
    let rest = second.len() - first_read;
    let lent = read_lending(&mut d, &second[first_read..], 200_000);
    assert_eq!(lent.len(), rest.div_ceil(200_000));
    assert!(lent.iter().all(|p| *p == buffer), "{lent:?}");
    let frame = d.poll_frame().unwrap();
    assert_eq!(frame.bytes, second);
    assert_eq!(frame.bytes.as_ptr(), buffer, "no copy");
    assert!(d.is_idle());
    drop(frame);
    // Fed on the usual way (as a TLS connection does, which lends
    // nothing), it is the same message, in the same buffer.
    let third = numbered(request_of(700_000), 7);
    for piece in third.chunks(first_read) {
        d.handle_bytes(piece).unwrap();
    }
    let frame = d.poll_frame().unwrap();
    assert_eq!(frame.bytes, third);
    assert_eq!(frame.bytes.as_ptr(), buffer);
    assert!(d.is_idle());
    // A first read that holds the whole message, or more than it, or
    // only part of the header, is fed the usual way.
    drop(frame);
    let mut stream = third.clone();
    stream.extend_from_slice(&third[..HEADER_SIZE - 2]);
    d.handle_bytes(&stream).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, third);
    assert_eq!(d.pending_bytes(), HEADER_SIZE - 2);
    d.handle_bytes(&third[HEADER_SIZE - 2..]).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, third);
    assert!(d.is_idle());
}

#[test]
fn an_idle_decoder_lends_its_spare_buffer_for_whatever_comes_next() {
    let mut d = FrameDecoder::default();
    // Nothing to lend before a large frame has come and gone.
    assert!(d.lend_for_read(1 << 20).is_none());
    let first = numbered(request_of(1 << 20), 8);
    read_lending(&mut d, &first, 256 * 1024);
    let buffer = d.poll_frame().unwrap().bytes.as_ptr();
    // Small messages read into it go the usual way, and the buffer
    // back to be spare.
    let small = request_of(40);
    let mut read = d.lend_for_read(256 * 1024).unwrap();
    assert_eq!(read.buf.as_ptr(), buffer);
    assert_eq!(read.room().len(), SPARE_CAPACITY);
    let mut stream = small.clone();
    stream.extend_from_slice(&small[..30]);
    read.room()[..stream.len()].copy_from_slice(&stream);
    d.handle_direct_read(read, stream.len()).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, small);
    assert_eq!(d.pending_bytes(), 30);
    assert!(d.recycler.held() >= first.len());
    // Not lent while part of a message is held.
    assert!(d.lend_for_read(256 * 1024).is_none());
    d.handle_bytes(&small[30..]).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, small);
    // Given back unread, it changes nothing.
    let read = d.lend_for_read(256 * 1024).unwrap();
    d.handle_direct_read(read, 0).unwrap();
    assert!(d.is_idle());
    assert!(d.recycler.held() >= first.len());
    // A large message that begins in it stays in it to its end: not
    // one of its bytes is copied.
    let second = numbered(request_of(900_000), 9);
    let lent = read_lending(&mut d, &second, 100_000);
    assert!(
        lent.len() > 2 && lent.iter().all(|p| *p == buffer),
        "{lent:?}"
    );
    let frame = d.poll_frame().unwrap();
    assert_eq!(frame.bytes, second);
    assert_eq!(frame.bytes.as_ptr(), buffer);
    assert!(d.is_idle());
    // One larger than the spare goes the usual way.
    drop(frame);
    let third = numbered(request_of(1_500_000), 10);
    read_lending(&mut d, &third, 256 * 1024);
    assert_eq!(d.poll_frame().unwrap().bytes, third);
    assert!(d.is_idle());
}

#[test]
fn a_buffer_past_the_recycling_bound_is_given_back() {
    let mut d = FrameDecoder::default();
    let large = request_of(RECYCLE_MAX + 1);
    read_lending(&mut d, &large, 1 << 20);
    drop(d.poll_frame().unwrap());
    assert_eq!(d.recycler.held(), 0);
    assert!(d.held_capacity() <= SPARE_CAPACITY);
}

#[test]
fn small_messages_after_a_large_one_reuse_a_small_buffer() {
    let mut d = FrameDecoder::default();
    let large = request_of(1 << 20);
    let small = request_of(100);
    let mut stream = large.clone();
    stream.extend_from_slice(&small);
    stream.extend_from_slice(&small[..50]);
    d.handle_bytes(&stream).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, large);
    assert_eq!(d.poll_frame().unwrap().bytes, small);
    assert!(d.buf.capacity() <= SPARE_CAPACITY / 2);
    // The large frame's buffer, dropped, is kept for the next large
    // message: that and the small buffer are all that is held.
    assert!(d.held_capacity() <= SPARE_CAPACITY / 2 + large.len());
    d.handle_bytes(&small[50..]).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, small);
}

#[test]
fn whole_messages_fed_to_an_empty_decoder_leave_only_their_tail_held() {
    let messages: Vec<Vec<u8>> = (0..4)
        .map(|i| numbered(request_of(16 + 8 * i), i))
        .collect();
    let mut stream: Vec<u8> = messages.concat();
    let half = messages[3].len() / 2;
    let first_cut = stream.len() - half;
    let mut d = FrameDecoder::default();
    // Three whole messages and half of the fourth, in one read.
    d.handle_bytes(&stream[..first_cut]).unwrap();
    for m in &messages[..3] {
        assert_eq!(d.poll_frame().unwrap().bytes, m[..]);
    }
    assert!(d.poll_frame().is_none());
    assert_eq!(d.pending_bytes(), messages[3].len() - half);
    d.handle_bytes(&stream[first_cut..]).unwrap();
    assert_eq!(d.poll_frame().unwrap().bytes, messages[3][..]);
    assert!(d.is_idle());
    // A bad header after two whole messages names its offset in the
    // stream (the messages before it cut from the read itself), and
    // fails the decoder.
    stream.truncate(messages[0].len() + messages[1].len());
    let bad_at = stream.len();
    stream.extend_from_slice(b"GIOX\x01\x02\x01\x00\x00\x00\x00\x00");
    let mut d = FrameDecoder::default();
    d.handle_bytes(&messages[2]).unwrap();
    let before = messages[2].len() as u64;
    match d.handle_bytes(&stream) {
        Err(FrameError::Header { offset, .. }) => assert_eq!(offset, before + bad_at as u64),
        other => panic!("expected a header error, got {other:?}"),
    }
    assert_eq!(d.poll_frame().unwrap().bytes, messages[2][..]);
    assert_eq!(d.poll_frame().unwrap().bytes, messages[0][..]);
    assert_eq!(d.poll_frame().unwrap().bytes, messages[1][..]);
    assert!(d.handle_bytes(&messages[0]).is_err());
}
