//! The `any` values omniORB sent in the captured `echo_any` calls: they
//! decode with the right TypeCodes and values and re-encode to the same
//! bytes (with either form of union default label: in the captures the
//! label sits where both forms are the same bytes); TypeCodes and values
//! round-trip in both byte orders.

use armillary_giop::any::{Any, AnyValue, DynValue};
use armillary_giop::giop::Message;
use armillary_giop::typecode::{DefaultLabelForm, StructMember, TCKind, TypeCode, UnionMember};
use armillary_giop::{
    ByteOrder, CdrDecode, CdrEncode, CdrReader, CdrWriter, CodeSets, GiopVersion,
};
use armillary_testkit::vectors_dir;
use proptest::prelude::*;
use serde_json::Value as Json;

#[test]
fn omniorb_anys_decode_and_re_encode_exactly() {
    let mut seen = Vec::new();
    for session in ["giop-1.0", "giop-1.1", "giop-1.2"] {
        let dir = vectors_dir().join(session);
        let index: Json =
            serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap())
                .unwrap();
        for entry in index["messages"].as_array().unwrap() {
            let is_any = entry["operation"] == "echo_any" || entry["reply_to"] == "echo_any";
            if !is_any {
                continue;
            }
            let bytes = std::fs::read(dir.join(entry["file"].as_str().unwrap())).unwrap();
            let msg = Message::decode(&bytes).unwrap();
            let mut r = msg.body_reader(&bytes).with_codesets(CodeSets::NATIVE);
            let any = Any::decode(&mut r).unwrap_or_else(|e| panic!("{session} {entry}: {e}"));
            assert!(r.is_empty(), "{session}: trailing bytes");
            // `Kinds::Value`'s default label (a `long` discriminator) sits
            // 4-aligned, where a zero octet and its padding are the bytes of
            // a zero `long`: the bytes do not tell the form, and both forms
            // re-encode to them.
            assert_eq!(r.default_label_seen(), None, "{session}");
            // Encode again at the same offset: the same layout. omniORB
            // leaves stale bytes in alignment gaps inside encapsulations,
            // so the bytes are compared outside those gaps: same length,
            // and decoding both gives the same value.
            let mut w = CdrWriter::new(msg.header.byte_order, msg.header.version)
                .with_codesets(CodeSets::NATIVE)
                .with_align_base(msg.body_offset);
            any.encode(&mut w).unwrap();
            let mut typed = w
                .clone()
                .with_default_label(DefaultLabelForm::DiscriminatorTyped);
            typed.truncate(0);
            any.encode(&mut typed).unwrap();
            assert_eq!(typed.as_bytes(), w.as_bytes(), "{session}: both forms");
            let original = &bytes[msg.body_offset..];
            assert_eq!(w.len(), original.len(), "{session}: re-encoded length");
            let mut again = CdrReader::new(w.as_bytes(), msg.header.byte_order, msg.header.version)
                .with_codesets(CodeSets::NATIVE)
                .with_align_base(msg.body_offset);
            assert_eq!(
                Any::decode(&mut again).unwrap(),
                any,
                "{session}: re-decoding"
            );
            let differing = w
                .as_bytes()
                .iter()
                .zip(original)
                .filter(|(a, b)| a != b)
                .count();
            assert!(differing <= 32, "{session}: {differing} bytes differ");
            seen.push(any);
        }
    }
    let kinds: Vec<TCKind> = seen.iter().map(|a| a.type_code.kind()).collect();
    assert!(kinds.contains(&TCKind::Long), "{kinds:?}");
    assert!(kinds.contains(&TCKind::String), "{kinds:?}");
    assert!(kinds.contains(&TCKind::Struct), "{kinds:?}");
    assert!(kinds.contains(&TCKind::Union), "{kinds:?}");
    let shape = seen
        .iter()
        .find(|a| a.type_code.kind() == TCKind::Struct)
        .unwrap();
    assert_eq!(shape.type_code.id(), Ok("IDL:Kinds/Shape:1.0"));
    assert_eq!(shape.type_code.name(), Ok("Shape"));
    assert_eq!(shape.type_code.member_count(), Ok(3));
    let union = seen
        .iter()
        .find(|a| a.type_code.kind() == TCKind::Union)
        .unwrap();
    assert_eq!(union.type_code.id(), Ok("IDL:Kinds/Value:1.0"));
    assert!(seen.iter().any(|a| a.get::<i32>().is_some()));
    assert!(seen.iter().any(|a| a.get::<String>().is_some()));
}

fn leaf() -> impl Strategy<Value = (TypeCode, BoxedStrategy<DynValue>)> {
    prop_oneof![
        Just((
            TypeCode::long(),
            any::<i32>().prop_map(DynValue::Long).boxed()
        )),
        Just((
            TypeCode::ushort(),
            any::<u16>().prop_map(DynValue::UShort).boxed()
        )),
        Just((
            TypeCode::ulonglong(),
            any::<u64>().prop_map(DynValue::ULongLong).boxed()
        )),
        Just((
            TypeCode::double(),
            (-1e9f64..1e9).prop_map(DynValue::Double).boxed()
        )),
        Just((
            TypeCode::boolean(),
            any::<bool>().prop_map(DynValue::Boolean).boxed()
        )),
        Just((
            TypeCode::octet(),
            any::<u8>().prop_map(DynValue::Octet).boxed()
        )),
        Just((
            TypeCode::char(),
            (0u8..128)
                .prop_map(|c| DynValue::Char(char::from(c)))
                .boxed()
        )),
        Just((
            TypeCode::wchar(),
            proptest::char::range('a', '\u{d7ff}')
                .prop_map(DynValue::WChar)
                .boxed()
        )),
        Just((
            TypeCode::string(0),
            ".{0,8}".prop_map(DynValue::String).boxed()
        )),
        Just((
            TypeCode::wstring(0),
            ".{0,8}".prop_map(DynValue::WString).boxed()
        )),
        Just((
            TypeCode::enum_tc("IDL:T/E:1.0", "E", &["a", "b", "c"]),
            (0u32..3).prop_map(DynValue::Enum).boxed()
        )),
    ]
}

fn typed() -> impl Strategy<Value = (TypeCode, DynValue)> {
    let leaf = leaf().prop_flat_map(|(tc, v)| (Just(tc), v));
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|members| {
                let tc = TypeCode::struct_tc(
                    "IDL:T/S:1.0",
                    "S",
                    members
                        .iter()
                        .enumerate()
                        .map(|(i, (tc, _))| StructMember {
                            name: format!("m{i}"),
                            type_code: tc.clone(),
                        })
                        .collect(),
                );
                (
                    tc,
                    DynValue::Struct(members.into_iter().map(|(_, v)| v).collect()),
                )
            }),
            (inner.clone(), 0usize..4).prop_map(|((tc, v), n)| {
                (
                    TypeCode::sequence(tc, 0),
                    DynValue::Sequence(std::iter::repeat_n(v, n).collect()),
                )
            }),
            (inner.clone(), 1u32..3).prop_map(|((tc, v), n)| {
                (
                    TypeCode::alias("IDL:T/A:1.0", "A", TypeCode::array(tc, n)),
                    DynValue::Sequence(std::iter::repeat_n(v, n as usize).collect()),
                )
            }),
            (inner.clone(), any::<bool>()).prop_map(|((tc, v), first)| {
                let u = TypeCode::union_tc(
                    "IDL:T/U:1.0",
                    "U",
                    TypeCode::long(),
                    1,
                    vec![
                        UnionMember {
                            label: 7,
                            name: "x".into(),
                            type_code: tc,
                        },
                        UnionMember {
                            label: 0,
                            name: "d".into(),
                            type_code: TypeCode::short(),
                        },
                    ],
                );
                let value = if first {
                    DynValue::Union {
                        discriminator: Box::new(DynValue::Long(7)),
                        member: Some((0, Box::new(v))),
                    }
                } else {
                    DynValue::Union {
                        discriminator: Box::new(DynValue::Long(-3)),
                        member: Some((1, Box::new(DynValue::Short(5)))),
                    }
                };
                (u, value)
            }),
            inner.prop_map(|(tc, v)| (
                TypeCode::any(),
                DynValue::Any(Box::new(Any::new(tc, v).unwrap()))
            )),
        ]
    })
}

proptest! {
    #[test]
    fn typed_values_round_trip((tc, value) in typed(), big in any::<bool>(), v12 in any::<bool>()) {
        let order = if big { ByteOrder::Big } else { ByteOrder::Little };
        let version = if v12 { GiopVersion::V1_2 } else { GiopVersion::V1_1 };
        let any = Any::new(tc, value).unwrap();
        let mut w = CdrWriter::new(order, version).with_codesets(CodeSets::NATIVE);
        any.encode(&mut w).unwrap();
        let mut r = CdrReader::new(w.as_bytes(), order, version).with_codesets(CodeSets::NATIVE);
        let back = Any::decode(&mut r).unwrap();
        prop_assert!(r.is_empty());
        prop_assert!(back.type_code.equal(&any.type_code));
        prop_assert_eq!(back, any);
    }

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..300)) {
        armillary_giop::fuzzing::typecode_any(&data);
    }
}

#[test]
fn typed_extraction_checks_the_type() {
    let a = Any::from(42i32);
    assert_eq!(a.get::<i32>(), Some(42));
    assert_eq!(a.get::<i16>(), None);
    assert_eq!(Any::from("x").get::<String>(), Some("x".into()));
    assert_eq!(<Vec<u8>>::type_code().kind(), TCKind::Sequence);
    assert!(Any::new(TypeCode::long(), DynValue::Short(1)).is_err());
    let typed: Any =
        Any::from_cdr_value(TypeCode::sequence(TypeCode::long(), 0), &vec![1i32, 2]).unwrap();
    assert_eq!(
        typed.value,
        DynValue::Sequence(vec![DynValue::Long(1), DynValue::Long(2)])
    );
    assert_eq!(
        typed.to_cdr_value::<Vec<i32>>(&TypeCode::sequence(TypeCode::long(), 0)),
        Some(vec![1, 2])
    );
}

/// Regression (found by the differential tests against omniORB): a `char`
/// above U+007F, which an ISO 8859-1 connection (CORBA's default)
/// delivers, fits an `any`, although UTF-8 cannot carry it in one octet.
#[test]
fn latin_1_chars_fit_an_any() {
    let any = Any::new(TypeCode::char(), DynValue::Char('é')).unwrap();
    assert_eq!(any.value, DynValue::Char('é'));
    assert_eq!(any.to_cdr_value::<char>(&TypeCode::char()), Some('é'));
    let pair = TypeCode::struct_tc(
        "IDL:T/P:1.0",
        "P",
        vec![
            StructMember {
                name: "c".into(),
                type_code: TypeCode::char(),
            },
            StructMember {
                name: "s".into(),
                type_code: TypeCode::string(0),
            },
        ],
    );
    let value = DynValue::Struct(vec![DynValue::Char('ÿ'), DynValue::String("süß".into())]);
    assert_eq!(Any::new(pair.clone(), value.clone()).unwrap().value, value);
    assert_eq!(
        Any::from_cdr_value(TypeCode::char(), &'ñ').unwrap().value,
        DynValue::Char('ñ')
    );
    // Beyond ISO 8859-1 a char is still refused.
    assert!(Any::new(TypeCode::char(), DynValue::Char('☺')).is_err());
}

fn round_trip(any: &Any) -> Any {
    let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2).with_codesets(CodeSets::NATIVE);
    any.encode(&mut w).unwrap();
    let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2)
        .with_codesets(CodeSets::NATIVE);
    Any::decode(&mut r).unwrap()
}

#[test]
fn wstring_and_nested_anys_have_their_own_typecodes() {
    let wide = Any::wstring("wide ☺");
    assert_eq!(wide.type_code.kind(), TCKind::WString);
    assert_eq!(round_trip(&wide).to_wstring().as_deref(), Some("wide ☺"));
    // A string any is not a wstring any, and the other way round.
    assert_eq!(Any::from("narrow").to_wstring(), None);
    assert_eq!(wide.get::<String>(), None);

    let nested = Any::nested(Any::from(7i32));
    assert_eq!(nested.type_code.kind(), TCKind::Any);
    let back = round_trip(&nested);
    assert_eq!(back.to_nested().and_then(|a| a.get::<i32>()), Some(7));
    assert_eq!(back.get::<Any>(), Some(Any::from(7i32)));
    assert_eq!(Any::from(7i32).to_nested(), None);
    assert_eq!(Any::from(7i32).into_any(), nested);
}

#[test]
fn decoded_anys_keep_the_origin_installed_while_they_were_decoded() {
    use armillary_giop::any::Origin;
    use std::sync::Arc;

    let any = Any::from(5u16);
    assert!(round_trip(&any).origin().is_none());
    let token: Arc<dyn std::any::Any + Send + Sync> = Arc::new("receiver");
    let decoded = {
        let _scope = Origin::new(token.clone()).enter();
        round_trip(&Any::nested(any.clone()))
    };
    assert!(Origin::current().is_none(), "the scope ended");
    // The any and the any inside it both remember where they came from.
    let origin = decoded.origin().expect("an origin");
    assert!(Arc::ptr_eq(origin.token(), &token));
    let inner = decoded.to_nested().unwrap();
    assert!(Arc::ptr_eq(inner.origin().unwrap().token(), &token));
    // Equality ignores it.
    assert_eq!(decoded, Any::nested(any));
    // Reading a value out re-installs it, and only meanwhile.
    let seen = inner.read_with(&TypeCode::ushort(), |r| {
        let current = Origin::current().expect("installed while reading");
        assert!(Arc::ptr_eq(current.token(), &token));
        r.read_ushort()
    });
    assert_eq!(seen, Some(5));
    assert!(Origin::current().is_none());
}
