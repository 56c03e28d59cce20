//! Splitting an outgoing message into GIOP 1.1 / 1.2 fragments.

use super::header::{MessageHeader, MessageType, HEADER_SIZE};
use super::GiopError;
use crate::version::GiopVersion;

/// Splits a whole encoded message into wire messages of at most
/// `max_size` bytes each (rounded down to a multiple of 8, at least 32).
/// The first keeps the original header with more-fragments set; the rest
/// are Fragment messages (carrying the request id in GIOP 1.2). Every
/// piece but the last carries a multiple of 8 bytes of the logical stream,
/// so no primitive value is split and alignment is preserved. A message
/// that fits comes back whole, and so does every GIOP 1.0 and 1.1 message:
/// 1.0 has no fragments, and 1.1 aligns each fragment's data relative to
/// the fragment's own header, so an encoded stream can only be split where
/// its types are known (an unfragmented message is always allowed).
pub fn fragment_message(message: &[u8], max_size: usize) -> Result<Vec<Vec<u8>>, GiopError> {
    let header = MessageHeader::decode(message)?;
    let max_size = (max_size.max(32)) & !7;
    if message.len() <= max_size || header.version < GiopVersion::V1_2 {
        return Ok(vec![message.to_vec()]);
    }
    let id_bytes = message.get(HEADER_SIZE..HEADER_SIZE + 4).unwrap_or(&[0; 4]);
    let mut pieces = Vec::new();
    let first_len = max_size;
    let mut first = message[..first_len].to_vec();
    let mut rest = &message[first_len..];
    let patch = |piece: &mut Vec<u8>, kind: MessageType, more: bool| {
        let h = MessageHeader {
            version: header.version,
            byte_order: header.byte_order,
            more_fragments: more,
            message_type: kind,
            size: (piece.len() - HEADER_SIZE) as u32,
            undefined_flags: 0,
        };
        piece[..HEADER_SIZE].copy_from_slice(&h.encode());
    };
    patch(&mut first, header.message_type, true);
    pieces.push(first);
    // A 1.2 Fragment carries the request id before its data.
    let overhead = HEADER_SIZE + 4;
    // Fragment data lengths are multiples of 8 except the last.
    let chunk = (max_size - overhead) & !7;
    while !rest.is_empty() {
        let n = rest.len().min(chunk);
        let more = n < rest.len();
        let mut piece = vec![0u8; HEADER_SIZE];
        piece.extend_from_slice(id_bytes);
        piece.extend_from_slice(&rest[..n]);
        patch(&mut piece, MessageType::Fragment, more);
        pieces.push(piece);
        rest = &rest[n..];
    }
    Ok(pieces)
}
