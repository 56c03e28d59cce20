//! Entry points for the fuzz targets in `fuzz/`, kept here so that the
//! stable test suite replays every saved input through exactly the same
//! code (`tests/fuzz_regressions.rs`). Each function must never panic on
//! any input; each checks that whatever decodes re-encodes faithfully.

use crate::giop::{FrameDecoder, FrameLimits, Message};

/// Cuts `data` into pieces (sizes taken from its first bytes), feeds them
/// through a frame decoder with small limits, decodes every frame, and
/// checks that decoded messages re-encode to the same bytes.
pub fn frame_decoder(data: &[u8]) {
    let (sizes, stream) = data.split_at(data.len().min(4));
    let mut decoder = FrameDecoder::new(FrameLimits {
        max_message_size: 1 << 16,
        max_fragments: 64,
        max_pending_bytes: 1 << 17,
        max_reassemblies: 8,
    });
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        let step = usize::from(sizes.get(i % sizes.len().max(1)).copied().unwrap_or(64)).max(1);
        let n = step.min(stream.len() - at);
        i += 1;
        if decoder.handle_bytes(&stream[at..at + n]).is_err() {
            return;
        }
        at += n;
        while let Some(frame) = decoder.poll_frame() {
            if let Ok((_, mut body)) = frame.decode() {
                let msg = Message::decode_exact(&frame.bytes).expect("a decoded frame decodes");
                let again = msg
                    .encode(&frame.bytes[msg.body_offset..])
                    .expect("a decoded message re-encodes");
                assert_eq!(again, frame.bytes, "re-encoding changed the message");
                // Read a little of the body, as a skeleton would.
                let _ = body.read_string();
                let _ = body.read_longlong();
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
