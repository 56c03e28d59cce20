//! Unit tests of CDR primitives: layouts checked against hand-written bytes,
//! and round trips in both byte orders and every GIOP version.

use super::*;
use crate::{ByteOrder, GiopVersion};
use proptest::prelude::*;

fn writer(order: ByteOrder, version: GiopVersion) -> CdrWriter {
    CdrWriter::new(order, version).with_codesets(CodeSets::NATIVE)
}

fn reader(bytes: &[u8], order: ByteOrder, version: GiopVersion) -> CdrReader<'_> {
    CdrReader::new(bytes, order, version).with_codesets(CodeSets::NATIVE)
}

#[test]
fn alignment_counts_from_the_base() {
    // A body that starts after a 12-byte header: a long long right at the
    // start of the body needs 4 bytes of padding.
    let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2).with_align_base(12);
    w.write_longlong(1);
    assert_eq!(w.as_bytes(), &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2).with_align_base(12);
    assert_eq!(r.read_longlong().unwrap(), 1);
    assert!(r.is_empty());
}

/// The layout CDR asks for, written out the slow way: zeros up to the
/// next multiple of the size (counted from the base), then the value.
fn padded(base: usize, prefix: usize, value: &[u8]) -> Vec<u8> {
    let mut out = vec![0xAA; prefix];
    while (base + out.len()) % value.len() != 0 {
        out.push(0);
    }
    out.extend_from_slice(value);
    out
}

#[test]
fn primitives_pad_with_zeros_from_any_offset() {
    // Every size, byte order and starting offset (the writer writes the
    // padding and the value together, cut from a fixed-size chunk).
    for order in [ByteOrder::Big, ByteOrder::Little] {
        for base in 0..8 {
            for prefix in 0..9 {
                let start = || {
                    let mut w = CdrWriter::new(order, GiopVersion::V1_2).with_align_base(base);
                    w.write_octets(&vec![0xAA; prefix]);
                    w
                };
                let big = order == ByteOrder::Big;
                let bytes = |be: &[u8], le: &[u8]| if big { be.to_vec() } else { le.to_vec() };
                let mut w = start();
                w.write_ushort(0x0102);
                assert_eq!(w.as_bytes(), padded(base, prefix, &bytes(&[1, 2], &[2, 1])));
                let mut w = start();
                w.write_ulong(0x0102_0304);
                let v = 0x0102_0304u32;
                assert_eq!(
                    w.as_bytes(),
                    padded(base, prefix, &bytes(&v.to_be_bytes(), &v.to_le_bytes()))
                );
                let mut w = start();
                let v = 0x0102_0304_0506_0708u64;
                w.write_ulonglong(v);
                assert_eq!(
                    w.as_bytes(),
                    padded(base, prefix, &bytes(&v.to_be_bytes(), &v.to_le_bytes()))
                );
                let mut w = start();
                w.write_octet(9);
                assert_eq!(w.as_bytes(), padded(base, prefix, &[9]));
                let mut w = start();
                w.align(8);
                w.write_octet(9);
                let mut want = padded(base, prefix, &[0; 8]);
                want.truncate(want.len() - 8);
                want.push(9);
                assert_eq!(w.as_bytes(), want);
            }
        }
    }
}

#[test]
fn strings_in_both_char_code_sets() {
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    w.write_string("héllo").unwrap();
    // ISO 8859-1: one byte per character.
    assert_eq!(w.as_bytes(), b"\x06\0\0\0h\xe9llo\0");
    let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(r.read_string().unwrap(), "héllo");
    assert!(matches!(
        w.write_string("€"),
        Err(CdrError::NotRepresentable { .. })
    ));

    let mut w = writer(ByteOrder::Little, GiopVersion::V1_2);
    w.write_string("€").unwrap();
    assert_eq!(w.as_bytes(), b"\x04\0\0\0\xe2\x82\xac\0");
}

#[test]
fn wide_strings_follow_the_giop_version() {
    // GIOP 1.2 as omniORB sends it: octet length, BOM, little-endian units.
    let omni = hex("0e000000fffe770069006400650020003a26");
    let mut r = reader(&omni, ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(r.read_wstring().unwrap(), "wide ☺");
    let mut w = writer(ByteOrder::Little, GiopVersion::V1_2);
    w.write_wstring("wide ☺").unwrap();
    assert_eq!(w.as_bytes(), omni.as_slice());

    // Without a BOM the data is big-endian.
    let mut w = writer(ByteOrder::Little, GiopVersion::V1_2).with_codesets(CodeSets {
        write_bom: false,
        ..CodeSets::NATIVE
    });
    w.write_wstring("ab").unwrap();
    assert_eq!(w.as_bytes(), &[4, 0, 0, 0, 0, b'a', 0, b'b']);
    let mut r = reader(w.as_bytes(), ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(r.read_wstring().unwrap(), "ab");

    // GIOP 1.1: a count of code units including a NUL, in stream order.
    let mut w = writer(ByteOrder::Big, GiopVersion::V1_1);
    w.write_wstring("ab").unwrap();
    assert_eq!(w.as_bytes(), &[0, 0, 0, 3, 0, b'a', 0, b'b', 0, 0]);

    // GIOP 1.0 has no wchar at all.
    let mut w = writer(ByteOrder::Big, GiopVersion::V1_0);
    assert!(matches!(
        w.write_wchar('a'),
        Err(CdrError::WCharCodeSetUnknown { .. })
    ));
}

#[test]
fn hostile_lengths_fail_without_allocating() {
    let bytes = [0xff, 0xff, 0xff, 0xff, 1, 2, 3];
    let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
    assert!(matches!(
        Vec::<u32>::decode(&mut r),
        Err(CdrError::LengthTooLarge { .. })
    ));
    let mut r = CdrReader::new(&bytes, ByteOrder::Big, GiopVersion::V1_2);
    assert!(r.read_string().is_err());
    let mut r = CdrReader::new(&[0, 0, 0, 1, b'x'], ByteOrder::Big, GiopVersion::V1_2);
    assert!(matches!(
        r.read_string(),
        Err(CdrError::StringNotTerminated { .. })
    ));
}

#[test]
fn encapsulations_restart_alignment_and_carry_their_byte_order() {
    let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_2);
    w.write_octet(9);
    w.write_encapsulation(|e| {
        e.write_ulong(0x0102_0304);
        Ok(())
    })
    .unwrap();
    // octet, pad to 4, length 8, order octet 0, pad 3, then the ulong.
    assert_eq!(
        w.as_bytes(),
        &[9, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 1, 2, 3, 4]
    );
    let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_2);
    r.read_octet().unwrap();
    let mut e = r.read_encapsulation().unwrap();
    assert_eq!(e.read_ulong().unwrap(), 0x0102_0304);
    assert!(r.is_empty());
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Every primitive and composite type, as one value for round trips.
#[derive(Debug, Clone, PartialEq)]
struct Everything {
    b: bool,
    o: u8,
    c: char,
    wc: char,
    s: i16,
    us: u16,
    l: i32,
    ul: u32,
    ll: i64,
    ull: u64,
    f: f32,
    d: f64,
    ld: LongDouble,
    fixed: Fixed,
    text: String,
    wide: String,
    octets: Vec<u8>,
    longs: Vec<i32>,
    doubles: Vec<f64>,
    strings: Vec<String>,
    matrix: [[i16; 3]; 2],
}

impl Everything {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_bool(self.b);
        w.write_octet(self.o);
        w.write_char(self.c)?;
        let wide = w.version() >= GiopVersion::V1_1;
        if wide {
            w.write_wchar(self.wc)?;
        }
        w.write_short(self.s);
        w.write_ushort(self.us);
        w.write_long(self.l);
        w.write_ulong(self.ul);
        w.write_longlong(self.ll);
        w.write_ulonglong(self.ull);
        w.write_float(self.f);
        w.write_double(self.d);
        w.write_long_double(self.ld);
        w.write_fixed(&self.fixed, 12, 3)?;
        w.write_string(&self.text)?;
        if wide {
            w.write_wstring(&self.wide)?;
        }
        w.write_octet_seq(&self.octets)?;
        self.longs.encode(w)?;
        self.doubles.encode(w)?;
        self.strings.encode(w)?;
        self.matrix.encode(w)
    }

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let wide = r.version() >= GiopVersion::V1_1;
        Ok(Everything {
            b: r.read_bool()?,
            o: r.read_octet()?,
            c: r.read_char()?,
            wc: if wide { r.read_wchar()? } else { 'w' },
            s: r.read_short()?,
            us: r.read_ushort()?,
            l: r.read_long()?,
            ul: r.read_ulong()?,
            ll: r.read_longlong()?,
            ull: r.read_ulonglong()?,
            f: r.read_float()?,
            d: r.read_double()?,
            ld: r.read_long_double()?,
            fixed: r.read_fixed(12, 3)?,
            text: r.read_string()?,
            wide: if wide {
                r.read_wstring()?
            } else {
                String::new()
            },
            octets: r.read_octet_seq()?.to_vec(),
            longs: r.read()?,
            doubles: r.read()?,
            strings: r.read()?,
            matrix: r.read()?,
        })
    }
}

fn arb_everything() -> impl Strategy<Value = Everything> {
    (
        (
            any::<bool>(),
            any::<u8>(),
            proptest::char::range('\0', '\x7f'),
            proptest::char::range('\0', '\u{d7ff}'),
            any::<i16>(),
            any::<u16>(),
            any::<i32>(),
            any::<u32>(),
            any::<i64>(),
            any::<u64>(),
        ),
        (
            any::<f32>().prop_filter("NaN never equals itself", |f| !f.is_nan()),
            any::<f64>().prop_filter("NaN never equals itself", |f| !f.is_nan()),
            any::<u128>().prop_map(LongDouble::from_bits),
            (-999_999_999_999i128..=999_999_999_999).prop_map(|v| Fixed::new(v, 3).unwrap()),
            ".*",
            ".*",
            proptest::collection::vec(any::<u8>(), 0..64),
            proptest::collection::vec(any::<i32>(), 0..16),
            proptest::collection::vec(any::<f64>().prop_filter("NaN", |f| !f.is_nan()), 0..8),
            proptest::collection::vec(".{0,8}", 0..4),
            any::<[[i16; 3]; 2]>(),
        ),
    )
        .prop_map(
            |(
                (b, o, c, wc, s, us, l, ul, ll, ull),
                (f, d, ld, fixed, text, wide, octets, longs, doubles, strings, matrix),
            )| {
                Everything {
                    b,
                    o,
                    c,
                    wc,
                    s,
                    us,
                    l,
                    ul,
                    ll,
                    ull,
                    f,
                    d,
                    ld,
                    fixed,
                    text,
                    wide,
                    octets,
                    longs,
                    doubles,
                    strings,
                    matrix,
                }
            },
        )
}

proptest! {
    #[test]
    fn every_type_round_trips(
        v in arb_everything(),
        big in any::<bool>(),
        minor in 0u8..=2,
        base in 0usize..8,
    ) {
        let order = if big { ByteOrder::Big } else { ByteOrder::Little };
        let version = GiopVersion::new(1, minor);
        let mut w = writer(order, version).with_align_base(base);
        v.encode(&mut w).unwrap();
        let mut r = reader(w.as_bytes(), order, version).with_align_base(base);
        let back = Everything::decode(&mut r).unwrap();
        prop_assert!(r.is_empty());
        let expected = if version == GiopVersion::V1_0 {
            Everything { wc: 'w', wide: String::new(), ..v }
        } else {
            v
        };
        prop_assert_eq!(back, expected);
    }

    #[test]
    fn truncated_input_is_an_error_not_a_panic(v in arb_everything(), cut in 0usize..400) {
        let mut w = writer(ByteOrder::Big, GiopVersion::V1_2);
        v.encode(&mut w).unwrap();
        let bytes = w.as_bytes();
        let cut = cut.min(bytes.len());
        if cut < bytes.len() {
            let mut r = reader(&bytes[..cut], ByteOrder::Big, GiopVersion::V1_2);
            prop_assert!(Everything::decode(&mut r).is_err());
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut r = reader(&bytes, ByteOrder::Little, GiopVersion::V1_2);
        let _ = Everything::decode(&mut r);
        let mut r = reader(&bytes, ByteOrder::Big, GiopVersion::V1_1);
        let _ = Everything::decode(&mut r);
    }
}

/// Regression (issue 9, defect 1): an empty sequence of a 2-, 4- or 8-byte
/// primitive is its length and nothing else; CDR aligns only values that
/// are written. `struct { sequence<long long> a; long b; }`, `a = []`,
/// `b = 7`, as omniORB writes it.
#[test]
fn empty_primitive_sequences_are_not_padded() {
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    Vec::<i64>::new().encode(&mut w).unwrap();
    7i32.encode(&mut w).unwrap();
    assert_eq!(w.as_bytes(), &[0, 0, 0, 0, 7, 0, 0, 0]);
    let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(Vec::<i64>::decode(&mut r).unwrap(), Vec::<i64>::new());
    assert_eq!(i32::decode(&mut r).unwrap(), 7);
    assert!(r.is_empty());

    macro_rules! empty_then_long {
        ($($ty:ty),*) => {$(
            let mut w = CdrWriter::new(ByteOrder::Big, GiopVersion::V1_1);
            w.write_octet(1); // misalign, so padding would show
            Vec::<$ty>::new().encode(&mut w).unwrap();
            w.write_octet(9);
            assert_eq!(w.as_bytes(), &[1, 0, 0, 0, 0, 0, 0, 0, 9], stringify!($ty));
            let mut r = CdrReader::new(w.as_bytes(), ByteOrder::Big, GiopVersion::V1_1);
            r.read_octet().unwrap();
            assert!(Vec::<$ty>::decode(&mut r).unwrap().is_empty(), stringify!($ty));
            assert_eq!(r.read_octet().unwrap(), 9, stringify!($ty));
        )*};
    }
    empty_then_long!(i16, u16, i32, u32, i64, u64, f32, f64, u8, LongDouble);
}

/// Regression (found by the differential tests against omniORB): text
/// starting with U+FEFF, written in GIOP 1.2 without byte order marks,
/// gets one anyway; otherwise every reader takes the character for a
/// mark (omniORB raised DATA_CONVERSION on the wchar).
#[test]
fn a_leading_zero_width_no_break_space_is_not_taken_for_a_bom() {
    let codesets = CodeSets {
        write_bom: false,
        ..CodeSets::NATIVE
    };
    for order in [ByteOrder::Big, ByteOrder::Little] {
        let mut w = CdrWriter::new(order, GiopVersion::V1_2).with_codesets(codesets);
        w.write_wchar('\u{feff}').unwrap();
        w.write_wstring("\u{feff}x").unwrap();
        w.write_wchar('y').unwrap();
        let mut r = CdrReader::new(w.as_bytes(), order, GiopVersion::V1_2).with_codesets(codesets);
        assert_eq!(r.read_wchar().unwrap(), '\u{feff}');
        assert_eq!(r.read_wstring().unwrap(), "\u{feff}x");
        assert_eq!(r.read_wchar().unwrap(), 'y');
        assert!(r.is_empty());
    }
    // Other text is still written without a mark, big-endian.
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2).with_codesets(codesets);
    w.write_wchar('y').unwrap();
    assert_eq!(w.as_bytes(), &[2, 0, b'y']);
}

/// Regression (found by the differential tests against omniORB): a GIOP
/// 1.2 `wchar` whose two octets are FE FF is the character U+FEFF, not a
/// byte order mark followed by nothing (omniORB copies a big-endian
/// U+FEFF that way into its little-endian messages).
#[test]
fn a_lone_byte_order_mark_is_the_character() {
    let codesets = CodeSets::NATIVE;
    let bytes = [2, 0xfe, 0xff, 0, 2, 0, 0, 0, 0xfe, 0xff];
    let mut r =
        CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2).with_codesets(codesets);
    assert_eq!(r.read_wchar().unwrap(), '\u{feff}');
    assert_eq!(r.read_wstring().unwrap(), "\u{feff}");
    assert!(r.is_empty());
}
