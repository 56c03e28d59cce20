//! Reading reassembled GIOP 1.1 messages as omniORB's C++ library and
//! omniORBpy fragment them: hand-written layouts from captures, and a
//! property test over models of both senders.

use super::*;
use crate::cdr::CdrDecode;
use crate::{ByteOrder, GiopVersion};
use proptest::prelude::*;

fn reader<'a>(bytes: &'a [u8], order: ByteOrder, starts: &'a [usize]) -> CdrReader<'a> {
    CdrReader::new(bytes, order, GiopVersion::V1_1)
        .with_position(HEADER_SIZE)
        .with_fragment_starts(starts)
}

/// Regression (issue 9, defect 2, as omniORB's C++ library really lays it
/// out): a sequence of a primitive type is one block of octets that runs
/// on across fragment boundaries, even inside a value; only its start is
/// aligned (captured from omniORB 4.2's 1.1 replies: the long long after
/// a full 8,180-byte fragment sits at offset 12 of the next).
#[test]
fn a_contiguous_block_runs_on_across_fragments() {
    // Stream offsets: a 12-byte message header, then the body: a length
    // (at 12) and the first value (at 16); the boundary falls between
    // values, inside the first, inside the last.
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&3u32.to_be_bytes());
    for v in [1i64, 2, 3] {
        bytes.extend_from_slice(&v.to_be_bytes());
    }
    for starts in [[24], [20], [36]] {
        let mut r =
            reader(&bytes, ByteOrder::Big, &starts).with_block_layout(BlockLayout::Contiguous);
        assert_eq!(
            Vec::<i64>::decode(&mut r).unwrap(),
            vec![1, 2, 3],
            "{starts:?}"
        );
        assert!(r.is_empty());
        // Nothing else reads these bytes to their end: the whole-body
        // decoder finds the same.
        let mut r = reader(&bytes, ByteOrder::Big, &starts);
        assert_eq!(r.decode_whole(Vec::<i64>::decode).unwrap(), vec![1, 2, 3]);
        assert!(r.is_empty());
    }

    // The block's padding reaches the end of a fragment: the block starts
    // right after the next fragment's header, unaligned.
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&[9, 0xee, 0xee, 0xee]);
    bytes.extend_from_slice(&2u32.to_le_bytes());
    bytes.extend_from_slice(&[0xee; 4]);
    bytes.extend_from_slice(&5u64.to_le_bytes());
    bytes.extend_from_slice(&6u64.to_le_bytes());
    let starts = [24];
    let mut r = reader(&bytes, ByteOrder::Little, &starts);
    let got = r.decode_whole(|r| Ok((r.read_octet()?, Vec::<u64>::decode(r)?)));
    assert_eq!(got.unwrap(), (9, vec![5, 6]));
    assert!(r.is_empty());
}

/// Regression (issue 25, captured from omniORBpy 4.3.3): every value of a
/// block is aligned from its own fragment's header, so 4 bytes of padding
/// follow each fragment header inside a block of long longs. Read as one
/// block, every value after the boundary came out shifted (`1010` as
/// `1010 << 32`).
#[test]
fn an_aligned_block_pads_after_each_fragment_header() {
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&3u32.to_le_bytes());
    bytes.extend_from_slice(&1010i64.to_le_bytes()); // 16..24: fragment ends
    bytes.extend_from_slice(&[0; 4]); // offset 12 to 16 of the next
    bytes.extend_from_slice(&1011i64.to_le_bytes());
    bytes.extend_from_slice(&1012i64.to_le_bytes());
    let starts = [24];

    let mut r = reader(&bytes, ByteOrder::Little, &starts);
    let e = Vec::<i64>::decode(&mut r).unwrap_err();
    assert_eq!(e, CdrError::AmbiguousFragment { offset: 16 });

    let mut r = reader(&bytes, ByteOrder::Little, &starts).with_block_layout(BlockLayout::Aligned);
    assert_eq!(Vec::<i64>::decode(&mut r).unwrap(), vec![1010, 1011, 1012]);
    assert!(r.is_empty());

    let mut r = reader(&bytes, ByteOrder::Little, &starts);
    assert_eq!(
        r.decode_whole(Vec::<i64>::decode).unwrap(),
        vec![1010, 1011, 1012]
    );
    assert!(r.is_empty());
    assert_eq!(r.block_layout(), BlockLayout::Undecided);
}

/// Blocks of 1-, 2- and 4-byte values read the same in both layouts:
/// offset 12 is 4-aligned and neither sender splits such a value.
#[test]
fn small_values_read_alike_in_both_layouts() {
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&5u32.to_le_bytes());
    for v in [1i32, 2, 3, 4, 5] {
        bytes.extend_from_slice(&v.to_le_bytes());
    }
    let starts = [24, 32];
    for layout in [
        BlockLayout::Undecided,
        BlockLayout::Aligned,
        BlockLayout::Contiguous,
    ] {
        let mut r = reader(&bytes, ByteOrder::Little, &starts).with_block_layout(layout);
        assert_eq!(
            Vec::<i32>::decode(&mut r).unwrap(),
            vec![1, 2, 3, 4, 5],
            "{layout:?}"
        );
        assert!(r.is_empty());
    }
}

/// A block of 8-byte values followed by an 8-aligned value reads
/// completely in both layouts (they come back into step at that value's
/// padding), with different values: no reader can know which, so it is
/// an error, never a guess.
#[test]
fn a_block_both_layouts_read_completely_is_an_error() {
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&2u32.to_le_bytes());
    bytes.extend_from_slice(&7i64.to_le_bytes()); // 16..24: fragment ends
    bytes.extend_from_slice(&[0; 4]); // aligned layout: padding
    bytes.extend_from_slice(&8i64.to_le_bytes());
    bytes.extend_from_slice(&9.5f64.to_le_bytes());
    let starts = [24];
    let decode = |r: &mut CdrReader<'_>| Ok((Vec::<i64>::decode(r)?, r.read_double()?));
    for layout in [BlockLayout::Aligned, BlockLayout::Contiguous] {
        let mut r = reader(&bytes, ByteOrder::Little, &starts).with_block_layout(layout);
        assert!(decode(&mut r).is_ok(), "{layout:?}");
        assert!(r.is_empty(), "{layout:?}");
    }
    let mut r = reader(&bytes, ByteOrder::Little, &starts);
    assert_eq!(
        r.decode_whole(decode).unwrap_err(),
        CdrError::AmbiguousFragment { offset: 16 }
    );
}

/// No sender splits a single value between two fragments; a message that
/// does is refused, in every layout.
#[test]
fn a_value_split_by_a_fragment_boundary_is_an_error() {
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&7u32.to_le_bytes());
    bytes.extend_from_slice(&9.5f64.to_le_bytes());
    let starts = [20];
    for layout in [
        BlockLayout::Undecided,
        BlockLayout::Aligned,
        BlockLayout::Contiguous,
    ] {
        let mut r = reader(&bytes, ByteOrder::Little, &starts).with_block_layout(layout);
        assert_eq!(r.read_ulong().unwrap(), 7);
        assert_eq!(
            r.read_double().unwrap_err(),
            CdrError::SplitByFragment { offset: 16 }
        );
    }
    // In the aligned layout a value of a block may not be split either.
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&2u32.to_le_bytes());
    bytes.extend_from_slice(&[0; 16]);
    let starts = [20];
    let mut r = reader(&bytes, ByteOrder::Little, &starts).with_block_layout(BlockLayout::Aligned);
    assert_eq!(
        Vec::<i64>::decode(&mut r).unwrap_err(),
        CdrError::SplitByFragment { offset: 16 }
    );
}

/// Regression: padding that reaches the start of a GIOP 1.1 fragment ends
/// there, and the value is aligned again from that fragment's header
/// (captured from omniORB: a string ending 5 bytes before the end of a
/// full fragment, then a double at offset 16 of the next fragment).
#[test]
fn padding_that_reaches_a_fragment_restarts_there() {
    let mut bytes = vec![0u8; 12];
    bytes.extend_from_slice(&11u32.to_le_bytes());
    bytes.extend_from_slice(b"sample-282\0");
    bytes.extend_from_slice(&[0xee; 5]); // to the end of the fragment (32)
    bytes.extend_from_slice(&[0xee; 4]); // offset 12 to 16 of the next
    bytes.extend_from_slice(&141.0f64.to_le_bytes());
    bytes.extend_from_slice(&282i16.to_le_bytes());
    bytes.push(26);
    let starts = [32];
    let mut r = reader(&bytes, ByteOrder::Little, &starts);
    assert_eq!(r.read_string().unwrap(), "sample-282");
    assert_eq!(r.read_double().unwrap(), 141.0);
    assert_eq!(r.read_short().unwrap(), 282);
    assert_eq!(r.read_octet().unwrap(), 26);
    assert!(r.is_empty());
}

/// One thing a sender marshals: a single value of 1, 2, 4 or 8 bytes, or a
/// sequence of such values (its length, then the values).
#[derive(Debug, Clone)]
enum Item {
    Value(usize, u64),
    Sequence(usize, Vec<u64>),
}

/// The two senders of the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sender {
    /// omniORB's C++ library: a sequence is one block, aligned once.
    OmniOrbCpp,
    /// omniORBpy: every value aligned on its own.
    OmniOrbPy,
}

fn arb_item() -> impl Strategy<Value = Item> {
    let size = prop::sample::select(vec![1usize, 2, 4, 8]);
    prop_oneof![
        (size.clone(), any::<u64>()).prop_map(|(k, v)| Item::Value(k, v)),
        (size, prop::collection::vec(any::<u64>(), 0..12)).prop_map(|(k, v)| Item::Sequence(k, v)),
    ]
}

/// The low `k` bytes of `v`, little-endian.
fn le_bytes(k: usize, v: u64) -> Vec<u8> {
    v.to_le_bytes()[..k].to_vec()
}

/// Fragments a message as `sender` does in buffers of `buffer` bytes (a
/// multiple of 8, header included), as in `giopImpl11.cc`: a single value
/// is aligned from its fragment's header, and when that reaches the end of
/// the buffer the fragment is sent and the value aligned again in the
/// next; omniORB's C++ library copies a sequence's values as one block,
/// aligned once, through as many fragments as it needs. Padding bytes are
/// junk, as omniORB leaves them. Returns the reassembled stream (with the
/// first header's 12 bytes) and where each later fragment's data starts.
fn fragment(items: &[Item], buffer: usize, sender: Sender) -> (Vec<u8>, Vec<usize>) {
    struct Out {
        stream: Vec<u8>,
        starts: Vec<usize>,
        mkr: usize,
        buffer: usize,
    }
    impl Out {
        fn pad(&mut self, k: usize) {
            let aligned = self.mkr.div_ceil(k) * k;
            self.stream
                .resize(self.stream.len() + (aligned - self.mkr), 0xee);
            self.mkr = aligned;
        }
        fn new_fragment_if_full(&mut self) {
            if self.mkr == self.buffer {
                self.starts.push(self.stream.len());
                self.mkr = HEADER_SIZE;
            }
        }
        fn value(&mut self, k: usize, v: u64) {
            self.pad(k);
            if self.mkr == self.buffer {
                self.new_fragment_if_full();
                self.pad(k);
            }
            self.stream.extend_from_slice(&le_bytes(k, v));
            self.mkr += k;
        }
    }
    let mut out = Out {
        stream: vec![0u8; HEADER_SIZE],
        starts: Vec::new(),
        mkr: HEADER_SIZE,
        buffer,
    };
    for item in items {
        match item {
            Item::Value(k, v) => out.value(*k, *v),
            Item::Sequence(k, values) => {
                out.value(4, values.len() as u64);
                match sender {
                    Sender::OmniOrbPy => values.iter().for_each(|v| out.value(*k, *v)),
                    Sender::OmniOrbCpp if values.is_empty() => {}
                    Sender::OmniOrbCpp => {
                        out.pad(*k);
                        for byte in values.iter().flat_map(|v| le_bytes(*k, *v)) {
                            out.new_fragment_if_full();
                            out.stream.push(byte);
                            out.mkr += 1;
                        }
                    }
                }
            }
        }
    }
    (out.stream, out.starts)
}

/// The values `items` hold, read back from `r` (masked to their size).
fn read_items(r: &mut CdrReader<'_>, items: &[Item]) -> Result<Vec<Vec<u64>>, CdrError> {
    items
        .iter()
        .map(|item| {
            Ok(match item {
                Item::Value(k, _) => vec![match k {
                    1 => u64::from(r.read_octet()?),
                    2 => u64::from(r.read_ushort()?),
                    4 => u64::from(r.read_ulong()?),
                    _ => r.read_ulonglong()?,
                }],
                Item::Sequence(k, _) => match k {
                    1 => Vec::<u8>::decode(r)?.into_iter().map(u64::from).collect(),
                    2 => Vec::<u16>::decode(r)?.into_iter().map(u64::from).collect(),
                    4 => Vec::<u32>::decode(r)?.into_iter().map(u64::from).collect(),
                    _ => Vec::<u64>::decode(r)?,
                },
            })
        })
        .collect()
}

fn expected(items: &[Item]) -> Vec<Vec<u64>> {
    let mask = |k: usize, v: u64| {
        if k == 8 {
            v
        } else {
            v & ((1u64 << (8 * k)) - 1)
        }
    };
    items
        .iter()
        .map(|item| match item {
            Item::Value(k, v) => vec![mask(*k, *v)],
            Item::Sequence(k, values) => values.iter().map(|v| mask(*k, *v)).collect(),
        })
        .collect()
}

proptest! {
    /// Whatever either sender's fragmenting does to single values and
    /// sequences of every size, the whole-body decoder gives back exactly
    /// what was sent, or, only when the other layout also reads the whole
    /// message, refuses it: never a wrong value. Without 8-byte sequences
    /// it always reads.
    #[test]
    fn reads_what_either_sender_fragments_or_refuses(
        items in prop::collection::vec(arb_item(), 0..24),
        buffer in (4usize..12).prop_map(|n| n * 8),
        python in any::<bool>(),
    ) {
        let sender = if python { Sender::OmniOrbPy } else { Sender::OmniOrbCpp };
        let (stream, starts) = fragment(&items, buffer, sender);
        let mut r = reader(&stream, ByteOrder::Little, &starts);
        match r.decode_whole(|r| read_items(r, &items)) {
            Ok(values) => {
                prop_assert_eq!(values, expected(&items));
                prop_assert!(r.is_empty());
            }
            Err(CdrError::AmbiguousFragment { .. }) => {
                let other = match sender {
                    Sender::OmniOrbCpp => BlockLayout::Aligned,
                    Sender::OmniOrbPy => BlockLayout::Contiguous,
                };
                let mut r = reader(&stream, ByteOrder::Little, &starts).with_block_layout(other);
                prop_assert!(read_items(&mut r, &items).is_ok() && r.is_empty());
                prop_assert!(items.iter().any(|i| matches!(i, Item::Sequence(8, v) if !v.is_empty())));
            }
            Err(e) => prop_assert!(false, "{sender:?}: {e}"),
        }
    }
}
