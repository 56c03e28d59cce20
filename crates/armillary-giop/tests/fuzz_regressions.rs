//! Replays every input that ever crashed a fuzz target (kept in
//! `fuzz/regressions/<target>/`) through the same entry points the fuzz
//! targets use, so the stable test suite guards every fix. Seed inputs
//! (the omniORB captures) go through them too.

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
