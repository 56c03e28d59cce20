//! Reading GIOP messages off a raw socket, for tests that play a client or
//! a server by hand.

use std::io::{ErrorKind, Read};

/// The size of the GIOP message whose 12-byte header is `header`.
pub fn message_size(header: &[u8; 12]) -> usize {
    let size = [header[8], header[9], header[10], header[11]];
    (if header[6] & 1 == 1 {
        u32::from_le_bytes(size)
    } else {
        u32::from_be_bytes(size)
    }) as usize
}

/// Reads one whole GIOP message (header and body); `None` at the end of
/// the stream or on a reset; an error when the read fails otherwise (its
/// timeout, for one).
pub fn read_message(stream: &mut impl Read) -> std::io::Result<Option<Vec<u8>>> {
    let mut header = [0u8; 12];
    match stream.read_exact(&mut header) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
            ) =>
        {
            return Ok(None)
        }
        Err(e) => return Err(e),
    }
    let mut message = header.to_vec();
    message.resize(12 + message_size(&header), 0);
    stream.read_exact(&mut message[12..])?;
    Ok(Some(message))
}

/// Reads one whole GIOP message (header and body) into the start of
/// `buf`, allocating nothing (for tests that count allocations): its
/// length. An error at the end of the stream, or when `buf` is too small.
pub fn read_message_into(stream: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    stream.read_exact(&mut buf[..12])?;
    let header: [u8; 12] = buf[..12].try_into().expect("12 bytes");
    let end = 12 + message_size(&header);
    let body = buf.get_mut(12..end).ok_or_else(|| {
        std::io::Error::new(
            ErrorKind::InvalidData,
            "the message is larger than the buffer",
        )
    })?;
    stream.read_exact(body)?;
    Ok(end)
}

/// Cuts `bytes` into whole GIOP messages; the bytes of an unfinished last
/// one are left out.
pub fn split_messages(mut bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut messages = Vec::new();
    while bytes.len() >= 12 {
        let header: [u8; 12] = bytes[..12].try_into().expect("12 bytes");
        let end = 12 + message_size(&header);
        if bytes.len() < end {
            break;
        }
        messages.push(bytes[..end].to_vec());
        bytes = &bytes[end..];
    }
    messages
}

/// A whole two-way GIOP Request for `operation` on the object `key`, in
/// `version` and byte `order`, whose body (the arguments, encoded for the
/// body's offset in that version) is `args`.
pub fn request_message(
    version: armillary_giop::GiopVersion,
    order: armillary_giop::ByteOrder,
    request_id: u32,
    key: &[u8],
    operation: &str,
    args: &[u8],
) -> Vec<u8> {
    use armillary_giop::giop::{MessageBody, MessageBuilder, RequestHeader, TargetAddress};
    let header = MessageBody::Request(RequestHeader {
        request_id,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: operation.into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let mut b = MessageBuilder::new(version, order, &header).expect("a request header encodes");
    b.body().write_octets(args);
    b.finish(false)
}
