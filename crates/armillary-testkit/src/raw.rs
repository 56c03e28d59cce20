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
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};

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
#[derive(Debug)]
pub struct HeldServer {
    port: u16,
    requests: Receiver<Received>,
    /// Every connection accepted, in order.
    connections: Arc<Mutex<Vec<TcpStream>>>,
}

impl HeldServer {
    /// Binds a loopback port and starts accepting (each connection read
    /// by a thread of its own, until the peer closes it).
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, requests) = mpsc::channel();
        let connections = Arc::new(Mutex::new(Vec::new()));
        let accepted = connections.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let conn = {
                    let mut all = accepted.lock().unwrap();
                    all.push(stream.try_clone().unwrap());
                    all.len() - 1
                };
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let mut decoder = FrameDecoder::new(FrameLimits::default());
                    let mut buf = [0u8; 65536];
                    while let Ok(n @ 1..) = stream.read(&mut buf) {
                        if decoder.handle_bytes(&buf[..n]).is_err() {
                            return;
                        }
                        while let Some(frame) = decoder.poll_frame() {
                            let Ok(msg) = Message::decode(&frame.bytes) else {
                                return;
                            };
                            if let MessageBody::Request(h) = &msg.body {
                                let _ = tx.send(Received {
                                    conn,
                                    id: h.request_id,
                                    version: msg.header.version,
                                    header: h.clone(),
                                    body_offset: msg.body_offset,
                                    bytes: frame.bytes.clone(),
                                });
                            }
                        }
                    }
                });
            }
        });
        HeldServer {
            port,
            requests,
            connections,
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
        let mut connections = self.connections.lock().unwrap();
        for (conn, bytes) in replies {
            connections[conn].write_all(&bytes).unwrap();
        }
    }
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
                        target: TargetAddress::Key(b"key".to_vec()),
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
