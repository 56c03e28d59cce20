//! [`HeldServer`]: a GIOP server made of a bare `std::net` listener, for
//! tests that look at the exact Request messages a client sends and
//! decide when (and whether) each is answered.
//!
//! It records every Request whole, as it came off the wire, and answers
//! only when the test says so, with NO_EXCEPTION replies whose body the
//! test writes. It decodes with `armillary-giop` (the sans-IO wire layer)
//! only to find message boundaries and request ids; [`Received::masked`]
//! finds the request id field by hand, so a byte-for-byte comparison of
//! two requests does not rest on the decoder under test.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use armillary_giop::cdr::CdrWriter;
use armillary_giop::giop::{
    FrameDecoder, FrameLimits, Message, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus,
    RequestHeader,
};
use armillary_giop::{ByteOrder, GiopVersion};

use crate::WAIT_LIMIT;

/// A Request the held server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// Which accepted connection it came on (0 first).
    pub conn: usize,
    /// Its request id.
    pub id: u32,
    /// The GIOP version of its header.
    pub version: GiopVersion,
    /// Its header fields, as decoded.
    pub header: RequestHeader,
    /// The whole message (GIOP header included), as it came.
    pub bytes: Vec<u8>,
    /// Where its body (the arguments) starts in `bytes`.
    pub body_offset: usize,
}

impl Received {
    /// The offset of the request id field in [`bytes`](Self::bytes), found
    /// by hand: the first field of a GIOP 1.2 Request header; in GIOP
    /// 1.0/1.1 the field after the service context list (each context a
    /// ulong id and an octet sequence), aligned to 4 from the message's
    /// first byte. Panics if the field does not hold [`id`](Self::id).
    pub fn request_id_offset(&self) -> usize {
        let b = &self.bytes;
        let little = b[6] & 1 == 1;
        let ulong = |at: usize| {
            let four: [u8; 4] = b[at..at + 4].try_into().unwrap();
            if little {
                u32::from_le_bytes(four)
            } else {
                u32::from_be_bytes(four)
            }
        };
        let align4 = |at: usize| at.next_multiple_of(4);
        let offset = if b[5] >= 2 {
            12
        } else {
            let mut at = 12;
            let count = ulong(at);
            at += 4;
            for _ in 0..count {
                at = align4(at) + 4; // context id
                let len = ulong(at) as usize;
                at += 4 + len;
            }
            align4(at)
        };
        assert_eq!(
            ulong(offset),
            self.id,
            "the request id is not at offset {offset} of {b:?}"
        );
        offset
    }

    /// The whole message with its request id field zeroed: two requests
    /// that differ only in their id have the same masked bytes.
    pub fn masked(&self) -> Vec<u8> {
        let offset = self.request_id_offset();
        let mut bytes = self.bytes.clone();
        bytes[offset..offset + 4].fill(0);
        bytes
    }
}

/// A server on a loopback port that records every Request it reads and
/// answers only when told to ([`answer`](Self::answer),
/// [`answer_with`](Self::answer_with)), each on the connection it came
/// on.
///
/// Started with [`start_unread`](Self::start_unread), it leaves its first
/// connections unread until the test says ([`read_connection`](Self::read_connection),
/// [`reset_connection`](Self::reset_connection)): a server that stops
/// reading, whose client's writes block once the socket buffers are full.
#[derive(Debug)]
pub struct HeldServer {
    port: u16,
    requests: Receiver<Received>,
    shared: Arc<Shared>,
}

/// What the accepting thread, the reading threads and the test share.
#[derive(Debug, Default)]
struct Shared {
    /// Every connection accepted, in order.
    connections: Mutex<Vec<Connection>>,
    /// Signalled whenever a connection is accepted, let go or closed.
    changed: Condvar,
}

/// One accepted connection.
#[derive(Debug)]
struct Connection {
    /// Where its replies are written; `None` once reset.
    stream: Option<TcpStream>,
    gate: Gate,
    /// Whether its reading thread reached the end of the stream (the
    /// client closed it, or reset it).
    closed: bool,
}

/// Whether a connection's reading thread may read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Gate {
    /// Not yet: it waits for the test.
    Held,
    /// It reads.
    Read,
    /// Never: it closes the connection unread.
    Reset,
}

impl HeldServer {
    /// Binds a loopback port and starts accepting (each connection read
    /// by a thread of its own, until the peer closes it).
    pub fn start() -> Self {
        Self::start_unread(0)
    }

    /// As [`start`](Self::start), but the first `held` connections are
    /// not read until [`read_connection`](Self::read_connection) (or are
    /// closed unread by [`reset_connection`](Self::reset_connection)).
    pub fn start_unread(held: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, requests) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let accepting = shared.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let conn = {
                    let mut all = accepting.connections.lock().unwrap();
                    let gate = if all.len() < held {
                        Gate::Held
                    } else {
                        Gate::Read
                    };
                    all.push(Connection {
                        stream: Some(stream.try_clone().unwrap()),
                        gate,
                        closed: false,
                    });
                    accepting.changed.notify_all();
                    all.len() - 1
                };
                let tx = tx.clone();
                let shared = accepting.clone();
                std::thread::spawn(move || read_requests(stream, conn, &shared, &tx));
            }
        });
        HeldServer {
            port,
            requests,
            shared,
        }
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A `corbaloc:` URL of an object `key` on it (IIOP 1.2: a client
    /// speaks the lower of that and its own highest GIOP version).
    pub fn corbaloc(&self, key: &str) -> String {
        format!("corbaloc::1.2@127.0.0.1:{}/{key}", self.port)
    }

    /// The next Request received; panics after
    /// [`WAIT_LIMIT`] without one.
    pub fn next(&self) -> Received {
        self.requests
            .recv_timeout(WAIT_LIMIT)
            .expect("no request reached the server")
    }

    /// The next Request received, if one has been already.
    pub fn try_next(&self) -> Option<Received> {
        self.requests.try_recv().ok()
    }

    /// Waits until `test` holds for the connections accepted so far;
    /// panics after [`WAIT_LIMIT`], naming `what` it waited for.
    fn wait_for(&self, what: &str, mut test: impl FnMut(&mut Vec<Connection>) -> bool) {
        let deadline = Instant::now() + WAIT_LIMIT;
        let mut all = self.shared.connections.lock().unwrap();
        while !test(&mut all) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                drop(all);
                panic!("gave up waiting until {what}");
            }
            all = self.shared.changed.wait_timeout(all, left).unwrap().0;
        }
    }

    /// Waits until connection `conn` has been accepted and at least
    /// `bytes` wait in it unread (panics after [`WAIT_LIMIT`]): the
    /// client has written that much into a connection held unread.
    pub fn wait_unread(&self, conn: usize, bytes: usize) {
        let mut stream = None;
        self.wait_for(&format!("connection {conn} is accepted"), |all| {
            stream = all
                .get(conn)
                .and_then(|c| c.stream.as_ref())
                .map(|s| s.try_clone().unwrap());
            stream.is_some()
        });
        let stream = stream.unwrap();
        let mut buf = vec![0; bytes];
        crate::wait_until(&format!("{bytes} bytes wait in connection {conn}"), || {
            stream.peek(&mut buf).unwrap_or(0) >= bytes
        });
    }

    /// Lets the thread of held connection `conn` read it (what waits in
    /// it, then whatever comes).
    pub fn read_connection(&self, conn: usize) {
        self.open_gate(conn, Gate::Read);
    }

    /// Closes held connection `conn` without reading what waits in it:
    /// the system resets the connection, and the client's writes fail.
    pub fn reset_connection(&self, conn: usize) {
        self.open_gate(conn, Gate::Reset);
    }

    fn open_gate(&self, conn: usize, gate: Gate) {
        let mut all = self.shared.connections.lock().unwrap();
        let c = &mut all[conn];
        assert_eq!(c.gate, Gate::Held, "connection {conn} is not held");
        c.gate = gate;
        if gate == Gate::Reset {
            c.stream = None;
        }
        self.shared.changed.notify_all();
    }

    /// Waits until the client has closed connection `conn` (its reading
    /// thread reached the end of the stream); panics after
    /// [`WAIT_LIMIT`].
    pub fn wait_closed(&self, conn: usize) {
        self.wait_for(&format!("connection {conn} is closed"), |all| {
            all.get(conn).is_some_and(|c| c.closed)
        });
    }

    /// Answers `requests` with NO_EXCEPTION replies carrying their request
    /// id as a `long` result, in one write.
    pub fn answer(&self, requests: &[Received]) {
        self.answer_with(requests, |request, body| {
            body.write_long(request.id as i32);
        });
    }

    /// Answers `requests` with NO_EXCEPTION replies (in each request's
    /// GIOP version, native byte order) whose body `body` writes, each on
    /// the connection it came on, in one write per connection.
    pub fn answer_with(&self, requests: &[Received], body: impl Fn(&Received, &mut CdrWriter)) {
        let mut replies: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        for request in requests {
            let mut message = MessageBuilder::new(
                request.version,
                ByteOrder::NATIVE,
                &MessageBody::Reply(ReplyHeader {
                    request_id: request.id,
                    reply_status: ReplyStatus::NoException,
                    service_contexts: Vec::new(),
                }),
            )
            .unwrap();
            body(request, message.body());
            replies
                .entry(request.conn)
                .or_default()
                .extend(message.finish(false));
        }
        let mut connections = self.shared.connections.lock().unwrap();
        for (conn, bytes) in replies {
            let stream = connections[conn].stream.as_mut();
            stream
                .expect("answering on a connection that was reset")
                .write_all(&bytes)
                .unwrap();
        }
    }
}

/// The body of a connection's reading thread: waits while the connection
/// is held, then records every Request until the end of the stream (or
/// closes the connection unread when told to reset it).
fn read_requests(mut stream: TcpStream, conn: usize, shared: &Shared, tx: &Sender<Received>) {
    {
        let mut all = shared.connections.lock().unwrap();
        while all[conn].gate == Gate::Held {
            all = shared.changed.wait(all).unwrap();
        }
        if all[conn].gate == Gate::Reset {
            // The last handle on the socket: closed with unread bytes,
            // it is reset.
            drop(stream);
            all[conn].closed = true;
            shared.changed.notify_all();
            return;
        }
    }
    let mut decoder = FrameDecoder::new(FrameLimits::default());
    let mut buf = [0u8; 65536];
    'read: while let Ok(n @ 1..) = stream.read(&mut buf) {
        if decoder.handle_bytes(&buf[..n]).is_err() {
            break;
        }
        while let Some(frame) = decoder.poll_frame() {
            let Ok(msg) = Message::decode(&frame.bytes) else {
                break 'read;
            };
            if let MessageBody::Request(h) = &msg.body {
                let _ = tx.send(Received {
                    conn,
                    id: h.request_id,
                    version: msg.header.version,
                    header: h.clone(),
                    body_offset: msg.body_offset,
                    bytes: frame.bytes.to_vec(),
                });
            }
        }
    }
    shared.connections.lock().unwrap()[conn].closed = true;
    shared.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use armillary_giop::giop::{ServiceContext, TargetAddress};

    /// A Request with service contexts of awkward lengths, in every
    /// version and byte order: `masked` zeroes the request id and nothing
    /// else.
    #[test]
    fn masked_zeroes_exactly_the_request_id() {
        for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
            for order in [ByteOrder::Big, ByteOrder::Little] {
                for contexts in [0, 1, 3] {
                    let header = RequestHeader {
                        request_id: 0x0102_0304,
                        response_flags: 3,
                        reserved: [0; 3],
                        target: TargetAddress::Key(b"key"[..].into()),
                        operation: "split".into(),
                        service_contexts: (0..contexts)
                            .map(|i| ServiceContext {
                                id: 7 + i,
                                data: vec![0xee; 1 + 2 * i as usize],
                            })
                            .collect(),
                        requesting_principal: Vec::new(),
                    };
                    let mut message =
                        MessageBuilder::new(version, order, &MessageBody::Request(header.clone()))
                            .unwrap();
                    message.body().write_long(7);
                    let bytes = message.finish(false);
                    let msg = Message::decode(&bytes).unwrap();
                    let received = Received {
                        conn: 0,
                        id: header.request_id,
                        version,
                        header,
                        body_offset: msg.body_offset,
                        bytes: bytes.clone(),
                    };
                    let masked = received.masked();
                    let changed: Vec<usize> = (0..bytes.len())
                        .filter(|&i| masked[i] != bytes[i])
                        .collect();
                    let at = received.request_id_offset();
                    assert_eq!(
                        changed,
                        [at, at + 1, at + 2, at + 3],
                        "{version:?} {order:?}"
                    );
                    assert_eq!(at == 12, version == GiopVersion::V1_2);
                }
            }
        }
    }
}
