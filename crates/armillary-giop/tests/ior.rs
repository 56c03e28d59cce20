//! IORs and object URLs: the omniORB IORs decode and re-encode exactly,
//! corbaloc/corbaname parse as the specification says (and fail with
//! positions), and random IORs survive printing and parsing.

use armillary_giop::cdr::codeset::{CodeSetComponentInfo, ISO_8859_1, UTF_16, UTF_8};
use armillary_giop::ior::{
    CorbalocAddress, Ior, IorError, KnownComponent, ObjectUrl, ProfileBody, TaggedComponent,
    TaggedProfile, ORB_TYPE_OMNIORB, TAG_CODE_SETS, TAG_ORB_TYPE,
};
use armillary_giop::{ByteOrder, GiopVersion};
use armillary_testkit::captured_iors;
use proptest::prelude::*;

#[test]
fn omniorb_iors_decode_and_print_back_exactly() {
    let iors = captured_iors();
    for (path, text) in &iors {
        let ior: Ior = text.parse().unwrap();
        assert_eq!(&ior.to_string(), text, "{}", path.display());
        let body = &ior.iiop_profiles()[0];
        assert_eq!(body.iiop_version, GiopVersion::V1_2);
        assert_eq!(body.host, "127.0.0.1");
        let key = String::from_utf8(body.object_key.clone()).unwrap();
        assert!(["Echo", "Quoter", "Types"].contains(&key.as_str()), "{key}");
        assert_eq!(
            body.component(TAG_ORB_TYPE),
            Some(KnownComponent::OrbType(ORB_TYPE_OMNIORB))
        );
        let cs = body.code_sets().unwrap();
        assert_eq!(cs.for_char_data.native_code_set, ISO_8859_1);
        assert_eq!(cs.for_char_data.conversion_code_sets, vec![UTF_8]);
        assert_eq!(cs.for_wchar_data.native_code_set, UTF_16);
        // Every profile body re-encodes to its exact bytes.
        for p in &ior.profiles {
            assert_eq!(
                ProfileBody::decode(&p.data).unwrap().encode().unwrap(),
                p.data
            );
        }
    }
    let n = iors.len();
    assert!(n >= 30);
}

fn addr(version: GiopVersion, host: &str, port: u16) -> CorbalocAddress {
    CorbalocAddress {
        version,
        host: host.into(),
        port,
    }
}

#[test]
fn corbaloc_and_corbaname_parse_per_the_spec() {
    let ok: Vec<(&str, ObjectUrl)> = vec![
        (
            "corbaloc::localhost/NameService",
            ObjectUrl::Corbaloc {
                addresses: vec![addr(GiopVersion::V1_0, "localhost", 2809)],
                key: b"NameService".to_vec(),
            },
        ),
        (
            "corbaloc:iiop:1.2@host.example:3000,iiop:[::1]:4000,:10.0.0.1/a%2Fb%00",
            ObjectUrl::Corbaloc {
                addresses: vec![
                    addr(GiopVersion::V1_2, "host.example", 3000),
                    addr(GiopVersion::V1_0, "::1", 4000),
                    addr(GiopVersion::V1_0, "10.0.0.1", 2809),
                ],
                key: b"a/b\0".to_vec(),
            },
        ),
        (
            "corbaloc:rir:/NameService",
            ObjectUrl::CorbalocRir {
                key: "NameService".into(),
            },
        ),
        (
            "corbaloc:rir:",
            ObjectUrl::CorbalocRir {
                key: "NameService".into(),
            },
        ),
        (
            "corbaname::ns.example:2810#a/b.kind/c",
            ObjectUrl::Corbaname {
                addresses: Some(vec![addr(GiopVersion::V1_0, "ns.example", 2810)]),
                key: b"NameService".to_vec(),
                name: "a/b.kind/c".into(),
            },
        ),
        (
            "corbaname:rir:/Other#x%20y",
            ObjectUrl::Corbaname {
                addresses: None,
                key: b"Other".to_vec(),
                name: "x y".into(),
            },
        ),
    ];
    for (text, expected) in ok {
        let url: ObjectUrl = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(url, expected, "{text}");
        // Printing and parsing again gives the same URL.
        assert_eq!(url.to_string().parse::<ObjectUrl>().unwrap(), url, "{text}");
    }
    let bad = [
        ("corbaloc:iiop:/key", "missing host at character 14"),
        ("corbaloc::host:notaport/key", "bad port at character 14"),
        ("corbaloc:iiop:1.x@host/key", "bad version at character 14"),
        (
            "corbaloc:iiop:[::1/key",
            "unterminated [IPv6 address] at character 14",
        ),
        (
            "corbaloc:ssliop:host/key",
            "unsupported protocol (expected iiop: or :) at character 9",
        ),
        ("corbaloc::host", "missing /key at character 14"),
        ("corbaloc::ho st/key", "invalid host at character 10"),
        ("corbaloc::host/%4", "truncated %-escape at character 15"),
        (
            "http://x",
            "expected IOR:, corbaloc: or corbaname: at character 0",
        ),
    ];
    for (text, message) in bad {
        let err = text.parse::<ObjectUrl>().unwrap_err();
        assert_eq!(err.to_string(), message, "{text}");
    }
    assert_eq!("IOR:0".parse::<Ior>(), Err(IorError::OddHex(1)));
    assert_eq!(
        "IOR:0g".parse::<Ior>(),
        Err(IorError::BadHex { ch: 'g', at: 5 })
    );
    assert_eq!("ior".parse::<Ior>(), Err(IorError::NotAnIor));
}

#[test]
fn corbaloc_becomes_an_ior_with_one_profile_per_address() {
    let url: ObjectUrl = "corbaloc:iiop:1.2@a:1,iiop:1.1@b:2/key".parse().unwrap();
    let ior = url.to_ior().unwrap();
    let bodies = ior.iiop_profiles();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        (
            bodies[1].host.as_str(),
            bodies[1].port,
            bodies[1].iiop_version
        ),
        ("b", 2, GiopVersion::V1_1)
    );
    assert_eq!(bodies[0].object_key, b"key");
}

fn component() -> impl Strategy<Value = TaggedComponent> {
    prop_oneof![
        any::<u32>().prop_map(TaggedComponent::orb_type),
        Just(TaggedComponent::code_sets(
            &CodeSetComponentInfo::armillary()
        )),
        ("[a-z0-9.]{1,12}", any::<u16>())
            .prop_map(|(h, p)| TaggedComponent::alternate_address(&h, p).unwrap()),
        (100u32.., prop::collection::vec(any::<u8>(), 0..16))
            .prop_map(|(tag, data)| TaggedComponent { tag, data }),
    ]
}

fn ior() -> impl Strategy<Value = Ior> {
    let body = (
        0u8..=2,
        "[a-z0-9.:-]{1,20}",
        any::<u16>(),
        prop::collection::vec(any::<u8>(), 0..24),
        prop::collection::vec(component(), 0..4),
        any::<bool>(),
    )
        .prop_map(|(minor, host, port, key, components, big)| {
            let mut b = ProfileBody::new(GiopVersion::new(1, minor), &host, port, key);
            if minor > 0 {
                b.components = components;
            }
            b.byte_order = if big {
                ByteOrder::Big
            } else {
                ByteOrder::Little
            };
            b.to_profile().unwrap()
        });
    let unknown = (2u32..1000, prop::collection::vec(any::<u8>(), 0..24))
        .prop_map(|(tag, data)| TaggedProfile { tag, data });
    (
        "[A-Za-z:/0-9.]{0,30}",
        prop::collection::vec(prop_oneof![body, unknown], 0..4),
    )
        .prop_map(|(type_id, profiles)| Ior { type_id, profiles })
}

proptest! {
    #[test]
    fn random_iors_print_and_parse_back(ior in ior()) {
        let text = ior.to_string();
        let back: Ior = text.parse().unwrap();
        prop_assert_eq!(&back, &ior);
        for p in back.profiles.iter().filter(|p| p.tag == 0) {
            let body = ProfileBody::decode(&p.data).unwrap();
            prop_assert_eq!(body.encode().unwrap(), p.data.clone());
            for c in &body.components {
                if c.tag == TAG_CODE_SETS {
                    prop_assert!(matches!(c.decode_known(), Ok(Some(KnownComponent::CodeSets(_)))));
                }
            }
        }
    }

    #[test]
    fn random_text_never_panics_the_parsers(text in ".{0,80}") {
        let _ = text.parse::<ObjectUrl>();
        let _ = text.parse::<Ior>();
        armillary_giop::fuzzing::ior_parse(text.as_bytes());
    }

    #[test]
    fn random_corbaloc_ish_text_never_panics(text in "(corbaloc|corbaname):[a-z:0-9.@/,#%\\[\\]]{0,40}") {
        armillary_giop::fuzzing::ior_parse(text.as_bytes());
    }
}

/// An IOR read from a UTF-8 stream whose type id has characters beyond
/// ISO-8859-1 keeps its bytes: it re-encodes to them and prints (found by
/// the `giop_message` fuzz target: printing it used to panic).
#[test]
fn a_type_id_travels_byte_for_byte_whatever_the_code_set() {
    use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrReader, CdrWriter};
    use armillary_giop::{ByteOrder, CodeSets, GiopVersion};
    let id = "IDL:Kinds\u{46b}ypes:1.0";
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    w.write_len(id.len() + 1).unwrap();
    w.write_octets(id.as_bytes());
    w.write_octet(0);
    w.write_ulong(0);
    let bytes = w.into_bytes();
    let mut r = CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2)
        .with_codesets(CodeSets::NATIVE);
    let ior = armillary_giop::ior::Ior::decode(&mut r).unwrap();
    let mut again =
        CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2).with_codesets(CodeSets::NATIVE);
    ior.encode(&mut again).unwrap();
    assert_eq!(again.as_bytes(), &bytes[..]);
    let printed = ior.to_string();
    assert_eq!(printed.parse::<armillary_giop::ior::Ior>().unwrap(), ior);
}
