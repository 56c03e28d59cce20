//! Replays every input that ever crashed a fuzz target (kept in
//! `fuzz/regressions/<target>/`) through the same entry points the fuzz
//! targets use, so the stable test suite guards every fix. Seed inputs
//! (the omniORB captures) go through them too.
//!
//! `bounded_fuzz_smoke` is the fuzzing CI runs on stable Rust: every
//! target over a fixed number of inputs mutated from the regressions and
//! the captures by a seeded generator (the same inputs every run; set
//! `ARMILLARY_FUZZ_EXECUTIONS` for more, and `ARMILLARY_FUZZ_SEED` for
//! other ones). Coverage-guided runs use `cargo fuzz` on nightly.

use std::path::{Path, PathBuf};

use armillary_giop::fuzzing;

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.is_file())
                // `.keep` holds an otherwise empty directory in git.
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let files = regressions(target);
    for file in &files {
        let data = std::fs::read(file).unwrap();
        run(&data);
    }
    files.len()
}

#[test]
fn frame_decoder_regressions() {
    replay("frame_decoder", fuzzing::frame_decoder);
    // The captures, as fuzz inputs (4 bytes of split sizes, then a stream).
    let vectors = armillary_testkit::vectors_dir().join("giop-1.2");
    let mut stream = vec![7, 64, 1, 200];
    let mut files: Vec<_> = std::fs::read_dir(&vectors)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", vectors.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files
        .iter()
        .filter(|p| p.to_string_lossy().contains("-c2s-"))
    {
        stream.extend(std::fs::read(f).unwrap());
    }
    fuzzing::frame_decoder(&stream);
    // A message over 64 KiB, read into the buffer the decoder lends (odd
    // first byte) and through `handle_bytes` (even), whole and cut short,
    // then a small one after it.
    let mut large = b"GIOP\x01\x02\x01\x00".to_vec();
    large.extend_from_slice(&(100_000u32).to_le_bytes());
    large.resize(12 + 100_000, 0x5a);
    for first in [7u8, 8] {
        for end in [large.len(), 70_000, 13] {
            let mut stream = vec![first, 255, 3, 200];
            stream.extend_from_slice(&large[..end]);
            stream.extend_from_slice(b"GIOP\x01\x02\x01\x05\x00\x00\x00\x00");
            fuzzing::frame_decoder(&stream);
        }
    }
}

#[test]
fn ior_parse_regressions() {
    replay("ior_parse", fuzzing::ior_parse);
    fuzzing::ior_parse(b"corbaloc:iiop:1.2@[::1]:2809,:host/key%41");
    fuzzing::ior_parse(b"corbaname:rir:#a/b.c");
}

#[test]
fn typecode_any_regressions() {
    replay("typecode_any", fuzzing::typecode_any);
}

#[test]
fn giop_message_regressions() {
    replay("giop_message", fuzzing::giop_message);
    for capture in captures() {
        fuzzing::giop_message(&capture);
    }
}

#[test]
fn giop_body_regressions() {
    replay("giop_body", fuzzing::giop_body);
    for capture in captures() {
        if let Some(input) = body_input(&capture) {
            // The selector names the capture's own type, version and order.
            let message = fuzzing::giop_body_message(&input).unwrap();
            assert_eq!(message, capture);
            fuzzing::giop_body(&input);
        }
    }
}

/// Every omniORB capture of at most 64 KiB (whole GIOP messages).
fn captures() -> Vec<Vec<u8>> {
    let root = armillary_testkit::vectors_dir();
    let mut files = Vec::new();
    for session in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(session.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let path = file.path();
            let small = file.metadata().is_ok_and(|m| m.len() <= 64 * 1024);
            if small && path.extension().is_some_and(|e| e == "bin") {
                files.push(path);
            }
        }
    }
    files.sort();
    files.iter().filter_map(|f| std::fs::read(f).ok()).collect()
}

/// The IORs captured from omniORB, as text.
fn captured_iors() -> Vec<Vec<u8>> {
    let root = armillary_testkit::vectors_dir();
    let mut files = Vec::new();
    for session in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for file in std::fs::read_dir(session.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if file.path().extension().is_some_and(|e| e == "ior") {
                files.push(file.path());
            }
        }
    }
    files.sort();
    files.iter().filter_map(|f| std::fs::read(f).ok()).collect()
}

/// A `giop_body` input for a whole message: the selector byte that names
/// its type, version and byte order, then its body.
fn body_input(message: &[u8]) -> Option<Vec<u8>> {
    let header = message.get(..12)?;
    let version = match (header[4], header[5]) {
        (1, 0) => 0,
        (1, 1) => 1,
        (1, 2) => 2,
        _ => return None,
    };
    // Only headers the selector can say: no fragment or undefined flags.
    if header[6] > 1 || header[7] > 7 {
        return None;
    }
    let selector = header[7] + 8 * version + 24 * (header[6] & 1);
    Some([&[selector], &message[12..]].concat())
}

/// xorshift64*: the smoke's mutations, the same for the same seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Values that break length and count checks.
const INTERESTING: [u32; 10] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
];

/// One to four of libFuzzer's usual mutations of `seed`: bit flips,
/// interesting bytes and 32-bit values (either byte order), inserted,
/// erased or repeated runs, truncation, and splicing with `other`.
fn mutate(rng: &mut Rng, seed: &[u8], other: &[u8]) -> Vec<u8> {
    let mut data = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(8) {
            0 if !data.is_empty() => {
                let i = at.min(data.len() - 1);
                data[i] ^= 1 << rng.below(8);
            }
            1 if !data.is_empty() => {
                let i = at.min(data.len() - 1);
                data[i] = INTERESTING[rng.below(INTERESTING.len())] as u8;
            }
            2 if data.len() >= 4 => {
                let i = at.min(data.len() - 4);
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let bytes = if rng.below(2) == 0 {
                    v.to_be_bytes()
                } else {
                    v.to_le_bytes()
                };
                data[i..i + 4].copy_from_slice(&bytes);
            }
            3 => {
                let n = 1 + rng.below(8);
                let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
                data.splice(at..at, bytes);
            }
            4 if !data.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(data.len());
                data.drain(at.min(data.len() - 1)..end);
            }
            5 if !data.is_empty() => {
                let start = at.min(data.len() - 1);
                let end = (start + 1 + rng.below(32)).min(data.len());
                let run = data[start..end].to_vec();
                data.splice(start..start, run);
            }
            6 => data.truncate(at),
            _ => {
                let from = rng.below(other.len() + 1);
                let n = rng.below(other.len() - from + 1);
                data.truncate(at);
                data.extend_from_slice(&other[from..from + n]);
            }
        }
    }
    data
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `target` over `executions` inputs mutated from `seeds` (the seeds
/// themselves first); returns how many ran.
fn smoke(name: &str, target: fn(&[u8]), seeds: &[Vec<u8>], executions: u64, seed: u64) -> u64 {
    let mut rng = Rng(seed ^ name.len() as u64 ^ 0x9e37_79b9_7f4a_7c15);
    let empty = [Vec::new()];
    let seeds = if seeds.is_empty() { &empty[..] } else { seeds };
    let mut ran = 0;
    for s in seeds.iter().take(executions as usize) {
        target(s);
        ran += 1;
    }
    while ran < executions {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let input = mutate(&mut rng, a, b);
        target(&input);
        ran += 1;
    }
    eprintln!("{name}: {ran} executions");
    ran
}

fn read_all(target: &str) -> Vec<Vec<u8>> {
    regressions(target)
        .iter()
        .filter_map(|f| std::fs::read(f).ok())
        .collect()
}

/// A fuzz target: its name, entry point and seeds.
type Target = (&'static str, fn(&[u8]), Vec<Vec<u8>>);

#[test]
fn bounded_fuzz_smoke() {
    let executions = env_number("ARMILLARY_FUZZ_EXECUTIONS", 20_000);
    let seed = env_number("ARMILLARY_FUZZ_SEED", 1);
    let captures = captures();
    let bodies: Vec<Vec<u8>> = captures.iter().filter_map(|c| body_input(c)).collect();
    // A frame_decoder input is 4 bytes of split sizes, then a stream.
    let streams: Vec<Vec<u8>> = captures
        .iter()
        .map(|c| [&[7, 64, 1, 200][..], c].concat())
        .collect();
    let with = |target: &str, extra: &[Vec<u8>]| -> Vec<Vec<u8>> {
        let mut seeds = read_all(target);
        seeds.extend_from_slice(extra);
        seeds
    };
    let targets: [Target; 5] = [
        (
            "frame_decoder",
            fuzzing::frame_decoder,
            with("frame_decoder", &streams),
        ),
        (
            "ior_parse",
            fuzzing::ior_parse,
            with("ior_parse", &captured_iors()),
        ),
        (
            "typecode_any",
            fuzzing::typecode_any,
            with("typecode_any", &bodies),
        ),
        (
            "giop_message",
            fuzzing::giop_message,
            with("giop_message", &captures),
        ),
        ("giop_body", fuzzing::giop_body, with("giop_body", &bodies)),
    ];
    for (name, target, seeds) in &targets {
        assert!(
            !seeds.is_empty() || *name == "ior_parse",
            "{name} has no seeds"
        );
        assert_eq!(smoke(name, *target, seeds, executions, seed), executions);
    }
}
