//! Entry points for the fuzz targets in `fuzz/`, kept here so that the
//! stable test suite replays every saved input through exactly the same
//! code (`tests/fuzz_regressions.rs`, which also runs each over a bounded
//! number of mutated inputs). Each function must never panic on any
//! input; each checks that whatever decodes re-encodes faithfully.

use crate::any::Any;
use crate::cdr::{CdrDecode, CdrEncode, CdrReader, CdrWriter, CodeSets};
use crate::giop::{
    FrameDecoder, FrameLimits, KnownServiceContext, LocateStatus, Message, MessageBody,
    ReplyStatus, ServiceContext, TargetAddress, HEADER_SIZE, MAGIC,
};
use crate::ior::{self, Ior, TAG_INTERNET_IOP};
use crate::system_exception::SystemException;
use crate::{ByteOrder, GiopVersion};

/// Cuts `data` into pieces (sizes taken from its first bytes), feeds them
/// through a frame decoder with small limits, decodes every frame, and
/// checks that decoded messages re-encode to the same bytes. When the
/// first byte is odd, a message over 64 KiB (the limit is then 128 KiB)
/// is read the way a connection reads one, into the buffer the decoder
/// lends ([`FrameDecoder::lend_for_read`]).
pub fn frame_decoder(data: &[u8]) {
    let (sizes, stream) = data.split_at(data.len().min(4));
    let lend = sizes.first().is_some_and(|b| b & 1 == 1);
    let mut decoder = FrameDecoder::new(FrameLimits {
        max_message_size: if lend { 1 << 17 } else { 1 << 16 },
        max_fragments: 64,
        max_pending_bytes: 1 << 18,
        max_reassemblies: 8,
    });
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        let step = usize::from(sizes.get(i % sizes.len().max(1)).copied().unwrap_or(64)).max(1);
        let n = step.min(stream.len() - at);
        i += 1;
        let fed = match decoder.lend_for_read(if lend { n } else { 0 }) {
            Some(mut lent) => {
                let room = lent.room();
                let n = n.min(room.len());
                room[..n].copy_from_slice(&stream[at..at + n]);
                decoder.handle_direct_read(lent, n).map(|()| n)
            }
            None => decoder.handle_bytes(&stream[at..at + n]).map(|()| n),
        };
        let Ok(n) = fed else {
            return;
        };
        at += n;
        while let Some(frame) = decoder.poll_frame() {
            if let Ok((decoded, mut body)) = frame.decode() {
                // Header fields after a GIOP 1.1 fragment boundary are
                // aligned from their fragment: such a header is laid out
                // otherwise in one message.
                let header_whole = frame
                    .fragment_starts
                    .first()
                    .is_none_or(|start| *start >= decoded.body_offset);
                if header_whole {
                    let msg = Message::decode_exact(&frame.bytes).expect("a decoded frame decodes");
                    let again = msg
                        .encode(&frame.bytes[msg.body_offset..])
                        .expect("a decoded message re-encodes");
                    assert_eq!(again, frame.bytes, "re-encoding changed the message");
                }
                // Read a little of the body, as a skeleton would, the whole
                // body as the ORB does (in both GIOP 1.1 block layouts).
                let _ = body.clone().read_string();
                let _ = body.decode_whole(|r| {
                    r.read_longlong()?;
                    Vec::<i64>::decode(r)
                });
            }
        }
    }
    let _ = Message::decode(stream);
}

/// Parses `data` as text (IOR, corbaloc, corbaname) and as CDR (an IOR and
/// its profiles); whatever parses must print and parse back equal.
pub fn ior_parse(data: &[u8]) {
    crate::ior::fuzz_one(data);
}

/// Decodes a TypeCode and an Any from `data` in both byte orders; whatever
/// decodes must encode and decode back to an equal value.
pub fn typecode_any(data: &[u8]) {
    crate::any::fuzz_one(data);
}

/// The message a `giop_body` input stands for: its first byte chooses the
/// message type (`% 8`), the GIOP version (`/ 8 % 3`) and the byte order
/// (`/ 24 % 2`); the rest is the body, behind a header made to fit it, so
/// the fuzzer spends its time inside bodies rather than on the magic and
/// the size.
pub fn giop_body_message(data: &[u8]) -> Option<Vec<u8>> {
    let (&selector, body) = data.split_first()?;
    let version =
        [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2][usize::from(selector / 8 % 3)];
    let order = if selector / 24 % 2 == 0 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    let size = u32::try_from(body.len()).ok()?;
    let mut bytes = Vec::with_capacity(HEADER_SIZE + body.len());
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&[version.major, version.minor, order.flag(), selector % 8]);
    bytes.extend_from_slice(&match order {
        ByteOrder::Big => size.to_be_bytes(),
        ByteOrder::Little => size.to_le_bytes(),
    });
    bytes.extend_from_slice(body);
    Some(bytes)
}

/// Decodes `data` as the body of a GIOP message of the type, version and
/// byte order its first byte names (see [`giop_body_message`]), through
/// [`giop_message`].
pub fn giop_body(data: &[u8]) {
    if let Some(message) = giop_body_message(data) {
        giop_message(&message);
    }
}

/// Decodes `data` as one whole GIOP message and everything in it, as the
/// ORB would: the header fields of its type (which must re-encode to the
/// same bytes), every service context through its typed decoder, the
/// target address (profiles and IORs included), and the body the type and
/// status imply: a system exception, a forwarding IOR, an addressing
/// disposition, a user exception's id, or values (read as an `any`, the
/// most demanding reader). Whatever decodes must encode and decode back
/// equal.
pub fn giop_message(data: &[u8]) {
    let Ok(msg) = Message::decode_exact(data) else {
        return;
    };
    let again = msg
        .encode(&data[msg.body_offset..])
        .expect("a decoded message re-encodes");
    assert_eq!(again, data, "re-encoding changed the message");
    let version = msg.header.version;
    let order = msg.header.byte_order;
    let body = || msg.body_reader(data).with_codesets(CodeSets::NATIVE);
    match &msg.body {
        MessageBody::Request(h) => {
            service_contexts(&h.service_contexts);
            target(&h.target);
            values(&mut body(), order, version);
        }
        MessageBody::Reply(h) => {
            service_contexts(&h.service_contexts);
            match h.reply_status {
                ReplyStatus::NoException => values(&mut body(), order, version),
                ReplyStatus::UserException => {
                    let mut r = body();
                    if r.read_string().is_ok() {
                        values(&mut r, order, version);
                    }
                }
                ReplyStatus::SystemException => system_exception(&mut body(), order, version),
                ReplyStatus::LocationForward | ReplyStatus::LocationForwardPerm => {
                    forward(&mut body(), order, version)
                }
                ReplyStatus::NeedsAddressingMode => {
                    let _ = body().read_short();
                }
            }
        }
        MessageBody::LocateRequest { target: t, .. } => target(t),
        MessageBody::LocateReply(h) => match h.locate_status {
            LocateStatus::ObjectForward | LocateStatus::ObjectForwardPerm => {
                forward(&mut body(), order, version)
            }
            LocateStatus::LocSystemException => system_exception(&mut body(), order, version),
            LocateStatus::LocNeedsAddressingMode => {
                let _ = body().read_short();
            }
            LocateStatus::UnknownObject | LocateStatus::ObjectHere => {}
        },
        MessageBody::CancelRequest { .. }
        | MessageBody::CloseConnection
        | MessageBody::MessageError
        | MessageBody::Fragment { .. } => {}
    }
}

/// Every context through its typed decoder; a decoded one, encoded again
/// by Armillary, decodes to the same value.
fn service_contexts(contexts: &[ServiceContext]) {
    for context in contexts {
        let _ = ServiceContext::name_of(context.id);
        let Ok(Some(known)) = context.decode_known() else {
            continue;
        };
        let again = match &known {
            KnownServiceContext::CodeSets(c) => ServiceContext::code_sets(*c, GiopVersion::V1_2),
            KnownServiceContext::BiDirIiop(points) => {
                ServiceContext::bi_dir_iiop(points, GiopVersion::V1_2)
            }
            KnownServiceContext::SendingContextRunTime(ior) => {
                ior::check_decoded(ior);
                continue;
            }
        };
        assert_eq!(
            again.decode_known().expect("an encoded context decodes"),
            Some(known),
            "a service context changed in a round trip"
        );
    }
}

fn target(address: &TargetAddress) {
    match address {
        TargetAddress::Key(_) => {}
        TargetAddress::Profile(p) => {
            if p.tag == TAG_INTERNET_IOP {
                ior::check_profile(p);
            }
        }
        TargetAddress::Reference { ior, .. } => ior::check_decoded(ior),
    }
}

/// A system exception body: decoded, it encodes and decodes back equal.
fn system_exception(r: &mut CdrReader<'_>, order: ByteOrder, version: GiopVersion) {
    let Ok(e) = SystemException::decode_body(r) else {
        return;
    };
    // In the code sets it was read with (another may not hold its text).
    let cs = CodeSets::NATIVE;
    let mut w = CdrWriter::new(order, version).with_codesets(cs);
    e.encode_body(&mut w).expect("a decoded exception encodes");
    let mut r2 = CdrReader::new(w.as_bytes(), order, version).with_codesets(cs);
    let back = SystemException::decode_body(&mut r2).expect("an encoded exception decodes");
    assert_eq!(back, e, "a system exception changed in a round trip");
}

/// A forwarding IOR: decoded, it encodes and decodes back equal.
fn forward(r: &mut CdrReader<'_>, order: ByteOrder, version: GiopVersion) {
    let Ok(ior) = Ior::decode(r) else {
        return;
    };
    ior::check_decoded(&ior);
    let cs = CodeSets::NATIVE;
    let mut w = CdrWriter::new(order, version).with_codesets(cs);
    ior.encode(&mut w).expect("a decoded IOR encodes");
    let mut r2 = CdrReader::new(w.as_bytes(), order, version).with_codesets(cs);
    let back = Ior::decode(&mut r2).expect("an encoded IOR decodes");
    assert_eq!(back, ior, "an IOR changed in a round trip");
}

/// Values of unknown types, read as the most demanding reader does: an
/// `any` (a TypeCode, then the value it describes), at the body's own
/// alignment. What decodes encodes and decodes to the same bytes.
fn values(r: &mut CdrReader<'_>, order: ByteOrder, version: GiopVersion) {
    if let Ok(any) = Any::decode(r) {
        crate::any::check_round_trip(&any, order, version);
    }
}
