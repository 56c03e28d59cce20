//! The incremental frame decoder: bytes in, whole GIOP messages out, with
//! fragments reassembled and every size bounded.
//!
//! Sans-IO, in the manner of quinn-proto: feed what the socket gave with
//! [`FrameDecoder::handle_bytes`], take complete messages with
//! [`FrameDecoder::poll_frame`]. Any split of the stream gives the same
//! frames. While a large message arrives, its buffer can be lent out to
//! read the rest of it into straight from the socket
//! ([`FrameDecoder::lend_for_read`]): its body then reaches the frame with
//! no copy. Between messages, a decoder lends the spare buffer a dropped
//! large frame left: a large message that begins in that read stays in
//! it, and none of its bytes is copied. A reassembled message is laid out
//! as if it had been sent whole: the first message's bytes followed by
//! each fragment's data, with the more-fragments flag cleared and the size
//! fixed up, so that alignment still counts from the first header byte.
//!
//! The lending is `lending.rs`; this file cuts the stream and reassembles.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;

use super::header::{MessageHeader, MessageType, HEADER_SIZE};
use super::message::{Message, ReplyHeader};
use super::GiopError;
use crate::cdr::CdrReader;
use crate::version::{ByteOrder, GiopVersion};

mod lending;
#[cfg(test)]
mod tests;

pub use lending::DirectRead;
use lending::{Direct, Recycler};

/// Bounds on what a peer can make the decoder hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLimits {
    /// Largest single message (header included) and largest reassembled
    /// message.
    pub max_message_size: usize,
    /// Most fragments one message may be split into.
    pub max_fragments: usize,
    /// Most bytes held across all unfinished reassemblies.
    pub max_pending_bytes: usize,
    /// Most messages being reassembled at once (GIOP 1.2 interleaves).
    pub max_reassemblies: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits {
            max_message_size: 256 << 20,
            max_fragments: 1 << 16,
            max_pending_bytes: 512 << 20,
            max_reassemblies: 1024,
        }
    }
}

/// Why the stream cannot be decoded further. After an error the decoder
/// is unusable: the connection should answer MessageError and close.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    /// The header is not a valid GIOP header.
    #[error("bad GIOP header at stream offset {offset}: {source}")]
    Header {
        /// Stream offset of the header.
        offset: u64,
        /// What is wrong with it.
        source: GiopError,
    },
    /// A message larger than [`FrameLimits::max_message_size`].
    #[error("message of {size} bytes exceeds the limit of {limit}")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// More fragments than [`FrameLimits::max_fragments`].
    #[error("more than {0} fragments")]
    TooManyFragments(usize),
    /// More bytes pending than [`FrameLimits::max_pending_bytes`], or more
    /// reassemblies than [`FrameLimits::max_reassemblies`].
    #[error("too much unfinished fragmented data")]
    TooMuchPending,
    /// A Fragment with no message to continue.
    #[error("fragment for request {request_id:?} continues no message")]
    OrphanFragment {
        /// The fragment's request id (1.2).
        request_id: Option<u32>,
    },
    /// A fragment whose version or byte order differs from its message's.
    #[error("fragment does not match the version or byte order of its message")]
    FragmentMismatch,
    /// A GIOP 1.1 message started while another was still fragmented, or
    /// a message type that cannot be fragmented has the flag set, or a
    /// 1.2 request id is reused while being reassembled.
    #[error("invalid fragmentation: {0}")]
    BadFragmentation(&'static str),
}

/// One whole GIOP message, reassembled if it came in fragments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The message bytes, header included. Shared: a reader from
    /// [`Frame::reader`] or [`Frame::decode`] hands out large octet
    /// sequences as slices of them
    /// ([`CdrReader::read_octet_seq_shared`]).
    pub bytes: Bytes,
    /// How many wire messages it was made of (1 if not fragmented).
    pub fragments: usize,
    /// GIOP 1.1 only: where each fragment's data starts in `bytes`. GIOP
    /// 1.1 aligns a fragment's data relative to the fragment's own header,
    /// so a reader must restart alignment there (see [`Frame::reader`]).
    /// Empty for GIOP 1.2, whose fragments keep the stream's alignment.
    pub fragment_starts: Vec<usize>,
}

impl Frame {
    /// Decodes the message's header fields (aligned across GIOP 1.1
    /// fragment boundaries as the fragments were).
    pub fn message(&self) -> Result<Message, GiopError> {
        Message::decode_fragmented(&self.bytes, &self.fragment_starts)
    }

    /// The request id of a Reply or LocateReply, as
    /// `self.message()?.body.request_id()` finds it, but read where it
    /// lies when it comes first (a GIOP 1.2 Reply, any LocateReply), not
    /// decoded with the rest of the header fields: a client reads it to
    /// hand the reply to its caller, who decodes the message then. `None`
    /// for another message type, or when the message does not decode.
    pub fn reply_request_id(&self) -> Option<u32> {
        let header = MessageHeader::decode(&self.bytes).ok()?;
        let id_first = match header.message_type {
            MessageType::LocateReply => true,
            MessageType::Reply => header.version >= GiopVersion::V1_2,
            _ => return None,
        };
        match self.bytes.get(HEADER_SIZE..HEADER_SIZE + 4) {
            Some(&[a, b, c, d]) if id_first && self.fragment_starts.is_empty() => {
                Some(match header.byte_order {
                    ByteOrder::Big => u32::from_be_bytes([a, b, c, d]),
                    ByteOrder::Little => u32::from_le_bytes([a, b, c, d]),
                })
            }
            _ => self.message().ok()?.body.request_id(),
        }
    }

    /// A Reply's header fields, as [`decode`](Self::decode) finds them
    /// without the [`MessageBody`](super::MessageBody) around them (see
    /// [`Message::decode_reply`]): the 12-byte header, the reply header
    /// and a reader at the body that knows the frame's fragment
    /// boundaries; `Ok(None)` for a message of another type.
    pub fn decode_reply(
        &self,
    ) -> Result<Option<(MessageHeader, ReplyHeader, CdrReader<'_>)>, GiopError> {
        let Some((header, reply, body_offset)) =
            Message::decode_reply(&self.bytes, &self.fragment_starts)?
        else {
            return Ok(None);
        };
        let reader = self.body_at(&header, body_offset);
        Ok(Some((header, reply, reader)))
    }

    /// Decodes the message and returns it with a reader at its body that
    /// knows the frame's fragment boundaries.
    pub fn decode(&self) -> Result<(Message, CdrReader<'_>), GiopError> {
        let msg = self.message()?;
        let reader = self.reader(&msg);
        Ok((msg, reader))
    }

    /// A reader at `msg`'s body (`msg` decoded from this frame).
    pub fn reader(&self, msg: &Message) -> CdrReader<'_> {
        self.body_at(&msg.header, msg.body_offset)
    }

    /// A reader of this frame's message, headed by `header`, from
    /// `offset`: it honours the frame's fragment boundaries, and octet
    /// sequences it reads may be slices of the frame's bytes.
    fn body_at(&self, header: &MessageHeader, offset: usize) -> CdrReader<'_> {
        CdrReader::new(&self.bytes, header.byte_order, header.version)
            .with_position(offset)
            .with_fragment_starts(&self.fragment_starts)
            .with_source(&self.bytes)
    }
}

/// Buffer capacity the decoder keeps between messages; a buffer grown
/// beyond it for a large message is given back once the message is out.
const SPARE_CAPACITY: usize = 64 * 1024;

/// The largest message whose whole buffer [`FrameDecoder::lend_for_read`]
/// reserves on its header's word (larger ones grow by doubling as they
/// arrive).
const WHOLE_RESERVE: usize = 16 << 20;

/// The largest message buffer a decoder keeps, once the frame handed out
/// in it is dropped, to read a later large message into (see
/// [`Recycler`]).
const RECYCLE_MAX: usize = 2 << 20;

struct Reassembly {
    bytes: Vec<u8>,
    fragment_starts: Vec<usize>,
    version: GiopVersion,
    order: ByteOrder,
    fragments: usize,
}

/// Cuts a byte stream into GIOP messages.
pub struct FrameDecoder {
    limits: FrameLimits,
    buf: Vec<u8>,
    /// Stream offset of `buf[0]`.
    consumed: u64,
    ready: VecDeque<Frame>,
    /// GIOP 1.1: at most one message being reassembled.
    partial_11: Option<Reassembly>,
    /// GIOP 1.2: by request id.
    partial_12: HashMap<u32, Reassembly>,
    pending_bytes: usize,
    failed: Option<FrameError>,
    /// The request id of the message refused as too large, when its
    /// bytes at hand said it.
    refused_request_id: Option<u32>,
    /// The large message being read into a recycled buffer, between two
    /// direct reads.
    direct: Option<Direct>,
    /// Where large frames' buffers come back to.
    recycler: Arc<Recycler>,
}

impl std::fmt::Debug for FrameDecoder {
    /// The decoder's state in counts: the bytes it holds, not their
    /// contents.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameDecoder")
            .field("limits", &self.limits)
            .field("buffered", &self.buf.len())
            .field("consumed", &self.consumed)
            .field("ready", &self.ready.len())
            .field(
                "partial_messages",
                &(usize::from(self.partial_11.is_some()) + self.partial_12.len()),
            )
            .field("pending_bytes", &self.pending_bytes)
            .field("failed", &self.failed)
            .finish()
    }
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(FrameLimits::default())
    }
}

/// The message at the start of `avail` (`offset` into the stream): its
/// header and length once all of it is there, `None` while more is to
/// come; an error for a bad header or a message over the limit.
fn whole_message(
    avail: &[u8],
    offset: u64,
    limits: &FrameLimits,
) -> Result<Option<(MessageHeader, usize)>, FrameError> {
    if avail.len() < HEADER_SIZE {
        return Ok(None);
    }
    let header =
        MessageHeader::decode(avail).map_err(|source| FrameError::Header { offset, source })?;
    let len = HEADER_SIZE.saturating_add(header.size as usize);
    if len > limits.max_message_size {
        return Err(FrameError::TooLarge {
            size: len,
            limit: limits.max_message_size,
        });
    }
    Ok((avail.len() >= len).then_some((header, len)))
}

/// The request id of the message `avail` starts with, when `e` refused it
/// for its size (see [`FrameDecoder::refused_request_id`]).
fn refused_id(e: &FrameError, avail: &[u8]) -> Option<u32> {
    match e {
        FrameError::TooLarge { .. } => Message::peek_request_id(avail),
        _ => None,
    }
}

fn read_u32(bytes: &[u8], order: ByteOrder) -> Option<u32> {
    let b: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    Some(match order {
        ByteOrder::Big => u32::from_be_bytes(b),
        ByteOrder::Little => u32::from_le_bytes(b),
    })
}

impl FrameDecoder {
    /// A decoder with these limits.
    pub fn new(limits: FrameLimits) -> Self {
        FrameDecoder {
            limits,
            buf: Vec::new(),
            consumed: 0,
            ready: VecDeque::new(),
            partial_11: None,
            partial_12: HashMap::new(),
            pending_bytes: 0,
            failed: None,
            refused_request_id: None,
            direct: None,
            recycler: Arc::default(),
        }
    }

    /// Feeds bytes from the stream. Complete messages become available
    /// from [`poll_frame`](Self::poll_frame); an error is final.
    pub fn handle_bytes(&mut self, data: &[u8]) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        self.end_direct();
        let result = if self.buf.is_empty() {
            if self.start_direct(data) {
                return Ok(());
            }
            // Holding nothing: the whole messages are cut from `data`
            // itself, and only a tail that is not yet a whole message is
            // kept (a small message's bytes are copied once, into its
            // frame).
            self.cut_whole(data).map(|used| {
                if let Some(rest) = data.get(used..).filter(|rest| !rest.is_empty()) {
                    self.grow_for(rest.len());
                    self.buf.extend_from_slice(rest);
                }
            })
        } else {
            self.grow_for(data.len());
            self.buf.extend_from_slice(data);
            let result = self.drain();
            self.shrink();
            result
        };
        if let Err(e) = &result {
            self.fail(e.clone());
        }
        result
    }

    /// The stream cannot be decoded further: drops what is held.
    fn fail(&mut self, e: FrameError) {
        self.failed = Some(e);
        self.buf = Vec::new();
        self.direct = None;
        self.partial_11 = None;
        self.partial_12.clear();
    }

    /// The next complete message, if any.
    pub fn poll_frame(&mut self) -> Option<Frame> {
        self.ready.pop_front()
    }

    /// After [`FrameError::TooLarge`]: the request id of the message
    /// refused, when the bytes of it that had arrived reach that field
    /// (in GIOP 1.2, the 4 bytes after its header): a client ends that
    /// request alone, for the limit.
    pub fn refused_request_id(&self) -> Option<u32> {
        self.refused_request_id
    }

    /// Bytes held: the unparsed tail plus unfinished reassemblies.
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() + self.direct.as_ref().map_or(0, |d| d.filled) + self.pending_bytes
    }

    /// Bytes of memory the decoder has reserved for what it holds (its
    /// buffers' capacities); back to a small amount once no large message
    /// is in progress, plus the one buffer of a large frame it keeps for
    /// the next large message once that frame is dropped (at most
    /// 2 MiB).
    pub fn held_capacity(&self) -> usize {
        let partials = self
            .partial_11
            .iter()
            .chain(self.partial_12.values())
            .map(|p| p.bytes.capacity())
            .sum::<usize>();
        let direct = self.direct.as_ref().map_or(0, |d| d.buf.capacity());
        self.buf.capacity() + partials + direct + self.recycler.held()
    }

    /// Makes room in the buffer for `more` bytes. Once a header has told
    /// the message's size the buffer grows by doubling, but never beyond
    /// that size, so that a large message is held in one allocation of its
    /// own size (which [`drain`](Self::drain) then hands out without a
    /// copy). Nothing is reserved on the header's word alone: a peer that
    /// announces a large message and sends little costs little.
    fn grow_for(&mut self, more: usize) {
        let need = self.buf.len() + more;
        if need <= self.buf.capacity() {
            return;
        }
        let mut target = need.max(self.buf.capacity().saturating_mul(2));
        if let Some(len) = self.next_message_len() {
            if need <= len {
                target = target.min(len);
            }
        }
        self.buf.reserve_exact(target - self.buf.len());
    }

    /// The size of the message at the start of the buffer, when its header
    /// has arrived and is valid and within the limit.
    fn next_message_len(&self) -> Option<usize> {
        let header = MessageHeader::decode(self.buf.get(..HEADER_SIZE)?).ok()?;
        let len = HEADER_SIZE.saturating_add(header.size as usize);
        (len <= self.limits.max_message_size).then_some(len)
    }

    /// Gives back buffer memory a large message left behind.
    fn shrink(&mut self) {
        if self.buf.capacity() > SPARE_CAPACITY && self.buf.len() <= SPARE_CAPACITY / 2 {
            self.buf.shrink_to(SPARE_CAPACITY / 2);
        }
    }

    /// True when no partial message is held (a clean point to close).
    pub fn is_idle(&self) -> bool {
        self.buf.is_empty()
            && self.direct.is_none()
            && self.partial_11.is_none()
            && self.partial_12.is_empty()
    }

    /// Hands out the whole messages at the start of the buffer, keeping
    /// what follows them.
    fn drain(&mut self) -> Result<(), FrameError> {
        let mut start = 0;
        let result = loop {
            let avail = &self.buf[start..];
            let offset = self.consumed + start as u64;
            let (header, len) = match whole_message(avail, offset, &self.limits) {
                Ok(Some(whole)) => whole,
                Ok(None) => break Ok(()),
                Err(e) => {
                    self.refused_request_id = refused_id(&e, avail);
                    break Err(e);
                }
            };
            let message = if start == 0 && avail.len() == len && len > SPARE_CAPACITY {
                // The buffer holds exactly this (large) message: hand it
                // out as it is rather than copying it.
                let message = std::mem::take(&mut self.buf);
                self.consumed += len as u64;
                if let Err(e) = self.accept(header, message) {
                    break Err(e);
                }
                break Ok(());
            } else {
                avail[..len].to_vec()
            };
            start += len;
            if let Err(e) = self.accept(header, message) {
                break Err(e);
            }
        };
        self.buf.drain(..start);
        self.consumed += start as u64;
        result
    }

    /// Hands out the whole messages at the start of `data` while the
    /// decoder holds no bytes (what [`drain`](Self::drain) does for its
    /// buffer, without moving `data` into it first); returns how many
    /// bytes they took.
    fn cut_whole(&mut self, data: &[u8]) -> Result<usize, FrameError> {
        let mut start = 0;
        loop {
            let avail = &data[start..];
            let (header, len) = match whole_message(avail, self.consumed, &self.limits) {
                Ok(Some(whole)) => whole,
                Ok(None) => return Ok(start),
                Err(e) => {
                    self.refused_request_id = refused_id(&e, avail);
                    return Err(e);
                }
            };
            start += len;
            self.consumed += len as u64;
            self.accept(header, avail[..len].to_vec())?;
        }
    }

    fn accept(&mut self, header: MessageHeader, message: Vec<u8>) -> Result<(), FrameError> {
        let v = header.version;
        if header.message_type == MessageType::Fragment {
            let (key, data_at) = if v >= GiopVersion::V1_2 {
                let id = read_u32(&message[HEADER_SIZE..], header.byte_order)
                    .ok_or(FrameError::OrphanFragment { request_id: None })?;
                (Some(id), HEADER_SIZE + 4)
            } else {
                (None, HEADER_SIZE)
            };
            let mut partial = match key {
                Some(id) => self.partial_12.remove(&id),
                None => self.partial_11.take(),
            }
            .ok_or(FrameError::OrphanFragment { request_id: key })?;
            if partial.version != v || partial.order != header.byte_order {
                return Err(FrameError::FragmentMismatch);
            }
            let data = &message[data_at..];
            partial.fragments += 1;
            if partial.fragments > self.limits.max_fragments {
                return Err(FrameError::TooManyFragments(self.limits.max_fragments));
            }
            if partial.bytes.len() + data.len() > self.limits.max_message_size {
                self.refused_request_id = key.or_else(|| Message::peek_request_id(&partial.bytes));
                return Err(FrameError::TooLarge {
                    size: partial.bytes.len() + data.len(),
                    limit: self.limits.max_message_size,
                });
            }
            self.pending_bytes += data.len();
            if self.pending_bytes > self.limits.max_pending_bytes {
                return Err(FrameError::TooMuchPending);
            }
            if v == GiopVersion::V1_1 {
                partial.fragment_starts.push(partial.bytes.len());
            }
            partial.bytes.extend_from_slice(data);
            if header.more_fragments {
                match key {
                    Some(id) => {
                        self.partial_12.insert(id, partial);
                    }
                    None => self.partial_11 = Some(partial),
                }
            } else {
                self.pending_bytes -= partial.bytes.len();
                self.complete(partial);
            }
            return Ok(());
        }
        if header.message_type == MessageType::CancelRequest {
            // A cancelled request that was still arriving will never end.
            if let Some(id) = read_u32(&message[HEADER_SIZE..], header.byte_order) {
                if let Some(p) = self.partial_12.remove(&id) {
                    self.pending_bytes -= p.bytes.len();
                }
            }
        }
        if !header.more_fragments {
            let bytes = self.frame_bytes(message);
            self.ready.push_back(Frame {
                bytes,
                fragments: 1,
                fragment_starts: Vec::new(),
            });
            return Ok(());
        }
        let partial = Reassembly {
            bytes: message,
            fragment_starts: Vec::new(),
            version: v,
            order: header.byte_order,
            fragments: 1,
        };
        let fragmentable = matches!(
            header.message_type,
            MessageType::Request
                | MessageType::Reply
                | MessageType::LocateRequest
                | MessageType::LocateReply
        );
        if !fragmentable {
            return Err(FrameError::BadFragmentation(
                "this message type cannot be fragmented",
            ));
        }
        self.pending_bytes += partial.bytes.len();
        if self.pending_bytes > self.limits.max_pending_bytes {
            return Err(FrameError::TooMuchPending);
        }
        if v >= GiopVersion::V1_2 {
            // In 1.2 every fragmentable message starts with its request id.
            let id = read_u32(&partial.bytes[HEADER_SIZE..], header.byte_order).ok_or(
                FrameError::BadFragmentation("fragmented message without a request id"),
            )?;
            if self.partial_12.len() >= self.limits.max_reassemblies {
                return Err(FrameError::TooMuchPending);
            }
            if self.partial_12.insert(id, partial).is_some() {
                return Err(FrameError::BadFragmentation(
                    "request id reused while its message is being reassembled",
                ));
            }
        } else {
            if self.partial_11.is_some() {
                return Err(FrameError::BadFragmentation(
                    "GIOP 1.1 message started before the previous one was complete",
                ));
            }
            self.partial_11 = Some(partial);
        }
        Ok(())
    }

    fn complete(&mut self, partial: Reassembly) {
        let mut bytes = partial.bytes;
        let size = (bytes.len() - HEADER_SIZE) as u32;
        bytes[6] &= !2;
        let size = match partial.order {
            ByteOrder::Big => size.to_be_bytes(),
            ByteOrder::Little => size.to_le_bytes(),
        };
        bytes[8..12].copy_from_slice(&size);
        self.ready.push_back(Frame {
            bytes: Bytes::from(bytes),
            fragments: partial.fragments,
            fragment_starts: partial.fragment_starts,
        });
    }
}
