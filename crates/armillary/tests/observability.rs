//! What the ORB tells its operator (`armillary::trace`, `armillary::metrics`):
//! the spans and events it reports through `tracing`, seen by a collecting
//! subscriber, and the metrics its `-ORBMetricsEndpoint` serves, scraped
//! with a plain `TcpStream`.
//!
//! The subscriber is the process's global default (installed once): the
//! server's events happen on its own threads, which a thread-local
//! subscriber (`tracing::subscriber::with_default`) would not see. Tests
//! run at the same time, so each picks out its own spans and events by
//! what only it has: its server's port, its client's address, an
//! operation name of its own. Work on other threads is awaited with
//! bounded waits (`armillary_testkit::wait_until`); nothing depends on
//! timing.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, OnceLock};

use armillary::config::{Collocation, ListenEndpoint, OrbConfig};
use armillary::giop::system_exception::{CompletionStatus, SystemException, SystemExceptionKind};
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use armillary_testkit::wait_until;
use parking_lot::Mutex;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as the collector saw it: its name and its fields, those
/// recorded later included; `closed` once it ended.
#[derive(Debug, Clone, Default)]
struct SpanSeen {
    name: String,
    fields: HashMap<String, String>,
    closed: bool,
}

/// One event: its name, level, target and fields, and the fields of the
/// span it happened in.
#[derive(Debug, Clone)]
struct EventSeen {
    name: String,
    level: tracing::Level,
    fields: HashMap<String, String>,
    span: Option<SpanSeen>,
}

#[derive(Default)]
struct Seen {
    spans: Mutex<HashMap<u64, SpanSeen>>,
    events: Mutex<Vec<EventSeen>>,
}

/// Field values as text: strings as they are, the rest as `Debug` prints
/// them (numbers plainly, `Display` values as they display).
struct Fields<'a>(&'a mut HashMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

/// The collecting layer.
struct Collector(Arc<Seen>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Collector {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _: Context<'_, S>) {
        let mut span = SpanSeen {
            name: attrs.metadata().name().to_owned(),
            ..SpanSeen::default()
        };
        attrs.record(&mut Fields(&mut span.fields));
        self.0.spans.lock().insert(id.into_u64(), span);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        if let Some(span) = self.0.spans.lock().get_mut(&id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        if let Some(span) = self.0.spans.lock().get_mut(&id.into_u64()) {
            span.closed = true;
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = HashMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx
            .event_span(event)
            .and_then(|s| self.0.spans.lock().get(&s.id().into_u64()).cloned());
        self.0.events.lock().push(EventSeen {
            name: event.metadata().name().to_owned(),
            level: *event.metadata().level(),
            fields,
            span,
        });
    }
}

/// What the process's subscriber has seen (installed on first use).
fn seen() -> &'static Arc<Seen> {
    static SEEN: OnceLock<Arc<Seen>> = OnceLock::new();
    SEEN.get_or_init(|| {
        let seen = Arc::new(Seen::default());
        let subscriber = tracing_subscriber::registry().with(Collector(seen.clone()));
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        seen
    })
}

/// The spans named `name` whose fields match every one of `with`.
fn spans(name: &str, with: &[(&str, &str)]) -> Vec<SpanSeen> {
    seen()
        .spans
        .lock()
        .values()
        .filter(|s| s.name == name && matches(&s.fields, with))
        .cloned()
        .collect()
}

/// The events named `name` whose fields match every one of `with`.
fn events(name: &str, with: &[(&str, &str)]) -> Vec<EventSeen> {
    seen()
        .events
        .lock()
        .iter()
        .filter(|e| e.name == name && matches(&e.fields, with))
        .cloned()
        .collect()
}

fn matches(fields: &HashMap<String, String>, with: &[(&str, &str)]) -> bool {
    with.iter()
        .all(|(k, v)| fields.get(*k).is_some_and(|have| have == v))
}

/// A servant whose operations do what their names say: `ping` answers
/// "pong", `boom` panics, `forget` takes its reply and drops the
/// responder (AMH); any other is BAD_OPERATION.
struct Scripted;

impl Servant for Scripted {
    fn repository_id(&self) -> &'static str {
        "IDL:Test/Scripted:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "ping" => req
                .results()
                .write_string("pong")
                .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::Yes)),
            "boom" => panic!("the traced servant's bug"),
            "forget" => {
                drop(req.respond_later());
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

/// A server with a `Scripted` object, its metrics served when `metrics`,
/// and a client ORB that calls it over IIOP (not collocated).
struct Rig {
    server: Orb,
    client: Orb,
    object: ObjectRef,
}

impl Rig {
    fn new(metrics: bool) -> Rig {
        seen();
        let mut config = OrbConfig::new();
        if metrics {
            config = config.metrics_endpoint(ListenEndpoint::new("127.0.0.1", 0));
        }
        let server = Orb::with_config(config).unwrap();
        let root = server.root_poa();
        root.manager().activate().unwrap();
        let id = root.activate_object(Scripted).unwrap();
        let ior = server.object_to_string(&root.id_to_reference(id).unwrap());
        let client = Orb::with_config(
            OrbConfig::new()
                .collocation(Collocation::None)
                .call_timeout(armillary_testkit::WAIT_LIMIT),
        )
        .unwrap();
        let object = client.string_to_object(&ior).unwrap();
        Rig {
            server,
            client,
            object,
        }
    }

    /// The server's address, as the client's spans name it.
    fn server_address(&self) -> String {
        format!("127.0.0.1:{}", self.server.endpoints()[0].port())
    }

    fn call(&self, operation: &str) -> Result<String, SystemException> {
        self.object
            .invoke_plain(operation, &|_| Ok(()), |r| r.read_string())
    }

    fn end(self) {
        self.client.shutdown(WaitForCompletion::Yes).unwrap();
        self.server.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

/// The one closed span named `name` matching `with`, once there is one.
fn closed_span(name: &str, with: &[(&str, &str)]) -> SpanSeen {
    let mut found = Vec::new();
    wait_until(&format!("a closed {name} span with {with:?}"), || {
        found = spans(name, with);
        found.iter().any(|s| s.closed)
    });
    assert_eq!(found.len(), 1, "{found:?}");
    found.remove(0)
}

/// The events named `name` matching `with`, once there is one.
fn event(name: &str, with: &[(&str, &str)]) -> EventSeen {
    let mut found = Vec::new();
    wait_until(&format!("a {name} event with {with:?}"), || {
        found = events(name, with);
        !found.is_empty()
    });
    found.remove(0)
}

#[test]
fn one_call_makes_a_client_span_and_a_server_span_that_name_each_other() {
    let rig = Rig::new(false);
    assert_eq!(rig.call("ping").unwrap(), "pong");
    let server = rig.server_address();
    let client = closed_span(
        armillary::trace::CLIENT_REQUEST,
        &[("peer", &server), ("operation", "ping")],
    );
    assert_eq!(client.fields["outcome"], "normal", "{client:?}");
    assert_eq!(client.fields["giop"], "1.2");
    let (id, local) = (&client.fields["request_id"], &client.fields["local"]);
    // The server's span of the same call: the client's address and the
    // same request id.
    let upcall = closed_span(
        armillary::trace::SERVER_REQUEST,
        &[("peer", local), ("request_id", id)],
    );
    assert_eq!(upcall.fields["operation"], "ping");
    assert_eq!(upcall.fields["outcome"], "normal");
    assert_eq!(upcall.fields["object_key"], client.fields["object_key"]);

    // A system exception, on both sides.
    let e = rig.call("no_such_operation").unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadOperation);
    let client = closed_span(
        armillary::trace::CLIENT_REQUEST,
        &[("peer", &server), ("operation", "no_such_operation")],
    );
    assert_eq!(client.fields["outcome"], "system_exception");
    assert!(
        client.fields["exception"].contains("BAD_OPERATION"),
        "{client:?}"
    );
    let upcall = closed_span(
        armillary::trace::SERVER_REQUEST,
        &[
            ("peer", local),
            ("request_id", &client.fields["request_id"]),
        ],
    );
    assert_eq!(upcall.fields["outcome"], "system_exception");
    rig.end();
}

#[test]
fn connections_are_reported_when_opened_and_closed() {
    let rig = Rig::new(false);
    rig.call("ping").unwrap();
    let server = rig.server_address();
    let opened = event(
        armillary::trace::CONNECTION_OPENED,
        &[("side", "client"), ("peer", &server)],
    );
    assert_eq!(opened.level, tracing::Level::INFO);
    let local = opened.fields["local"].clone();
    event(
        armillary::trace::CONNECTION_OPENED,
        &[("side", "server"), ("peer", &local)],
    );
    // The client goes: the server sees its connection close.
    rig.client.shutdown(WaitForCompletion::Yes).unwrap();
    let closed = event(
        armillary::trace::CONNECTION_CLOSED,
        &[("side", "server"), ("peer", &local)],
    );
    assert_eq!(closed.fields["reason"], "peer_closed");
    rig.end();
}

#[test]
fn garbage_on_a_connection_is_reported_with_the_message_error_sent() {
    seen();
    let server =
        Orb::with_config(OrbConfig::new().listen(ListenEndpoint::new("127.0.0.1", 0))).unwrap();
    let port = server.endpoints()[0].port();
    let mut junk = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let local = junk.local_addr().unwrap().to_string();
    junk.write_all(b"HELLO, this is not GIOP at all\r\n")
        .unwrap();
    junk.set_read_timeout(Some(armillary_testkit::WAIT_LIMIT))
        .unwrap();
    // MessageError (12 bytes), then the close.
    let mut answer = Vec::new();
    junk.read_to_end(&mut answer).unwrap();
    assert_eq!(&answer[..4], b"GIOP", "{answer:?}");
    let rejected = event(armillary::trace::MESSAGE_REJECTED, &[("peer", &local)]);
    assert_eq!(rejected.level, tracing::Level::WARN);
    assert!(rejected.fields["error"].contains("GIOP"), "{rejected:?}");
    event(armillary::trace::MESSAGE_ERROR_SENT, &[("peer", &local)]);
    let closed = event(
        armillary::trace::CONNECTION_CLOSED,
        &[("side", "server"), ("peer", &local)],
    );
    assert_eq!(closed.fields["reason"], "message_error");
    server.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_servant_panic_is_reported_inside_its_request_span() {
    let rig = Rig::new(false);
    let e = rig.call("boom").unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::Unknown);
    let panicked = event(
        armillary::trace::SERVANT_PANICKED,
        &[("panic", "the traced servant's bug")],
    );
    assert_eq!(panicked.level, tracing::Level::ERROR);
    let span = panicked.span.expect("inside the request's span");
    assert_eq!(span.name, armillary::trace::SERVER_REQUEST);
    assert_eq!(span.fields["operation"], "boom");
    rig.end();
}

#[test]
fn a_dropped_amh_responder_is_reported() {
    let rig = Rig::new(false);
    let e = rig.call("forget").unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::NoResponse);
    let dropped = event(
        armillary::trace::RESPONDER_DROPPED,
        &[("operation", "forget")],
    );
    assert_eq!(dropped.level, tracing::Level::WARN);
    let client = closed_span(
        armillary::trace::CLIENT_REQUEST,
        &[("peer", &rig.server_address()), ("operation", "forget")],
    );
    let upcall = closed_span(
        armillary::trace::SERVER_REQUEST,
        &[
            ("peer", &client.fields["local"]),
            ("request_id", &client.fields["request_id"]),
        ],
    );
    assert_eq!(upcall.fields["outcome"], "system_exception");
    assert!(upcall.fields["exception"].contains("NO_RESPONSE"));
    rig.end();
}

#[test]
fn an_ami_reply_nobody_handled_is_a_warning_with_its_line() {
    seen();
    let timeout = SystemException::timeout(armillary::minor::CALL_TIMEOUT, CompletionStatus::Maybe);
    let holder =
        armillary::ami::ExceptionHolder::<SystemException>::from_system_exception(&timeout);
    armillary::ami::unhandled_exception(
        "Test::Traced::unhandled_op",
        "unhandled_op_excep",
        &holder,
    );
    let unhandled = event(
        armillary::trace::AMI_UNHANDLED,
        &[("call", "Test::Traced::unhandled_op")],
    );
    assert_eq!(unhandled.level, tracing::Level::WARN);
    assert_eq!(unhandled.fields["handler_method"], "unhandled_op_excep");
    assert_eq!(
        unhandled.fields["message"],
        "armillary: Test::Traced::unhandled_op raised IDL:omg.org/CORBA/TIMEOUT:1.0, and its AMI \
         reply handler does not implement unhandled_op_excep"
    );
}

/// Sends `request` to the metrics endpoint at `address` and returns the
/// whole answer.
fn scrape(address: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(armillary_testkit::WAIT_LIMIT))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// The value of the sample `name` (with its labels, as written) in the
/// text format `body`.
fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn the_metrics_endpoint_serves_counters_and_request_metrics() {
    let rig = Rig::new(true);
    let address = rig.server.metrics_endpoint().expect("an endpoint");
    for _ in 0..3 {
        rig.call("ping").unwrap();
    }
    for _ in 0..2 {
        rig.call("metered_unknown").unwrap_err();
    }
    let answer = scrape(address, b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n");
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/plain; version=0.0.4"),
        "{head}"
    );
    let count = |name: &str| sample(body, name).unwrap_or_else(|| panic!("{name} in\n{body}"));
    assert_eq!(
        count(r#"armillary_server_requests_total{operation="ping",outcome="normal"}"#),
        3.0
    );
    assert_eq!(
        count(
            r#"armillary_server_requests_total{operation="metered_unknown",outcome="system_exception"}"#
        ),
        2.0
    );
    assert_eq!(
        count(
            r#"armillary_server_request_duration_seconds_count{operation="ping",outcome="normal"}"#
        ),
        3.0
    );
    // One client connection, accepted by at least one call to accept.
    assert_eq!(count("armillary_server_connections_open"), 1.0);
    assert!(count("armillary_server_accept_calls_total") >= 1.0);
    assert_eq!(count("armillary_server_connections_refused_total"), 0.0);

    // Anything else is 404, and what is not HTTP 400; a peer that sends
    // nothing is closed; none of it harms the endpoint.
    let other = scrape(address, b"GET /other HTTP/1.1\r\n\r\n");
    assert!(other.starts_with("HTTP/1.1 404 Not Found\r\n"), "{other}");
    let garbage = scrape(address, b"\x01\x02\x03 not http\r\n\r\n");
    assert!(
        garbage.starts_with("HTTP/1.1 400 Bad Request\r\n"),
        "{garbage}"
    );
    drop(TcpStream::connect(address).unwrap());
    let again = scrape(address, b"GET /metrics HTTP/1.0\r\n\r\n");
    assert!(again.starts_with("HTTP/1.1 200 OK\r\n"), "{again}");

    // The listener closes with the ORB.
    rig.end();
    assert!(TcpStream::connect(address).is_err());
}

#[test]
fn without_an_endpoint_there_is_none() {
    let orb = Orb::with_config(OrbConfig::new()).unwrap();
    assert_eq!(orb.metrics_endpoint(), None);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
