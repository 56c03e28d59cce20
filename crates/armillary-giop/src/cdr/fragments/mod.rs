//! Reading across the fragment boundaries of a reassembled GIOP 1.1
//! message.
//!
//! GIOP 1.2 fragments continue the stream's alignment (each fragment's
//! data starts 8-aligned after its 16-byte header, and every fragment but
//! the last is a multiple of 8 bytes long), so a reassembled 1.2 message is
//! read as if it had been sent whole. GIOP 1.1 is different: the spec says
//! "the data in a fragment is marshaled with alignment relative to its
//! position in the fragment", and a fragment's data starts right after its
//! 12-byte header. A reassembled 1.1 message therefore records where each
//! fragment's data starts ([`CdrReader::with_fragment_starts`]), and the
//! reader counts alignment from there as if that fragment's header preceded
//! it (offset 12). Padding that reaches a fragment's start ends there.
//!
//! # What senders write
//!
//! Single values are aligned from their own fragment's header by every
//! sender, and none splits one across two fragments (the spec forbids it):
//! a value cut by a boundary is an error here ([`CdrError::SplitByFragment`]).
//!
//! Blocks of primitive values (a sequence or array of `short`, `long`,
//! `long long`, `float`, `double`, …) are where senders differ. Read from
//! omniORB 4.2.5's and 4.3.3's `giopImpl11.cc` (identical in this) and
//! checked on the wire against Debian's omniORB 4.2.5 and omniORBpy 4.3.3
//! from PyPI:
//!
//! - omniORB's C++ library copies such a block as one run of octets
//!   ([`BlockLayout::Contiguous`]): aligned once at its start; when its
//!   8-byte-aligned buffer is full, the fragment is sent and the copy goes
//!   on right after the next fragment's 12-byte header, unaligned (an
//!   8-byte value lands at offset 12, and from the second boundary on a
//!   value is even split between two fragments). A block of 16 KiB or more
//!   is sent in one fragment of its own, so only smaller blocks are cut.
//!   It reads blocks the same way.
//! - omniORBpy marshals every value of the block on its own, aligned from
//!   its fragment's header ([`BlockLayout::Aligned`], the spec's rule): after
//!   each boundary inside a block of 8-byte values come 4 bytes of padding
//!   (offset 12 to 16). It reads blocks the same way.
//!
//! Neither reads the other's blocks: omniORB's C++ server answers
//! omniORBpy's request with a protocol error ("garbage left at end of input
//! message"), omniORBpy answers the C++ request with MARSHAL. For values
//! of 1, 2 or 4 bytes the two layouts coincide (offset 12 is 4-aligned, and
//! neither splits such a value); for 8-byte values (and `long double`) they
//! differ at every boundary inside the block. `tests/vectors/giop-1.1-fragments`
//! holds a capture of each.
//!
//! JacORB (read from its `GIOPConnection` and `MessageOutputStream`) sends
//! no fragments in any GIOP version, answers a fragmented GIOP 1.1 request
//! with NO_IMPLEMENT and drops GIOP 1.1 Fragment messages. Armillary sends
//! whole messages in every version too.
//!
//! # How Armillary reads them
//!
//! A reader starts [`BlockLayout::Undecided`]: a block the two layouts
//! would read alike is read at once; one they would read differently is
//! [`CdrError::AmbiguousFragment`]. [`CdrReader::decode_whole`], which
//! every decoder of a whole message body in the ORB goes through, then
//! decodes the body once in each layout and keeps the one that reads it
//! exactly to its end without error. If neither does, or both do (the two
//! readings resynchronise when an 8-aligned value follows the block, as in
//! `struct { sequence<double> s; double d; }`), the message cannot be read
//! for certain and the error stands: a MARSHAL exception, never a guess.
//! GIOP 1.2 has no such ambiguity.

use super::{CdrError, CdrReader};
use crate::giop::HEADER_SIZE;

/// How a reader takes a block of primitive values that a GIOP 1.1
/// fragment boundary cuts (see the [module docs](self) for who writes
/// which).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum BlockLayout {
    /// Reads a block the two layouts read alike, and refuses one they read
    /// differently with [`CdrError::AmbiguousFragment`].
    #[default]
    Undecided,
    /// Every value aligned from its own fragment's header, as the spec
    /// says and omniORBpy writes.
    Aligned,
    /// The block runs on unaligned after the next fragment's header, as
    /// omniORB's C++ library writes.
    Contiguous,
}

/// The bytes of a block of primitive values: one run, or (in the
/// [`Aligned`](BlockLayout::Aligned) layout) one run per fragment.
#[derive(Debug)]
pub struct Block<'a> {
    first: &'a [u8],
    rest: Vec<&'a [u8]>,
}

impl<'a> Block<'a> {
    /// The runs of bytes, in order; each holds whole values.
    pub fn parts(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        std::iter::once(self.first).chain(self.rest.iter().copied())
    }
}

/// The alignment of a primitive value of `size` bytes (`long double`, 16
/// bytes, aligns to 8).
fn alignment_of(size: usize) -> usize {
    size.min(8)
}

impl<'a> CdrReader<'a> {
    /// Marks where the data of each GIOP 1.1 fragment starts in a
    /// reassembled message (ascending indices into the buffer); alignment
    /// restarts at each of these points (as offset 12).
    pub fn with_fragment_starts(mut self, starts: &'a [usize]) -> Self {
        self.fragment_starts = starts;
        self
    }

    /// Chooses how blocks of primitive values cut by a GIOP 1.1 fragment
    /// boundary are read.
    pub fn with_block_layout(mut self, layout: BlockLayout) -> Self {
        self.layout = layout;
        self
    }

    /// How blocks cut by a GIOP 1.1 fragment boundary are read.
    pub fn block_layout(&self) -> BlockLayout {
        self.layout
    }

    /// The first fragment start after index `pos`, if any.
    fn fragment_start_after(&self, pos: usize) -> Option<usize> {
        let starts = self.fragment_starts;
        starts.get(starts.partition_point(|&s| s <= pos)).copied()
    }

    /// The offset alignment is computed on at index `pos`: from the stream
    /// start, or from the header of the GIOP 1.1 fragment `pos` is in.
    pub(super) fn align_offset_at(&self, pos: usize) -> usize {
        match self.fragment_starts.partition_point(|&s| s <= pos) {
            0 => self.align_base + pos,
            k => HEADER_SIZE + (pos - self.fragment_starts[k - 1]),
        }
    }

    /// Where padding to a multiple of `n` from index `pos` ends: padding
    /// that reaches the start of the next GIOP 1.1 fragment ends there, and
    /// alignment starts again from that fragment's header.
    pub(super) fn aligned_index(&self, mut pos: usize, n: usize) -> usize {
        loop {
            let pad = (n - self.align_offset_at(pos) % n) % n;
            match self.fragment_start_after(pos) {
                Some(start) if pad > 0 && start <= pos + pad => pos = start,
                _ => return pos + pad,
            }
        }
    }

    /// Fails if a GIOP 1.1 fragment boundary falls inside the `n` bytes
    /// from the current position: no sender splits a single value.
    pub(super) fn check_not_split(&self, n: usize) -> Result<(), CdrError> {
        match self.fragment_start_after(self.pos) {
            Some(start) if start < self.pos + n && start <= self.buf.len() => {
                Err(CdrError::SplitByFragment {
                    offset: self.position(),
                })
            }
            _ => Ok(()),
        }
    }

    /// Reads the bytes of `n` primitive values of `size` bytes each (a
    /// sequence's or array's elements), aligned as CDR requires and laid out
    /// across GIOP 1.1 fragments as [`block_layout`](Self::block_layout)
    /// says. An empty block is nothing at all: no padding.
    pub fn read_block(&mut self, n: usize, size: usize) -> Result<Block<'a>, CdrError> {
        let len = n.checked_mul(size).ok_or(CdrError::TooLong(n))?;
        if n == 0 {
            return Ok(Block {
                first: &[],
                rest: Vec::new(),
            });
        }
        if self.fragment_starts.is_empty() {
            self.align(alignment_of(size))?;
            return Ok(Block {
                first: self.read_octets(len)?,
                rest: Vec::new(),
            });
        }
        match self.layout {
            BlockLayout::Aligned => self.read_aligned_block(n, size),
            BlockLayout::Contiguous => self.read_contiguous_block(len, size),
            BlockLayout::Undecided => {
                let start = self.contiguous_block_start(size);
                if self.layouts_differ(start, len, size) {
                    return Err(CdrError::AmbiguousFragment {
                        offset: self.align_base + start,
                    });
                }
                self.read_contiguous_block(len, size)
            }
        }
    }

    /// Where a contiguous block of `size`-byte values starts: aligned once
    /// from the current position, except that a block whose padding reaches
    /// a fragment's start begins right there, unaligned (omniORB aligns
    /// before it finds its buffer full).
    fn contiguous_block_start(&self, size: usize) -> usize {
        let pad = (alignment_of(size) - self.align_offset_at(self.pos) % alignment_of(size))
            % alignment_of(size);
        match self.fragment_start_after(self.pos) {
            Some(start) if start <= self.pos + pad => start,
            _ if self.fragment_starts.binary_search(&self.pos).is_ok() => self.pos,
            _ => self.pos + pad,
        }
    }

    fn read_contiguous_block(&mut self, len: usize, size: usize) -> Result<Block<'a>, CdrError> {
        let start = self.contiguous_block_start(size);
        if start > self.buf.len() {
            return Err(self.end(start - self.pos));
        }
        self.pos = start;
        Ok(Block {
            first: self.read_octets(len)?,
            rest: Vec::new(),
        })
    }

    fn read_aligned_block(&mut self, mut n: usize, size: usize) -> Result<Block<'a>, CdrError> {
        let mut parts = Vec::new();
        while n > 0 {
            self.align(alignment_of(size))?;
            let room = match self.fragment_start_after(self.pos) {
                Some(start) => start.min(self.buf.len()) - self.pos,
                None => self.remaining(),
            };
            let fit = (room / size).min(n);
            if fit == 0 {
                self.check_not_split(size)?;
                return Err(self.end(size));
            }
            parts.push(self.read_octets(fit * size)?);
            n -= fit;
        }
        let mut parts = parts.into_iter();
        Ok(Block {
            first: parts.next().unwrap_or(&[]),
            rest: parts.collect(),
        })
    }

    /// True if a block of `len` bytes of `size`-byte values starting at
    /// `start` (laid out contiguously) would be read differently in the
    /// aligned layout: a fragment boundary inside it either cuts a value or
    /// falls where the aligned layout pads (8-byte alignment, since a
    /// fragment's data starts at offset 12).
    fn layouts_differ(&self, start: usize, len: usize, size: usize) -> bool {
        let first = self.fragment_starts.partition_point(|&s| s < start);
        self.fragment_starts[first..]
            .iter()
            .take_while(|&&s| s < start + len)
            .any(|&s| (s - start) % size != 0 || HEADER_SIZE % alignment_of(size) != 0)
    }

    /// Decodes a whole message body with `decode`, from the current
    /// position to the end of the buffer, resolving the GIOP 1.1 block
    /// ambiguity the [module docs](self) describe: if `decode` meets a
    /// block the two layouts read differently, the body is decoded once in
    /// each, and the one that reads it exactly to its end without error is
    /// kept. Otherwise the reader's own layout decides, and trailing bytes
    /// are left as they are.
    ///
    /// `decode` may run up to three times; it must not have side effects
    /// beyond what it returns.
    pub fn decode_whole<T>(
        &mut self,
        mut decode: impl FnMut(&mut CdrReader<'a>) -> Result<T, CdrError>,
    ) -> Result<T, CdrError> {
        let start = self.clone();
        let error = match decode(self) {
            Err(e @ CdrError::AmbiguousFragment { .. }) => e,
            decoded => return decoded,
        };
        let mut exact = [BlockLayout::Aligned, BlockLayout::Contiguous]
            .into_iter()
            .filter_map(|layout| {
                let mut r = start.clone().with_block_layout(layout);
                let value = decode(&mut r).ok()?;
                r.is_empty().then_some((value, r))
            });
        match (exact.next(), exact.next()) {
            (Some((value, r)), None) => {
                *self = r.with_block_layout(start.layout);
                Ok(value)
            }
            _ => Err(error),
        }
    }
}

#[cfg(test)]
mod tests;
