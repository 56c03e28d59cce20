//! The bytes a server connection has still to write: whole messages the
//! socket would not take at once, queued as they were made (each its own
//! buffer, moved in, not copied), the first perhaps partly written. No
//! I/O here: `connection.rs` writes from the front and says how much left.

use std::collections::VecDeque;

/// Messages waiting for the socket, in order.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    chunks: VecDeque<Vec<u8>>,
    /// How much of the first chunk has been written.
    written: usize,
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
    pub(super) fn push(&mut self, bytes: Vec<u8>, written: usize) {
        if written >= bytes.len() {
            return;
        }
        if self.chunks.is_empty() {
            self.written = written;
        } else if written > 0 {
            // Only the first chunk may be partly written: keep the rest.
            self.len += bytes.len() - written;
            self.chunks.push_back(bytes[written..].to_vec());
            return;
        }
        self.len += bytes.len() - written;
        self.chunks.push_back(bytes);
    }

    /// What to write next: the unwritten part of the first chunk.
    pub(super) fn front(&self) -> &[u8] {
        self.chunks
            .front()
            .map_or(&[][..], |first| &first[self.written..])
    }

    /// `n` bytes of [`front`](Self::front) were written.
    pub(super) fn consume(&mut self, n: usize) {
        let Some(first) = self.chunks.front() else {
            return;
        };
        let n = n.min(first.len() - self.written);
        self.written += n;
        self.len -= n;
        if self.written == first.len() {
            self.chunks.pop_front();
            self.written = 0;
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
        let mut q = WriteQueue::default();
        assert!(q.is_empty());
        q.push(b"hello".to_vec(), 2);
        q.push(b"world".to_vec(), 0);
        q.push(b"!!".to_vec(), 1);
        q.push(b"done".to_vec(), 4);
        assert_eq!(q.len(), 3 + 5 + 1);
        let mut out = Vec::new();
        while !q.is_empty() {
            let n = q.front().len().min(2);
            out.extend_from_slice(&q.front()[..n]);
            q.consume(n);
        }
        assert_eq!(out, b"lloworld!");
        assert!(q.front().is_empty());
    }
}
