//! The TypeCodes of `tests/interop/idl/interop.idl` that the dynamic
//! tests need (DSI servant, DII client), written by hand from the IDL so
//! that no generated code is involved. Shared by the test files that
//! `mod interop_types;`.

#![allow(dead_code)]

use armillary::giop::typecode::{StructMember, TypeCode, UnionMember};

/// A struct or exception member.
pub fn member(name: &str, type_code: TypeCode) -> StructMember {
    StructMember {
        name: name.into(),
        type_code,
    }
}

/// The repository id of `Interop::<name>`.
pub fn id(name: &str) -> String {
    format!("IDL:Interop/{name}:1.0")
}

/// `struct Point`.
pub fn point() -> TypeCode {
    TypeCode::struct_tc(
        &id("Point"),
        "Point",
        vec![member("x", TypeCode::long()), member("y", TypeCode::long())],
    )
}

/// `enum Color`.
pub fn color() -> TypeCode {
    TypeCode::enum_tc(&id("Color"), "Color", &["red", "green", "blue"])
}

/// `struct Shape`.
pub fn shape() -> TypeCode {
    TypeCode::struct_tc(
        &id("Shape"),
        "Shape",
        vec![
            member("name", TypeCode::string(0)),
            member("hue", color()),
            member(
                "points",
                TypeCode::alias(&id("PointSeq"), "PointSeq", TypeCode::sequence(point(), 0)),
            ),
            member("origin", point()),
        ],
    )
}

/// The TypeCode of each `echo_*` operation's parameter and result.
pub fn echo_type(op: &str) -> Option<TypeCode> {
    let union_member = |label: i128, name: &str, tc: TypeCode| UnionMember {
        label,
        name: name.into(),
        type_code: tc,
    };
    Some(match op {
        "echo_short" => TypeCode::short(),
        "echo_ushort" => TypeCode::ushort(),
        "echo_long" => TypeCode::long(),
        "echo_ulong" => TypeCode::ulong(),
        "echo_longlong" => TypeCode::longlong(),
        "echo_ulonglong" => TypeCode::ulonglong(),
        "echo_float" => TypeCode::float(),
        "echo_double" => TypeCode::double(),
        "echo_boolean" => TypeCode::boolean(),
        "echo_char" => TypeCode::char(),
        "echo_wchar" => TypeCode::wchar(),
        "echo_octet" => TypeCode::octet(),
        "echo_primitives" => TypeCode::struct_tc(
            &id("Primitives"),
            "Primitives",
            vec![
                member("s", TypeCode::short()),
                member("us", TypeCode::ushort()),
                member("l", TypeCode::long()),
                member("ul", TypeCode::ulong()),
                member("ll", TypeCode::longlong()),
                member("ull", TypeCode::ulonglong()),
                member("f", TypeCode::float()),
                member("d", TypeCode::double()),
                member("b", TypeCode::boolean()),
                member("c", TypeCode::char()),
                member("wc", TypeCode::wchar()),
                member("o", TypeCode::octet()),
            ],
        ),
        "echo_money" => TypeCode::fixed(10, 2),
        "echo_string" => TypeCode::string(0),
        "echo_wstring" => TypeCode::wstring(0),
        "echo_short_string" => TypeCode::string(16),
        "echo_longs" => TypeCode::sequence(TypeCode::long(), 0),
        "echo_strings" => TypeCode::sequence(TypeCode::string(0), 0),
        "echo_octets" => TypeCode::sequence(TypeCode::octet(), 0),
        "echo_bounded" => TypeCode::sequence(TypeCode::long(), 4),
        "echo_matrix" => TypeCode::array(TypeCode::array(TypeCode::long(), 4), 3),
        "echo_shape" => shape(),
        "echo_color" => color(),
        "echo_value" => TypeCode::union_tc(
            &id("Value"),
            "Value",
            TypeCode::long(),
            4,
            vec![
                union_member(1, "as_long", TypeCode::long()),
                union_member(2, "as_string", TypeCode::string(0)),
                union_member(3, "as_point", point()),
                union_member(4, "as_point", point()),
                union_member(0, "as_double", TypeCode::double()),
            ],
        ),
        "echo_choice" => TypeCode::union_tc(
            &id("Choice"),
            "Choice",
            color(),
            -1,
            vec![
                union_member(0, "label", TypeCode::string(0)),
                union_member(1, "numbers", TypeCode::sequence(TypeCode::short(), 0)),
            ],
        ),
        "echo_flag" => TypeCode::union_tc(
            &id("Flag"),
            "Flag",
            TypeCode::boolean(),
            -1,
            vec![
                union_member(1, "yes", TypeCode::ulong()),
                union_member(0, "no", TypeCode::char()),
            ],
        ),
        "echo_any" => TypeCode::any(),
        _ => return None,
    })
}

/// `StringSeq`.
pub fn string_seq() -> TypeCode {
    TypeCode::alias(
        &id("StringSeq"),
        "StringSeq",
        TypeCode::sequence(TypeCode::string(0), 0),
    )
}

/// `exception Failure { long code; string reason; StringSeq details; }`.
pub fn failure() -> TypeCode {
    TypeCode::exception_tc(
        &id("Failure"),
        "Failure",
        vec![
            member("code", TypeCode::long()),
            member("reason", TypeCode::string(0)),
            member("details", string_seq()),
        ],
    )
}

/// `exception Empty {}`.
pub fn empty() -> TypeCode {
    TypeCode::exception_tc(&id("Empty"), "Empty", Vec::new())
}

/// `interface Everything` (an object reference TypeCode).
pub fn everything() -> TypeCode {
    TypeCode::objref(&id("Everything"), "Everything")
}

/// `interface Peer`.
pub fn peer() -> TypeCode {
    TypeCode::objref(&id("Peer"), "Peer")
}
