//! Writing a message whose pieces lie apart (`SplicedBytes`: a message
//! buffer with large octet sequences spliced in, not copied) with one
//! vectored write (`writev`): the one place both sides' write paths go
//! through to put a message, or what is left of it, on a socket.

use std::io::{self, IoSlice, Write};

use armillary_giop::cdr::SplicedBytes;
use smallvec::SmallVec;

/// The most pieces given to one vectored write (the rest goes in the
/// next); a message's pieces are its own buffer's stretches and the octet
/// sequences spliced between them, rarely more than a few.
const MAX_PIECES: usize = 16;

/// Writes what it can of `message` from byte `from` on to `out`, in one
/// system call; returns how many bytes were written, as
/// [`Write::write`] does.
pub(crate) fn write_from(
    mut out: impl Write,
    message: &SplicedBytes,
    from: usize,
) -> io::Result<usize> {
    if let Some(whole) = message.as_contiguous() {
        return out.write(whole.get(from..).unwrap_or_default());
    }
    let pieces: SmallVec<[IoSlice<'_>; MAX_PIECES]> = message
        .segments_from(from)
        .take(MAX_PIECES)
        .map(IoSlice::new)
        .collect();
    out.write_vectored(&pieces)
}

#[cfg(test)]
mod tests {
    use armillary_giop::cdr::SHARED_OCTETS_MIN;
    use armillary_giop::giop::{MessageBody, MessageBuilder, ReplyHeader, ReplyStatus};
    use armillary_giop::{ByteOrder, GiopVersion};
    use bytes::Bytes;

    use super::*;

    /// A writer that takes at most `step` bytes a call, as a full socket.
    struct Trickle {
        out: Vec<u8>,
        step: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let n = buf.len().min(self.step);
            self.out.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            let mut n = 0;
            for buf in bufs {
                let take = buf.len().min(self.step - n);
                self.out.extend_from_slice(&buf[..take]);
                n += take;
                if n == self.step {
                    break;
                }
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_message_written_in_short_writes_arrives_whole() {
        let mut b = MessageBuilder::new(
            GiopVersion::V1_2,
            ByteOrder::Big,
            &MessageBody::Reply(ReplyHeader {
                request_id: 1,
                reply_status: ReplyStatus::NoException,
                service_contexts: Vec::new(),
            }),
        )
        .unwrap();
        b.body().set_splicing(Some(SHARED_OCTETS_MIN));
        for i in 0..20u8 {
            b.body().write_octet(i);
            let data = Bytes::from(vec![i; 1500 + usize::from(i)]);
            b.body().write_octet_seq_shared(&data).unwrap();
        }
        let message = b.finish_spliced(false);
        assert!(message.segments().count() > MAX_PIECES);
        let whole = message.clone().into_vec();
        for step in [1, 7, 1000, 4096, whole.len()] {
            let mut out = Trickle {
                out: Vec::new(),
                step,
            };
            let mut written = 0;
            while written < message.len() {
                written += write_from(&mut out, &message, written).unwrap();
            }
            assert_eq!(out.out, whole, "step {step}");
        }
    }
}
