//! The layout of a GIOP 1.2 LocateReply: its body (an OBJECT_FORWARD's
//! IOR) follows the header at once, at offset 20, with no padding to 8
//! (CORBA 3.0 §15.4.6.2), unlike a Request's or a Reply's. Checked against
//! bytes laid out by hand from the specification, both ways, since a round
//! trip through this crate alone cannot catch a mistake both sides share
//! (omniORB read Armillary's padded forward as a sequence too long).

use armillary_giop::cdr::CdrEncode;
use armillary_giop::giop::{LocateReplyHeader, LocateStatus, Message, MessageBody, MessageBuilder};
use armillary_giop::ior::Ior;
use armillary_giop::{ByteOrder, CdrDecode, GiopVersion};

/// A GIOP 1.2 little-endian LocateReply OBJECT_FORWARD to an IOR of type
/// `IDL:X:1.0` and no profiles, byte by byte.
fn by_hand() -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&7u32.to_le_bytes()); // request_id
    body.extend_from_slice(&2u32.to_le_bytes()); // OBJECT_FORWARD
                                                 // The IOR at offset 20: type_id (a string: length, text, NUL), then
                                                 // an empty sequence of profiles.
    body.extend_from_slice(&10u32.to_le_bytes());
    body.extend_from_slice(b"IDL:X:1.0\0");
    body.extend_from_slice(&[0, 0]); // to the next 4-aligned offset (36)
    body.extend_from_slice(&0u32.to_le_bytes());
    let mut message = b"GIOP\x01\x02\x01\x04".to_vec();
    message.extend_from_slice(&(body.len() as u32).to_le_bytes());
    message.extend_from_slice(&body);
    message
}

fn forward_ior() -> Ior {
    Ior {
        type_id: "IDL:X:1.0".into(),
        profiles: Vec::new(),
    }
}

#[test]
fn a_locate_reply_body_is_read_right_after_its_header() {
    let bytes = by_hand();
    let msg = Message::decode(&bytes).unwrap();
    assert_eq!(msg.body_offset, 20);
    let MessageBody::LocateReply(h) = &msg.body else {
        panic!("a LocateReply");
    };
    assert_eq!(h.locate_status, LocateStatus::ObjectForward);
    let ior = Ior::decode(&mut msg.body_reader(&bytes)).unwrap();
    assert_eq!(ior, forward_ior());
}

#[test]
fn a_locate_reply_body_is_written_right_after_its_header() {
    let mut b = MessageBuilder::new(
        GiopVersion::V1_2,
        ByteOrder::Little,
        &MessageBody::LocateReply(LocateReplyHeader {
            request_id: 7,
            locate_status: LocateStatus::ObjectForward,
        }),
    )
    .unwrap();
    assert_eq!(b.body_offset(), 20);
    forward_ior().encode(b.body()).unwrap();
    assert_eq!(b.finish(false), by_hand());
    // (A Reply's body, by contrast, starts 8-aligned.)
    assert_eq!(MessageBuilder::reply_body_offset(GiopVersion::V1_2), 24);
}
