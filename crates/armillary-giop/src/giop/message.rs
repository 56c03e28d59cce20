//! The header fields of every GIOP message type, decoding a whole message
//! and building new ones.

use super::header::{MessageHeader, MessageType, HEADER_SIZE};
use super::service_context::ServiceContext;
use super::GiopError;
use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, SplicedBytes};
use crate::ior::{Ior, TaggedProfile};
use crate::version::{ByteOrder, GiopVersion};
use compact_str::CompactString;
use smallvec::SmallVec;

/// An object key as a decoded request carries it: kept inline up to 48
/// octets (Armillary's own keys, omniORB's, most others'), so that
/// decoding a request allocates nothing for it. Derefs to `[u8]`; made
/// from a `Vec<u8>` or a slice with `.into()` / `ObjectKey::from_slice`.
pub type ObjectKey = SmallVec<[u8; 48]>;

/// An operation name as a decoded request carries it: kept inline up to
/// 24 bytes, so that decoding a request allocates nothing for it. Derefs
/// to `str`; made from a `&str` or a `String` with `.into()`.
pub type OperationName = CompactString;

/// How a request names its target (`GIOP::TargetAddress`; GIOP 1.0 and
/// 1.1 only have the object key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TargetAddress {
    /// `KeyAddr`: the object key.
    Key(ObjectKey),
    /// `ProfileAddr`: the profile the client used.
    Profile(TaggedProfile),
    /// `ReferenceAddr`: the whole IOR and which profile was used.
    Reference {
        /// Index of the profile used.
        selected_profile_index: u32,
        /// The IOR.
        ior: Ior,
    },
}

impl TargetAddress {
    /// The object key, when the address is a key.
    pub fn object_key(&self) -> Option<&[u8]> {
        match self {
            TargetAddress::Key(k) => Some(k),
            _ => None,
        }
    }

    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        self.as_target_ref().encode(w)
    }

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let offset = r.position();
        match r.read_short()? {
            0 => Ok(TargetAddress::Key(ObjectKey::from_slice(
                r.read_octet_seq()?,
            ))),
            1 => Ok(TargetAddress::Profile(TaggedProfile::decode(r)?)),
            2 => Ok(TargetAddress::Reference {
                selected_profile_index: r.read_ulong()?,
                ior: Ior::decode(r)?,
            }),
            _ => Err(CdrError::Invalid {
                offset,
                what: "TargetAddress discriminator is not 0, 1 or 2",
            }),
        }
    }
}

/// The oneway synchronisation a request asks for (`Messaging::SyncScope`),
/// carried in GIOP 1.2's response flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyncScope {
    /// No reply; the call returns once the request is handed to the
    /// transport (`SYNC_NONE` and `SYNC_WITH_TRANSPORT`): flags 0.
    None,
    /// A reply once the server has the request, before the upcall
    /// (`SYNC_WITH_SERVER`): flags 1.
    WithServer,
    /// A reply after the upcall (`SYNC_WITH_TARGET`, and every two-way
    /// call): flags 3.
    WithTarget,
}

impl SyncScope {
    /// The GIOP 1.2 response flags octet.
    pub const fn response_flags(self) -> u8 {
        match self {
            SyncScope::None => 0,
            SyncScope::WithServer => 1,
            SyncScope::WithTarget => 3,
        }
    }
}

/// A request's target as a sender writes it: borrowed from the reference
/// it is sent on, so that building a request copies none of it.
#[derive(Debug, Clone, Copy)]
pub enum TargetRef<'a> {
    /// `KeyAddr`: the object key.
    Key(&'a [u8]),
    /// `ProfileAddr`: the profile the client used.
    Profile(&'a TaggedProfile),
    /// `ReferenceAddr`: the whole IOR and which profile was used.
    Reference {
        /// Index of the profile used.
        selected_profile_index: u32,
        /// The IOR.
        ior: &'a Ior,
    },
}

impl TargetRef<'_> {
    fn encode(self, w: &mut CdrWriter) -> Result<(), CdrError> {
        match self {
            TargetRef::Key(key) => {
                w.write_short(0);
                w.write_octet_seq(key)
            }
            TargetRef::Profile(p) => {
                w.write_short(1);
                p.encode(w)
            }
            TargetRef::Reference {
                selected_profile_index,
                ior,
            } => {
                w.write_short(2);
                w.write_ulong(selected_profile_index);
                ior.encode(w)
            }
        }
    }
}

impl TargetAddress {
    /// The address, borrowed (what [`RequestFields`] carries).
    pub fn as_target_ref(&self) -> TargetRef<'_> {
        match self {
            TargetAddress::Key(key) => TargetRef::Key(key),
            TargetAddress::Profile(p) => TargetRef::Profile(p),
            TargetAddress::Reference {
                selected_profile_index,
                ior,
            } => TargetRef::Reference {
                selected_profile_index: *selected_profile_index,
                ior,
            },
        }
    }
}

/// A Request header's fields as a sender writes them
/// ([`MessageBuilder::request`]): borrowed, so that a request is built
/// without copying its operation name, target or contexts.
/// [`RequestHeader`] owns the same fields, as a receiver decodes them.
#[derive(Debug, Clone, Copy)]
pub struct RequestFields<'a> {
    /// Matches the reply to the request.
    pub request_id: u32,
    /// GIOP 1.2 response flags (see [`RequestHeader::response_flags`]).
    pub response_flags: u8,
    /// The three octets after the response flag.
    pub reserved: [u8; 3],
    /// The target (a key in 1.0/1.1).
    pub target: TargetRef<'a>,
    /// The operation name.
    pub operation: &'a str,
    /// Service contexts, in order.
    pub service_contexts: &'a [ServiceContext],
    /// The requesting principal (1.0/1.1; usually empty).
    pub requesting_principal: &'a [u8],
}

impl RequestHeader {
    /// The header's fields, borrowed.
    pub fn fields(&self) -> RequestFields<'_> {
        RequestFields {
            request_id: self.request_id,
            response_flags: self.response_flags,
            reserved: self.reserved,
            target: self.target.as_target_ref(),
            operation: &self.operation,
            service_contexts: &self.service_contexts,
            requesting_principal: &self.requesting_principal,
        }
    }
}

/// The header fields of a Request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestHeader {
    /// Matches the reply to the request.
    pub request_id: u32,
    /// GIOP 1.2 response flags (bit 0: a reply is expected at some point;
    /// bit 1: after the upcall). In 1.0/1.1, `response_expected` maps to 3
    /// and its absence to 0.
    pub response_flags: u8,
    /// The three octets after the response flag: reserved in 1.1 and 1.2,
    /// alignment padding in 1.0; kept for byte-exact re-encoding (some ORBs
    /// leave garbage there).
    pub reserved: [u8; 3],
    /// The target (always `Key` in 1.0/1.1).
    pub target: TargetAddress,
    /// The operation name.
    pub operation: OperationName,
    /// Service contexts, in order.
    pub service_contexts: Vec<ServiceContext>,
    /// The requesting principal (1.0/1.1; deprecated, usually empty).
    pub requesting_principal: Vec<u8>,
}

impl RequestHeader {
    /// Whether the client waits for a reply.
    pub fn response_expected(&self) -> bool {
        self.response_flags & 1 != 0
    }

    /// The oneway sync scope the flags ask for.
    pub fn sync_scope(&self) -> SyncScope {
        match self.response_flags & 3 {
            0 | 2 => SyncScope::None,
            1 => SyncScope::WithServer,
            _ => SyncScope::WithTarget,
        }
    }

    /// The object key, for every target form that carries one directly.
    pub fn object_key(&self) -> Option<&[u8]> {
        self.target.object_key()
    }
}

/// The status of a Reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyStatus {
    /// The body holds the results.
    NoException,
    /// The body holds a user exception.
    UserException,
    /// The body holds a system exception.
    SystemException,
    /// The body holds an IOR to retry with.
    LocationForward,
    /// As `LocationForward`, and the client should use the new IOR for
    /// good (GIOP 1.2).
    LocationForwardPerm,
    /// The body holds the addressing disposition the server needs (1.2).
    NeedsAddressingMode,
}

impl ReplyStatus {
    const ALL: [ReplyStatus; 6] = [
        ReplyStatus::NoException,
        ReplyStatus::UserException,
        ReplyStatus::SystemException,
        ReplyStatus::LocationForward,
        ReplyStatus::LocationForwardPerm,
        ReplyStatus::NeedsAddressingMode,
    ];

    /// The CDR value.
    pub const fn to_u32(self) -> u32 {
        self as u32
    }

    /// The IDL name (`NO_EXCEPTION`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            ReplyStatus::NoException => "NO_EXCEPTION",
            ReplyStatus::UserException => "USER_EXCEPTION",
            ReplyStatus::SystemException => "SYSTEM_EXCEPTION",
            ReplyStatus::LocationForward => "LOCATION_FORWARD",
            ReplyStatus::LocationForwardPerm => "LOCATION_FORWARD_PERM",
            ReplyStatus::NeedsAddressingMode => "NEEDS_ADDRESSING_MODE",
        }
    }
}

/// The header fields of a Reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyHeader {
    /// The request this answers.
    pub request_id: u32,
    /// How the request ended.
    pub reply_status: ReplyStatus,
    /// Service contexts, in order.
    pub service_contexts: Vec<ServiceContext>,
}

/// The status of a LocateReply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocateStatus {
    /// No such object.
    UnknownObject,
    /// The object is here.
    ObjectHere,
    /// The body holds an IOR to use instead.
    ObjectForward,
    /// As `ObjectForward`, for good (1.2).
    ObjectForwardPerm,
    /// The body holds a system exception (1.2).
    LocSystemException,
    /// The body holds the addressing disposition needed (1.2).
    LocNeedsAddressingMode,
}

impl LocateStatus {
    const ALL: [LocateStatus; 6] = [
        LocateStatus::UnknownObject,
        LocateStatus::ObjectHere,
        LocateStatus::ObjectForward,
        LocateStatus::ObjectForwardPerm,
        LocateStatus::LocSystemException,
        LocateStatus::LocNeedsAddressingMode,
    ];

    /// The IDL name (`OBJECT_HERE`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            LocateStatus::UnknownObject => "UNKNOWN_OBJECT",
            LocateStatus::ObjectHere => "OBJECT_HERE",
            LocateStatus::ObjectForward => "OBJECT_FORWARD",
            LocateStatus::ObjectForwardPerm => "OBJECT_FORWARD_PERM",
            LocateStatus::LocSystemException => "LOC_SYSTEM_EXCEPTION",
            LocateStatus::LocNeedsAddressingMode => "LOC_NEEDS_ADDRESSING_MODE",
        }
    }
}

/// The header fields of a LocateReply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocateReplyHeader {
    /// The LocateRequest this answers.
    pub request_id: u32,
    /// Where the object is.
    pub locate_status: LocateStatus,
}

/// What a message is, with its decoded header fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MessageBody {
    /// A Request.
    Request(RequestHeader),
    /// A Reply.
    Reply(ReplyHeader),
    /// A CancelRequest.
    CancelRequest {
        /// The request no longer wanted.
        request_id: u32,
    },
    /// A LocateRequest.
    LocateRequest {
        /// Matches the LocateReply.
        request_id: u32,
        /// The object asked about.
        target: TargetAddress,
    },
    /// A LocateReply.
    LocateReply(LocateReplyHeader),
    /// A CloseConnection.
    CloseConnection,
    /// A MessageError.
    MessageError,
    /// A Fragment; GIOP 1.2 fragments carry the request id.
    Fragment {
        /// The request id (1.2 only).
        request_id: Option<u32>,
    },
}

impl MessageBody {
    /// The message type these fields belong to.
    pub fn message_type(&self) -> MessageType {
        match self {
            MessageBody::Request(_) => MessageType::Request,
            MessageBody::Reply(_) => MessageType::Reply,
            MessageBody::CancelRequest { .. } => MessageType::CancelRequest,
            MessageBody::LocateRequest { .. } => MessageType::LocateRequest,
            MessageBody::LocateReply(_) => MessageType::LocateReply,
            MessageBody::CloseConnection => MessageType::CloseConnection,
            MessageBody::MessageError => MessageType::MessageError,
            MessageBody::Fragment { .. } => MessageType::Fragment,
        }
    }

    /// The request id the message carries, if any.
    pub fn request_id(&self) -> Option<u32> {
        match self {
            MessageBody::Request(h) => Some(h.request_id),
            MessageBody::Reply(h) => Some(h.request_id),
            MessageBody::CancelRequest { request_id }
            | MessageBody::LocateRequest { request_id, .. } => Some(*request_id),
            MessageBody::LocateReply(h) => Some(h.request_id),
            MessageBody::Fragment { request_id } => *request_id,
            MessageBody::CloseConnection | MessageBody::MessageError => None,
        }
    }
}

/// A decoded GIOP message: header, header fields, and where the body
/// starts in the buffer it was decoded from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The 12-byte header.
    pub header: MessageHeader,
    /// The message type's header fields.
    pub body: MessageBody,
    /// Offset of the body (or, for a Fragment, of its data) from the first
    /// byte of the GIOP header.
    pub body_offset: usize,
    /// Alignment gaps in the header fields that did not hold zeros, as
    /// (offset, byte): omniORB leaves stale buffer bytes there. Filled in
    /// only by [`decode_exact`](Self::decode_exact), so that
    /// [`encode`](Self::encode) reproduces the message byte for byte.
    pub stale_padding: Vec<(usize, u8)>,
}

fn read_contexts(r: &mut CdrReader<'_>) -> Result<Vec<ServiceContext>, CdrError> {
    match r.read_seq_len(ServiceContext::MIN_SIZE)? {
        // Most requests and replies carry none.
        0 => Ok(Vec::new()),
        n => ServiceContext::decode_vec(r, n),
    }
}

fn status<T: Copy>(
    all: &[T],
    r: &mut CdrReader<'_>,
    what: &'static str,
) -> Result<Result<T, GiopError>, CdrError> {
    let offset = r.position();
    let value = r.read_ulong()?;
    Ok(all.get(value as usize).copied().ok_or(GiopError::BadEnum {
        what,
        value,
        offset,
    }))
}

/// Whether a message type's body is aligned to 8 in GIOP 1.2: a Request's
/// and a Reply's are; a LocateReply's body follows its header at once
/// (CORBA 3.0 §15.4.6.2: "marshaled immediately following the
/// LocateReply header", as omniORB and TAO write and read it).
fn body_aligned(version: GiopVersion, kind: MessageType) -> bool {
    version >= GiopVersion::V1_2 && matches!(kind, MessageType::Request | MessageType::Reply)
}

/// The 12-byte header of the message `bytes` (its size checked against
/// them), and a reader at its header fields that honours the GIOP 1.1
/// `fragment_starts` (see [`Message::decode_fragmented`]).
#[inline(always)]
fn header_fields<'a>(
    bytes: &'a [u8],
    fragment_starts: &'a [usize],
) -> Result<(MessageHeader, CdrReader<'a>), GiopError> {
    let header = MessageHeader::decode(bytes)?;
    let actual = bytes.len() - HEADER_SIZE;
    if header.size as usize != actual {
        return Err(GiopError::SizeMismatch {
            declared: header.size as usize,
            actual,
        });
    }
    let r = CdrReader::new(bytes, header.byte_order, header.version)
        .with_position(HEADER_SIZE)
        .with_fragment_starts(fragment_starts);
    Ok((header, r))
}

/// A Reply's header fields, read by `r` (GIOP `v`).
#[inline(always)]
fn read_reply(
    r: &mut CdrReader<'_>,
    v: GiopVersion,
) -> Result<Result<ReplyHeader, GiopError>, CdrError> {
    Ok(Ok(if v >= GiopVersion::V1_2 {
        let request_id = r.read_ulong()?;
        let reply_status = match status(&ReplyStatus::ALL, r, "reply status")? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        ReplyHeader {
            request_id,
            reply_status,
            service_contexts: read_contexts(r)?,
        }
    } else {
        let service_contexts = read_contexts(r)?;
        let request_id = r.read_ulong()?;
        let reply_status = match status(&ReplyStatus::ALL[..4], r, "reply status")? {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        ReplyHeader {
            request_id,
            reply_status,
            service_contexts,
        }
    }))
}

/// The offset of the body of the message `header` heads, `r` having read
/// its header fields: GIOP 1.2 aligns a Request's and a Reply's body on
/// 8 (when there is one).
#[inline(always)]
fn body_start(r: &mut CdrReader<'_>, header: &MessageHeader) -> Result<usize, GiopError> {
    let kind = header.message_type;
    if body_aligned(header.version, kind) && !r.is_empty() {
        r.align(8)
            .map_err(|source| GiopError::Cdr { kind, source })?;
    }
    Ok(r.index())
}

impl Message {
    /// Decodes a whole message (header included, exactly `12 + size`
    /// bytes).
    pub fn decode(bytes: &[u8]) -> Result<Message, GiopError> {
        Self::decode_fragmented(bytes, &[])
    }

    /// Decodes a GIOP 1.1 message reassembled from fragments whose data
    /// starts at `fragment_starts` (see [`Frame`](super::Frame)): header
    /// fields after a fragment boundary are aligned from that fragment.
    pub fn decode_fragmented(
        bytes: &[u8],
        fragment_starts: &[usize],
    ) -> Result<Message, GiopError> {
        let (header, mut r) = header_fields(bytes, fragment_starts)?;
        let kind = header.message_type;
        let v = header.version;
        let cdr = |source| GiopError::Cdr { kind, source };
        let body = (|| -> Result<Result<MessageBody, GiopError>, CdrError> {
            Ok(Ok(match kind {
                MessageType::Request => {
                    let h = if v >= GiopVersion::V1_2 {
                        let request_id = r.read_ulong()?;
                        let response_flags = r.read_octet()?;
                        let reserved = r.read_octets(3)?;
                        let target = TargetAddress::decode(&mut r)?;
                        let operation = read_operation(&mut r)?;
                        let service_contexts = read_contexts(&mut r)?;
                        RequestHeader {
                            request_id,
                            response_flags,
                            reserved: [reserved[0], reserved[1], reserved[2]],
                            target,
                            operation,
                            service_contexts,
                            requesting_principal: Vec::new(),
                        }
                    } else {
                        let service_contexts = read_contexts(&mut r)?;
                        let request_id = r.read_ulong()?;
                        let response_expected = r.read_bool()?;
                        // The boolean sits right after an aligned ulong, so in
                        // 1.0 the key's length is preceded by exactly three
                        // padding octets: the same place as 1.1's reserved.
                        let mut reserved = [0u8; 3];
                        reserved.copy_from_slice(r.read_octets(3)?);
                        let key = ObjectKey::from_slice(r.read_octet_seq()?);
                        let operation = read_operation(&mut r)?;
                        let requesting_principal = r.read_octet_seq()?.to_vec();
                        RequestHeader {
                            request_id,
                            response_flags: if response_expected { 3 } else { 0 },
                            reserved,
                            target: TargetAddress::Key(key),
                            operation,
                            service_contexts,
                            requesting_principal,
                        }
                    };
                    MessageBody::Request(h)
                }
                MessageType::Reply => match read_reply(&mut r, v)? {
                    Ok(h) => MessageBody::Reply(h),
                    Err(e) => return Ok(Err(e)),
                },
                MessageType::CancelRequest => MessageBody::CancelRequest {
                    request_id: r.read_ulong()?,
                },
                MessageType::LocateRequest => {
                    let request_id = r.read_ulong()?;
                    let target = if v >= GiopVersion::V1_2 {
                        TargetAddress::decode(&mut r)?
                    } else {
                        TargetAddress::Key(ObjectKey::from_slice(r.read_octet_seq()?))
                    };
                    MessageBody::LocateRequest { request_id, target }
                }
                MessageType::LocateReply => {
                    let request_id = r.read_ulong()?;
                    let statuses = if v >= GiopVersion::V1_2 {
                        &LocateStatus::ALL[..]
                    } else {
                        &LocateStatus::ALL[..3]
                    };
                    let locate_status = match status(statuses, &mut r, "locate status")? {
                        Ok(s) => s,
                        Err(e) => return Ok(Err(e)),
                    };
                    MessageBody::LocateReply(LocateReplyHeader {
                        request_id,
                        locate_status,
                    })
                }
                MessageType::CloseConnection => MessageBody::CloseConnection,
                MessageType::MessageError => MessageBody::MessageError,
                MessageType::Fragment => MessageBody::Fragment {
                    request_id: if v >= GiopVersion::V1_2 {
                        Some(r.read_ulong()?)
                    } else {
                        None
                    },
                },
            }))
        })()
        .map_err(cdr)??;
        Ok(Message {
            body_offset: body_start(&mut r, &header)?,
            header,
            body,
            stale_padding: Vec::new(),
        })
    }

    /// What [`decode_fragmented`](Self::decode_fragmented) finds in a
    /// Reply, without the [`MessageBody`] around it (a client reading its
    /// reply needs no more): the 12-byte header, the reply's header fields
    /// and the body's offset; `Ok(None)` for a message of another type.
    pub fn decode_reply(
        bytes: &[u8],
        fragment_starts: &[usize],
    ) -> Result<Option<(MessageHeader, ReplyHeader, usize)>, GiopError> {
        let (header, mut r) = header_fields(bytes, fragment_starts)?;
        if header.message_type != MessageType::Reply {
            return Ok(None);
        }
        let reply = read_reply(&mut r, header.version).map_err(|source| GiopError::Cdr {
            kind: MessageType::Reply,
            source,
        })??;
        let body_offset = body_start(&mut r, &header)?;
        Ok(Some((header, reply, body_offset)))
    }

    /// The request id of the message whose first bytes are `head` (its
    /// 12-byte header at least), read from its header fields alone: for a
    /// message not held whole, such as one refused as too large. `None`
    /// when `head` ends before the id, or the message type carries none.
    pub fn peek_request_id(head: &[u8]) -> Option<u32> {
        let header = MessageHeader::decode(head).ok()?;
        let v = header.version;
        let mut r = CdrReader::new(head, header.byte_order, v).with_position(HEADER_SIZE);
        match header.message_type {
            // GIOP 1.0 and 1.1 put the service contexts first.
            MessageType::Request | MessageType::Reply if v < GiopVersion::V1_2 => {
                read_contexts(&mut r).ok()?;
                r.read_ulong().ok()
            }
            MessageType::Fragment if v < GiopVersion::V1_2 => None,
            MessageType::CloseConnection | MessageType::MessageError => None,
            _ => r.read_ulong().ok(),
        }
    }

    /// As [`decode`](Self::decode), and also records the non-zero padding
    /// bytes of the header fields, so that [`encode`](Self::encode) gives
    /// back exactly `bytes` (for tools and tests; the ORB does not need it).
    pub fn decode_exact(bytes: &[u8]) -> Result<Message, GiopError> {
        let mut msg = Self::decode(bytes)?;
        msg.stale_padding = stale_padding(&msg.header, &msg.body, &bytes[..msg.body_offset]);
        Ok(msg)
    }

    /// A reader over the body in `bytes` (the buffer this message was
    /// decoded from), with alignment counted from the GIOP header.
    pub fn body_reader<'a>(&self, bytes: &'a [u8]) -> CdrReader<'a> {
        CdrReader::new(bytes, self.header.byte_order, self.header.version)
            .with_position(self.body_offset)
    }

    /// Encodes this message again with `body` after its header fields
    /// (and any stale padding it was received with).
    pub fn encode(&self, body: &[u8]) -> Result<Vec<u8>, CdrError> {
        let b = MessageBuilder::new(self.header.version, self.header.byte_order, &self.body)?;
        // The body goes exactly where it was (a peer may have put it after
        // odd padding); the header is rebuilt around it.
        let mut bytes = b.w.into_bytes();
        bytes.resize(self.body_offset, 0);
        bytes.extend_from_slice(body);
        let header = MessageHeader {
            size: (bytes.len() - HEADER_SIZE) as u32,
            ..self.header
        };
        bytes[..HEADER_SIZE].copy_from_slice(&header.encode());
        for &(at, byte) in &self.stale_padding {
            if let Some(slot) = bytes.get_mut(at) {
                *slot = byte;
            }
        }
        Ok(bytes)
    }
}

/// The bytes where `original` (a message's header and header fields)
/// differs from a fresh encoding of the same fields: stale padding.
fn stale_padding(header: &MessageHeader, body: &MessageBody, original: &[u8]) -> Vec<(usize, u8)> {
    let Ok(mut fresh) = MessageBuilder::new(header.version, header.byte_order, body) else {
        return Vec::new();
    };
    // Force the alignment padding to be kept, then compare the prefix.
    if original.len() > fresh.fields_end {
        fresh.w.truncate(original.len().min(fresh.body_start));
    }
    let fresh = fresh.w.into_bytes();
    original
        .iter()
        .zip(&fresh)
        .enumerate()
        .skip(HEADER_SIZE)
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, _))| (i, *a))
        .collect()
}

/// Writes a Request's header fields (after the 12-byte header).
fn write_request(w: &mut CdrWriter, h: &RequestFields<'_>) -> Result<(), CdrError> {
    if w.version() >= GiopVersion::V1_2 {
        w.write_ulong(h.request_id);
        w.write_octet(h.response_flags);
        w.write_octets(&h.reserved);
        h.target.encode(w)?;
        w.write_string(h.operation)?;
        h.service_contexts.encode(w)?;
    } else {
        h.service_contexts.encode(w)?;
        w.write_ulong(h.request_id);
        w.write_bool(h.response_flags & 1 != 0);
        w.write_octets(&h.reserved);
        let TargetRef::Key(key) = h.target else {
            return Err(CdrError::Invalid {
                offset: w.position(),
                what: "GIOP 1.0/1.1 requests can only address an object key",
            });
        };
        w.write_octet_seq(key)?;
        w.write_string(h.operation)?;
        w.write_octet_seq(h.requesting_principal)?;
    }
    Ok(())
}

/// Reads a request's operation name: an ASCII name (every IDL
/// identifier) without allocating, any other as `read_string` decodes it.
fn read_operation(r: &mut CdrReader<'_>) -> Result<OperationName, CdrError> {
    let start = r.index();
    let bytes = r.read_string_bytes()?;
    match std::str::from_utf8(bytes) {
        Ok(text) if text.is_ascii() => Ok(OperationName::from(text)),
        _ => {
            r.rewind_to(start);
            r.read_string().map(OperationName::from)
        }
    }
}

/// The room a message's buffer starts with: a request's or reply's header
/// and a small body fit, so that building one allocates once.
const MESSAGE_CAPACITY: usize = 256;

/// What a [`MessageBuilder`] split by
/// [`into_parts`](MessageBuilder::into_parts) needs besides its writer to
/// finish the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageShape {
    fields_end: usize,
    body_start: usize,
    kind: MessageType,
    version: GiopVersion,
}

impl MessageShape {
    /// Where the body starts.
    pub fn body_offset(&self) -> usize {
        self.body_start
    }
}

/// Writes one GIOP message: the header, the header fields, then whatever
/// body the caller writes with [`body`](Self::body).
///
/// Its body's writer copies what it is given unless set to splice
/// ([`CdrWriter::set_splicing`], as the ORB's requests and replies are,
/// from [`SHARED_OCTETS_MIN`](crate::cdr::SHARED_OCTETS_MIN)): then a shared octet sequence that large is
/// left where it lies, and [`finish_spliced`](Self::finish_spliced) hands
/// the message out as its pieces, for a vectored write;
/// [`finish`](Self::finish) copies them into one buffer.
#[derive(Debug)]
pub struct MessageBuilder {
    w: CdrWriter,
    fields_end: usize,
    body_start: usize,
    kind: MessageType,
    version: GiopVersion,
}

impl MessageBuilder {
    /// Starts a message of `version` and byte `order` with these header
    /// fields. Fails only if a field cannot be encoded (a non-Latin-1
    /// operation name, say).
    pub fn new(
        version: GiopVersion,
        order: ByteOrder,
        fields: &MessageBody,
    ) -> Result<Self, CdrError> {
        Self::start(version, order, fields.message_type(), |w| {
            let v = version;
            match fields {
                MessageBody::Request(h) => write_request(w, &h.fields())?,
                MessageBody::Reply(h) => {
                    if v >= GiopVersion::V1_2 {
                        w.write_ulong(h.request_id);
                        w.write_ulong(h.reply_status.to_u32());
                        h.service_contexts.encode(w)?;
                    } else {
                        h.service_contexts.encode(w)?;
                        w.write_ulong(h.request_id);
                        w.write_ulong(h.reply_status.to_u32());
                    }
                }
                MessageBody::CancelRequest { request_id } => w.write_ulong(*request_id),
                MessageBody::LocateRequest { request_id, target } => {
                    w.write_ulong(*request_id);
                    if v >= GiopVersion::V1_2 {
                        target.encode(w)?;
                    } else {
                        let key = target.object_key().ok_or(CdrError::Invalid {
                            offset: w.position(),
                            what: "GIOP 1.0/1.1 locate requests can only address an object key",
                        })?;
                        w.write_octet_seq(key)?;
                    }
                }
                MessageBody::LocateReply(h) => {
                    w.write_ulong(h.request_id);
                    w.write_ulong(h.locate_status as u32);
                }
                MessageBody::CloseConnection | MessageBody::MessageError => {}
                MessageBody::Fragment { request_id } => {
                    if let (true, Some(id)) = (v >= GiopVersion::V1_2, request_id) {
                        w.write_ulong(*id);
                    }
                }
            }
            Ok(())
        })
    }

    /// Starts a Request with these header fields, borrowed (what a client
    /// sends: nothing of its reference or operation is copied). Fails as
    /// [`new`](Self::new) does.
    pub fn request(
        version: GiopVersion,
        order: ByteOrder,
        fields: &RequestFields<'_>,
    ) -> Result<Self, CdrError> {
        Self::start(version, order, MessageType::Request, |w| {
            write_request(w, fields)
        })
    }

    /// Starts a message of `kind` whose header fields `fields` writes.
    fn start(
        version: GiopVersion,
        order: ByteOrder,
        kind: MessageType,
        fields: impl FnOnce(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<Self, CdrError> {
        let mut w = CdrWriter::with_capacity(order, version, MESSAGE_CAPACITY);
        w.write_octets(&[0; HEADER_SIZE]);
        fields(&mut w)?;
        let fields_end = w.len();
        if body_aligned(version, kind) {
            w.align(8);
        }
        let body_start = w.len();
        Ok(MessageBuilder {
            w,
            fields_end,
            body_start,
            kind,
            version,
        })
    }

    /// Where the body of a Reply with no service contexts starts, as
    /// [`reply`](Self::reply) would place it, without building one: the
    /// header, the three 4-byte fields (request id, status, an empty
    /// context list), aligned to 8 where the version aligns bodies.
    pub fn reply_body_offset(version: GiopVersion) -> usize {
        let fields_end = HEADER_SIZE + 12;
        match body_aligned(version, MessageType::Reply) {
            true => fields_end.next_multiple_of(8),
            false => fields_end,
        }
    }

    /// Starts a Reply with no service contexts: unlike [`new`](Self::new)
    /// it cannot fail (its header fields are two integers and an empty
    /// list), so a server can always answer a request, if only with a
    /// system exception.
    pub fn reply(
        version: GiopVersion,
        order: ByteOrder,
        request_id: u32,
        reply_status: ReplyStatus,
    ) -> Self {
        let mut w = CdrWriter::with_capacity(order, version, MESSAGE_CAPACITY);
        w.write_octets(&[0; HEADER_SIZE]);
        if version >= GiopVersion::V1_2 {
            w.write_ulong(request_id);
            w.write_ulong(reply_status.to_u32());
            w.write_ulong(0);
        } else {
            w.write_ulong(0);
            w.write_ulong(request_id);
            w.write_ulong(reply_status.to_u32());
        }
        let fields_end = w.len();
        if body_aligned(version, MessageType::Reply) {
            w.align(8);
        }
        let body_start = w.len();
        MessageBuilder {
            w,
            fields_end,
            body_start,
            kind: MessageType::Reply,
            version,
        }
    }

    /// The writer for the body; alignment counts from the GIOP header.
    pub fn body(&mut self) -> &mut CdrWriter {
        &mut self.w
    }

    /// Splits the builder into its writer (the header's room and the
    /// header fields written, the body to follow at
    /// [`body_offset`](Self::body_offset)) and the [`MessageShape`] that
    /// [`resume`](Self::resume) takes back: for code that writes the body
    /// through a plain [`CdrWriter`] (a server's skeleton writing its
    /// results straight into the reply, so that no body is copied).
    pub fn into_parts(self) -> (CdrWriter, MessageShape) {
        let shape = MessageShape {
            fields_end: self.fields_end,
            body_start: self.body_start,
            kind: self.kind,
            version: self.version,
        };
        (self.w, shape)
    }

    /// The builder again, from the writer and shape
    /// [`into_parts`](Self::into_parts) gave, with whatever body was
    /// written since. `None` when the writer no longer holds the header
    /// fields (it was truncated before the body's start).
    pub fn resume(w: CdrWriter, shape: MessageShape) -> Option<Self> {
        (w.len() >= shape.body_start).then_some(MessageBuilder {
            w,
            fields_end: shape.fields_end,
            body_start: shape.body_start,
            kind: shape.kind,
            version: shape.version,
        })
    }

    /// Where the body starts.
    pub fn body_offset(&self) -> usize {
        self.body_start
    }

    /// Drops whatever body was written so far.
    pub fn clear_body(&mut self) {
        self.w.truncate(self.body_start);
    }

    /// Completes the message: fills in the header (with the more-fragments
    /// flag as given) and returns its bytes, in one buffer. An empty 1.2
    /// body has no alignment padding.
    pub fn finish(self, more_fragments: bool) -> Vec<u8> {
        self.finish_spliced(more_fragments).into_vec()
    }

    /// Completes the message as [`finish`](Self::finish) does, leaving the
    /// shared octet sequences that a splicing body spliced in
    /// ([`CdrWriter::write_octet_seq_shared`]) where they lie, not
    /// copied: for a vectored write to the socket.
    pub fn finish_spliced(mut self, more_fragments: bool) -> SplicedBytes {
        if self.w.len() == self.body_start {
            self.w.truncate(self.fields_end);
        }
        let order = self.w.byte_order();
        let mut message = self.w.into_spliced();
        let header = MessageHeader {
            version: self.version,
            byte_order: order,
            more_fragments,
            message_type: self.kind,
            size: (message.len() - HEADER_SIZE) as u32,
            undefined_flags: 0,
        };
        // The header leads the writer's own buffer: nothing is spliced
        // into a message before its body.
        if let Some(head) = message.head_mut(HEADER_SIZE) {
            head.copy_from_slice(&header.encode());
        }
        message
    }
}
