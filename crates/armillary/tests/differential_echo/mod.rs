//! The `Differential::Echo` side of the differential tests
//! (`tests/interop/idl/differential.idl`): the IDL's types read and written
//! by hand as generated code would, the values both peers make, an
//! Armillary servant and server, a call helper, and a relay that counts the
//! GIOP messages crossing it. Shared by the test files that
//! `mod differential_echo;`: `differential.rs` (omniORB's C++ library) and
//! `omniorbpy.rs` (omniORBpy).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use armillary::config::OrbConfig;
use armillary::giop::any::Any;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::giop::typecode::DefaultLabelForm;
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_giop::cdr::{
    CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter, CharCodeSet, WCharCodeSet,
};
use armillary_giop::giop::{MessageHeader, MessageType};
use armillary_giop::ior::{Ior, ProfileBody};
use armillary_giop::{ByteOrder, CodeSets, GiopVersion};
use armillary_testkit::ClientRun;

// ---------------------------------------------------------------------
// Calls.

/// Calls `op` on `obj` as a stub would: `args` writes the arguments, `read`
/// reads the results, which must end the reply.
pub fn call<T>(
    obj: &ObjectRef,
    op: &str,
    args: &dyn Fn(&mut CdrWriter) -> Result<(), CdrError>,
    mut read: impl FnMut(&mut CdrReader<'_>) -> Result<T, CdrError>,
) -> Result<T, SystemException> {
    obj.invoke(op, args, |reply| match reply {
        ReplyBody::Result(r) => {
            let v = read(r)?;
            if !r.is_empty() {
                return Err(CdrError::Invalid {
                    offset: r.position(),
                    what: "bytes left after the reply's results",
                });
            }
            Ok(Ok(v))
        }
        ReplyBody::UserException { .. } => {
            Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
        }
    })
}

/// A client ORB that speaks GIOP `version` at most.
pub fn client_orb(version: GiopVersion) -> Orb {
    Orb::with_config(OrbConfig::new().max_giop_version(version.try_into().unwrap())).unwrap()
}

/// MARSHAL (COMPLETED_NO) for a value that does not encode.
pub fn marshal(e: CdrError) -> SystemException {
    SystemException::from_cdr_error(&e, CompletionStatus::No)
}

// ---------------------------------------------------------------------
// The typed values of differential.idl, read and written as generated
// code would (sequences of primitives in bulk).

#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

impl CdrEncode for Point {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_long(self.x);
        w.write_long(self.y);
        Ok(())
    }
}

impl CdrDecode for Point {
    const MIN_SIZE: usize = 8;
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Point {
            x: r.read_long()?,
            y: r.read_long()?,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub value: f64,
    pub tag: i16,
    pub flag: u8,
}

impl CdrEncode for Sample {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_string(&self.name)?;
        w.write_double(self.value);
        w.write_short(self.tag);
        w.write_octet(self.flag);
        Ok(())
    }
}

impl CdrDecode for Sample {
    const MIN_SIZE: usize = 16;
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Sample {
            name: r.read_string()?,
            value: r.read_double()?,
            tag: r.read_short()?,
            flag: r.read_octet()?,
        })
    }
}

/// `Differential::Sequences`: one of every kind of sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Sequences {
    pub lead: u8,
    pub shorts: Vec<i16>,
    pub ushorts: Vec<u16>,
    pub longs: Vec<i32>,
    pub ulongs: Vec<u32>,
    pub longlongs: Vec<i64>,
    pub ulonglongs: Vec<u64>,
    pub floats: Vec<f32>,
    pub doubles: Vec<f64>,
    pub booleans: Vec<bool>,
    pub chars: Vec<char>,
    pub octets: Vec<u8>,
    pub strings: Vec<String>,
    pub points: Vec<Point>,
    pub samples: Vec<Sample>,
}

impl CdrEncode for Sequences {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_octet(self.lead);
        w.write(&self.shorts)?;
        w.write(&self.ushorts)?;
        w.write(&self.longs)?;
        w.write(&self.ulongs)?;
        w.write(&self.longlongs)?;
        w.write(&self.ulonglongs)?;
        w.write(&self.floats)?;
        w.write(&self.doubles)?;
        w.write(&self.booleans)?;
        w.write(&self.chars)?;
        w.write(&self.octets)?;
        w.write(&self.strings)?;
        w.write(&self.points)?;
        w.write(&self.samples)
    }
}

impl CdrDecode for Sequences {
    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(Sequences {
            lead: r.read_octet()?,
            shorts: r.read()?,
            ushorts: r.read()?,
            longs: r.read()?,
            ulongs: r.read()?,
            longlongs: r.read()?,
            ulonglongs: r.read()?,
            floats: r.read()?,
            doubles: r.read()?,
            booleans: r.read()?,
            chars: r.read()?,
            octets: r.read()?,
            strings: r.read()?,
            points: r.read()?,
            samples: r.read()?,
        })
    }
}

/// What `make_samples(n)` returns on both sides.
pub fn make_samples(n: i32) -> Vec<Sample> {
    (0..n)
        .map(|i| Sample {
            name: format!("sample-{i}"),
            value: f64::from(i) * 0.5,
            tag: i as i16,
            flag: i as u8,
        })
        .collect()
}

/// The values `diff_peer sequences` sends: element `i` of each sequence
/// by the same formulas as `make_sequences` in `diff_peer.cc`.
pub fn make_sequences(n: u32) -> Sequences {
    let idx = 0..n;
    Sequences {
        lead: 7,
        shorts: idx
            .clone()
            .map(|i| i.wrapping_mul(7).wrapping_sub(3000) as i16)
            .collect(),
        ushorts: idx.clone().map(|i| i.wrapping_mul(13) as u16).collect(),
        longs: idx
            .clone()
            .map(|i| (i.wrapping_mul(7919) as i32).wrapping_sub(500_000))
            .collect(),
        ulongs: idx.clone().map(|i| i.wrapping_mul(2_654_435_761)).collect(),
        longlongs: idx
            .clone()
            .map(|i| i64::from(i) * 1_000_000_007 - 5_000_000_000)
            .collect(),
        ulonglongs: idx
            .clone()
            .map(|i| u64::from(i).wrapping_mul(11_400_714_819_323_198_485))
            .collect(),
        floats: idx.clone().map(|i| i as f32 * 0.25 - 100.0).collect(),
        doubles: idx.clone().map(|i| f64::from(i) * 1.0e-3 - 1.0e6).collect(),
        booleans: idx.clone().map(|i| i % 3 == 0).collect(),
        chars: idx
            .clone()
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect(),
        octets: idx
            .clone()
            .map(|i| i.wrapping_mul(31).wrapping_add(7) as u8)
            .collect(),
        strings: idx
            .clone()
            .map(|i| {
                char::from(b'A' + (i % 26) as u8)
                    .to_string()
                    .repeat((i % 13) as usize)
            })
            .collect(),
        points: idx
            .clone()
            .map(|i| Point {
                x: i as i32,
                y: -(i as i32),
            })
            .collect(),
        samples: idx
            .map(|i| Sample {
                name: format!("sample-{i}"),
                value: f64::from(i) * 0.5,
                tag: i as i16,
                flag: i as u8,
            })
            .collect(),
    }
}

/// The values omniORBpy's `diff_peer.py` sends and expects: those of
/// [`make_sequences`] but for the unsigned long longs, shifted right by 2
/// bits, since omniORBpy 4.3.3 cannot unmarshal a sequence element of
/// 2^63 - 1 or more (see `tests/interop/python/diff_peer.py`).
pub fn make_sequences_for_omniorbpy(n: u32) -> Sequences {
    let mut s = make_sequences(n);
    s.ulonglongs.iter_mut().for_each(|v| *v >>= 2);
    s
}

// ---------------------------------------------------------------------
// Armillary's `Differential::Echo` servant.

pub struct Echo {
    /// What the client's `echo_sequences` sends for `n` elements.
    expected: fn(u32) -> Sequences,
    /// `echo_sequences` calls whose argument differed from `expected`
    /// (the peers' clients send exactly that).
    pub unexpected_sequences: AtomicUsize,
    /// `echo_sequences` calls.
    pub sequences: AtomicUsize,
}

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Differential/Echo:1.0"
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == "IDL:Differential/Echo:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "echo_any" => {
                let v = req.decode_args(Any::decode)?;
                v.encode(req.results()).map_err(marshal)
            }
            "encode_any" => {
                let (v, big) = req.decode_args(|r| Ok((Any::decode(r)?, r.read_bool()?)))?;
                let order = if big {
                    ByteOrder::Big
                } else {
                    ByteOrder::Little
                };
                req.results()
                    .write_octet_seq(&encapsulate(&v, order))
                    .map_err(marshal)
            }
            "echo_tail" => {
                let (a, b): (Vec<i64>, i32) =
                    req.decode_args(|r| Ok((r.read()?, r.read_long()?)))?;
                let w = req.results();
                w.write(&a).map_err(marshal)?;
                w.write_long(b);
                Ok(())
            }
            "sum_longlongs" => {
                let v: Vec<i64> = req.decode_args(|r| r.read())?;
                let sum = v.iter().fold(0i64, |s, x| s.wrapping_add(*x));
                req.results().write_longlong(sum);
                Ok(())
            }
            "make_points" => {
                let n = req.decode_args(|r| r.read_long())?.max(0);
                let points: Vec<Point> = (0..n).map(|i| Point { x: i, y: -i }).collect();
                req.results().write(&points).map_err(marshal)
            }
            "make_samples" => {
                let n = req.decode_args(|r| r.read_long())?.max(0);
                req.results().write(&make_samples(n)).map_err(marshal)
            }
            "echo_sequences" => {
                let v: Sequences = req.decode_args(|r| r.read())?;
                self.sequences.fetch_add(1, Ordering::SeqCst);
                if v != (self.expected)(v.shorts.len() as u32) {
                    self.unexpected_sequences.fetch_add(1, Ordering::SeqCst);
                }
                req.results().write(&v).map_err(marshal)
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

/// An Armillary ORB serving an [`Echo`], with its IOR written to a file
/// for omniORB's client.
pub struct EchoServer {
    orb: Orb,
    /// The servant, for its counts.
    pub echo: Arc<Echo>,
    /// Its reference.
    pub object: ObjectRef,
}

impl EchoServer {
    /// A server whose `echo_sequences` expects what `expected(n)` makes.
    pub fn start(expected: fn(u32) -> Sequences) -> EchoServer {
        let orb = Orb::with_config(OrbConfig::default()).unwrap();
        let poa = orb.root_poa();
        poa.manager().activate().unwrap();
        let echo = Arc::new(Echo {
            expected,
            unexpected_sequences: AtomicUsize::new(0),
            sequences: AtomicUsize::new(0),
        });
        let servant: Arc<dyn Servant> = echo.clone();
        let object = poa.servant_to_reference(&servant).unwrap();
        EchoServer { orb, echo, object }
    }

    /// Writes the IOR (with its IIOP port replaced by `port`, if given)
    /// to a file in `dir` and returns the file.
    pub fn ior_file(&self, dir: &Path, tag: &str, port: Option<u16>) -> std::path::PathBuf {
        let ior = match port {
            Some(port) => with_port(self.object.ior(), port),
            None => self.object.ior().clone(),
        };
        let file = dir.join(format!("diff-{tag}-{}.ior", std::process::id()));
        std::fs::write(&file, ior.to_string()).unwrap();
        file
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        self.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// `ior` with its first IIOP profile's port replaced.
pub fn with_port(ior: &Ior, port: u16) -> Ior {
    let mut body: ProfileBody = ior
        .iiop_profiles()
        .into_iter()
        .next()
        .expect("an IIOP profile");
    body.port = port;
    Ior::iiop(&ior.type_id, &body).unwrap()
}

// ---------------------------------------------------------------------
// A relay that counts the GIOP messages crossing it.

/// What crossed a [`Relay`] in one direction.
#[derive(Debug, Default, Clone)]
pub struct Traffic {
    pub messages: usize,
    /// Fragment messages.
    pub fragments: usize,
    /// Messages that said more fragments follow.
    pub more_fragments: usize,
}

/// A TCP relay on loopback to `target` that counts the GIOP messages in
/// each direction (client to server, server to client), to show that
/// the messages of the fragmentation tests really were fragmented.
pub struct Relay {
    /// Where it listens.
    pub port: u16,
    stop: Arc<AtomicBool>,
    traffic: Arc<Mutex<[Traffic; 2]>>,
}

impl Relay {
    /// A relay to `target` on a port of its own ([`Relay::port`]).
    pub fn start(target: (String, u16)) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let traffic = Arc::new(Mutex::new([Traffic::default(), Traffic::default()]));
        let (stop2, traffic2) = (stop.clone(), traffic.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect((target.0.as_str(), target.1)) else {
                    continue;
                };
                for (from, to, dir) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap(), 0),
                    (server, client, 1),
                ] {
                    let traffic = traffic2.clone();
                    std::thread::spawn(move || pump(from, to, &traffic, dir));
                }
            }
        });
        Relay {
            port,
            stop,
            traffic,
        }
    }

    /// What crossed it so far: client to server, server to client.
    pub fn traffic(&self) -> [Traffic; 2] {
        self.traffic.lock().unwrap().clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accepting thread so that it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Copies `from` to `to`, counting GIOP messages, until either closes.
/// Each chunk is counted before it is forwarded, so whatever a peer has
/// received has been counted by then (a test may read the counts as soon
/// as its call returns).
pub fn pump(mut from: TcpStream, mut to: TcpStream, traffic: &Mutex<[Traffic; 2]>, dir: usize) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut header = Vec::with_capacity(12);
    let mut body_left = 0usize;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            if body_left > 0 {
                let k = body_left.min(chunk.len());
                body_left -= k;
                chunk = &chunk[k..];
                continue;
            }
            let k = (12 - header.len()).min(chunk.len());
            header.extend_from_slice(&chunk[..k]);
            chunk = &chunk[k..];
            if header.len() == 12 {
                let Ok(h) = MessageHeader::decode(&header) else {
                    return;
                };
                let mut t = traffic.lock().unwrap();
                t[dir].messages += 1;
                t[dir].fragments += usize::from(h.message_type == MessageType::Fragment);
                t[dir].more_fragments += usize::from(h.more_fragments);
                body_left = h.size as usize;
                header.clear();
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

// ---------------------------------------------------------------------
// Encapsulations.

/// The code sets of an encapsulation outside any connection: CORBA's
/// default for char (ISO 8859-1), and UTF-16 for wchar as omniORB's memory
/// streams use.
pub const ENCAPSULATION_CODESETS: CodeSets = CodeSets {
    char_set: CharCodeSet::Iso8859_1,
    wchar_set: Some(WCharCodeSet::Utf16),
    write_bom: true,
};

/// Armillary's CDR encapsulation of an any, as omniORB reads it: the
/// byte-order octet, the TypeCode (a union's default label as a value of
/// the discriminator's type), the value (wchar as in GIOP 1.2). Wide characters carry a
/// byte order mark in little-endian streams and none in big-endian ones
/// (where UTF-16 without a mark already means big-endian), as omniORB
/// writes them; both forms are legal.
pub fn encapsulate(any: &Any, order: ByteOrder) -> Vec<u8> {
    let codesets = CodeSets {
        write_bom: order == ByteOrder::Little,
        ..ENCAPSULATION_CODESETS
    };
    let mut w = CdrWriter::new(order, GiopVersion::V1_2)
        .with_codesets(codesets)
        .with_default_label(DefaultLabelForm::DiscriminatorTyped);
    w.write_octet(u8::from(order == ByteOrder::Little));
    any.encode(&mut w)
        .unwrap_or_else(|e| panic!("encoding {any:?}: {e}"));
    w.into_bytes()
}

// ---------------------------------------------------------------------
// The fragmentation tests' two halves, whichever the peer.

/// Asserts what a relay saw of the peer's fragmented messages: fragments
/// from the peer in GIOP 1.1 and 1.2, none in 1.0, and none from
/// Armillary (which sends whole messages).
pub fn assert_fragmented(version: GiopVersion, from_peer: &Traffic, from_armillary: &Traffic) {
    assert_eq!(
        from_armillary.fragments, 0,
        "Armillary sends whole messages"
    );
    if version == GiopVersion::V1_0 {
        assert_eq!(from_peer.fragments, 0, "GIOP 1.0 has no fragments");
    } else {
        assert!(from_peer.fragments >= 3, "GIOP {version}: {from_peer:?}");
    }
}

/// Runs a peer's client (`client(ior_file, n, version)`, its `sequences`
/// mode) against `server` through a relay, for every GIOP version and
/// element count in `counts`; `passed` tells whether its run passed. Each
/// run makes one `echo_sequences` call whose request the peer fragments,
/// and the servant must decode exactly what the peer sent.
pub fn fragmented_requests_from(
    server: &EchoServer,
    dir: &Path,
    counts: &[u32],
    client: impl Fn(&Path, u32, GiopVersion) -> ClientRun,
    passed: impl Fn(&ClientRun) -> bool,
) {
    let endpoint = server.object.ior().iiop_profiles()[0].clone();
    for version in [GiopVersion::V1_0, GiopVersion::V1_1, GiopVersion::V1_2] {
        for &n in counts {
            let relay = Relay::start((endpoint.host.clone(), endpoint.port));
            let ior_file = server.ior_file(dir, "fragments", Some(relay.port));
            let before = server.echo.sequences.load(Ordering::SeqCst);
            let run = client(&ior_file, n, version);
            let _ = std::fs::remove_file(&ior_file);
            assert!(
                passed(&run),
                "GIOP {version}, {n} elements:\n{}\n{}",
                run.stdout,
                run.stderr
            );
            assert_eq!(server.echo.sequences.load(Ordering::SeqCst), before + 1);
            let [request, reply] = relay.traffic();
            println!("GIOP {version}, {n}: requests {request:?}, replies {reply:?}");
            assert_fragmented(version, &request, &reply);
        }
    }
    assert_eq!(
        server.echo.unexpected_sequences.load(Ordering::SeqCst),
        0,
        "the servant decoded values other than the peer's client sent"
    );
}
