//! IIOP over TLS on the wire: the client's TLS stream, the server's TLS
//! session (rustls is sans-IO, so the server feeds it the bytes its
//! reactor or connection thread read and writes what it seals through its
//! ordinary send path), the IOR components a TLS server publishes, and the
//! choice of addresses (plain or TLS) a client calls.
//!
//! **Invariant:** a client that has trusted roots never calls a reference
//! that announces TLS endpoints over plain TCP, and a TLS endpoint never
//! serves a byte of plain GIOP.

use std::borrow::Cow;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use armillary_giop::cdr::SplicedBytes;
use armillary_giop::ior::security::{
    association, CompoundSecMech, CompoundSecMechList, SslSecTrans, TlsSecTrans,
};
use armillary_giop::ior::{ProfileBody, TaggedComponent};
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use parking_lot::{Mutex, MutexGuard};
use rustls_pki_types::ServerName;

use super::connection_cache::RouteSlot;
use crate::tls::{ClientAuth, TlsConfig};

/// Bytes of ciphertext read from a socket at a time by a client.
const TLS_READ_BUFFER: usize = 32 * 1024;

/// Whether an I/O error is a TLS failure (a certificate not trusted, a
/// client certificate missing or refused, an alert, bytes that are not
/// TLS) rather than a transport one.
pub(crate) fn is_tls_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>())
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(ErrorKind::InvalidData, e)
}

/// The exception a refused TLS connection raises: the server never
/// received the request.
pub(crate) fn refused() -> SystemException {
    SystemException::no_permission(minor::TLS_REFUSED, CompletionStatus::No)
}

/// The socket of a client connection: plain TCP or TLS over it.
pub(crate) enum ClientStream {
    Plain(TcpStream),
    Tls(Box<TlsClientStream>),
}

impl ClientStream {
    /// Reads plaintext (0 at the end of the stream). Safe to call while
    /// another thread writes.
    pub(crate) fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            ClientStream::Plain(s) => (&*s).read(buf),
            ClientStream::Tls(s) => s.read(buf),
        }
    }

    /// The bytes to write to the socket for the whole messages `plaintext`
    /// (which end at `ends`): the messages themselves, or, over TLS, their
    /// records, each message sealed on its own so that a write that stops
    /// part way tells which messages left. Safe to call while another
    /// thread reads; over TLS, no other thread writes records while the
    /// result lives.
    pub(crate) fn seal<'a>(
        &'a self,
        plaintext: &'a SplicedBytes,
        ends: impl Iterator<Item = usize>,
    ) -> io::Result<Wire<'a>> {
        match self {
            ClientStream::Plain(_) => Ok(Wire {
                bytes: Cow::Borrowed(plaintext),
                sealed_ends: None,
                _records: None,
            }),
            // (Sealing copies: spliced pieces are brought together first.)
            ClientStream::Tls(s) => match plaintext.as_contiguous() {
                Some(plaintext) => s.seal(plaintext, ends),
                None => {
                    let mut flat = Vec::new();
                    plaintext.extend_into(&mut flat);
                    s.seal(&flat, ends)
                }
            },
        }
    }

    /// Whether input that was read from the socket waits to be returned
    /// (TLS records read but not yet decrypted and handed out): a reader
    /// must not wait for the socket before it has taken it.
    pub(crate) fn has_buffered_input(&self) -> bool {
        match self {
            ClientStream::Plain(_) => false,
            ClientStream::Tls(s) => s.has_buffered_input(),
        }
    }

    /// The TCP socket underneath (for its options, and to peek at it).
    pub(crate) fn socket(&self) -> &TcpStream {
        match self {
            ClientStream::Plain(s) => s,
            ClientStream::Tls(s) => &s.socket,
        }
    }

    /// Shuts the socket down both ways (a TLS stream says close_notify
    /// first, if the socket takes it at once).
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            ClientStream::Plain(s) => s.shutdown(Shutdown::Both),
            ClientStream::Tls(s) => {
                s.close_notify();
                s.socket.shutdown(Shutdown::Both)
            }
        };
    }
}

/// Bytes ready for a client's socket (see [`ClientStream::seal`]).
pub(crate) struct Wire<'a> {
    bytes: Cow<'a, SplicedBytes>,
    /// Over TLS, where each message's records end; `None`: the messages
    /// themselves are written, and end where they end.
    sealed_ends: Option<Vec<usize>>,
    /// Over TLS, keeps other threads from writing records meanwhile.
    _records: Option<MutexGuard<'a, ()>>,
}

impl Wire<'_> {
    /// The bytes to write.
    pub(crate) fn bytes(&self) -> &SplicedBytes {
        &self.bytes
    }

    /// Where message `i` (which ends at `plain_end` in the plaintext)
    /// ends in [`bytes`](Self::bytes).
    pub(crate) fn end(&self, i: usize, plain_end: usize) -> usize {
        match &self.sealed_ends {
            Some(ends) => ends.get(i).copied().unwrap_or(self.bytes.len()),
            None => plain_end,
        }
    }
}

/// A TLS client connection whose handshake is done: one thread may read
/// while others write. The session is locked only to feed it ciphertext
/// or take ciphertext from it, never while the socket blocks.
pub(crate) struct TlsClientStream {
    socket: TcpStream,
    session: Mutex<rustls::ClientConnection>,
    /// Keeps the records of concurrent writers in the order the session
    /// sealed them.
    write_lock: Mutex<()>,
    read_buf: Mutex<Ciphertext>,
}

/// Ciphertext read from the socket; `start..end` is not fed to the
/// session yet. Used only by the one reading thread.
struct Ciphertext {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
}

impl TlsClientStream {
    /// Runs the handshake on `socket` (blocking, within `timeout` per
    /// read or write) for a server named `host`.
    pub(crate) fn handshake(
        mut socket: TcpStream,
        config: Arc<rustls::ClientConfig>,
        host: &str,
        timeout: Duration,
    ) -> Result<TlsClientStream, SystemException> {
        let name = ServerName::try_from(host.to_owned()).map_err(|_| refused())?;
        let mut session = rustls::ClientConnection::new(config, name).map_err(|_| refused())?;
        let transient = || SystemException::transient(minor::CONNECT_FAILED, CompletionStatus::No);
        socket
            .set_read_timeout(Some(timeout))
            .and_then(|()| socket.set_write_timeout(Some(timeout)))
            .map_err(|_| transient())?;
        while session.is_handshaking() {
            if let Err(e) = session.complete_io(&mut socket) {
                // Tell the server why, when rustls has an alert to send.
                let _ = session.write_tls(&mut socket);
                return Err(if is_tls_refusal(&e) {
                    refused()
                } else {
                    transient()
                });
            }
        }
        socket
            .set_read_timeout(None)
            .and_then(|()| socket.set_write_timeout(None))
            .map_err(|_| transient())?;
        Ok(TlsClientStream {
            socket,
            session: Mutex::new(session),
            write_lock: Mutex::new(()),
            read_buf: Mutex::new(Ciphertext {
                bytes: vec![0; TLS_READ_BUFFER],
                start: 0,
                end: 0,
            }),
        })
    }

    fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut cipher = self.read_buf.lock();
        let cipher = &mut *cipher;
        loop {
            {
                let mut session = self.session.lock();
                // Feed what is pending one record batch at a time, taking
                // the plaintext out as it appears (the session holds only
                // so much).
                loop {
                    match session.reader().read(buf) {
                        // Ok(0): the server sent close_notify.
                        Ok(n) => return Ok(n),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                        Err(e) => return Err(e),
                    }
                    if cipher.start == cipher.end {
                        break;
                    }
                    let mut input = &cipher.bytes[cipher.start..cipher.end];
                    cipher.start += session.read_tls(&mut input)?;
                    if let Err(e) = session.process_new_packets() {
                        let _ = session.write_tls(&mut &self.socket);
                        return Err(tls_error(e));
                    }
                    // Anything the session wants to answer (a key update)
                    // goes out now unless a writer is busy; that writer
                    // then sends it.
                    if session.wants_write() {
                        if let Some(_writing) = self.write_lock.try_lock() {
                            while session.wants_write() {
                                if session.write_tls(&mut &self.socket).is_err() {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            // Wait for ciphertext without holding the session.
            let n = (&self.socket).read(&mut cipher.bytes)?;
            if n == 0 {
                return Ok(0);
            }
            cipher.start = 0;
            cipher.end = n;
        }
    }

    /// Sends close_notify without ever blocking: the connection is being
    /// shut down, and a peer that reads nothing must not hold it up.
    fn close_notify(&self) {
        let Some(_writing) = self.write_lock.try_lock() else {
            return;
        };
        let mut sealed = Vec::new();
        {
            let mut session = self.session.lock();
            session.send_close_notify();
            if seal(&mut *session, &[], &mut sealed).is_err() {
                return;
            }
        }
        if self.socket.set_nonblocking(true).is_ok() {
            let _ = (&self.socket).write(&sealed);
        }
    }

    /// Seals each message of `plaintext` (ending at `ends`) into records;
    /// the result holds the write lock.
    fn seal<'a>(
        &'a self,
        plaintext: &[u8],
        ends: impl Iterator<Item = usize>,
    ) -> io::Result<Wire<'a>> {
        let writing = self.write_lock.lock();
        let mut sealed = Vec::with_capacity(plaintext.len() + 64);
        let mut sealed_ends = Vec::new();
        {
            let mut session = self.session.lock();
            let mut start = 0;
            for end in ends {
                let message = plaintext
                    .get(start..end)
                    .ok_or(io::Error::from(ErrorKind::InvalidInput))?;
                seal(&mut *session, message, &mut sealed)?;
                sealed_ends.push(sealed.len());
                start = end;
            }
        }
        Ok(Wire {
            bytes: Cow::Owned(SplicedBytes::from(sealed)),
            sealed_ends: Some(sealed_ends),
            _records: Some(writing),
        })
    }

    /// Whether ciphertext read from the socket waits to be fed to the
    /// session, or plaintext to be read from it.
    fn has_buffered_input(&self) -> bool {
        let Some(cipher) = self.read_buf.try_lock() else {
            // The reading thread is at it.
            return false;
        };
        if cipher.start < cipher.end {
            return true;
        }
        match self.session.lock().process_new_packets() {
            Ok(io) => io.plaintext_bytes_to_read() > 0,
            // The next read reports it.
            Err(_) => true,
        }
    }
}

/// Encrypts `plaintext` into `out`, with whatever else the session had to
/// send first (handshake messages, alerts).
fn seal<D>(
    session: &mut rustls::ConnectionCommon<D>,
    plaintext: &[u8],
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let mut rest = plaintext;
    loop {
        while session.wants_write() {
            session.write_tls(out)?;
        }
        if rest.is_empty() {
            return Ok(());
        }
        match session.writer().write(rest)? {
            0 => return Err(ErrorKind::WriteZero.into()),
            n => rest = &rest[n..],
        }
    }
}

/// The TLS state of one accepted connection. The server reads ciphertext
/// with its ordinary read path and hands it to [`open`](Self::open); what
/// it sends goes through [`seal`](Self::seal) under its send lock, so the
/// records leave in the order they were sealed.
pub(crate) struct ServerSession {
    session: Mutex<rustls::ServerConnection>,
}

/// What [`ServerSession::open`] found besides plaintext.
pub(crate) struct Opened {
    /// The session has bytes to send (handshake messages).
    pub(crate) wants_write: bool,
    /// The client sent close_notify.
    pub(crate) closed: bool,
}

impl ServerSession {
    pub(crate) fn new(config: Arc<rustls::ServerConfig>) -> Option<ServerSession> {
        Some(ServerSession {
            session: Mutex::new(rustls::ServerConnection::new(config).ok()?),
        })
    }

    /// Feeds ciphertext; appends the plaintext it carried to `plain`. An
    /// error (bytes that are not TLS, a refused client certificate) means
    /// the connection must be closed after sending what
    /// [`seal`](Self::seal) of nothing returns (the alert).
    pub(crate) fn open(&self, ciphertext: &[u8], plain: &mut Vec<u8>) -> io::Result<Opened> {
        let mut session = self.session.lock();
        let mut input = ciphertext;
        let mut closed = false;
        while !input.is_empty() {
            session.read_tls(&mut input)?;
            session.process_new_packets().map_err(tls_error)?;
            let mut chunk = [0u8; 16 * 1024];
            loop {
                match session.reader().read(&mut chunk) {
                    Ok(0) => {
                        closed = true;
                        break;
                    }
                    Ok(n) => plain.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(Opened {
            wants_write: session.wants_write(),
            closed,
        })
    }

    /// Encrypts `plaintext` (which may be empty) into `out`, after anything
    /// the session had to send first.
    pub(crate) fn seal(&self, plaintext: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        seal(&mut *self.session.lock(), plaintext, out)
    }

    /// Queues close_notify (sent by the next [`seal`](Self::seal)).
    pub(crate) fn send_close_notify(&self) {
        self.session.lock().send_close_notify();
    }
}

/// The association options a TLS server supports and requires.
fn association_options(tls: &TlsConfig, plain_too: bool) -> (u16, u16) {
    let protected = association::INTEGRITY | association::CONFIDENTIALITY;
    let mut supports = protected | association::ESTABLISH_TRUST_IN_TARGET;
    let mut requires = if plain_too { 0 } else { protected };
    if plain_too {
        supports |= association::NO_PROTECTION;
    }
    match tls.client_auth {
        ClientAuth::None => {}
        ClientAuth::Optional => supports |= association::ESTABLISH_TRUST_IN_CLIENT,
        ClientAuth::Required => {
            supports |= association::ESTABLISH_TRUST_IN_CLIENT;
            requires |= association::ESTABLISH_TRUST_IN_CLIENT;
        }
    }
    (supports, requires)
}

/// The components that announce a server's TLS endpoints in its IIOP
/// profiles: `TAG_SSL_SEC_TRANS` with the first TLS port (on the profile's
/// host, as omniORB publishes it) and a CSIv2 `TAG_CSI_SEC_MECH_LIST`
/// whose one mechanism is TLS at every TLS address, with no
/// authentication or attribute layer. `plain_too` says whether the server
/// also serves plain IIOP (then it requires nothing).
pub(crate) fn ior_components(
    tls: &TlsConfig,
    published: &[(String, u16)],
    plain_too: bool,
) -> Vec<TaggedComponent> {
    let Some((_, first_port)) = published.first() else {
        return Vec::new();
    };
    let (target_supports, target_requires) = association_options(tls, plain_too);
    let mut out = Vec::new();
    if let Ok(c) = TaggedComponent::ssl_sec_trans(&SslSecTrans {
        target_supports,
        target_requires,
        port: *first_port,
    }) {
        out.push(c);
    }
    let transport = TlsSecTrans {
        target_supports,
        target_requires,
        addresses: published.to_vec(),
    };
    if let Ok(transport_mech) = transport.to_component() {
        let list = CompoundSecMechList {
            stateful: false,
            mechanisms: vec![CompoundSecMech {
                target_requires,
                transport_mech,
                as_context_mech: Default::default(),
                sas_context_mech: Default::default(),
            }],
        };
        if let Ok(c) = TaggedComponent::csi_sec_mech_list(&list) {
            out.push(c);
        }
    }
    out
}

/// One address to try, and whether to use TLS there.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) tls: bool,
    /// The cached connections to it, found on first use.
    pub(crate) slot: RouteSlot,
}

impl Route {
    /// The address `host:port`, over TLS or not.
    pub(crate) fn new(host: String, port: u16, tls: bool) -> Self {
        Route {
            host,
            port,
            tls,
            slot: RouteSlot::default(),
        }
    }
}

/// The addresses of `profile` a client calls, in order. A client with
/// trusted roots (`client_tls`) uses the TLS addresses when there are any
/// and never falls back to plain ones; with `require` it refuses a profile
/// without TLS addresses (NO_PERMISSION, `TLS_REQUIRED`). A client without
/// roots uses the plain addresses, and refuses a TLS-only profile
/// (NO_PERMISSION, `TLS_NOT_CONFIGURED`).
pub(crate) fn routes(
    profile: &ProfileBody,
    client_tls: bool,
    require: bool,
) -> Result<Vec<Route>, SystemException> {
    let secure = profile.tls_addresses();
    if client_tls && !secure.is_empty() {
        return Ok(secure
            .into_iter()
            .map(|(host, port)| Route::new(host, port, true))
            .collect());
    }
    if require {
        return Err(SystemException::no_permission(
            minor::TLS_REQUIRED,
            CompletionStatus::No,
        ));
    }
    let plain: Vec<Route> = profile
        .addresses()
        .into_iter()
        .filter(|(_, port)| *port != 0)
        .map(|(host, port)| Route::new(host, port, false))
        .collect();
    if plain.is_empty() && !secure.is_empty() {
        return Err(SystemException::no_permission(
            minor::TLS_NOT_CONFIGURED,
            CompletionStatus::No,
        ));
    }
    Ok(plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use armillary_giop::GiopVersion;

    fn profile(port: u16, components: Vec<TaggedComponent>) -> ProfileBody {
        let mut p = ProfileBody::new(GiopVersion::V1_2, "127.0.0.1", port, b"key".to_vec());
        p.components = components;
        p
    }

    #[test]
    fn routes_prefer_tls_and_never_downgrade() {
        let tls = TlsConfig::default();
        let published = [("127.0.0.1".to_owned(), 4433)];
        let both = profile(2809, ior_components(&tls, &published, true));
        let only_tls = profile(0, ior_components(&tls, &published, false));
        let plain = profile(2809, Vec::new());
        let r = |host: &str, port, tls| (host.to_owned(), port, tls);
        let routes = |profile: &ProfileBody, client_tls, require| {
            routes(profile, client_tls, require).map(|found| {
                found
                    .into_iter()
                    .map(|r| (r.host, r.port, r.tls))
                    .collect::<Vec<_>>()
            })
        };
        assert_eq!(
            routes(&both, true, false).unwrap(),
            [r("127.0.0.1", 4433, true)]
        );
        assert_eq!(
            routes(&both, false, false).unwrap(),
            [r("127.0.0.1", 2809, false)]
        );
        assert_eq!(
            routes(&only_tls, true, true).unwrap(),
            [r("127.0.0.1", 4433, true)]
        );
        assert_eq!(
            routes(&only_tls, false, false).unwrap_err().minor(),
            minor::TLS_NOT_CONFIGURED
        );
        assert_eq!(
            routes(&plain, true, false).unwrap(),
            [r("127.0.0.1", 2809, false)]
        );
        let e = routes(&plain, true, true).unwrap_err();
        assert_eq!(e.minor(), minor::TLS_REQUIRED);
    }

    #[test]
    fn association_options_follow_the_configuration() {
        let mut tls = TlsConfig::default();
        assert_eq!(association_options(&tls, false), (0x26, 0x06));
        assert_eq!(association_options(&tls, true), (0x27, 0));
        tls.client_auth = ClientAuth::Optional;
        assert_eq!(association_options(&tls, false), (0x66, 0x06));
        tls.client_auth = ClientAuth::Required;
        assert_eq!(association_options(&tls, false), (0x66, 0x46));
    }
}
