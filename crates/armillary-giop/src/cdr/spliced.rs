//! [`SplicedBytes`]: a message as a writer that splices left it, its own
//! buffer with shared byte strings (`sequence<octet>` values mapped to
//! [`Bytes`]) standing in it where they belong, so that a large value is
//! written to the socket from where it lies (`writev`) rather than copied
//! into the message first.

use bytes::Bytes;

/// A byte string standing in a message at offset `at` of its own buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Splice {
    pub(crate) at: usize,
    pub(crate) bytes: Bytes,
}

/// The bytes of a message: its own buffer with byte strings spliced in
/// (see [`CdrWriter::with_splicing`](super::CdrWriter::with_splicing)).
/// Read in order, the pieces ([`segments`](Self::segments)) are the
/// message; a message with nothing spliced is one piece.
///
/// ```
/// use armillary_giop::cdr::SplicedBytes;
///
/// let message = SplicedBytes::from(b"GIOP".to_vec());
/// assert!(message.is_contiguous());
/// assert_eq!(message.into_vec(), b"GIOP");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SplicedBytes {
    own: Vec<u8>,
    /// In the order of their `at`, which never decreases.
    splices: Vec<Splice>,
    /// The length of the spliced byte strings together.
    spliced_len: usize,
}

impl From<Vec<u8>> for SplicedBytes {
    fn from(own: Vec<u8>) -> Self {
        SplicedBytes {
            own,
            splices: Vec::new(),
            spliced_len: 0,
        }
    }
}

impl SplicedBytes {
    pub(crate) fn new(own: Vec<u8>, splices: Vec<Splice>, spliced_len: usize) -> Self {
        SplicedBytes {
            own,
            splices,
            spliced_len,
        }
    }

    /// The message's length, every piece counted.
    pub fn len(&self) -> usize {
        self.own.len() + self.spliced_len
    }

    /// True for a message of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True when nothing is spliced in: the message is one buffer.
    pub fn is_contiguous(&self) -> bool {
        self.splices.is_empty()
    }

    /// The message's first `n` bytes when they lie in its own buffer (a
    /// header to patch): `None` when a spliced byte string starts before
    /// `n`, or the message is shorter.
    pub fn head_mut(&mut self, n: usize) -> Option<&mut [u8]> {
        let first_splice = self.splices.first().map_or(usize::MAX, |s| s.at);
        if n > first_splice {
            return None;
        }
        self.own.get_mut(..n)
    }

    /// The pieces of the message in order, empty ones left out: its own
    /// buffer's stretches and the spliced byte strings between them.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> + '_ {
        // Piece 2i is the own stretch before splice i (the last, the rest
        // of the buffer); piece 2i + 1 is splice i.
        let n = self.splices.len();
        (0..=2 * n)
            .map(move |k| {
                let i = k / 2;
                if k % 2 == 1 {
                    return &self.splices[i].bytes[..];
                }
                let start = i.checked_sub(1).map_or(0, |p| self.splices[p].at);
                let end = self.splices.get(i).map_or(self.own.len(), |s| s.at);
                &self.own[start..end]
            })
            .filter(|piece| !piece.is_empty())
    }

    /// The pieces of the message from byte `from` on (the first perhaps
    /// cut): what a vectored write of the rest of the message takes.
    pub fn segments_from(&self, from: usize) -> impl Iterator<Item = &[u8]> + '_ {
        let mut skip = from;
        self.segments().filter_map(move |segment| {
            if skip >= segment.len() {
                skip -= segment.len();
                return None;
            }
            let rest = &segment[skip..];
            skip = 0;
            Some(rest)
        })
    }

    /// The message, when it is one piece (nothing spliced in).
    pub fn as_contiguous(&self) -> Option<&[u8]> {
        self.splices.is_empty().then_some(&self.own[..])
    }

    /// Appends the message's bytes to `out` (copying the spliced ones).
    pub fn extend_into(&self, out: &mut Vec<u8>) {
        out.reserve(self.len());
        for segment in self.segments() {
            out.extend_from_slice(segment);
        }
    }

    /// Appends `other` after this message: its own bytes are copied, its
    /// spliced byte strings stay shared.
    pub fn append(&mut self, other: SplicedBytes) {
        if self.is_empty() {
            *self = other;
            return;
        }
        let base = self.own.len();
        self.own.extend_from_slice(&other.own);
        self.spliced_len += other.spliced_len;
        self.splices
            .extend(other.splices.into_iter().map(|s| Splice {
                at: base + s.at,
                bytes: s.bytes,
            }));
    }

    /// The message in one buffer (its own, when nothing is spliced in; else
    /// the spliced byte strings are copied into a new one).
    pub fn into_vec(self) -> Vec<u8> {
        if self.splices.is_empty() {
            return self.own;
        }
        let mut out = Vec::with_capacity(self.len());
        self.extend_into(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spliced() -> SplicedBytes {
        // "ab" + [XYZ] + "cd" + [] + [W] + "e"
        SplicedBytes::new(
            b"abcde".to_vec(),
            vec![
                Splice {
                    at: 2,
                    bytes: Bytes::from_static(b"XYZ"),
                },
                Splice {
                    at: 4,
                    bytes: Bytes::from_static(b"W"),
                },
            ],
            4,
        )
    }

    #[test]
    fn pieces_in_order_make_the_message() {
        let m = spliced();
        assert_eq!(m.len(), 9);
        assert!(!m.is_contiguous());
        let pieces: Vec<&[u8]> = m.segments().collect();
        assert_eq!(pieces, [&b"ab"[..], b"XYZ", b"cd", b"W", b"e"]);
        assert_eq!(m.clone().into_vec(), b"abXYZcdWe");
    }

    #[test]
    fn pieces_start_where_a_write_stopped() {
        let m = spliced();
        for from in 0..=m.len() + 1 {
            let rest: Vec<u8> = m.segments_from(from).flatten().copied().collect();
            assert_eq!(
                rest,
                b"abXYZcdWe".get(from..).unwrap_or_default(),
                "from {from}"
            );
        }
        let pieces: Vec<&[u8]> = m.segments_from(3).collect();
        assert_eq!(pieces, [&b"YZ"[..], b"cd", b"W", b"e"]);
        assert_eq!(m.as_contiguous(), None);
        let plain = SplicedBytes::from(b"xy".to_vec());
        assert_eq!(plain.as_contiguous(), Some(&b"xy"[..]));
    }

    #[test]
    fn appended_messages_keep_their_splices() {
        let mut m = SplicedBytes::from(b"12".to_vec());
        m.append(spliced());
        m.append(SplicedBytes::from(b"3".to_vec()));
        assert_eq!(m.len(), 12);
        assert_eq!(m.segments().count(), 5);
        assert_eq!(m.into_vec(), b"12abXYZcdWe3");
        let mut empty = SplicedBytes::default();
        empty.append(spliced());
        assert_eq!(empty, spliced());
    }

    #[test]
    fn the_head_is_patchable_only_before_the_first_splice() {
        let mut m = spliced();
        assert_eq!(m.head_mut(2).map(|h| h.to_vec()), Some(b"ab".to_vec()));
        assert!(m.head_mut(3).is_none());
        let mut plain = SplicedBytes::from(b"xyz".to_vec());
        assert!(plain.head_mut(3).is_some());
        assert!(plain.head_mut(4).is_none());
    }
}
