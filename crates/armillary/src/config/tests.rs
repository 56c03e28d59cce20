//! Unit tests of the configuration: the `-ORB…` options, the setters and
//! getters that stand for them, and the conversions to wire values.

use super::*;
use armillary_giop::cdr::codeset;

#[test]
fn options_are_parsed_and_the_rest_returned() {
    let mut c = OrbConfig::default();
    let rest = c
        .apply_args([
            "prog",
            "-ORBListenEndpoints",
            "iiop://[::1]:2809",
            "-ORBInitRef",
            "NameService=corbaloc::localhost:2809/NameService",
            "--ior-file",
            "x.ior",
            "-ORBGIOPVersion=1.1",
            "-ORBConcurrency",
            "thread-pool:4",
            "-ORBEndpoint",
            "giop:tcp::0",
        ])
        .unwrap();
    assert_eq!(rest, ["prog", "--ior-file", "x.ior"]);
    assert_eq!(
        c.endpoints,
        [
            ListenEndpoint {
                host: "::1".into(),
                port: 2809
            },
            ListenEndpoint {
                host: "127.0.0.1".into(),
                port: 0
            }
        ]
    );
    assert_eq!(
        c.initial_references["NameService"],
        "corbaloc::localhost:2809/NameService"
    );
    assert_eq!(c.max_giop_version, MaxGiopVersion::V1_1);
    assert_eq!(c.concurrency, ConcurrencyModel::ThreadPool(4));
    for (value, model) in [
        ("reactive", ConcurrencyModel::SingleThreadedReactive),
        (
            "thread-per-connection",
            ConcurrencyModel::ThreadPerConnection,
        ),
        (
            "thread-per-connection:8",
            ConcurrencyModel::ThreadPerConnectionUpTo(8),
        ),
        ("application", ConcurrencyModel::ApplicationThreads),
        ("locality:3", ConcurrencyModel::Locality(3)),
        (
            "thread-per-request",
            ConcurrencyModel::ThreadPerRequest(None),
        ),
        (
            "thread-per-request:3",
            ConcurrencyModel::ThreadPerRequest(Some(3)),
        ),
        (
            "worker-pool:2",
            ConcurrencyModel::WorkerPool {
                workers: 2,
                queue: ConcurrencyModel::DEFAULT_WORKER_QUEUE,
            },
        ),
        (
            "worker-pool:2:5",
            ConcurrencyModel::WorkerPool {
                workers: 2,
                queue: 5,
            },
        ),
        ("thread-per-object", ConcurrencyModel::ThreadPerObject),
    ] {
        let mut c = OrbConfig::default();
        c.apply_args(["-ORBConcurrency", value]).unwrap();
        assert_eq!(c.concurrency, model, "{value}");
    }
    for bad in [
        "thread-pool:0",
        "threads",
        "application:2",
        "locality:0",
        "locality",
        "thread-per-request:0",
        "worker-pool",
        "worker-pool:2:0",
        "worker-pool:1:2:3",
        "thread-per-object:1",
    ] {
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBConcurrency", bad]),
            Err(OrbOptionError::BadValue { .. })
        ));
    }
    for bad in ["slow", "slow:0", ":2", "slow:x"] {
        assert!(matches!(
            OrbConfig::default().apply_args(["-ORBLane", bad]),
            Err(OrbOptionError::BadValue { .. })
        ));
    }
    assert!(matches!(
        OrbConfig::default().apply_args(["-ORBGIOPVersion", "2.0"]),
        Err(OrbOptionError::BadValue { .. })
    ));
    assert!(matches!(
        OrbConfig::default().apply_args(["-ORBInitRef"]),
        Err(OrbOptionError::MissingValue(_))
    ));
    let mut c = OrbConfig::default();
    c.apply_args(["-ORBClientCallTimeout", "250"]).unwrap();
    assert_eq!(c.call_timeout, Some(Duration::from_millis(250)));
    c.apply_args(["-ORBClientCallTimeout=0"]).unwrap();
    assert_eq!(c.call_timeout, None);
    c.apply_args(["-ORBClientCallTimeout", "1s"]).unwrap();
    assert_eq!(c.call_timeout, Some(Duration::from_secs(1)));
    assert!(matches!(
        OrbConfig::default().apply_args(["-ORBBogus", "1"]),
        Err(OrbOptionError::Unknown(_))
    ));
}

#[test]
fn every_duration_option_takes_a_unit_and_keeps_its_bare_unit() {
    let ms = Duration::from_millis;
    let us = Duration::from_micros;
    let with_units = [
        ("200ms", Some(ms(200))),
        ("5s", Some(ms(5_000))),
        ("2m", Some(ms(120_000))),
        ("1.5s", Some(ms(1_500))),
        (".25s", Some(ms(250))),
        ("1.5m", Some(ms(90_000))),
        ("250us", Some(us(250))),
        ("250µs", Some(us(250))),
        ("0.0015ms", Some(Duration::from_nanos(1_500))),
        ("1.0000000001s", Some(Duration::from_nanos(1_000_000_000))),
        ("0s", None),
        ("0ms", None),
    ];
    let bare_seconds = [
        ("3", Some(ms(3_000))),
        ("2.5", Some(ms(2_500))),
        ("0", None),
    ];
    let bare_millis = [
        ("250", Some(ms(250))),
        ("2.5", Some(us(2_500))),
        ("0", None),
    ];
    /// A value and the duration it sets.
    type Case = (&'static str, Option<Duration>);
    /// An option, its bare-number cases, and where it lands.
    type DurationOption<'a> = (&'a str, &'a [Case], fn(&OrbConfig) -> Option<Duration>);
    let options: [DurationOption<'_>; 3] = [
        ("-ORBIdleTimeout", &bare_seconds, |c| c.idle_timeout),
        ("-ORBMessageTimeout", &bare_seconds, |c| c.message_timeout),
        ("-ORBClientCallTimeout", &bare_millis, |c| c.call_timeout),
    ];
    for (option, bare, read) in options {
        for (value, expected) in with_units.iter().chain(bare) {
            let mut c = OrbConfig::default();
            c.apply_args([option, *value]).unwrap();
            assert_eq!(read(&c), *expected, "{option} {value}");
        }
        for value in [
            "5x",
            "",
            ".",
            "-1",
            "1e3",
            "5 s",
            "s",
            "1.2.3",
            "inf",
            "NaN",
            "5S",
            "1h",
            "99999999999999999999999m",
        ] {
            let error = OrbConfig::default()
                .apply_args([option, value])
                .unwrap_err();
            let text = error.to_string();
            assert!(
                matches!(&error, OrbOptionError::BadValue { option: o, value: v, .. }
                    if o == option && v == value),
                "{option} {value}: {error:?}"
            );
            assert!(text.contains("us, ms, s or m"), "{text}");
        }
    }
    let error = OrbConfig::default()
        .apply_args(["-ORBIdleTimeout", "5x"])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "bad value \"5x\" for -ORBIdleTimeout: expected a duration: a number with a unit, \
         us, ms, s or m (200ms, 1.5s, 2m), or a bare number of seconds; 0: no limit"
    );
    let error = OrbConfig::default()
        .apply_args(["-ORBClientCallTimeout=soon"])
        .unwrap_err();
    assert!(
        error.to_string().contains("bare number of milliseconds"),
        "{error}"
    );
}

#[test]
fn tls_options_are_parsed() {
    use crate::tls::{ClientAuth, PemSource};
    let mut c = OrbConfig::default();
    let rest = c
        .apply_args([
            "-ORBListenEndpoints",
            "iiops://0.0.0.0:4433;iiop://127.0.0.1:2809",
            "-ORBEndpoint",
            "giop:ssl:[::1]:0",
            "-ORBListenEndpoints=ssliop://host.example:1",
            "-ORBTlsCert",
            "cert.pem",
            "-ORBTlsKey=key.pem",
            "-ORBTlsCa",
            "a.pem",
            "-ORBTlsCa",
            "b.pem",
            "-ORBTlsClientAuth",
            "optional",
            "-ORBTlsRequire",
            "yes",
            "app",
        ])
        .unwrap();
    assert_eq!(rest, ["app"]);
    let ep = |host: &str, port| ListenEndpoint {
        host: host.into(),
        port,
    };
    assert_eq!(c.endpoints, [ep("127.0.0.1", 2809)]);
    assert_eq!(
        c.tls.endpoints,
        [ep("0.0.0.0", 4433), ep("::1", 0), ep("host.example", 1)]
    );
    assert_eq!(
        c.tls.certificate_chain,
        Some(PemSource::File("cert.pem".into()))
    );
    assert_eq!(c.tls.private_key, Some(PemSource::File("key.pem".into())));
    assert_eq!(c.tls.trusted_roots.len(), 2);
    assert_eq!(c.tls.client_auth, ClientAuth::Optional);
    assert!(c.tls.require && c.tls.is_server() && c.tls.is_client());
    for (option, value) in [
        ("-ORBTlsClientAuth", "sometimes"),
        ("-ORBTlsRequire", "maybe"),
        ("-ORBListenEndpoints", "iiops://[::1"),
    ] {
        assert!(
            matches!(
                OrbConfig::default().apply_args([option, value]),
                Err(OrbOptionError::BadValue { .. })
            ),
            "{option} {value}"
        );
    }
    assert!(matches!(
        OrbConfig::default().apply_args(["-ORBTlsBogus", "1"]),
        Err(OrbOptionError::Unknown(_))
    ));
    assert!(matches!(
        OrbConfig::default().apply_args(["-ORBTlsCa"]),
        Err(OrbOptionError::MissingValue(_))
    ));
}

#[test]
fn limits_have_safe_defaults_and_options() {
    let d = OrbConfig::default();
    assert_eq!(d.idle_timeout, Some(Duration::from_secs(180)));
    assert_eq!(d.message_timeout, Some(Duration::from_secs(5)));
    assert_eq!(d.max_message_size, 64 << 20);
    let mut c = OrbConfig::default();
    c.apply_args([
        "-ORBMaxMessageSize",
        "2M",
        "-ORBMaxPartialBytes=1G",
        "-ORBMaxFragments",
        "8",
        "-ORBMaxOutstandingRequests",
        "4",
        "-ORBMaxQueuedReplyBytes",
        "64K",
        "-ORBMaxConnections",
        "10",
        "-ORBMaxConnectionThreads",
        "3",
        "-ORBMaxConnectionsPerServer",
        "2",
        "-ORBIdleTimeout",
        "0",
        "-ORBMessageTimeout",
        "0.5",
    ])
    .unwrap();
    assert_eq!(c.max_message_size, 2 << 20);
    assert_eq!(c.max_partial_bytes, 1 << 30);
    assert_eq!(c.max_fragments, 8);
    assert_eq!(c.max_outstanding_requests, 4);
    assert_eq!(c.max_queued_reply_bytes, 64 << 10);
    assert_eq!(c.max_connections, 10);
    assert_eq!(c.max_connection_threads, 3);
    assert_eq!(c.max_connections_per_server, 2);
    assert_eq!(c.idle_timeout, None);
    assert_eq!(c.message_timeout, Some(Duration::from_millis(500)));
    for (option, value) in [
        ("-ORBMaxMessageSize", "0"),
        ("-ORBMaxMessageSize", "12Q"),
        ("-ORBMaxConnections", "-1"),
        ("-ORBMessageTimeout", "soon"),
        ("-ORBMaxPartialBytes", "99999999999999999999G"),
        ("-ORBTraceLevel", "6"),
        ("-ORBTraceLevel", "debug"),
        ("-ORBMetricsEndpoint", "127.0.0.1:http"),
        ("-ORBMetricsEndpoint", "[::1"),
    ] {
        assert!(
            matches!(
                OrbConfig::default().apply_args([option, value]),
                Err(OrbOptionError::BadValue { .. })
            ),
            "{option} {value}"
        );
    }
    assert!(matches!(
        OrbConfig::default().apply_args(["-ORBBogus", "1"]),
        Err(OrbOptionError::Unknown(_))
    ));
}

/// Every `-ORB…` option and the setter that stands for it give equal
/// configurations.
#[test]
fn every_option_has_a_setter_with_the_same_effect() {
    use crate::tls::{ClientAuth, TlsConfig};
    let ms = Duration::from_millis;
    let cases: Vec<(Vec<&str>, OrbConfig)> = vec![
        (
            vec!["-ORBListenEndpoints", "iiop://[::1]:2809;giop:tcp::0"],
            OrbConfig::new()
                .listen(ListenEndpoint::new("::1", 2809))
                .listen(ListenEndpoint::new("127.0.0.1", 0)),
        ),
        (
            vec!["-ORBEndpointPublish", "host.example"],
            OrbConfig::new().publish_host("host.example"),
        ),
        (
            vec![
                "-ORBInitRef",
                "A=corbaloc::h:1/A",
                "-ORBInitRef=B=corbaloc::h:2/B",
            ],
            OrbConfig::new()
                .initial_reference("A", "corbaloc::h:1/A")
                .initial_reference("B", "corbaloc::h:2/B"),
        ),
        (
            vec!["-ORBDefaultInitRef", "corbaloc::h:1"],
            OrbConfig::new().default_initial_reference("corbaloc::h:1"),
        ),
        (
            vec!["-ORBGIOPVersion", "1.0"],
            OrbConfig::new().max_giop_version(MaxGiopVersion::V1_0),
        ),
        (
            vec!["-ORBNativeCharCodeSet", "ISO-8859-1"],
            OrbConfig::new().char_code_set(CharCodeSet::Iso8859_1),
        ),
        (
            vec!["-ORBNativeWCharCodeSet", "UCS-2"],
            OrbConfig::new().wchar_code_set(WcharCodeSet::Ucs2),
        ),
        (
            vec!["-ORBConcurrency", "thread-pool:3"],
            OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(3)),
        ),
        (
            vec!["-ORBIdleTimeout", "0"],
            OrbConfig::new().idle_timeout(None),
        ),
        (
            vec!["-ORBIdleTimeout", "2.5"],
            OrbConfig::new().idle_timeout(ms(2500)),
        ),
        (
            vec!["-ORBMessageTimeout", "0"],
            OrbConfig::new().message_timeout(Duration::ZERO),
        ),
        (
            vec!["-ORBMaxMessageSize", "2M"],
            OrbConfig::new().max_message_size(2 << 20),
        ),
        (
            vec!["-ORBgiopMaxMsgSize", "4096"],
            OrbConfig::new().max_message_size(4096),
        ),
        (
            vec!["-ORBMaxPartialBytes", "1G"],
            OrbConfig::new().max_partial_bytes(1 << 30),
        ),
        (
            vec!["-ORBMaxFragments", "8"],
            OrbConfig::new().max_fragments(8),
        ),
        (
            vec!["-ORBMaxOutstandingRequests", "4"],
            OrbConfig::new().max_outstanding_requests(4),
        ),
        (
            vec!["-ORBMaxQueuedReplyBytes", "64K"],
            OrbConfig::new().max_queued_reply_bytes(64 << 10),
        ),
        (
            vec!["-ORBMaxConnections", "10"],
            OrbConfig::new().max_connections(10),
        ),
        (
            vec!["-ORBMaxConnectionThreads", "3"],
            OrbConfig::new().max_connection_threads(3),
        ),
        (vec!["-ORBHoldLimit", "0"], OrbConfig::new().hold_limit(0)),
        (
            vec!["-ORBCollocation", "direct"],
            OrbConfig::new().collocation(Collocation::Direct),
        ),
        (
            vec!["-ORBCollocation", "none"],
            OrbConfig::new().collocation(Collocation::None),
        ),
        (
            vec!["-ORBClientCallTimeout", "250"],
            OrbConfig::new().call_timeout(ms(250)),
        ),
        (
            vec!["-ORBClientMaxOutstanding", "8"],
            OrbConfig::new().client_max_outstanding(8),
        ),
        (
            // `exclusive-calls` is the default: shown after another
            // option.
            vec![
                "-ORBTransportMux",
                "muxed",
                "-ORBConcurrency",
                "thread-pool:2",
                "-ORBTransportMux",
                "exclusive-calls",
            ],
            OrbConfig::new()
                .concurrency(ConcurrencyModel::ThreadPool(2))
                .transport_mux(TransportMux::ExclusiveCalls),
        ),
        (
            vec!["-ORBTransportMux", "exclusive"],
            OrbConfig::new().transport_mux(TransportMux::Exclusive),
        ),
        (
            vec!["-ORBTransportMux", "muxed"],
            OrbConfig::new().transport_mux(TransportMux::Muxed),
        ),
        (
            vec!["-ORBMaxConnectionsPerServer", "2"],
            OrbConfig::new().max_connections_per_server(2),
        ),
        (
            vec!["-ORBUnionDefaultLabel", "zero-octet"],
            OrbConfig::new().union_default_label(UnionDefaultLabel::ZeroOctet),
        ),
        (
            // `discriminator` is the default: shown after the other.
            vec![
                "-ORBUnionDefaultLabel",
                "zero-octet",
                "-ORBHoldLimit",
                "7",
                "-ORBUnionDefaultLabel",
                "discriminator",
            ],
            OrbConfig::new()
                .hold_limit(7)
                .union_default_label(UnionDefaultLabel::Discriminator),
        ),
        (
            vec!["-ORBWaitStrategy", "read"],
            OrbConfig::new().wait_strategy(WaitStrategy::Read),
        ),
        (
            vec!["-ORBWaitStrategy", "reactor"],
            OrbConfig::new().wait_strategy(WaitStrategy::Reactor),
        ),
        (
            // `lf` is the default: shown after another option.
            vec![
                "-ORBWaitStrategy",
                "read",
                "-ORBConcurrency",
                "thread-pool:2",
                "-ORBWaitStrategy",
                "lf",
            ],
            OrbConfig::new()
                .concurrency(ConcurrencyModel::ThreadPool(2))
                .wait_strategy(WaitStrategy::LeaderFollowers),
        ),
        (
            vec!["-ORBMaxOutstanding", "9"],
            OrbConfig::new().client_max_outstanding(9),
        ),
        (
            vec!["-ORBLane", "slow:3", "-ORBLane", "fast:1"],
            OrbConfig::new().lane("slow", 3).lane("fast", 1),
        ),
        (
            vec!["-ORBTraceLevel", "4"],
            OrbConfig::new().trace_level(TraceLevel::Requests),
        ),
        (
            vec!["-ORBtraceLevel=1"],
            OrbConfig::new().trace_level(TraceLevel::Errors),
        ),
        (
            vec!["-ORBMetricsEndpoint", "127.0.0.1:9464"],
            OrbConfig::new().metrics_endpoint(ListenEndpoint::new("127.0.0.1", 9464)),
        ),
        (
            vec!["-ORBMetricsEndpoint", "[::1]:0"],
            OrbConfig::new().metrics_endpoint(ListenEndpoint::new("::1", 0)),
        ),
        (
            vec!["-ORBOnewayPacing", "no"],
            OrbConfig::new().oneway_pacing(false),
        ),
        (
            vec![
                "-ORBOnewayPacing",
                "no",
                "-ORBOnewayPacing=yes",
                "-ORBMaxConnections",
                "3",
            ],
            OrbConfig::new().max_connections(3),
        ),
        (
            vec![
                "-ORBListenEndpoints",
                "iiops://0.0.0.0:4433",
                "-ORBTlsCert",
                "cert.pem",
                "-ORBTlsKey",
                "key.pem",
                "-ORBTlsCa",
                "ca.pem",
                "-ORBTlsClientAuth",
                "required",
                "-ORBTlsRequire",
                "yes",
            ],
            OrbConfig::new().tls(
                TlsConfig::new()
                    .listen(ListenEndpoint::new("0.0.0.0", 4433))
                    .certificate_file("cert.pem")
                    .private_key_file("key.pem")
                    .trusted_roots_file("ca.pem")
                    .client_auth(ClientAuth::Required)
                    .require(true),
            ),
        ),
    ];
    for (args, built) in cases {
        let mut parsed = OrbConfig::new();
        assert_eq!(parsed.apply_args(args.iter().copied()), Ok(vec![]));
        assert_eq!(parsed, built, "{args:?}");
        assert_ne!(parsed, OrbConfig::default(), "{args:?} changed nothing");
    }
    // The one option without a command-line form.
    assert_eq!(OrbConfig::new().max_forwards(2).get_max_forwards(), 2);
}

#[test]
fn getters_read_back_what_the_setters_set() {
    let c = OrbConfig::new()
        .listen(std::net::SocketAddr::from(([127, 0, 0, 1], 7)))
        .publish_host("h")
        .initial_reference("A", "corbaloc::h:1/A")
        .default_initial_reference("corbaloc::h:2")
        .max_giop_version(MaxGiopVersion::V1_1)
        .char_code_set(CharCodeSet::Iso8859_1)
        .wchar_code_set(WcharCodeSet::Ucs2)
        .concurrency(ConcurrencyModel::ThreadPerConnection)
        .idle_timeout(Duration::from_secs(1))
        .message_timeout(None)
        .max_message_size(1)
        .max_partial_bytes(2)
        .max_fragments(3)
        .max_outstanding_requests(4)
        .max_queued_reply_bytes(5)
        .max_connections(6)
        .max_connection_threads(7)
        .hold_limit(8)
        .max_forwards(9)
        .tls(crate::tls::TlsConfig::new().require(true))
        .call_timeout(Duration::from_secs(10))
        .client_max_outstanding(11)
        .union_default_label(UnionDefaultLabel::ZeroOctet);
    assert_eq!(c.get_client_max_outstanding(), 11);
    assert_eq!(c.get_union_default_label(), UnionDefaultLabel::ZeroOctet);
    assert_eq!(c.get_endpoints(), [ListenEndpoint::new("127.0.0.1", 7)]);
    assert_eq!(c.get_publish_host(), Some("h"));
    assert_eq!(c.get_initial_reference("A"), Some("corbaloc::h:1/A"));
    assert_eq!(c.get_initial_reference("B"), None);
    assert_eq!(
        c.get_initial_references().collect::<Vec<_>>(),
        [("A", "corbaloc::h:1/A")]
    );
    assert_eq!(c.get_default_initial_reference(), Some("corbaloc::h:2"));
    assert_eq!(c.get_max_giop_version(), MaxGiopVersion::V1_1);
    assert_eq!(c.get_char_code_set(), CharCodeSet::Iso8859_1);
    assert_eq!(c.get_wchar_code_set(), WcharCodeSet::Ucs2);
    assert_eq!(c.get_concurrency(), ConcurrencyModel::ThreadPerConnection);
    assert_eq!(c.get_idle_timeout(), Some(Duration::from_secs(1)));
    assert_eq!(c.get_message_timeout(), None);
    assert_eq!(
        [
            c.get_max_message_size(),
            c.get_max_partial_bytes(),
            c.get_max_fragments(),
            c.get_max_outstanding_requests(),
            c.get_max_queued_reply_bytes(),
            c.get_max_connections(),
            c.get_max_connection_threads(),
            c.get_hold_limit(),
        ],
        [1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(c.get_max_forwards(), 9);
    assert!(c.get_tls().get_require());
    assert_eq!(c.get_call_timeout(), Some(Duration::from_secs(10)));
    assert_eq!(c.get_trace_level(), TraceLevel::Off);
    assert_eq!(c.get_metrics_endpoint(), None);
    let c = c
        .trace_level(TraceLevel::Everything)
        .metrics_endpoint(ListenEndpoint::new("127.0.0.1", 0));
    assert_eq!(c.get_trace_level(), TraceLevel::Everything);
    assert_eq!(
        c.get_metrics_endpoint(),
        Some(&ListenEndpoint::new("127.0.0.1", 0))
    );
    for n in 0..=5 {
        assert_eq!(TraceLevel::from_number(n).map(TraceLevel::number), Some(n));
    }
    assert_eq!(TraceLevel::from_number(6), None);
    assert!(c.get_oneway_pacing());
    assert!(!c.oneway_pacing(false).get_oneway_pacing());
    assert!(matches!(
        OrbConfig::new().apply_args(["-ORBOnewayPacing", "sometimes"]),
        Err(OrbOptionError::BadValue { .. })
    ));
}

#[test]
fn setters_keep_limits_meaningful() {
    // A zero duration is no limit, as 0 is in the options; a zero
    // count would refuse everything, so it is raised to one.
    let c = OrbConfig::new()
        .call_timeout(Duration::ZERO)
        .idle_timeout(Duration::ZERO)
        .client_max_outstanding(0)
        .max_connections(0)
        .max_message_size(0);
    assert_eq!(c.get_call_timeout(), None);
    assert_eq!(c.get_idle_timeout(), None);
    assert_eq!(c.get_max_connections(), 1);
    assert_eq!(c.get_client_max_outstanding(), 1);
    assert_eq!(c.get_max_message_size(), 1);
    assert_eq!(OrbConfig::new(), OrbConfig::default());
}

#[test]
fn user_level_enums_convert_to_the_wire_values() {
    for (text, version, wire) in [
        ("1.0", MaxGiopVersion::V1_0, GiopVersion::V1_0),
        ("1.1", MaxGiopVersion::V1_1, GiopVersion::V1_1),
        ("1.2", MaxGiopVersion::V1_2, GiopVersion::V1_2),
    ] {
        assert_eq!(MaxGiopVersion::parse(text), Some(version));
        assert_eq!(GiopVersion::from(version), wire);
        assert_eq!(MaxGiopVersion::try_from(wire), Ok(version));
        let mut c = OrbConfig::new();
        c.apply_args(["-ORBmaxGIOPVersion", text]).unwrap();
        assert_eq!(c.giop_version(), wire);
    }
    assert_eq!(OrbConfig::new().giop_version(), GiopVersion::V1_2);
    assert!(MaxGiopVersion::V1_0 < MaxGiopVersion::V1_2);

    // The default publishes what Armillary always published.
    assert_eq!(
        OrbConfig::new().code_sets(),
        CodeSetComponentInfo::armillary()
    );
    for (names, set, native, conversion) in [
        (
            &["UTF-8", "utf8"][..],
            CharCodeSet::Utf8,
            codeset::UTF_8,
            codeset::ISO_8859_1,
        ),
        (
            &["ISO-8859-1", "iso8859-1", "Latin-1"][..],
            CharCodeSet::Iso8859_1,
            codeset::ISO_8859_1,
            codeset::UTF_8,
        ),
    ] {
        for name in names {
            let mut c = OrbConfig::new();
            c.apply_args(["-ORBNativeCharCodeSet", name]).unwrap();
            assert_eq!(c.get_char_code_set(), set, "{name}");
            let info = c.code_sets();
            assert_eq!(info.for_char_data.native_code_set, native);
            assert_eq!(info.for_char_data.conversion_code_sets, [conversion]);
            assert_eq!(
                info.for_wchar_data,
                CodeSetComponentInfo::armillary().for_wchar_data
            );
        }
    }
    for (names, set, native, conversion) in [
        (
            &["UTF-16", "utf16"][..],
            WcharCodeSet::Utf16,
            codeset::UTF_16,
            codeset::UCS_2,
        ),
        (
            &["UCS-2", "ucs2"][..],
            WcharCodeSet::Ucs2,
            codeset::UCS_2,
            codeset::UTF_16,
        ),
    ] {
        for name in names {
            let mut c = OrbConfig::new();
            c.apply_args(["-ORBNativeWCharCodeSet", name]).unwrap();
            assert_eq!(c.get_wchar_code_set(), set, "{name}");
            let info = c.code_sets();
            assert_eq!(info.for_wchar_data.native_code_set, native);
            assert_eq!(info.for_wchar_data.conversion_code_sets, [conversion]);
            assert_eq!(
                info.for_char_data,
                CodeSetComponentInfo::armillary().for_char_data
            );
        }
    }
    // A wchar code set is no char code set, and the other way round.
    for (option, value) in [
        ("-ORBNativeCharCodeSet", "UTF-16"),
        ("-ORBNativeWCharCodeSet", "UTF-8"),
        ("-ORBNativeCharCodeSet", "EBCDIC"),
    ] {
        assert!(
            matches!(
                OrbConfig::new().apply_args([option, value]),
                Err(OrbOptionError::BadValue { .. })
            ),
            "{option} {value}"
        );
    }
}
