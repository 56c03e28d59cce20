//! What `Builder`'s code generation options put into the output: the
//! attributes of `type_attribute` / `field_attribute` (matched on IDL
//! scoped names), the derives each type gets, and the lint allowances on
//! each top-level item. The code itself is compiled and run by
//! `crates/armillary-codegen-tests` (`tests/traits.rs`).

use std::path::PathBuf;

use armillary_idl::{BuildError, Builder, Frontend};

const IDL: &str = "\
module Stock {
    struct Quote { string symbol; long price; };
    struct Tick { double value; };
    enum Side { buy, sell };
    union Order switch (Side) { case buy: long amount; case sell: string reason; };
};
struct Loose { long a; };
";

fn idl_file(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "armillary-codegen-options-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("stock.idl");
    std::fs::write(&file, IDL).unwrap();
    file
}

fn generate(name: &str, configure: impl FnOnce(Builder) -> Builder) -> String {
    let builder = Builder::new()
        .file(idl_file(name))
        .rustfmt(false)
        .quiet(true);
    configure(builder).generate().unwrap().0
}

/// The item declared on the line holding `start`, from its `IDL: …` doc
/// line to its closing brace.
fn item<'a>(code: &'a str, start: &str) -> &'a str {
    let at = code
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in\n{code}"));
    let line_start = code[..at].rfind('\n').map_or(0, |i| i + 1);
    let indent = &code[line_start..at];
    let from = code[..at].rfind("/// IDL: `").unwrap_or(line_start);
    let close = format!("\n{indent}}}");
    let to = code[at..]
        .find(&close)
        .map_or(code.len(), |i| at + i + close.len());
    &code[from..to]
}

#[test]
fn type_and_field_attributes_follow_scoped_names() {
    let code = generate("attrs", |b| {
        b.type_attribute("Stock::Quote", "#[derive(PartialOrd)]")
            .type_attribute("Stock", "#[doc(alias = \"in_stock\")]")
            .type_attribute(".", "#[doc(alias = \"everywhere\")]")
            .field_attribute("Stock::Quote::price", "#[doc = \" In cents.\"]")
            .field_attribute("::Stock::Order", "#[doc(alias = \"member\")]")
            .field_attribute("Stock::Side::sell", "#[doc(alias = \"ask\")]")
    });
    let quote = item(&code, "pub struct Quote");
    assert!(quote.contains("#[derive(PartialOrd)]"), "{quote}");
    assert!(quote.contains("in_stock") && quote.contains("everywhere"));
    let price_doc = quote.find("In cents.").expect("field attribute");
    let price = quote.find("pub price").unwrap();
    let symbol = quote.find("pub symbol").unwrap();
    assert!(symbol < price_doc && price_doc < price, "on `price` only");

    let tick = item(&code, "pub struct Tick");
    assert!(!tick.contains("PartialOrd"), "{tick}");
    assert!(tick.contains("in_stock"));

    let side = item(&code, "pub enum Side");
    assert!(side.contains("#[doc(alias = \"ask\")]"));
    let order = item(&code, "pub enum Order");
    assert_eq!(order.matches("alias = \"member\"").count(), 2, "{order}");

    let loose = item(&code, "pub struct Loose");
    assert!(loose.contains("everywhere") && !loose.contains("in_stock"));
}

#[test]
fn derives_follow_the_members() {
    let code = generate("derives", |b| b);
    assert!(item(&code, "pub struct Quote")
        .contains("#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]"));
    // A double allows neither Eq nor Hash.
    assert!(item(&code, "pub struct Tick").contains("#[derive(Debug, Clone, PartialEq, Default)]"));
    let order = item(&code, "pub enum Order");
    assert!(order.contains("#[derive(Debug, Clone, PartialEq, Eq, Hash)]"));
    assert!(code.contains("impl ::core::default::Default for Order"));
}

#[test]
fn every_top_level_item_allows_the_lints_its_idl_decides() {
    let code = generate("lints", |b| b);
    for start in [
        "pub mod stock",
        "pub struct Loose",
        "impl ::armillary::IdlType for Loose",
    ] {
        let at = code.find(start).unwrap();
        let before = &code[..at];
        let attribute = before.rfind("#[allow(").expect("an allow before the item");
        assert!(
            before[attribute..].contains("clippy::doc_markdown"),
            "{start}: {}",
            &before[attribute..]
        );
    }
    assert!(
        !code.contains("result_large_err"),
        "not for small exceptions"
    );
}

#[test]
fn an_attribute_that_does_not_parse_is_an_error() {
    let err = Builder::new()
        .file(idl_file("bad"))
        .type_attribute("Stock::Quote", "derive(Hash)")
        .generate()
        .unwrap_err();
    match &err {
        BuildError::InvalidAttribute {
            path, attribute, ..
        } => {
            assert_eq!(path, "Stock::Quote");
            assert_eq!(attribute, "derive(Hash)");
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("derive(Hash)"));
}

#[test]
fn parse_errors_are_std_errors_holding_the_diagnostics() {
    let error = Frontend::new()
        .parse_str("bad.idl", "struct S { long x; }\nstruct S { long y; };")
        .unwrap_err();
    let source: &dyn std::error::Error = &error;
    assert!(source.source().is_none());
    assert!(error.errors().count() >= 1);
    assert_eq!(
        error.to_string(),
        error
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    // A build error shows the same text and is the same error.
    let build = BuildError::Diagnostics(error.clone());
    assert_eq!(build.to_string(), error.to_string());
}

#[test]
fn amh_paths_select_interfaces_or_single_calls_and_unknown_paths_warn() {
    const AMH_IDL: &str = "\
module Stock {
    exception Bad {};
    interface Quoter {
        long get_quote(in string name) raises (Bad);
        string describe(in string name);
        oneway void ping();
        attribute long level;
    };
    local interface Helper { void help(); };
};
";
    let dir = std::env::temp_dir().join(format!("armillary-codegen-amh-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("amh.idl");
    std::fs::write(&file, AMH_IDL).unwrap();
    let generate = |paths: &[&str]| {
        let mut builder = Builder::new().file(&file).rustfmt(false).quiet(true);
        for path in paths {
            builder = builder.amh(*path);
        }
        builder.generate().unwrap()
    };
    let (plain, warnings) = generate(&[]);
    assert!(!plain.contains("Amh") && !plain.contains("Responder"));
    assert!(warnings.is_empty());

    // The whole interface: every two-way call has a responder; the oneway
    // keeps its synchronous form.
    let (whole, warnings) = generate(&["Stock::Quoter"]);
    assert!(warnings.is_empty(), "{warnings:?}");
    for item in [
        "pub trait QuoterAmhServant",
        "pub trait QuoterAsyncServant",
        "pub struct QuoterAsyncAdapter<T>",
        "pub struct QuoterAmhSkeleton<T>",
        "pub struct QuoterGetQuoteResponder",
        "pub struct QuoterDescribeResponder",
        "pub struct QuoterGetLevelResponder",
        "pub struct QuoterSetLevelResponder",
        "fn ping(&self) -> ::core::result::Result<(), ::armillary::SystemException>;",
    ] {
        assert!(whole.contains(item), "{item} missing");
    }
    assert!(!whole.contains("QuoterPingResponder"));

    // One operation: the others keep their synchronous signatures.
    let (one, warnings) = generate(&["::Stock::Quoter::get_quote"]);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(one.contains("pub struct QuoterGetQuoteResponder"));
    assert!(!one.contains("QuoterDescribeResponder"));
    let amh_trait = &one[one.find("pub trait QuoterAmhServant").unwrap()..];
    let amh_trait = &amh_trait[..amh_trait.find("\n}").unwrap()];
    let describe = &amh_trait[amh_trait.find("fn describe(").unwrap()..];
    assert!(
        describe.starts_with("fn describe(&self, name: ::std::string::String)")
            || describe.starts_with("fn describe(\n"),
        "{describe}"
    );
    assert!(
        !describe.split(';').next().unwrap().contains("responder"),
        "{describe}"
    );

    // Paths that select nothing with an AMH form are warnings.
    let (_, warnings) = generate(&["Stock::Nope", "Stock::Helper", "Stock::Quoter::ping"]);
    let messages: Vec<&str> = warnings.iter().map(|w| w.message.as_str()).collect();
    assert_eq!(messages.len(), 3, "{messages:?}");
    assert!(
        messages[0].contains("`Stock::Nope` selects no interface"),
        "{messages:?}"
    );
}
