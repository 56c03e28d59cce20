//! The metrics endpoint (`-ORBMetricsEndpoint`): a tiny HTTP/1.1
//! responder on a thread of its own. It answers `GET /metrics` with the
//! registry in the Prometheus text format, any other well-formed request
//! with 404 and anything else with 400, one request per connection
//! (`Connection: close`). A connection is read and written with a time
//! limit, so a client that sends nothing holds the endpoint up for
//! [`IO_LIMIT`] at most, and the ORB's threads never: nothing here takes
//! an ORB lock but the registry's collectors, which read counters.
//!
//! The thread waits in a `mio` poll of the listener and a waker;
//! [`MetricsEndpoint::stop`] (the ORB's shutdown) wakes it, it closes the
//! listener, and the port refuses connections from then on.

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mio::net::TcpListener;
use mio::{Events, Interest, Poll, Token, Waker};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::config::ListenEndpoint;
use crate::transport::server::ServerStats;

/// How long a scrape's connection may take to send its request and take
/// the answer.
const IO_LIMIT: Duration = Duration::from_secs(2);

/// The longest request head read (request line and headers).
const MAX_HEAD: usize = 8 * 1024;

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);

/// A running metrics endpoint; stopped by [`stop`](Self::stop) or its
/// drop.
pub(crate) struct MetricsEndpoint {
    address: SocketAddr,
    stopping: Arc<AtomicBool>,
    waker: Arc<Waker>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for MetricsEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsEndpoint")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl MetricsEndpoint {
    /// Listens on `endpoint` and serves `registry` from a new thread.
    pub(crate) fn start(
        endpoint: &ListenEndpoint,
        registry: Registry,
    ) -> std::io::Result<MetricsEndpoint> {
        let mut listener = TcpListener::bind(crate::net::bind_address(endpoint)?)?;
        let address = listener.local_addr()?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = stopping.clone();
        let thread = std::thread::Builder::new()
            .name("armillary-metrics".into())
            .spawn(move || serve(listener, poll, &registry, &stop))?;
        tracing::info!(
            name: crate::trace::METRICS_LISTENING, target: "armillary::metrics",
            %address, "metrics endpoint listening"
        );
        Ok(MetricsEndpoint {
            address,
            stopping,
            waker,
            thread: Some(thread),
        })
    }

    /// Where it listens.
    pub(crate) fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops the thread and closes the listener (waits for a scrape being
    /// answered, [`IO_LIMIT`] at most, unless called on that thread).
    pub(crate) fn stop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
        if let Some(thread) = self.thread.take() {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The endpoint's thread: accepts and answers until stopped.
fn serve(listener: TcpListener, mut poll: Poll, registry: &Registry, stopping: &AtomicBool) {
    let mut events = Events::with_capacity(4);
    // After an accept failure (out of descriptors, say) the listener's
    // edge-triggered event does not come again for the connections
    // waiting: look again a little later.
    let mut retry = None;
    loop {
        match poll.poll(&mut events, retry) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        if stopping.load(Ordering::SeqCst) {
            return;
        }
        retry = None;
        loop {
            match listener.accept() {
                Ok((stream, peer)) => answer(stream, peer, registry),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => {
                    retry = Some(Duration::from_millis(100));
                    break;
                }
            }
            if stopping.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics,
    Other,
}

/// Why a request was not served.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
enum BadRequest {
    /// The connection ended, or its time ran out, before any byte came.
    #[error("nothing was sent")]
    Nothing,
    /// The connection ended, or its time ran out, before a whole head.
    #[error("the request head did not arrive whole")]
    Incomplete,
    /// A head longer than [`MAX_HEAD`].
    #[error("a request head longer than {MAX_HEAD} bytes")]
    TooLong,
    /// The request line is not `METHOD TARGET HTTP/1.x`.
    #[error("not an HTTP/1 request line")]
    NotHttp,
}

/// Reads one request from `stream` and answers it.
fn answer(stream: mio::net::TcpStream, peer: SocketAddr, registry: &Registry) {
    let mut stream = std::net::TcpStream::from(stream);
    let limited = stream
        .set_nonblocking(false)
        .and_then(|()| stream.set_read_timeout(Some(IO_LIMIT)))
        .and_then(|()| stream.set_write_timeout(Some(IO_LIMIT)));
    if limited.is_err() {
        return;
    }
    let response = match read_head(&mut stream).and_then(|head| parse(&head)) {
        Ok(Asked::Metrics) => {
            let mut body = String::new();
            match prometheus_client::encoding::prometheus_text::encode(&mut body, registry) {
                Ok(()) => response(
                    "200 OK",
                    prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                    &body,
                ),
                Err(_) => response(
                    "500 Internal Server Error",
                    "text/plain",
                    "encoding failed\n",
                ),
            }
        }
        Ok(Asked::Other) => response("404 Not Found", "text/plain", "not found: try /metrics\n"),
        Err(BadRequest::Nothing) => return,
        Err(error) => {
            tracing::debug!(
                name: crate::trace::METRICS_BAD_REQUEST, target: "armillary::metrics",
                %peer, %error, "metrics endpoint: bad request"
            );
            response("400 Bad Request", "text/plain", "bad request\n")
        }
    };
    let _ = stream.write_all(response.as_bytes());
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

/// The request head: the bytes up to the blank line that ends it (a
/// peer that sends nothing is closed without an answer).
fn read_head(stream: &mut impl Read) -> Result<Vec<u8>, BadRequest> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0; 1024];
    loop {
        if let Some(end) = find_blank_line(&head) {
            if end > MAX_HEAD {
                return Err(BadRequest::TooLong);
            }
            head.truncate(end);
            return Ok(head);
        }
        if head.len() > MAX_HEAD {
            return Err(BadRequest::TooLong);
        }
        let ended = match head.is_empty() {
            true => BadRequest::Nothing,
            false => BadRequest::Incomplete,
        };
        match stream.read(&mut chunk) {
            Ok(0) => return Err(ended),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Err(ended),
        }
    }
}

/// Where the head's blank line begins (`\r\n\r\n`, or a bare `\n\n`).
fn find_blank_line(bytes: &[u8]) -> Option<usize> {
    let crlf = bytes.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = bytes.windows(2).position(|w| w == b"\n\n");
    match (crlf, lf) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the request line of `head` asks for.
fn parse(head: &[u8]) -> Result<Asked, BadRequest> {
    let line_end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    let line = std::str::from_utf8(&head[..line_end]).map_err(|_| BadRequest::NotHttp)?;
    let mut parts = line.trim_end_matches('\r').split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(BadRequest::NotHttp);
    };
    let token = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphabetic());
    if !token(method) || !target.starts_with('/') || !version.starts_with("HTTP/1.") {
        return Err(BadRequest::NotHttp);
    }
    let path = target.split('?').next().unwrap_or(target);
    Ok(match (method, path) {
        ("GET", "/metrics") => Asked::Metrics,
        _ => Asked::Other,
    })
}

fn response(status: &str, content_type: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
}

/// The server's counters ([`ServerStats`]) at each scrape, from `stats`
/// (zero while there is no server).
pub(crate) struct ServerStatsCollector<F>(pub(crate) F);

impl<F> std::fmt::Debug for ServerStatsCollector<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerStatsCollector")
    }
}

impl<F> Collector for ServerStatsCollector<F>
where
    F: Fn() -> Option<ServerStats> + Send + Sync + 'static,
{
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let stats = (self.0)().unwrap_or_default();
        let counters = [
            (
                "armillary_server_accept_calls",
                "Calls to accept the listeners made, successful or not",
                stats.accept_calls,
            ),
            (
                "armillary_server_accept_failures",
                "Calls to accept that failed",
                stats.accept_failures,
            ),
            (
                "armillary_server_connections_refused",
                "Connections accepted and closed at once (-ORBMaxConnections, \
                 -ORBMaxConnectionThreads)",
                stats.connections_refused,
            ),
            (
                "armillary_server_timed_out_waits",
                "Waits for the server's events that ended with nothing to do",
                stats.timed_out_waits,
            ),
            (
                "armillary_server_pacer_wakeups",
                "Times a reading thread, having read nothing but oneways, woke the pacer \
                 thread (-ORBOnewayPacing)",
                stats.pacer_wakeups,
            ),
        ];
        for (name, help, value) in counters {
            let counter = ConstCounter::new(value);
            counter.encode(encoder.encode_descriptor(
                name,
                help,
                None,
                counter.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "armillary_server_connections_open",
                "Connections open now",
                stats.connections_open,
            ),
            (
                "armillary_server_connection_threads",
                "Connections a thread of their own reads now",
                stats.connection_threads,
            ),
            (
                "armillary_server_partial_bytes",
                "Bytes the partly received messages of every connection hold now",
                stats.partial_bytes,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
            gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(head: &str, expect: Result<Asked, BadRequest>) {
        assert_eq!(
            read_head(&mut head.as_bytes()).and_then(|h| parse(&h)),
            expect,
            "{head:?}"
        );
    }

    #[test]
    fn requests_are_read_and_judged() {
        check(
            "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            Ok(Asked::Metrics),
        );
        check("GET /metrics?x=1 HTTP/1.0\r\n\r\n", Ok(Asked::Metrics));
        check("GET /metrics HTTP/1.1\n\n", Ok(Asked::Metrics));
        check("GET / HTTP/1.1\r\n\r\n", Ok(Asked::Other));
        check("POST /metrics HTTP/1.1\r\n\r\n", Ok(Asked::Other));
        check("GET /metrics HTTP/1.1\r\n", Err(BadRequest::Incomplete));
        check("", Err(BadRequest::Nothing));
        check("\r\n\r\n", Err(BadRequest::NotHttp));
        check("GET\r\n\r\n", Err(BadRequest::NotHttp));
        check("GET metrics HTTP/1.1\r\n\r\n", Err(BadRequest::NotHttp));
        check("GET /metrics SPDY/3\r\n\r\n", Err(BadRequest::NotHttp));
        check("GET /metrics HTTP/1.1 x\r\n\r\n", Err(BadRequest::NotHttp));
        check("\u{1}\u{2}\u{3}\n\n", Err(BadRequest::NotHttp));
        let long = format!("GET /{} HTTP/1.1\r\n\r\n", "a".repeat(MAX_HEAD + 10));
        check(&long, Err(BadRequest::TooLong));
    }

    #[test]
    fn the_server_counters_are_written_as_counters_and_gauges() {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(ServerStatsCollector(|| {
            Some(ServerStats {
                accept_calls: 3,
                connections_open: 2,
                ..ServerStats::default()
            })
        })));
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).unwrap();
        for line in [
            "# TYPE armillary_server_accept_calls_total counter",
            "armillary_server_accept_calls_total 3",
            "# TYPE armillary_server_connections_open gauge",
            "armillary_server_connections_open 2",
            "armillary_server_partial_bytes 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
