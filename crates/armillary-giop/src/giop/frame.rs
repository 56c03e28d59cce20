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

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

use super::header::{MessageHeader, MessageType, HEADER_SIZE};
use super::message::{Message, ReplyHeader};
use super::GiopError;
use crate::cdr::CdrReader;
use crate::version::{ByteOrder, GiopVersion};

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

/// Where the buffer of a large frame goes back to when the frame (and
/// every slice of it) is dropped: the decoder that read it keeps one such
/// buffer, of up to [`RECYCLE_MAX`] bytes, and reads the next large
/// message into it. Its bytes are initialised already (safe Rust reads
/// into initialised memory only), so the message need not be zeroed
/// first, and its pages are in memory already.
#[derive(Debug, Default)]
struct Recycler {
    spare: Mutex<Option<Vec<u8>>>,
    /// Whether `spare` holds a buffer, read without the lock: a decoder
    /// asks before every read of a connection, and one that has had no
    /// large message then pays no lock for the answer.
    kept: AtomicBool,
}

impl Recycler {
    /// Whether a spare buffer is kept (without the lock: it may have just
    /// changed).
    fn keeps(&self) -> bool {
        self.kept.load(Ordering::Relaxed)
    }

    /// A spare buffer of at least `len` initialised bytes, if one is kept.
    fn take(&self, len: usize) -> Option<Vec<u8>> {
        if !self.keeps() {
            return None;
        }
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        match spare.as_ref() {
            Some(buf) if buf.len() >= len => {
                self.kept.store(false, Ordering::Relaxed);
                spare.take()
            }
            _ => None,
        }
    }

    /// Keeps `buf` as the spare unless the spare kept is larger.
    fn give(&self, buf: Vec<u8>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.as_ref().is_none_or(|kept| kept.len() < buf.len()) {
            *spare = Some(buf);
            self.kept.store(true, Ordering::Relaxed);
        }
    }

    /// Bytes of memory the spare buffer takes.
    fn held(&self) -> usize {
        let spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        spare.as_ref().map_or(0, Vec::capacity)
    }
}

/// The owner of a large frame's bytes: gives its buffer back to the
/// decoder's [`Recycler`] when dropped (the larger of two is kept).
struct RecycledBuffer {
    buf: Vec<u8>,
    home: Weak<Recycler>,
}

impl AsRef<[u8]> for RecycledBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.buf
    }
}

impl Drop for RecycledBuffer {
    fn drop(&mut self) {
        if let Some(home) = self.home.upgrade() {
            home.give(std::mem::take(&mut self.buf));
        }
    }
}

/// A large message being read straight into a recycled buffer: the
/// buffer is initialised throughout; the message so far is its first
/// `filled` bytes, the message `len` bytes long.
struct Direct {
    buf: Vec<u8>,
    filled: usize,
    len: usize,
}

struct Reassembly {
    bytes: Vec<u8>,
    fragment_starts: Vec<usize>,
    version: GiopVersion,
    order: ByteOrder,
    fragments: usize,
}

/// A large message's buffer, lent out by
/// [`FrameDecoder::lend_for_read`] to read the next bytes of the stream
/// into ([`room`](Self::room)), and given back with
/// [`FrameDecoder::handle_direct_read`]. The decoder holds none of the
/// message's bytes meanwhile: give it back before anything else, even
/// after a failed read (with 0 bytes).
#[derive(Debug)]
pub struct DirectRead {
    buf: Vec<u8>,
    /// Where the bytes to read go: what came before is the message so far.
    filled: usize,
    /// Where the room ends.
    end: usize,
    /// What `buf` is.
    lent: Lent,
}

/// The buffer a [`DirectRead`] lends.
#[derive(Debug, Clone, Copy)]
enum Lent {
    /// The message's own, fresh: it ends at the room's end.
    Fresh,
    /// A recycled buffer, initialised past the room's end, holding the
    /// message of this length.
    Recycled { len: usize },
    /// The decoder held nothing: its spare recycled buffer, for whatever
    /// the stream brings next (a large message stays in it).
    Spare,
}

impl DirectRead {
    /// Where to read the stream's next bytes (never past the end of the
    /// message; initialised, with zeroes or an earlier message's bytes).
    pub fn room(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..self.end]
    }
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
        if self.buf.is_empty() && self.start_direct(data) {
            return Ok(());
        }
        self.grow_for(data.len());
        self.buf.extend_from_slice(data);
        let result = self.drain();
        self.shrink();
        if let Err(e) = &result {
            self.fail(e.clone());
        }
        result
    }

    /// When `data`, with nothing held before it, is the start of one large
    /// message (over 64 KiB, within the limit, not all here) and a
    /// recycled buffer can hold that message, puts `data` at the front of
    /// that buffer: [`lend_for_read`](Self::lend_for_read) lends the rest
    /// of it after, so the first bytes too are copied once on their way
    /// to the frame, not into the decoder's own buffer and out again. True
    /// if it did; otherwise `data` is fed the usual way.
    fn start_direct(&mut self, data: &[u8]) -> bool {
        // The cheap question first: most reads are of small messages.
        if !self.recycler.keeps() {
            return false;
        }
        let Some(len) = self.large_and_unfinished(data) else {
            return false;
        };
        let Some(mut buf) = self.recycler.take(len) else {
            return false;
        };
        buf[..data.len()].copy_from_slice(data);
        self.direct = Some(Direct {
            buf,
            filled: data.len(),
            len,
        });
        true
    }

    /// The length of the message `data` starts with, when it is large
    /// (over 64 KiB), within the limit, and not all in `data`.
    fn large_and_unfinished(&self, data: &[u8]) -> Option<usize> {
        let header = MessageHeader::decode(data.get(..HEADER_SIZE)?).ok()?;
        let len = HEADER_SIZE.saturating_add(header.size as usize);
        (len > SPARE_CAPACITY && len <= self.limits.max_message_size && data.len() < len)
            .then_some(len)
    }

    /// The stream cannot be decoded further: drops what is held.
    fn fail(&mut self, e: FrameError) {
        self.failed = Some(e);
        self.buf = Vec::new();
        self.direct = None;
        self.partial_11 = None;
        self.partial_12.clear();
    }

    /// Lends out a buffer to read the stream's next bytes into, when that
    /// spares a copy (`None`: feed the stream to
    /// [`handle_bytes`](Self::handle_bytes) as usual):
    /// - the buffer of the message arriving, when it is large (over 64
    ///   KiB), its header is in and more of it is to come, with room for
    ///   its next bytes (up to `max` of them, which bound what a fresh
    ///   buffer zeroes; a recycled buffer, which is not zeroed, has room to
    ///   the message's end; never past its end);
    /// - when the decoder holds no bytes of a next message, the spare
    ///   buffer a dropped large frame left (up to 64 KiB of room): should
    ///   a large message begin there, the rest of it is read after it, so
    ///   that none of its bytes is copied on the way to its frame.
    ///
    /// Read the stream into [`DirectRead::room`], then give the buffer
    /// back with [`handle_direct_read`](Self::handle_direct_read).
    pub fn lend_for_read(&mut self, max: usize) -> Option<DirectRead> {
        if self.failed.is_some() || max == 0 {
            return None;
        }
        if let Some(Direct { buf, filled, len }) = self.direct.take() {
            // A recycled buffer is lent to the message's end: `max` bounds
            // what a fresh one zeroes, and this one needs no zeroing.
            return Some(DirectRead {
                buf,
                filled,
                end: len,
                lent: Lent::Recycled { len },
            });
        }
        if self.buf.is_empty() {
            let buf = self.recycler.take(0)?;
            let end = buf.len().min(SPARE_CAPACITY);
            return Some(DirectRead {
                buf,
                filled: 0,
                end,
                lent: Lent::Spare,
            });
        }
        let len = self.next_message_len()?;
        let filled = self.buf.len();
        if len <= SPARE_CAPACITY || filled >= len {
            return None;
        }
        if let Some(mut buf) = self.recycler.take(len) {
            // The message so far moves to the front of a recycled buffer;
            // the rest is read into it with no zeroing, to its end.
            buf[..filled].copy_from_slice(&self.buf);
            self.buf.clear();
            return Some(DirectRead {
                buf,
                filled,
                end: len,
                lent: Lent::Recycled { len },
            });
        }
        let end = len.min(filled.saturating_add(max));
        if len <= WHOLE_RESERVE {
            // The whole message's room at once, so that the buffer never
            // moves (a move copies what arrived so far). Reserved, not
            // touched: memory only as the bytes arrive.
            self.buf.reserve_exact(len - filled);
        } else {
            self.grow_for(end - filled);
        }
        let mut buf = std::mem::take(&mut self.buf);
        buf.resize(end, 0);
        Some(DirectRead {
            buf,
            filled,
            end,
            lent: Lent::Fresh,
        })
    }

    /// Takes back the buffer [`lend_for_read`](Self::lend_for_read) lent,
    /// `n` bytes of the stream read into its room; then as
    /// [`handle_bytes`](Self::handle_bytes).
    pub fn handle_direct_read(&mut self, read: DirectRead, n: usize) -> Result<(), FrameError> {
        let DirectRead {
            mut buf,
            filled,
            end,
            lent,
        } = read;
        let filled = filled.saturating_add(n).min(end);
        match lent {
            Lent::Recycled { len } if filled < len => {
                self.direct = Some(Direct { buf, filled, len });
                return match &self.failed {
                    Some(e) => Err(e.clone()),
                    None => Ok(()),
                };
            }
            Lent::Spare => {
                // The start of a large message stays where it is, its rest
                // to be read after it; anything else goes the usual way,
                // and the buffer back to be spare.
                let len = self.large_and_unfinished(&buf[..filled]);
                if let Some(len) = len.filter(|len| *len <= buf.len()) {
                    self.direct = Some(Direct { buf, filled, len });
                    return Ok(());
                }
                let result = if filled == 0 {
                    Ok(())
                } else {
                    self.handle_bytes(&buf[..filled])
                };
                self.recycler.give(buf);
                return result;
            }
            // The whole message: on through `drain`, as if it had been
            // read into the decoder's own buffer.
            Lent::Recycled { .. } | Lent::Fresh => {}
        }
        buf.truncate(filled);
        self.buf = buf;
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.drain();
        self.shrink();
        if let Err(e) = &result {
            self.fail(e.clone());
        }
        result
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

    /// Takes back the message being read into a recycled buffer as the
    /// decoder's own (for bytes fed the usual way meanwhile).
    fn end_direct(&mut self) {
        if let Some(Direct {
            mut buf, filled, ..
        }) = self.direct.take()
        {
            buf.truncate(filled);
            buf.extend_from_slice(&self.buf);
            self.buf = buf;
        }
    }

    /// The shared bytes of a whole message: a large one's buffer goes back
    /// to the recycler once the frame and its slices are dropped.
    fn frame_bytes(&self, message: Vec<u8>) -> Bytes {
        if message.len() > SPARE_CAPACITY && message.len() <= RECYCLE_MAX {
            Bytes::from_owner(RecycledBuffer {
                buf: message,
                home: Arc::downgrade(&self.recycler),
            })
        } else {
            // Without a copy: `message` is exactly as long as its
            // allocation, or large (see `drain`).
            Bytes::from(message)
        }
    }

    fn drain(&mut self) -> Result<(), FrameError> {
        let mut start = 0;
        let result = loop {
            let avail = &self.buf[start..];
            if avail.len() < HEADER_SIZE {
                break Ok(());
            }
            let header = match MessageHeader::decode(avail) {
                Ok(h) => h,
                Err(source) => {
                    break Err(FrameError::Header {
                        offset: self.consumed + start as u64,
                        source,
                    })
                }
            };
            let len = HEADER_SIZE.saturating_add(header.size as usize);
            if len > self.limits.max_message_size {
                self.refused_request_id = Message::peek_request_id(avail);
                break Err(FrameError::TooLarge {
                    size: len,
                    limit: self.limits.max_message_size,
                });
            }
            if avail.len() < len {
                break Ok(());
            }
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

#[cfg(test)]
mod tests {
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
        let mut at = first_read;
        while let Some(mut read) = d.lend_for_read(256 * 1024) {
            assert_eq!(read.buf.as_ptr(), buffer);
            let room = read.room();
            let n = room.len().min(200_000);
            room[..n].copy_from_slice(&second[at..at + n]);
            at += n;
            d.handle_direct_read(read, n).unwrap();
        }
        assert_eq!(at, second.len());
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
}
