//! The front end through its public API, on in-memory fixtures in the
//! rust-analyzer style: `//- /path` starts a file; files at the root
//! (`/main.idl`) are main files, `/inc` is the include directory. Each test is a one-line
//! `check_*(fixture, expected)` call.

use armillary_idl::{parse_define, DefineError, Frontend, MemoryLoader, Severity};

/// Splits a fixture into `(path, text)` files.
fn files(fixture: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in fixture.lines() {
        if let Some(path) = line.trim().strip_prefix("//- ") {
            out.push((path.trim().to_owned(), String::new()));
        } else if let Some((_, text)) = out.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    out
}

fn frontend(fixture: &str) -> (Frontend, Vec<String>) {
    let files = files(fixture);
    let mut loader = MemoryLoader::new();
    for (path, text) in &files {
        loader.insert(path, text.as_str());
    }
    let mains = files
        .iter()
        .filter(|(path, _)| path.matches('/').count() == 1)
        .map(|(path, _)| path.clone())
        .collect();
    (Frontend::new().include_dir("/inc").loader(loader), mains)
}

/// The one-line diagnostics of the fixture (errors and warnings).
fn check_diagnostics(fixture: &str, expected: &str) {
    let (frontend, mains) = frontend(fixture);
    let actual: Vec<String> = frontend
        .check(&mains)
        .iter()
        .map(|d| d.one_line())
        .collect();
    assert_eq!(actual.join("\n"), expected.trim(), "fixture:\n{fixture}");
}

/// `scoped::name repository-id` of every definition of the main files.
fn check_ids(fixture: &str, expected: &str) {
    let (frontend, mains) = frontend(fixture);
    let spec = frontend
        .parse_files(&mains)
        .unwrap_or_else(|error| panic!("{error}"));
    let actual: Vec<String> = spec
        .definitions()
        .filter(|(_, def)| def.from_main_file)
        .map(|(_, def)| format!("{} {}", def.scoped_name.join("::"), def.repository_id))
        .collect();
    assert_eq!(actual.join("\n"), expected.trim(), "fixture:\n{fixture}");
}

#[test]
fn prefix_pragmas_are_scoped_to_files_and_modules() {
    check_ids(
        r#"
//- /main.idl
#pragma prefix "outer"
#include "lib.idl"
module A {
#pragma prefix "inner"
  typedef long T;
  module B { typedef long U; };
};
typedef long V;
//- /inc/lib.idl
#pragma prefix "lib"
module L {};
"#,
        "A IDL:outer/A:1.0\nA::T IDL:inner/T:1.0\nA::B IDL:inner/B:1.0\nA::B::U IDL:inner/B/U:1.0\nV IDL:outer/V:1.0",
    );
}

#[test]
fn the_corba_specification_example_of_prefixes() {
    // CORBA 3.0, 10.7.5: the example of the prefix pragma.
    check_ids(
        r#"
//- /main.idl
module M1 {
  typedef long T1;
  typedef long T2;
#pragma ID T2 "DCE:d62207a2-011e-11ce-88b4-0800090b5d3e:3"
};
#pragma prefix "P1"
module M2 {
  module M3 {
#pragma prefix "P2"
    typedef long T3;
  };
  typedef long T4;
#pragma version T4 2.4
};
"#,
        "M1 IDL:M1:1.0
M1::T1 IDL:M1/T1:1.0
M1::T2 DCE:d62207a2-011e-11ce-88b4-0800090b5d3e:3
M2 IDL:P1/M2:1.0
M2::M3 IDL:P1/M2/M3:1.0
M2::M3::T3 IDL:P2/T3:1.0
M2::T4 IDL:P1/M2/T4:2.4",
    );
}

#[test]
fn typeprefix_and_typeid() {
    check_ids(
        r#"
//- /main.idl
module CosStuff {
  typeprefix CosStuff "omg.org";
  interface Thing { void op(); };
  typedef long Id;
  typeid Id "IDL:custom/Id:2.0";
};
"#,
        "CosStuff IDL:omg.org/CosStuff:1.0
CosStuff::Thing IDL:omg.org/CosStuff/Thing:1.0
CosStuff::Thing::op IDL:omg.org/CosStuff/Thing/op:1.0
CosStuff::Id IDL:custom/Id:2.0",
    );
}

#[test]
fn two_main_files_share_an_include() {
    check_ids(
        r#"
//- /a.idl
#include "common.idl"
module A { typedef Common::T T; };
//- /b.idl
#include "common.idl"
module B { typedef Common::T T; };
//- /inc/common.idl
module Common { typedef long T; };
"#,
        "A IDL:A:1.0\nA::T IDL:A/T:1.0\nB IDL:B:1.0\nB::T IDL:B/T:1.0",
    );
}

#[test]
fn a_main_file_included_by_another_is_defined_once() {
    check_ids(
        r#"
//- /a.idl
module A { typedef long T; };
//- /b.idl
#include "a.idl"
module B { typedef A::T T; };
"#,
        "A IDL:A:1.0\nA::T IDL:A/T:1.0\nB IDL:B:1.0\nB::T IDL:B/T:1.0",
    );
}

#[test]
fn guarded_files_may_include_each_other() {
    check_ids(
        r#"
//- /main.idl
#include "x.idl"
typedef X::T Main;
//- /inc/x.idl
#ifndef X_IDL
#define X_IDL
#include "y.idl"
module X { typedef long T; };
#endif
//- /inc/y.idl
#ifndef Y_IDL
#define Y_IDL
#include "x.idl"
module Y {};
#endif
"#,
        "Main IDL:Main:1.0",
    );
}

#[test]
fn pragma_once_and_repeated_includes() {
    check_ids(
        r#"
//- /main.idl
#include "once.idl"
#include "once.idl"
#include <once.idl>
typedef Once::T Main;
//- /inc/once.idl
#pragma once
module Once { typedef long T; };
"#,
        "Main IDL:Main:1.0",
    );
}

#[test]
fn quoted_includes_look_beside_the_including_file_first() {
    check_ids(
        r#"
//- /main.idl
#include "sub/a.idl"
typedef Sibling::T Main;
//- /sub/a.idl
#include "b.idl"
//- /sub/b.idl
module Sibling { typedef long T; };
//- /inc/b.idl
module Wrong { typedef long T; };
"#,
        "Main IDL:Main:1.0",
    );
}

#[test]
fn command_line_definitions() {
    let mut loader = MemoryLoader::new();
    loader.insert(
        "/main.idl",
        "#if LEVEL > 2 && defined(FLAG)\nconst long X = LEVEL;\n#endif\n",
    );
    let spec = Frontend::new()
        .loader(loader)
        .define("LEVEL", Some("3"))
        .define("FLAG", None)
        .parse_files(&["/main.idl"])
        .unwrap();
    assert!(spec.lookup("X").is_some());
    assert_eq!(
        parse_define("A=1 + 2"),
        Ok(("A".into(), Some("1 + 2".into())))
    );
    assert_eq!(
        parse_define("2A"),
        Err(DefineError::InvalidName("2A".into()))
    );
    assert_eq!(parse_define("=2"), Err(DefineError::EmptyName("=2".into())));
}

#[test]
fn warnings_do_not_fail_the_compilation() {
    let fixture = r#"
//- /main.idl
import ::CORBA;
interface Later;
typedef long home;
"#;
    check_diagnostics(
        fixture,
        "/main.idl:3:14: warning: identifier 'home' clashes with CORBA 3 keyword 'home'
/main.idl:1:1: warning: 'import ::CORBA' is ignored: this compiler reads declarations through #include
/main.idl:2:11: warning: forward-declared interface 'Later' is never defined",
    );
    let (frontend, mains) = frontend(fixture);
    let spec = frontend.parse_files(&mains).unwrap();
    assert_eq!(spec.warnings.len(), 3);
    assert!(spec
        .warnings
        .iter()
        .all(|w| w.severity == Severity::Warning));
}

#[test]
fn several_semantic_errors_are_reported_together() {
    check_diagnostics(
        r#"
//- /main.idl
struct S { Unknown a; };
const octet O = 300;
interface I { oneway long op(); };
"#,
        "/main.idl:1:12: error: cannot find 'Unknown' in this scope
/main.idl:2:17: error: value 300 is out of range for type 'octet'
/main.idl:3:22: error: oneway operation 'op' must return void",
    );
}

#[test]
fn diagnostics_render_like_rustc() {
    let mut loader = MemoryLoader::new();
    loader.insert("/x/main.idl", "module M {\n\tstruct S { long s; };\n};\n");
    let diagnostics = Frontend::new().loader(loader).check(&["/x/main.idl"]);
    assert_eq!(
        diagnostics[0].to_string(),
        "error: 's' clashes with the name of its enclosing scope 'S'\n --> /x/main.idl:2:18\n  |\n2 |     struct S { long s; };\n  |                     ^"
    );
}

#[test]
fn notes_point_at_earlier_declarations() {
    let mut loader = MemoryLoader::new();
    loader.insert("/m.idl", "typedef long T;\ntypedef short T;\n");
    let diagnostics = Frontend::new().loader(loader).check(&["/m.idl"]);
    assert_eq!(
        diagnostics[0].notes[0].message,
        "previous definition of 'T' is here"
    );
    assert_eq!(
        diagnostics[0].notes[0].location.as_deref(),
        Some("/m.idl:1:14")
    );
}

#[test]
fn missing_main_file_and_no_files() {
    check_diagnostics("//- /inc/unused.idl\n", "error: no IDL files given");
    let diagnostics = Frontend::new().check(&["/definitely/not/here.idl"]);
    assert_eq!(
        diagnostics[0].one_line(),
        "/definitely/not/here.idl: error: cannot find IDL file '/definitely/not/here.idl'"
    );
}

#[test]
fn guarded_include_is_skipped_and_unterminated_include_group_reported() {
    check_diagnostics(
        r#"
//- /main.idl
#include "open.idl"
module M {};
//- /inc/open.idl
#if 1
module Open {};
"#,
        "/inc/open.idl:1:1: error: unterminated conditional directive: '#if' without '#endif'",
    );
}

#[test]
fn function_like_macros_and_nested_expansion() {
    check_ids(
        r#"
//- /main.idl
#define SEQ(T) sequence<T>
#define NAME(base) base
#define BOUND (2 * 8)
typedef SEQ(SEQ(long)) NAME(Nested);
typedef string<BOUND> Bounded;
"#,
        "Nested IDL:Nested:1.0\nBounded IDL:Bounded:1.0",
    );
}

#[test]
fn inherited_names_resolve_and_shadow() {
    check_ids(
        r#"
//- /main.idl
interface A { typedef long T; exception E {}; };
interface B : A { typedef T U; void op() raises (E); };
interface C : B { typedef short T; typedef T V; };
"#,
        "A IDL:A:1.0
A::T IDL:A/T:1.0
A::E IDL:A/E:1.0
B IDL:B:1.0
B::U IDL:B/U:1.0
B::op IDL:B/op:1.0
C IDL:C:1.0
C::T IDL:C/T:1.0
C::V IDL:C/V:1.0",
    );
}

#[test]
fn reopened_modules_merge() {
    let mut loader = MemoryLoader::new();
    loader.insert(
        "/m.idl",
        "module M { typedef long A; };\nmodule N {};\nmodule M { typedef A B; };\n",
    );
    let spec = Frontend::new()
        .loader(loader)
        .parse_files(&["/m.idl"])
        .unwrap();
    let names: Vec<&str> = spec
        .roots
        .iter()
        .map(|&id| spec[id].name.as_str())
        .collect();
    assert_eq!(names, ["M", "N"]);
    let m = spec.lookup("M").unwrap();
    assert_eq!(spec.contents(m).len(), 2);
}

#[test]
fn errors_in_included_files_say_where_they_were_included_from() {
    let mut loader = MemoryLoader::new();
    loader.insert(
        "/main.idl",
        "module M { typedef long X; };\n#include \"a.idl\"\n",
    );
    loader.insert("/inc/a.idl", "#include \"b.idl\"\n");
    loader.insert("/inc/b.idl", "typedef Missing T;\n");
    let diagnostics = Frontend::new()
        .include_dir("/inc")
        .loader(loader)
        .check(&["/main.idl"]);
    assert_eq!(
        diagnostics[0].to_string(),
        "error: cannot find 'Missing' in this scope
 --> /inc/b.idl:1:9
  |
1 | typedef Missing T;
  |         ^
  = note: in the file included from here (/inc/a.idl:1:1)
  = note: in the file included from here (/main.idl:2:1)"
    );
}

#[test]
fn empty_modules_are_a_warning() {
    check_diagnostics(
        "//- /main.idl\nmodule Empty {};\n",
        "/main.idl:1:8: warning: module 'Empty' is empty (IDL requires at least one definition in a module)",
    );
}

#[test]
fn anonymous_sequence_parameters_are_errors_with_a_typedef_hint() {
    let mut loader = MemoryLoader::new();
    loader.insert(
        "/main.idl",
        "interface I {\n  void put(in sequence<long> values);\n};\n",
    );
    let diagnostics = Frontend::new().loader(loader).check(&["/main.idl"]);
    assert_eq!(
        diagnostics[0].to_string(),
        "error: parameter 'values' has an anonymous sequence type; CORBA IDL allows only a named type here
 --> /main.idl:2:15
  |
2 |   void put(in sequence<long> values);
  |               ^
  = note: declare a typedef (`typedef sequence<...> NameSeq;`) and use its name
  = note: `armillary idl --lenient` (Builder::lenient) accepts it with a warning"
    );
}

#[test]
fn lenient_front_ends_accept_anonymous_sequences_with_a_warning() {
    let mut loader = MemoryLoader::new();
    loader.insert(
        "/main.idl",
        "interface I {\n  sequence<long> get(in sequence<octet> key);\n  attribute sequence<string> names;\n};\n",
    );
    let spec = Frontend::new()
        .lenient(true)
        .loader(loader)
        .parse_files(&["/main.idl"])
        .expect("accepted when lenient");
    let warnings: Vec<String> = spec.warnings.iter().map(|d| d.one_line()).collect();
    assert_eq!(
        warnings,
        [
            "/main.idl:2:3: warning: the result of operation 'get' has an anonymous sequence type; CORBA IDL allows only a named type here",
            "/main.idl:2:25: warning: parameter 'key' has an anonymous sequence type; CORBA IDL allows only a named type here",
            "/main.idl:3:13: warning: attribute 'names' has an anonymous sequence type; CORBA IDL allows only a named type here",
        ]
    );
    assert!(spec
        .warnings
        .iter()
        .all(|d| d.severity == Severity::Warning));
}
