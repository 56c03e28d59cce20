//! Reading a large message straight into the buffer its frame is handed
//! out in: the buffer a [`FrameDecoder`] lends for a read
//! ([`DirectRead`]), and the [`Recycler`] that keeps a dropped large
//! frame's buffer for the next large message (and lends it, while the
//! decoder holds nothing, for whatever the stream brings next).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

use super::{FrameDecoder, FrameError, RECYCLE_MAX, SPARE_CAPACITY, WHOLE_RESERVE};
use crate::giop::header::{MessageHeader, HEADER_SIZE};

/// Where the buffer of a large frame goes back to when the frame (and
/// every slice of it) is dropped: the decoder that read it keeps one such
/// buffer, of up to [`RECYCLE_MAX`] bytes, and reads the next large
/// message into it. Its bytes are initialised already (safe Rust reads
/// into initialised memory only), so the message need not be zeroed
/// first, and its pages are in memory already.
#[derive(Debug, Default)]
pub(super) struct Recycler {
    spare: Mutex<Option<Vec<u8>>>,
    /// Whether `spare` holds a buffer, read without the lock: a decoder
    /// asks before every read of a connection, and one that has had no
    /// large message then pays no lock for the answer.
    kept: AtomicBool,
}

impl Recycler {
    /// Whether a spare buffer is kept (without the lock: it may have just
    /// changed).
    pub(super) fn keeps(&self) -> bool {
        self.kept.load(Ordering::Relaxed)
    }

    /// A spare buffer of at least `len` initialised bytes, if one is kept.
    pub(super) fn take(&self, len: usize) -> Option<Vec<u8>> {
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
    pub(super) fn give(&self, buf: Vec<u8>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.as_ref().is_none_or(|kept| kept.len() < buf.len()) {
            *spare = Some(buf);
            self.kept.store(true, Ordering::Relaxed);
        }
    }

    /// Bytes of memory the spare buffer takes.
    pub(super) fn held(&self) -> usize {
        let spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        spare.as_ref().map_or(0, Vec::capacity)
    }
}

/// The owner of a large frame's bytes: gives its buffer back to the
/// decoder's [`Recycler`] when dropped (the larger of two is kept).
pub(super) struct RecycledBuffer {
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
pub(super) struct Direct {
    pub(super) buf: Vec<u8>,
    pub(super) filled: usize,
    pub(super) len: usize,
}

/// A buffer lent out by [`FrameDecoder::lend_for_read`] to read the next
/// bytes of the stream into ([`room`](Self::room)), and given back with
/// [`FrameDecoder::handle_direct_read`]: a large message's own, or,
/// between messages, the decoder's spare one. The decoder holds none of
/// the message's bytes meanwhile: give it back before anything else, even
/// after a failed read (with 0 bytes).
#[derive(Debug)]
pub struct DirectRead {
    pub(super) buf: Vec<u8>,
    /// Where the bytes to read go: what came before is the message so far.
    pub(super) filled: usize,
    /// Where the room ends.
    pub(super) end: usize,
    /// What `buf` is.
    pub(super) lent: Lent,
}

/// The buffer a [`DirectRead`] lends.
#[derive(Debug, Clone, Copy)]
pub(super) enum Lent {
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
    /// message being read, nor over 64 KiB for the spare buffer;
    /// initialised, with zeroes or an earlier message's bytes).
    pub fn room(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..self.end]
    }
}

impl FrameDecoder {
    /// When `data`, with nothing held before it, is the start of one large
    /// message (over 64 KiB, within the limit, not all here) and a
    /// recycled buffer can hold that message, puts `data` at the front of
    /// that buffer: [`lend_for_read`](Self::lend_for_read) lends the rest
    /// of it after, so the first bytes too are copied once on their way
    /// to the frame, not into the decoder's own buffer and out again. True
    /// if it did; otherwise `data` is fed the usual way.
    pub(super) fn start_direct(&mut self, data: &[u8]) -> bool {
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
    pub(super) fn large_and_unfinished(&self, data: &[u8]) -> Option<usize> {
        let header = MessageHeader::decode(data.get(..HEADER_SIZE)?).ok()?;
        let len = HEADER_SIZE.saturating_add(header.size as usize);
        (len > SPARE_CAPACITY && len <= self.limits.max_message_size && data.len() < len)
            .then_some(len)
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

    /// Takes back the message being read into a recycled buffer as the
    /// decoder's own (for bytes fed the usual way meanwhile).
    pub(super) fn end_direct(&mut self) {
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
    pub(super) fn frame_bytes(&self, message: Vec<u8>) -> Bytes {
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
}
