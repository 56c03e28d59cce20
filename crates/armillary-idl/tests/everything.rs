//! The resolved IR of `tests/valid/everything.idl`: a snapshot of every
//! definition (kind, repository id, types, constant values, union labels,
//! docs), plus pointed checks of the properties back ends rely on.
//!
//! The snapshot is `tests/valid/everything.snapshot`; `UPDATE_EXPECT=1`
//! rewrites it (review the diff).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use armillary_idl::ir::*;
use armillary_idl::Frontend;

fn valid_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/valid")
}

fn everything() -> Spec {
    let dir = valid_dir();
    Frontend::new()
        .include_dir(dir.join("include"))
        .parse_files(&[dir.join("everything.idl")])
        .unwrap_or_else(|error| panic!("{error}"))
}

fn type_text(spec: &Spec, ty: &Type) -> String {
    match ty {
        Type::Primitive(p) => p.idl_name().to_owned(),
        Type::String { bound: None } => "string".into(),
        Type::String { bound: Some(b) } => format!("string<{b}>"),
        Type::WString { bound: None } => "wstring".into(),
        Type::WString { bound: Some(b) } => format!("wstring<{b}>"),
        Type::Sequence {
            element,
            bound: None,
        } => format!("sequence<{}>", type_text(spec, element)),
        Type::Sequence {
            element,
            bound: Some(b),
        } => format!("sequence<{}, {b}>", type_text(spec, element)),
        Type::Array {
            element,
            dimensions,
        } => {
            let dims: String = dimensions.iter().map(|d| format!("[{d}]")).collect();
            format!("{}{dims}", type_text(spec, element))
        }
        Type::Fixed { digits, scale } => format!("fixed<{digits},{scale}>"),
        Type::Any => "any".into(),
        Type::Object => "Object".into(),
        Type::ValueBase => "ValueBase".into(),
        Type::TypeCode => "TypeCode".into(),
        Type::Principal => "Principal".into(),
        Type::Named(id) => spec[*id].absolute_name(),
    }
}

fn value_text(spec: &Spec, value: &ConstValue) -> String {
    match value {
        ConstValue::Enumerator { enum_def, index } => match &spec[*enum_def].kind {
            DefKind::Enum(e) => format!(
                "{}::{}",
                spec[*enum_def].absolute_name(),
                e.enumerators[*index as usize].name
            ),
            _ => value.to_string(),
        },
        other => other.to_string(),
    }
}

fn names(spec: &Spec, ids: &[DefId]) -> String {
    ids.iter()
        .map(|id| spec[*id].absolute_name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn member_text(spec: &Spec, member: &Member) -> String {
    format!("{} {}", type_text(spec, &member.ty), member.name)
}

fn render(spec: &Spec, id: DefId, depth: usize, out: &mut String) {
    let def = &spec[id];
    let indent = "  ".repeat(depth);
    let origin = if def.from_main_file {
        ""
    } else {
        " [included]"
    };
    let detail = match &def.kind {
        DefKind::Module(_) => String::new(),
        DefKind::Interface(i) => format!(
            " {:?}{}",
            i.kind,
            if i.bases.is_empty() {
                String::new()
            } else {
                format!(" : {}", names(spec, &i.bases))
            }
        ),
        DefKind::Struct(s) => format!(
            " {{ {} }}",
            s.members
                .iter()
                .map(|m| member_text(spec, m))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        DefKind::Union(u) => {
            let cases: Vec<String> = u
                .cases
                .iter()
                .map(|case| {
                    let labels: Vec<String> = case
                        .labels
                        .iter()
                        .map(|label| match label {
                            UnionLabel::Default => "default".to_owned(),
                            UnionLabel::Value(value) => value_text(spec, value),
                        })
                        .collect();
                    format!("{}: {}", labels.join(", "), member_text(spec, &case.member))
                })
                .collect();
            let implicit = u
                .implicit_default
                .as_ref()
                .map(|value| format!(" (implicit default {})", value_text(spec, value)))
                .unwrap_or_default();
            format!(
                " switch ({}) {{ {} }}{implicit}",
                type_text(spec, &u.discriminator),
                cases.join("; ")
            )
        }
        DefKind::Enum(e) => format!(
            " {{ {} }}",
            e.enumerators
                .iter()
                .map(|en| en.name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DefKind::Exception(e) => format!(
            " {{ {} }}",
            e.members
                .iter()
                .map(|m| member_text(spec, m))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        DefKind::Typedef(t) => format!(" = {}", type_text(spec, &t.ty)),
        DefKind::Const(c) => format!(
            " {} = {}",
            type_text(spec, &c.ty),
            value_text(spec, &c.value)
        ),
        DefKind::Native => String::new(),
        DefKind::ValueType(v) => {
            let mut text = format!(" {:?}", v.kind);
            if v.truncatable {
                text.push_str(" truncatable");
            }
            if !v.bases.is_empty() {
                write!(text, " : {}", names(spec, &v.bases)).unwrap();
            }
            if !v.supports.is_empty() {
                write!(text, " supports {}", names(spec, &v.supports)).unwrap();
            }
            for member in &v.state_members {
                let access = if member.public { "public" } else { "private" };
                write!(text, "; {access} {}", member_text(spec, &member.member)).unwrap();
            }
            for factory in &v.factories {
                let params: Vec<String> = factory
                    .params
                    .iter()
                    .map(|p| format!("{} {}", type_text(spec, &p.ty), p.name))
                    .collect();
                write!(text, "; factory {}({})", factory.name, params.join(", ")).unwrap();
                if !factory.raises.is_empty() {
                    write!(text, " raises ({})", names(spec, &factory.raises)).unwrap();
                }
            }
            text
        }
        DefKind::ValueBox(b) => format!(" boxes {}", type_text(spec, &b.ty)),
        DefKind::Operation(op) => {
            let params: Vec<String> = op
                .params
                .iter()
                .map(|p| format!("{:?} {} {}", p.direction, type_text(spec, &p.ty), p.name))
                .collect();
            let mut text = format!(
                " {}{} ({})",
                if op.oneway { "oneway " } else { "" },
                op.return_type
                    .as_ref()
                    .map_or_else(|| "void".to_owned(), |t| type_text(spec, t)),
                params.join(", ")
            );
            if !op.raises.is_empty() {
                write!(text, " raises ({})", names(spec, &op.raises)).unwrap();
            }
            if !op.context.is_empty() {
                write!(text, " context ({})", op.context.join(", ")).unwrap();
            }
            text
        }
        DefKind::Attribute(a) => {
            let mut text = format!(
                " {}{}",
                if a.readonly { "readonly " } else { "" },
                type_text(spec, &a.ty)
            );
            if !a.get_raises.is_empty() {
                write!(text, " getraises ({})", names(spec, &a.get_raises)).unwrap();
            }
            if !a.set_raises.is_empty() {
                write!(text, " setraises ({})", names(spec, &a.set_raises)).unwrap();
            }
            text
        }
    };
    writeln!(
        out,
        "{indent}{} {}{detail} @{}{origin}",
        def.kind.describe(),
        def.name,
        def.repository_id
    )
    .unwrap();
    if let Some(doc) = &def.doc {
        writeln!(out, "{indent}  /// {}", doc.replace('\n', " / ")).unwrap();
    }
    for &child in spec.contents(id) {
        render(spec, child, depth + 1, out);
    }
}

#[test]
fn everything_snapshot() {
    let spec = everything();
    let mut actual = String::new();
    for &root in &spec.roots {
        render(&spec, root, 0, &mut actual);
    }
    let path = valid_dir().join("everything.snapshot");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != actual {
        let first_difference = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "everything.snapshot differs (UPDATE_EXPECT=1 rewrites it) at line {}:\n  expected: {:?}\n  actual:   {:?}",
            first_difference + 1,
            expected.lines().nth(first_difference),
            actual.lines().nth(first_difference)
        );
    }
}

fn def<'a>(spec: &'a Spec, name: &str) -> &'a Definition {
    let id = spec
        .lookup(name)
        .unwrap_or_else(|| panic!("{name} not found"));
    &spec[id]
}

fn const_value(spec: &Spec, name: &str) -> ConstValue {
    match &def(spec, name).kind {
        DefKind::Const(c) => c.value.clone(),
        other => panic!("{name} is {other:?}"),
    }
}

#[test]
fn repository_ids_follow_prefix_version_id_and_typeprefix() {
    let spec = everything();
    let cases = [
        ("Everything", "IDL:example.com/Everything:1.0"),
        (
            "Everything::Diamond::operate",
            "IDL:example.com/Everything/Diamond/operate:1.0",
        ),
        (
            "Everything::Versioned",
            "IDL:example.com/Everything/Versioned:2.1",
        ),
        ("Everything::WithId", "LOCAL:with-id"),
        (
            "Everything::WithTypeId",
            "IDL:example.com/Custom/WithTypeId:3.0",
        ),
        (
            "Everything::Nested",
            "IDL:example.com/Everything/Nested:1.0",
        ),
        (
            "Everything::Nested::InNested",
            "IDL:nested.example/InNested:1.0",
        ),
        (
            "Everything::AfterNested",
            "IDL:example.com/Everything/AfterNested:1.0",
        ),
        (
            "Everything::ColorSeq",
            "IDL:example.com/Everything/ColorSeq:1.0",
        ),
        ("Base::NotFound", "IDL:base.example/Base/NotFound:1.0"),
        ("Once::INCLUDED", "IDL:Once/INCLUDED:1.0"),
        ("Prefixed", "IDL:prefixed.example/Prefixed:1.0"),
        ("Prefixed::T", "IDL:prefixed.example/Prefixed/T:1.0"),
        (
            "Everything::module",
            "IDL:example.com/Everything/module:1.0",
        ),
    ];
    for (name, id) in cases {
        assert_eq!(def(&spec, name).repository_id, id, "{name}");
    }
}

#[test]
fn constants_are_evaluated_in_their_types() {
    let spec = everything();
    let cases = [
        ("Everything::SHORT_MIN", ConstValue::Short(-32768)),
        ("Everything::USHORT_MAX", ConstValue::UShort(65535)),
        ("Everything::LONG_VALUE", ConstValue::Long(32)),
        ("Everything::ULONG_MASK", ConstValue::ULong(u32::MAX)),
        (
            "Everything::LONG_LONG_MIN_EXACT",
            ConstValue::LongLong(i64::MIN),
        ),
        (
            "Everything::ULONG_LONG_MAX",
            ConstValue::ULongLong(u64::MAX),
        ),
        ("Everything::OCTET_VALUE", ConstValue::Octet(131)),
        ("Everything::BITS", ConstValue::Long(0x31)),
        ("Everything::SHIFTED", ConstValue::Long(16)),
        ("Everything::ARITHMETIC", ConstValue::Long(3)),
        ("Everything::UNARY", ConstValue::Long(-5)),
        ("Everything::NOT_SIGNED", ConstValue::Short(-6)),
        ("Everything::FROM_CONSTANTS", ConstValue::Long(80)),
        ("Everything::FROM_MACRO", ConstValue::Long(64)),
        ("Everything::FLOAT_VALUE", ConstValue::Float(1.5)),
        ("Everything::DOUBLE_VALUE", ConstValue::Double(1250.0)),
        (
            "Everything::LONG_DOUBLE_VALUE",
            ConstValue::LongDouble(0.25),
        ),
        ("Everything::CHAR_VALUE", ConstValue::Char(b'A')),
        ("Everything::ESCAPED_CHAR", ConstValue::Char(b'\n')),
        ("Everything::WCHAR_VALUE", ConstValue::WChar('é')),
        ("Everything::TRUE_VALUE", ConstValue::Boolean(true)),
        (
            "Everything::GREETING",
            ConstValue::String("Hello, world".into()),
        ),
        (
            "Everything::WIDE_GREETING",
            ConstValue::WString("wide".into()),
        ),
        (
            "Everything::FIXED_VALUE",
            ConstValue::Fixed(FixedValue {
                value: 12345,
                scale: 2,
            }),
        ),
        (
            "Everything::FIXED_SUM",
            ConstValue::Fixed(FixedValue { value: 6, scale: 0 }),
        ),
        (
            "Everything::PRICE",
            ConstValue::Fixed(FixedValue {
                value: 1999,
                scale: 2,
            }),
        ),
        ("Everything::EPOCH", ConstValue::ULongLong(0)),
    ];
    for (name, value) in cases {
        assert_eq!(const_value(&spec, name), value, "{name}");
    }
    let color = spec.lookup("Everything::Color").unwrap();
    assert_eq!(
        const_value(&spec, "Everything::FAVOURITE"),
        ConstValue::Enumerator {
            enum_def: color,
            index: 2
        }
    );
    // A plain `fixed` constant takes its type from its value.
    let DefKind::Const(fixed) = &def(&spec, "Everything::FIXED_VALUE").kind else {
        unreachable!()
    };
    assert_eq!(
        fixed.ty,
        Type::Fixed {
            digits: 5,
            scale: 2
        }
    );
}

#[test]
fn union_labels_defaults_and_discriminators() {
    let spec = everything();
    let union = |name: &str| match &def(&spec, name).kind {
        DefKind::Union(u) => u.clone(),
        other => panic!("{name} is {other:?}"),
    };
    let by_long = union("Everything::ByLong");
    assert_eq!(
        by_long.cases[0].labels,
        vec![
            UnionLabel::Value(ConstValue::Long(1)),
            UnionLabel::Value(ConstValue::Long(2))
        ]
    );
    assert_eq!(
        by_long.cases[1].labels,
        vec![UnionLabel::Value(ConstValue::Long(-3))]
    );
    assert_eq!(by_long.default_case, Some(2));
    assert_eq!(by_long.implicit_default, None);

    let by_boolean = union("Everything::ByBoolean");
    assert_eq!(by_boolean.default_case, None);
    assert_eq!(by_boolean.implicit_default, None, "both values are used");

    let by_enum = union("Everything::ByEnum");
    assert_eq!(by_enum.implicit_default, None, "every enumerator is used");

    let by_char = union("Everything::ByChar");
    assert_eq!(by_char.implicit_default, Some(ConstValue::Char(1)));

    let by_typedef = union("Everything::ByTypedef");
    let integer = spec.lookup("Everything::Integer").unwrap();
    assert_eq!(by_typedef.discriminator, Type::Named(integer));
    assert_eq!(
        by_typedef.cases[0].labels,
        vec![UnionLabel::Value(ConstValue::Long(2))]
    );
    assert_eq!(
        spec.unalias(&by_typedef.discriminator),
        &Type::Primitive(Primitive::Long)
    );

    let by_inline = union("Everything::ByInlineEnum");
    let direction = spec.lookup("Everything::ByInlineEnum::Direction").unwrap();
    assert_eq!(by_inline.discriminator, Type::Named(direction));
    assert_eq!(by_inline.nested, vec![direction]);
    assert_eq!(
        by_inline.implicit_default,
        Some(ConstValue::Enumerator {
            enum_def: direction,
            index: 1
        })
    );
}

#[test]
fn types_resolve_to_the_definitions_they_name() {
    let spec = everything();
    let point = spec.lookup("Everything::Point").unwrap();
    let DefKind::Struct(shape) = &def(&spec, "Everything::Shape").kind else {
        unreachable!()
    };
    assert_eq!(
        shape.members[1].ty,
        Type::Sequence {
            element: Box::new(Type::Named(point)),
            bound: None
        }
    );
    assert_eq!(
        shape.members[2].ty,
        Type::Array {
            element: Box::new(Type::Named(point)),
            dimensions: vec![2, 2]
        }
    );
    let DefKind::Typedef(vector) = &def(&spec, "Everything::Vector").kind else {
        unreachable!()
    };
    assert_eq!(
        vector.ty,
        Type::Array {
            element: Box::new(Type::Primitive(Primitive::Long)),
            dimensions: vec![4]
        }
    );
    let DefKind::Typedef(description) = &def(&spec, "Everything::TypeDescription").kind else {
        unreachable!()
    };
    assert_eq!(description.ty, Type::TypeCode);
    // The recursive struct refers to itself through its sequence typedef.
    let tree = spec.lookup("Everything::TreeNode").unwrap();
    let tree_seq = spec.lookup("Everything::TreeNodeSeq").unwrap();
    let DefKind::Struct(node) = &spec[tree].kind else {
        unreachable!()
    };
    assert_eq!(node.members[1].ty, Type::Named(tree_seq));
    assert_eq!(
        spec.unalias(&node.members[1].ty),
        &Type::Sequence {
            element: Box::new(Type::Named(tree)),
            bound: None
        }
    );
}

#[test]
fn interfaces_expose_inherited_operations() {
    let spec = everything();
    let diamond = spec.lookup("Everything::Diamond").unwrap();
    let ancestors: Vec<String> = spec
        .ancestors(diamond)
        .into_iter()
        .map(|id| spec[id].name.clone())
        .collect();
    assert_eq!(ancestors, ["Left", "Right", "Named"]);
    let all: Vec<String> = spec
        .all_operations(diamond)
        .into_iter()
        .map(|(_, op)| spec[op].name.clone())
        .collect();
    assert_eq!(&all[..3], ["title", "right_op", "left_op"]);
    assert!(all.contains(&"operate".to_owned()));
    let DefKind::Operation(operate) = &def(&spec, "Everything::Diamond::operate").kind else {
        unreachable!()
    };
    let directions: Vec<Direction> = operate.params.iter().map(|p| p.direction).collect();
    assert_eq!(
        directions,
        [Direction::In, Direction::Out, Direction::InOut]
    );
    assert_eq!(
        operate.raises,
        [
            spec.lookup("Everything::Failure").unwrap(),
            spec.lookup("Base::NotFound").unwrap()
        ]
    );
}

#[test]
fn docs_and_origins_are_kept() {
    let spec = everything();
    assert_eq!(
        def(&spec, "Everything").doc.as_deref(),
        Some("Everything lives in this module.")
    );
    assert_eq!(
        def(&spec, "Everything::Point").doc.as_deref(),
        Some("A point in the plane.")
    );
    let DefKind::Struct(point) = &def(&spec, "Everything::Point").kind else {
        unreachable!()
    };
    // A comment trailing a member documents nothing.
    assert_eq!(point.members[1].doc, None);
    let DefKind::Enum(color) = &def(&spec, "Everything::Color").kind else {
        unreachable!()
    };
    assert_eq!(color.enumerators[1].doc, None);
    let DefKind::Exception(failure) = &def(&spec, "Everything::Failure").kind else {
        unreachable!()
    };
    assert_eq!(failure.members[0].doc.as_deref(), Some("Why it failed."));
    assert!(def(&spec, "Everything").from_main_file);
    assert!(!def(&spec, "Base").from_main_file);
    assert!(!def(&spec, "Base::Timestamp").from_main_file);
    assert_eq!(
        def(&spec, "Base::Timestamp").doc.as_deref(),
        Some("A time stamp in microseconds.")
    );
    let point_loc = def(&spec, "Everything::Point").loc;
    assert_eq!((point_loc.line, point_loc.col), (116, 10));
    let files: Vec<String> = spec
        .input_files()
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        files,
        [
            "everything.idl",
            "everything_base.idl",
            "everything_once.idl"
        ]
    );
}
