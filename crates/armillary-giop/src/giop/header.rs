//! The 12-byte GIOP message header.

use super::GiopError;
use crate::version::{ByteOrder, GiopVersion};

/// The four bytes every GIOP message starts with.
pub const MAGIC: [u8; 4] = *b"GIOP";

/// The size of the GIOP header.
pub const HEADER_SIZE: usize = 12;

/// The eight GIOP message types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// A request (client → server).
    Request,
    /// A reply (server → client).
    Reply,
    /// The client no longer wants a reply.
    CancelRequest,
    /// Asks where an object is, without invoking it.
    LocateRequest,
    /// Answers a LocateRequest.
    LocateReply,
    /// The sender will send and process nothing more on this connection.
    CloseConnection,
    /// The receiver could not make sense of a message.
    MessageError,
    /// A continuation of a fragmented message (GIOP 1.1 and later).
    Fragment,
}

impl MessageType {
    /// From the header's type octet.
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => MessageType::Request,
            1 => MessageType::Reply,
            2 => MessageType::CancelRequest,
            3 => MessageType::LocateRequest,
            4 => MessageType::LocateReply,
            5 => MessageType::CloseConnection,
            6 => MessageType::MessageError,
            7 => MessageType::Fragment,
            _ => return None,
        })
    }

    /// The header's type octet.
    pub const fn to_u8(self) -> u8 {
        self as u8
    }

    /// The name used in logs and in the vectors' index (`Request`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            MessageType::Request => "Request",
            MessageType::Reply => "Reply",
            MessageType::CancelRequest => "CancelRequest",
            MessageType::LocateRequest => "LocateRequest",
            MessageType::LocateReply => "LocateReply",
            MessageType::CloseConnection => "CloseConnection",
            MessageType::MessageError => "MessageError",
            MessageType::Fragment => "Fragment",
        }
    }
}

/// A decoded GIOP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageHeader {
    /// The protocol version.
    pub version: GiopVersion,
    /// The byte order of everything after the header.
    pub byte_order: ByteOrder,
    /// More fragments follow (GIOP 1.1 and later).
    pub more_fragments: bool,
    /// The message type.
    pub message_type: MessageType,
    /// Bytes after the header.
    pub size: u32,
    /// Flag bits GIOP does not define (bits 2–7; all of bits 1–7 in 1.0),
    /// kept so that re-encoding reproduces the header exactly.
    pub undefined_flags: u8,
}

impl MessageHeader {
    /// Decodes the first 12 bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, GiopError> {
        let Some(h) = bytes.get(..HEADER_SIZE) else {
            return Err(GiopError::ShortHeader(bytes.len()));
        };
        let magic = [h[0], h[1], h[2], h[3]];
        if magic != MAGIC {
            return Err(GiopError::BadMagic(magic));
        }
        let version = GiopVersion::new(h[4], h[5]);
        if !version.is_supported() {
            return Err(GiopError::UnsupportedVersion(version));
        }
        let flags = h[6];
        let message_type = MessageType::from_u8(h[7]).ok_or(GiopError::UnknownMessageType(h[7]))?;
        if message_type == MessageType::Fragment && version == GiopVersion::V1_0 {
            return Err(GiopError::NotInVersion {
                kind: message_type,
                version,
            });
        }
        let byte_order = ByteOrder::from_flag(flags);
        let size_bytes = [h[8], h[9], h[10], h[11]];
        let size = match byte_order {
            ByteOrder::Big => u32::from_be_bytes(size_bytes),
            ByteOrder::Little => u32::from_le_bytes(size_bytes),
        };
        // GIOP 1.0's flags octet is only the byte order boolean.
        let defined = if version == GiopVersion::V1_0 { 1 } else { 3 };
        Ok(MessageHeader {
            version,
            byte_order,
            more_fragments: version != GiopVersion::V1_0 && flags & 2 != 0,
            message_type,
            size,
            undefined_flags: flags & !defined,
        })
    }

    /// The 12 header bytes.
    pub fn encode(&self) -> [u8; HEADER_SIZE] {
        let mut flags = self.byte_order.flag() | self.undefined_flags;
        if self.more_fragments && self.version != GiopVersion::V1_0 {
            flags |= 2;
        }
        let size = match self.byte_order {
            ByteOrder::Big => self.size.to_be_bytes(),
            ByteOrder::Little => self.size.to_le_bytes(),
        };
        [
            MAGIC[0],
            MAGIC[1],
            MAGIC[2],
            MAGIC[3],
            self.version.major,
            self.version.minor,
            flags,
            self.message_type.to_u8(),
            size[0],
            size[1],
            size[2],
            size[3],
        ]
    }

    /// The whole message length, header included.
    pub fn message_len(&self) -> usize {
        HEADER_SIZE + self.size as usize
    }
}
