//! The peers' sources, carried in the binary, and the key that names a
//! build of them in the cache.
//!
//! The files are read at compile time from the crate's `omniorb-peers/`,
//! whose entries are links to `tests/interop/cpp` and `tests/interop/idl`
//! (one copy of each source in the repository; `cargo package` stores the
//! linked files' contents). They are laid out for the build as in the
//! repository, `cpp/` next to `idl/`, since the Makefile names the IDL by
//! `../idl/…`.
//!
//! The key is FNV-1a (64 bits) over the recipe, every file's path and text
//! and omniORB's version: a function that is the same in every Rust
//! release (std's `DefaultHasher` does not promise that), so a key names
//! the same build for every `armillary` built from the same sources.

/// One file of the peers' sources.
#[derive(Debug, Clone, Copy)]
pub(super) struct SourceFile {
    /// Where the build expects it, relative to the build's source
    /// directory (`cpp/server.cc`).
    pub(super) path: &'static str,
    /// Its text.
    pub(super) text: &'static str,
}

macro_rules! source {
    ($path:literal) => {
        SourceFile {
            path: $path,
            text: include_str!(concat!("../../omniorb-peers/", $path)),
        }
    };
}

/// Every file the build reads: the Makefile of `tests/interop/cpp`, the
/// programs' C++ sources and the IDL they are compiled against.
pub(super) const SOURCES: [SourceFile; 7] = [
    source!("cpp/Makefile"),
    source!("cpp/server.cc"),
    source!("cpp/bench_client.cc"),
    source!("cpp/ami_bench_client.cc"),
    source!("cpp/sync_bench_client.cc"),
    source!("idl/interop.idl"),
    source!("idl/invocation_bench.idl"),
];

/// The name of the build of `sources` by `recipe` against omniORB
/// `omniorb_version`: 16 hex digits, different whenever any of them is.
pub(super) fn key(sources: &[SourceFile], recipe: &[&str], omniorb_version: &str) -> String {
    let mut hash = Fnv1a::new();
    // Every field is followed by a byte no text contains, so moving text
    // from one field to the next changes the key.
    for part in recipe {
        hash.write(part.as_bytes());
        hash.write(&[0xff]);
    }
    for file in sources {
        hash.write(file.path.as_bytes());
        hash.write(&[0xff]);
        hash.write(file.text.as_bytes());
        hash.write(&[0xff]);
    }
    hash.write(omniorb_version.as_bytes());
    format!("{:016x}", hash.finish())
}

/// FNV-1a, 64 bits.
struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    fn new() -> Self {
        Fnv1a(Self::OFFSET_BASIS)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fnv(text: &str) -> u64 {
        let mut h = Fnv1a::new();
        h.write(text.as_bytes());
        h.finish()
    }

    #[test]
    fn the_hash_is_fnv_1a_64() {
        // The published test vectors of FNV-1a 64.
        assert_eq!(fnv(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn the_key_changes_with_every_input() {
        let file = |path, text| SourceFile { path, text };
        let base = key(&[file("cpp/a.cc", "int a;")], &["t"], "4.2.5");
        assert_eq!(base.len(), 16);
        assert_eq!(base, key(&[file("cpp/a.cc", "int a;")], &["t"], "4.2.5"));
        for other in [
            key(&[file("cpp/a.cc", "int b;")], &["t"], "4.2.5"),
            key(&[file("cpp/b.cc", "int a;")], &["t"], "4.2.5"),
            key(&[file("cpp/a.cc", "int a;")], &["u"], "4.2.5"),
            key(&[file("cpp/a.cc", "int a;")], &["t"], "4.3.0"),
            key(
                &[file("cpp/a.cc", "int a;"), file("idl/x.idl", "")],
                &["t"],
                "4.2.5",
            ),
            // The same bytes split differently between path and text.
            key(&[file("cpp/a.c", "cint a;")], &["t"], "4.2.5"),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn every_source_is_carried() {
        for file in SOURCES {
            assert!(!file.text.is_empty(), "{} is empty", file.path);
        }
        // The Makefile builds the programs from these very files.
        let makefile = SOURCES[0].text;
        for file in &SOURCES[1..] {
            let name = file.path.rsplit('/').next().unwrap_or(file.path);
            assert!(makefile.contains(name), "the Makefile never names {name}");
        }
    }
}
