//! GIOP 1.0, 1.1 and 1.2 messages: the 12-byte header, the header fields of
//! every message type, and the incremental [`FrameDecoder`].
//!
//! A decoded [`Message`] is valid by construction and remembers where its
//! body starts; the body itself stays in the caller's buffer and is read
//! with a [`CdrReader`](crate::cdr::CdrReader) whose alignment counts from the first byte of the
//! GIOP header. [`MessageBuilder`] writes messages the other way round.

mod fragment;
mod frame;
mod header;
mod message;
mod service_context;

pub use fragment::fragment_message;
pub use frame::{DirectRead, Frame, FrameDecoder, FrameError, FrameLimits};
pub use header::{MessageHeader, MessageType, HEADER_SIZE, MAGIC};
pub use message::{
    LocateReplyHeader, LocateStatus, Message, MessageBody, MessageBuilder, MessageShape, ObjectKey,
    OperationName, ReplyHeader, ReplyStatus, RequestFields, RequestHeader, SyncScope,
    TargetAddress, TargetRef,
};
pub use service_context::{
    KnownServiceContext, ListenPoint, ServiceContext, BI_DIR_IIOP, CODE_SETS,
    SENDING_CONTEXT_RUN_TIME,
};

use crate::cdr::CdrError;
use crate::version::GiopVersion;

/// Why bytes are not a valid GIOP message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GiopError {
    /// The message does not start with `GIOP`.
    #[error("bad magic {0:02x?}: not a GIOP message")]
    BadMagic([u8; 4]),
    /// A GIOP version other than 1.0, 1.1 or 1.2.
    #[error("unsupported GIOP version {0}")]
    UnsupportedVersion(GiopVersion),
    /// A message type number above 7.
    #[error("unknown GIOP message type {0}")]
    UnknownMessageType(u8),
    /// A message type that does not exist in this version (Fragment in 1.0).
    #[error("{kind:?} does not exist in GIOP {version}")]
    NotInVersion {
        /// The message type.
        kind: MessageType,
        /// The version it was sent with.
        version: GiopVersion,
    },
    /// The header's size field disagrees with the bytes given.
    #[error("the header says {declared} body bytes, {actual} were given")]
    SizeMismatch {
        /// What the header says.
        declared: usize,
        /// What was given.
        actual: usize,
    },
    /// Fewer than 12 bytes.
    #[error("a GIOP header needs 12 bytes, {0} were given")]
    ShortHeader(usize),
    /// A reply, locate or addressing status out of range.
    #[error("invalid {what} {value} at offset {offset}")]
    BadEnum {
        /// Which field.
        what: &'static str,
        /// Its value.
        value: u32,
        /// Where it was read.
        offset: usize,
    },
    /// A header field could not be decoded.
    #[error("malformed {kind:?} header: {source}")]
    Cdr {
        /// The message type.
        kind: MessageType,
        /// The CDR error.
        source: CdrError,
    },
}
