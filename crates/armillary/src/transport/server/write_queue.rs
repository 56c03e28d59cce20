//! The bytes a server connection has still to write: whole messages the
//! socket would not take at once, queued as they were made (each its own
//! buffer, moved in, not copied), the first perhaps partly written. No
//! I/O here: `connection/reply.rs` writes from the front and says how much
//! left.

use std::collections::VecDeque;

use armillary_giop::cdr::SplicedBytes;

/// Messages waiting for the socket, in order.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    /// Each message with how much of it has been written.
    chunks: VecDeque<(SplicedBytes, usize)>,
    /// Bytes not yet written, over all chunks.
    len: usize,
}

impl WriteQueue {
    /// Whether nothing waits.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes waiting.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Queues `bytes`, of which the first `written` have been written
    /// already (a message whose write the socket cut short).
    pub(super) fn push(&mut self, bytes: SplicedBytes, written: usize) {
        if written >= bytes.len() {
            return;
        }
        self.len += bytes.len() - written;
        self.chunks.push_back((bytes, written));
    }

    /// What to write next: the first message and where in it to go on
    /// from (`None`: nothing waits).
    pub(super) fn front(&self) -> Option<(&SplicedBytes, usize)> {
        self.chunks
            .front()
            .map(|(bytes, written)| (bytes, *written))
    }

    /// `n` bytes of the first message, from where [`front`](Self::front)
    /// said, were written.
    pub(super) fn consume(&mut self, n: usize) {
        let Some((first, written)) = self.chunks.front_mut() else {
            return;
        };
        let n = n.min(first.len() - *written);
        *written += n;
        self.len -= n;
        if *written == first.len() {
            self.chunks.pop_front();
        }
    }

    /// Drops everything (the connection closed).
    pub(super) fn clear(&mut self) {
        *self = WriteQueue::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_leave_in_order_from_where_their_write_stopped() {
        let msg = |b: &[u8]| SplicedBytes::from(b.to_vec());
        let mut q = WriteQueue::default();
        assert!(q.is_empty());
        q.push(msg(b"hello"), 2);
        q.push(msg(b"world"), 0);
        q.push(msg(b"!!"), 1);
        q.push(msg(b"done"), 4);
        assert_eq!(q.len(), 3 + 5 + 1);
        let mut out = Vec::new();
        while let Some((first, from)) = q.front() {
            let rest: Vec<u8> = first.segments_from(from).flatten().copied().collect();
            let n = rest.len().min(2);
            out.extend_from_slice(&rest[..n]);
            q.consume(n);
        }
        assert_eq!(out, b"lloworld!");
        assert!(q.is_empty());
    }
}
