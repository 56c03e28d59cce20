//! No input makes the front end panic: random bytes, random token soup,
//! mutations of a valid file, truncations of every test file, and
//! pathological nesting. Each case only has to return (an `Ok` or an
//! `Err` with diagnostics); a panic or a stack overflow fails the test.
//! Every case goes through the fuzz target's entry point,
//! `armillary_idl::fuzzing::front_end`, which also runs the back end on
//! what the front end accepts.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

fn run(text: &str) {
    armillary_idl::fuzzing::front_end_str(text);
}

fn everything_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/valid/everything.idl");
    std::fs::read_to_string(path).unwrap_or_default()
}

const VOCABULARY: &[&str] = &[
    "module",
    "interface",
    "local",
    "abstract",
    "valuetype",
    "custom",
    "struct",
    "union",
    "switch",
    "case",
    "default",
    "enum",
    "typedef",
    "const",
    "exception",
    "native",
    "attribute",
    "readonly",
    "oneway",
    "void",
    "in",
    "out",
    "inout",
    "raises",
    "context",
    "getraises",
    "setraises",
    "typeid",
    "typeprefix",
    "import",
    "sequence",
    "string",
    "wstring",
    "fixed",
    "long",
    "short",
    "unsigned",
    "double",
    "float",
    "char",
    "wchar",
    "octet",
    "boolean",
    "any",
    "Object",
    "ValueBase",
    "TRUE",
    "FALSE",
    "public",
    "private",
    "factory",
    "supports",
    "truncatable",
    "A",
    "B",
    "T",
    "M",
    "I",
    "E",
    "x",
    "_x",
    "CORBA",
    "TypeCode",
    "::",
    ":",
    ";",
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    ">>",
    "<<",
    "[",
    "]",
    ",",
    "=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "~",
    "|",
    "^",
    "&",
    "0",
    "1",
    "256",
    "0x10",
    "1.5",
    "1.5d",
    "'a'",
    "L'b'",
    "\"s\"",
    "L\"w\"",
    "\n#include \"helper.idl\"\n",
    "\n#include <self.idl>\n",
    "\n#define X 1\n",
    "\nX\n",
    "\n#if X\n",
    "\n#else\n",
    "\n#endif\n",
    "\n#pragma prefix \"p\"\n",
    "\n#pragma ID A \"IDL:A:1.0\"\n",
    "\n#pragma version A 1.2\n",
    "/*",
    "*/",
    "//",
    "\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCABULARY), 0..80).prop_map(|words| words.join(" "))
}

/// Mutations of everything.idl: delete, duplicate or replace whitespace-
/// separated words, which keeps most of the file valid and so reaches the
/// resolver's deep paths with broken input.
fn mutated_everything() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            0u8..3,
            prop::sample::select(VOCABULARY),
        ),
        1..6,
    )
    .prop_map(|edits| {
        let text = everything_text();
        let mut words: Vec<String> = text.split(' ').map(str::to_owned).collect();
        for (index, op, word) in edits {
            if words.is_empty() {
                break;
            }
            let at = index.index(words.len());
            match op {
                0 => {
                    words.remove(at);
                }
                1 => {
                    let copy = words[at].clone();
                    words.insert(at, copy);
                }
                _ => words[at] = (*word).to_owned(),
            }
        }
        words.join(" ")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        run(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn random_token_soup_never_panics(text in token_soup()) {
        run(&text);
    }

    #[test]
    fn mutated_valid_files_never_panic(text in mutated_everything()) {
        run(&text);
    }
}

fn test_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    for dir in ["valid", "invalid", "valid/include", "invalid/include"] {
        if let Ok(entries) = std::fs::read_dir(root.join(dir)) {
            files.extend(
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|e| e == "idl")),
            );
        }
    }
    files.sort();
    files
}

#[test]
fn truncated_files_never_panic() {
    for file in test_files() {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let boundaries: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        // Every cut for small files; about 300 cuts for large ones.
        let step = (boundaries.len() / 300).max(1);
        for &cut in boundaries.iter().step_by(step) {
            run(&text[..cut]);
        }
    }
}

#[test]
fn dropping_each_line_never_panics() {
    let text = everything_text();
    let lines: Vec<&str> = text.lines().collect();
    for skip in 0..lines.len() {
        let mutated: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, l)| *l)
            .collect();
        run(&mutated.join("\n"));
    }
}

#[test]
fn pathological_nesting_is_reported_not_overflowed() {
    let depth = 100_000;
    let cases = [
        format!("const long x = {}1{};", "(".repeat(depth), ")".repeat(depth)),
        format!("const long x = {}1;", "-".repeat(depth)),
        format!("const long x = 1{};", " + 1".repeat(depth)),
        "module M { ".repeat(depth),
        (0..depth).map(|i| format!("module M{i} {{ ")).collect::<String>()
            + "typedef long T;"
            + &"};".repeat(depth),
        (0..1000).map(|i| format!("struct S{i} {{ ")).collect::<String>()
            + "long x;"
            + &(1..1000).rev().map(|i| format!("}} m{i};")).collect::<String>()
            + "};",
        (0..1000)
            .map(|i| format!("union U{i} switch (long) {{ case 1: "))
            .collect::<String>()
            + "long x;"
            + &(1..1000).rev().map(|i| format!("}} m{i};")).collect::<String>()
            + "};",
        format!("typedef {}long{} T;", "sequence<".repeat(depth), ">".repeat(depth)),
        format!("#if {}1{}\n#endif\n", "(".repeat(depth), ")".repeat(depth)),
        format!("#if {}1\n#endif\n", "!".repeat(depth)),
        format!("#if 1{}\n#endif\n", " + 1".repeat(depth)),
        "#define A B B\n#define B C C\n#define C D D\n#define D E E\n#define E F F\n#define F G G\n#define G H H\n#define H I I\n#define I J J\n#define J K K\n#define K L L\n#define L N N\n#define N O O\n#define O P P\n#define P Q Q\n#define Q R R\n#define R S S\n#define S U U\n#define U V V\n#define V W W\n#define W Y Y\n#define Y Z Z\n#define Z AA AA\n#define AA AB AB\nA\n".to_owned(),
        "#define X X\nX\n#define F(a) F(a)\nF(1)\n".to_owned(),
        "#include \"self.idl\"\n".to_owned(),
    ];
    for case in &cases {
        // Run on a thread with the default test stack size to make sure
        // nesting limits, not luck, keep the stack in bounds.
        let text = case.clone();
        std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || run(&text))
            .unwrap()
            .join()
            .unwrap_or_else(|_| panic!("panicked on {}...", &case[..case.len().min(60)]));
    }
}

/// Every input that ever crashed the `idl_frontend` fuzz target.
#[test]
fn fuzz_regressions_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/regressions/idl_frontend");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    for file in files {
        armillary_idl::fuzzing::front_end(&std::fs::read(&file).unwrap());
    }
}
