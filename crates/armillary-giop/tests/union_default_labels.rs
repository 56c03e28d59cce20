//! The label of a union's default member in a TypeCode, both forms (see
//! the `typecode` module docs): the zero octet (JacORB, the JDK ORB) and a
//! value of the discriminator's type (omniORB: zero, with stale bytes in
//! the alignment gap; TAO: the union's default discriminator value).
//! Built by hand, byte by byte, for every discriminator type, with the
//! label at every alignment, in both byte orders; decoded, and compared
//! with what the writer makes in each form.

use armillary_giop::cdr::{CdrError, CdrReader, CdrWriter, CodeSets};
use armillary_giop::typecode::{DefaultLabelForm, TCKind, TypeCode, UnionMember};
use armillary_giop::{ByteOrder, GiopVersion};

const ORDERS: [ByteOrder; 2] = [ByteOrder::Big, ByteOrder::Little];

/// How a hand-built TypeCode writes its default member's label.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Label {
    /// One octet, 0.
    ZeroOctet,
    /// `value` in the discriminator's type, the alignment gap before it
    /// filled with `gap` (omniORB leaves stale bytes there).
    Typed { value: i128, gap: u8 },
}

impl Label {
    fn form(self) -> DefaultLabelForm {
        match self {
            Label::ZeroOctet => DefaultLabelForm::ZeroOctet,
            Label::Typed { .. } => DefaultLabelForm::DiscriminatorTyped,
        }
    }
}

/// Every discriminator type, with two case labels and the value TAO would
/// give the default case (one no case uses; for an enum whose enumerators
/// are all used, `(E) -1`; a boolean has none left, so false again).
fn discriminators() -> Vec<(TypeCode, [i128; 2], i128)> {
    let colour = TypeCode::enum_tc("IDL:Colour:1.0", "Colour", &["red", "green", "blue"]);
    vec![
        (TypeCode::octet(), [1, 2], 9),
        (TypeCode::char(), [97, 98], 122),
        (TypeCode::boolean(), [1, 0], 0),
        (TypeCode::short(), [-1, 2], 7),
        (TypeCode::ushort(), [1, 2], 65_535),
        (TypeCode::long(), [-1, 2], 7),
        (TypeCode::ulong(), [1, 2], 7),
        (TypeCode::longlong(), [-1, 2], 7),
        (TypeCode::ulonglong(), [1, 2], 7),
        (colour, [0, 2], 0xffff_ffff),
        (TypeCode::wchar(), [97, 98], 122),
        (
            TypeCode::alias("IDL:Wide:1.0", "Wide", TypeCode::longlong()),
            [-1, 2],
            7,
        ),
    ]
}

/// Writes `value` as the discriminator type `disc`, its alignment gap
/// filled with `gap`.
fn write_typed(w: &mut CdrWriter, disc: &TypeCode, value: i128, gap: u8) {
    let size = match disc.unalias().kind() {
        TCKind::Short | TCKind::UShort => 2,
        TCKind::Long | TCKind::ULong | TCKind::Enum => 4,
        TCKind::LongLong | TCKind::ULongLong => 8,
        // wchar in GIOP 1.2: a length octet first, no alignment.
        _ => 1,
    };
    let pad = (size - w.position() % size) % size;
    w.write_octets(&vec![gap; pad]);
    match disc.unalias().kind() {
        TCKind::Short => w.write_short(value as i16),
        TCKind::UShort => w.write_ushort(value as u16),
        TCKind::Long => w.write_long(value as i32),
        TCKind::ULong | TCKind::Enum => w.write_ulong(value as u32),
        TCKind::LongLong => w.write_longlong(value as i64),
        TCKind::ULongLong => w.write_ulonglong(value as u64),
        TCKind::Boolean => w.write_bool(value != 0),
        TCKind::Char | TCKind::Octet => w.write_octet(value as u8),
        TCKind::WChar => w
            .write_wchar(char::from_u32(value as u32).unwrap())
            .unwrap(),
        other => panic!("not a discriminator: {other:?}"),
    }
}

/// A hand-built union TypeCode and where its default label went.
struct Built {
    bytes: Vec<u8>,
    /// The union as decoding should give it.
    expected: TypeCode,
    /// Where the default member's label starts, from the encapsulation's
    /// byte-order octet (alignment counts from there).
    label_at: usize,
    /// Where the default member's name starts.
    name_at: usize,
}

/// `union U switch (disc) { case L0: I a; default: short d; [case L1:
/// long c;] }`, the first member's type an object reference whose name
/// is `pad` characters long (which moves the default label to each
/// alignment in turn); the default member last when `default_last`.
fn build(
    order: ByteOrder,
    disc: &TypeCode,
    labels: [i128; 2],
    pad: usize,
    default_last: bool,
    label: Label,
) -> Built {
    let first_type = TypeCode::objref("IDL:I:1.0", &"x".repeat(pad));
    let mut members = vec![
        UnionMember {
            label: labels[0],
            name: "a".into(),
            type_code: first_type.clone(),
        },
        UnionMember {
            label: 0,
            name: "d".into(),
            type_code: TypeCode::short(),
        },
    ];
    if !default_last {
        members.push(UnionMember {
            label: labels[1],
            name: "c".into(),
            type_code: TypeCode::long(),
        });
    }
    let expected = TypeCode::union_tc("IDL:U:1.0", "U", disc.clone(), 1, members.clone());
    let mut w = CdrWriter::new(order, GiopVersion::V1_2).with_codesets(CodeSets::NATIVE);
    w.write_ulong(TCKind::Union as u32);
    let (mut label_at, mut name_at) = (0, 0);
    w.write_encapsulation(|e| {
        e.write_string("IDL:U:1.0")?;
        e.write_string("U")?;
        disc.encode(e)?;
        e.write_long(1);
        e.write_ulong(members.len() as u32);
        write_typed(e, disc, labels[0], 0);
        e.write_string("a")?;
        first_type.encode(e)?;
        label_at = e.position();
        match label {
            Label::ZeroOctet => e.write_octet(0),
            Label::Typed { value, gap } => write_typed(e, disc, value, gap),
        }
        e.align(4);
        name_at = e.position();
        e.write_string("d")?;
        TypeCode::short().encode(e)?;
        if !default_last {
            write_typed(e, disc, labels[1], 0);
            e.write_string("c")?;
            TypeCode::long().encode(e)?;
        }
        Ok(())
    })
    .unwrap();
    Built {
        bytes: w.into_bytes(),
        expected,
        label_at,
        name_at,
    }
}

fn decode(bytes: &[u8], order: ByteOrder) -> (Result<TypeCode, CdrError>, CdrReader<'_>) {
    let mut r = CdrReader::new(bytes, order, GiopVersion::V1_2).with_codesets(CodeSets::NATIVE);
    let tc = TypeCode::decode(&mut r);
    (tc, r)
}

fn encode(tc: &TypeCode, order: ByteOrder, form: DefaultLabelForm) -> Vec<u8> {
    let mut w = CdrWriter::new(order, GiopVersion::V1_2)
        .with_codesets(CodeSets::NATIVE)
        .with_default_label(form);
    tc.encode(&mut w).unwrap();
    w.into_bytes()
}

#[test]
fn both_forms_decode_for_every_discriminator_alignment_and_byte_order() {
    let mut told_apart = 0;
    for (disc, labels, tao_value) in discriminators() {
        for order in ORDERS {
            for default_last in [true, false] {
                let mut alignments = [false; 8];
                for pad in 0..8 {
                    let zero_octet =
                        build(order, &disc, labels, pad, default_last, Label::ZeroOctet);
                    let typed_zero = Label::Typed { value: 0, gap: 0 };
                    let typed = build(order, &disc, labels, pad, default_last, typed_zero);
                    alignments[zero_octet.label_at % 8] = true;
                    // Where the two forms put the name at the same place
                    // the bytes cannot say which form they are in, unless
                    // one form's label cannot be read from them (a zero
                    // octet is no wchar: a wchar's length is at least 2).
                    let differ = zero_octet.name_at != typed.name_at;
                    told_apart += usize::from(differ);
                    let is_wchar = disc.kind() == TCKind::WChar;
                    for label in [
                        Label::ZeroOctet,
                        typed_zero,
                        // omniORB: stale bytes in the gap.
                        Label::Typed {
                            value: 0,
                            gap: 0xa5,
                        },
                        // TAO: the union's default discriminator value.
                        Label::Typed {
                            value: tao_value,
                            gap: 0,
                        },
                    ] {
                        let built = build(order, &disc, labels, pad, default_last, label);
                        let case =
                            format!("{disc:?} {order:?} pad {pad} last {default_last} {label:?}");
                        let (tc, r) = decode(&built.bytes, order);
                        let tc = tc.unwrap_or_else(|e| panic!("{case}: {e}"));
                        assert_eq!(tc, built.expected, "{case}");
                        assert!(r.is_empty(), "{case}: bytes left");
                        let told = differ || (is_wchar && label == Label::ZeroOctet);
                        let seen = told.then_some(label.form());
                        assert_eq!(r.default_label_seen(), seen, "{case}");
                    }
                    // The writer makes exactly these bytes in each form.
                    for (built, form) in [
                        (&zero_octet, DefaultLabelForm::ZeroOctet),
                        (&typed, DefaultLabelForm::DiscriminatorTyped),
                    ] {
                        assert_eq!(
                            encode(&built.expected, order, form),
                            built.bytes,
                            "{disc:?} {order:?} pad {pad} last {default_last} {form:?}"
                        );
                    }
                }
                assert_eq!(alignments, [true; 8], "{disc:?}: every alignment");
            }
        }
    }
    assert!(told_apart > 0);
}

/// Only one form has room for a value wider than an octet: forms that put
/// the name at different places exist for every wide discriminator.
#[test]
fn wide_discriminators_put_the_name_elsewhere_at_some_alignments() {
    for (disc, labels, _) in discriminators() {
        let wide = !matches!(
            disc.unalias().kind(),
            TCKind::Octet | TCKind::Char | TCKind::Boolean
        );
        let differs = (0..8).any(|pad| {
            let octet = build(ByteOrder::Big, &disc, labels, pad, true, Label::ZeroOctet);
            let typed = Label::Typed { value: 0, gap: 0 };
            octet.name_at != build(ByteOrder::Big, &disc, labels, pad, true, typed).name_at
        });
        assert_eq!(differs, wide, "{disc:?}");
    }
}

/// A TypeCode crafted so that both readings decode to the end of the
/// union: the zero octet at an odd offset, then bytes that read as a
/// longer member name in one reading and as a label, a shorter name and
/// the same member type in the other. The longer name holds the shorter
/// one's length, whose zero octets no name may hold: that reading fails.
/// With a NUL in the shorter name too, neither reading decodes: refused,
/// never guessed. With a proper name, the reading that has it wins
/// (TAO's default labels can look like this).
#[test]
fn two_readings_that_both_fit_are_told_apart_by_their_names_or_refused() {
    for (order, name) in [ByteOrder::Big, ByteOrder::Little]
        .into_iter()
        .flat_map(|order| [(order, "a\0c"), (order, "abc")])
    {
        let mut w = CdrWriter::new(order, GiopVersion::V1_2);
        w.write_ulong(TCKind::Union as u32);
        w.write_encapsulation(|e| {
            e.write_string("IDL:U:1.0")?;
            e.write_string("U")?;
            TypeCode::long().encode(e)?;
            e.write_long(1);
            e.write_ulong(2);
            e.write_long(5);
            e.write_string("a")?;
            // An objref whose encapsulation leaves the default label at
            // an offset that is not 4-aligned.
            TypeCode::objref("IDL:I:1.0", "").encode(e)?;
            assert_ne!(e.position() % 4, 0);
            e.write_octet(0);
            // Typed reading: label 8, name "abc", tk_short. Octet
            // reading: a name 8 octets long (the 4 of the typed name's
            // length and "abc\0"), then the same tk_short.
            e.write_long(8);
            e.write_string(name)?;
            e.write_ulong(TCKind::Short as u32);
            Ok(())
        })
        .unwrap();
        let bytes = w.into_bytes();
        let (tc, r) = decode(&bytes, order);
        if name.contains('\0') {
            assert!(
                matches!(tc, Err(CdrError::Invalid { what, .. }) if what.contains("NUL")),
                "{order:?}: {tc:?}"
            );
        } else {
            let tc = tc.unwrap_or_else(|e| panic!("{order:?}: {e}"));
            assert_eq!(tc.member_name(1), Ok(name), "{order:?}");
            assert_eq!(
                r.default_label_seen(),
                Some(DefaultLabelForm::DiscriminatorTyped)
            );
        }
    }
}

/// Union `U_k` whose default member (its last) has a label that reads
/// both ways, and whose other reading holds `U_{k-1}` inside an alias at
/// the very bytes where the first reading finds it: both readings parse
/// `U_{k-1}`, so the work grows exponentially with the depth (some 150
/// bytes a level). `U_0` is `long`.
fn ambiguous_nest(depth: usize, order: ByteOrder) -> Vec<u8> {
    let mut w = CdrWriter::new(order, GiopVersion::V1_2);
    if depth == 0 {
        w.write_ulong(TCKind::Long as u32);
        return w.into_bytes();
    }
    let inner = ambiguous_nest(depth - 1, order);
    w.write_ulong(TCKind::Union as u32);
    w.write_encapsulation(|e| {
        e.write_string("IDL:H:1.0")?;
        e.write_string("H")?;
        TypeCode::long().encode(e)?;
        e.write_long(1);
        e.write_ulong(2);
        e.write_long(5);
        e.write_string("a")?;
        TypeCode::objref("IDL:I:1.0", "").encode(e)?;
        e.write_octet(0);
        // Typed reading: the label (patched below: the length of the
        // octet reading's name), the name "t", then an alias.
        let label = e.reserve_ulong();
        let name_at = e.position();
        e.write_string("t")?;
        e.write_ulong(TCKind::Alias as u32);
        let mut alias = CdrWriter::new(order, GiopVersion::V1_2);
        alias.write_octet(order.flag());
        alias.write_string("IDL:A:1.0")?;
        // A name whose NUL ends at a 4-aligned offset: the octet
        // reading's name ends there too, and `U_{k-1}` follows.
        let mut name = String::from("n");
        let length_at = alias.position().next_multiple_of(4);
        while (length_at + 4 + name.len() + 1) % 4 != 0 {
            name.push('n');
        }
        alias.write_string(&name)?;
        let content_at = alias.position();
        alias.write_octets(&inner);
        // Bytes past the alias's content: the typed reading ends at the
        // union's end, the octet reading before it.
        alias.write_octets(&[0xee; 4]);
        e.align(4);
        let alias_at = e.position() + 4;
        e.write_octet_seq(alias.as_bytes())?;
        let octet_name_len = alias_at + content_at - name_at;
        let len = octet_name_len as u32;
        let bytes = match order {
            ByteOrder::Big => len.to_be_bytes(),
            ByteOrder::Little => len.to_le_bytes(),
        };
        e.as_mut_bytes()[label..label + 4].copy_from_slice(&bytes);
        Ok(())
    })
    .unwrap();
    w.into_bytes()
}

/// Before names were checked for NULs, both readings of every level
/// parsed the level inside, and the work doubled every level or two:
/// unbounded, 30 levels took seconds, and the parse budget refused them.
/// The octet reading's name now holds the typed reading's name length,
/// whose zero octets no name may hold, so it fails at once: each level is
/// read once, and the typed reading wins at every depth.
#[test]
fn ambiguous_labels_nested_deep_are_read_once() {
    for order in ORDERS {
        for depth in [3, 30] {
            let bytes = ambiguous_nest(depth, order);
            let (tc, r) = decode(&bytes, order);
            let tc = tc.unwrap_or_else(|e| panic!("{order:?} {depth}: {e}"));
            assert_eq!(tc.member_count(), Ok(2));
            assert_eq!(
                r.default_label_seen(),
                Some(DefaultLabelForm::DiscriminatorTyped)
            );
        }
    }
}

/// Well-formed unions nested deep, each default label in the form that
/// puts the name elsewhere, decode within the budget in both forms.
#[test]
fn deep_well_formed_nesting_decodes_in_both_forms() {
    let mut tc = TypeCode::long();
    for level in 0..40 {
        let members = vec![
            UnionMember {
                label: 1,
                name: "a".into(),
                type_code: TypeCode::objref("IDL:I:1.0", &"x".repeat(level % 4)),
            },
            UnionMember {
                label: 0,
                name: "d".into(),
                type_code: tc,
            },
        ];
        let id = format!("IDL:N{level}:1.0");
        tc = TypeCode::union_tc(&id, "N", TypeCode::longlong(), 1, members);
    }
    for order in ORDERS {
        for form in [
            DefaultLabelForm::ZeroOctet,
            DefaultLabelForm::DiscriminatorTyped,
        ] {
            let bytes = encode(&tc, order, form);
            let (back, r) = decode(&bytes, order);
            assert_eq!(back.as_ref(), Ok(&tc), "{order:?} {form:?}");
            assert_eq!(r.default_label_seen(), Some(form), "{order:?} {form:?}");
        }
    }
}
