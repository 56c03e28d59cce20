//! The Rust names the back end gives methods: what each stub, servant
//! trait and reply handler calls its operations and attributes, read off
//! the generated code (parsed with `syn`). The code itself is compiled and
//! called by `crates/armillary-codegen-tests` (`tests/names.rs`).

use std::collections::BTreeMap;

use armillary_idl::codegen::{generate, Options};
use armillary_idl::Frontend;

/// Names that meet through inheritance (as
/// `crates/armillary-codegen-tests/idl/names.idl`).
const INHERITED: &str = "\
module Names {
    interface Maker {
        string my_factory();
        long getValue();
    };
    interface Keeper {
        attribute string MyFactory;
        attribute long value;
    };
    interface Both : Maker, Keeper {
        string own();
    };
    interface Derived : Both {
        string my_factory_2();
    };
    interface Other : Keeper, Maker {};
};
";

/// The methods of every inherent `impl` (`impl Both`) and every trait
/// (`trait BothServant`) in the code `idl` generates with `options`, in
/// order, by the last segment of the type's name.
fn methods_with(idl: &str, options: &Options) -> BTreeMap<String, Vec<String>> {
    let spec = Frontend::new()
        .parse_str("names.idl", idl)
        .unwrap_or_else(|e| panic!("{e}"));
    let code = generate(&spec, options).code;
    let file = syn::parse_file(&code).unwrap();
    let mut out = BTreeMap::new();
    collect(&file.items, &mut out);
    out
}

fn methods(idl: &str) -> BTreeMap<String, Vec<String>> {
    methods_with(idl, &Options::default())
}

fn collect(items: &[syn::Item], out: &mut BTreeMap<String, Vec<String>>) {
    for item in items {
        match item {
            syn::Item::Mod(module) => {
                if let Some((_, items)) = &module.content {
                    collect(items, out);
                }
            }
            syn::Item::Impl(block) if block.trait_.is_none() => {
                let syn::Type::Path(path) = &*block.self_ty else {
                    continue;
                };
                let name = path.path.segments.last().unwrap().ident.to_string();
                let entry = out.entry(format!("impl {name}")).or_default();
                for member in &block.items {
                    if let syn::ImplItem::Fn(f) = member {
                        entry.push(f.sig.ident.to_string());
                    }
                }
            }
            syn::Item::Trait(t) => {
                let entry = out.entry(format!("trait {}", t.ident)).or_default();
                for member in &t.items {
                    if let syn::TraitItem::Fn(f) = member {
                        entry.push(f.sig.ident.to_string());
                    }
                }
            }
            _ => {}
        }
    }
}

/// Asserts that `block` of `all` has each of `names`, and no name twice.
fn check(all: &BTreeMap<String, Vec<String>>, block: &str, names: &[&str]) {
    let methods = all
        .get(block)
        .unwrap_or_else(|| panic!("no {block} in {:?}", all.keys()));
    for name in names {
        assert!(
            methods.iter().any(|m| m == name),
            "{block} has no `{name}`: {methods:?}"
        );
    }
    let mut sorted = methods.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        methods.len(),
        "{block} repeats a name: {methods:?}"
    );
}

#[test]
fn no_stub_or_handler_has_a_method_twice() {
    let all = methods(INHERITED);
    for (block, methods) in &all {
        if block.starts_with("impl ") {
            check(&all, block, &[]);
        } else {
            assert!(!methods.is_empty() || block.ends_with("Servant"), "{block}");
        }
    }
}

#[test]
fn a_clash_across_bases_renames_the_later_base_s_method_on_the_derived_stub() {
    let all = methods(INHERITED);
    // Each base keeps its own names, on its stub and its trait.
    check(&all, "impl Maker", &["my_factory", "get_value"]);
    check(&all, "trait MakerServant", &["my_factory", "get_value"]);
    check(
        &all,
        "impl Keeper",
        &["my_factory", "set_my_factory", "value", "set_value"],
    );
    check(
        &all,
        "trait KeeperServant",
        &["my_factory", "set_my_factory"],
    );
    // The derived stub: Maker's first (the first base), then Keeper's.
    check(
        &all,
        "impl Both",
        &[
            "my_factory",
            "my_factory_2",
            "set_my_factory",
            "get_value",
            "value",
            "set_value",
            "own",
        ],
    );
    // The AMI names clash too (`getValue` and `value` give `get_value`).
    check(
        &all,
        "impl Both",
        &[
            "sendc_get_value",
            "sendc_get_value_2",
            "sendp_get_value",
            "sendp_get_value_2",
            "get_value_async",
            "get_value_async_2",
            "sendc_my_factory",
            "sendc_get_my_factory",
        ],
    );
    // And so do the reply handler's.
    check(
        &all,
        "impl AmiMakerHandler",
        &["get_value", "get_value_excep"],
    );
    check(
        &all,
        "impl AmiKeeperHandler",
        &["get_value", "get_value_excep"],
    );
    check(
        &all,
        "impl AmiBothHandler",
        &[
            "get_value",
            "get_value_2",
            "get_value_excep",
            "get_value_excep_2",
            "own",
        ],
    );
    // Bases in the other order: Keeper's keep the plain names.
    check(
        &all,
        "impl Other",
        &["my_factory", "my_factory_2", "get_value"],
    );
}

#[test]
fn a_derived_interface_names_inherited_methods_as_its_base_does() {
    let all = methods(INHERITED);
    let both = &all["impl Both"];
    let derived = &all["impl Derived"];
    // Derived's stub has Both's methods under Both's names, and its own:
    // `my_factory_2` is taken, so its own operation takes the next free
    // name.
    for method in both {
        assert!(derived.contains(method), "{method} not in {derived:?}");
    }
    check(
        &all,
        "impl Derived",
        &["my_factory", "my_factory_2", "my_factory_2_2"],
    );
    check(&all, "trait DerivedServant", &["my_factory_2_2"]);
}

#[test]
fn the_same_idl_gives_the_same_names_with_or_without_ami() {
    let with = methods(INHERITED);
    let without = methods_with(INHERITED, &Options::default().ami(false));
    assert_eq!(with, methods(INHERITED));
    for (block, names) in &without {
        let all = &with[block];
        assert!(
            names.iter().all(|n| all.contains(n)),
            "{block}: {names:?} not in {all:?}"
        );
    }
    assert_eq!(
        without["impl Both"]
            .iter()
            .filter(|n| n.starts_with("my_factory"))
            .count(),
        2
    );
}

#[test]
fn attribute_ami_methods_use_the_get_and_set_names() {
    let all = methods(
        "interface Q { long get(inout long n); attribute long a; readonly attribute string name; };",
    );
    check(
        &all,
        "impl Q",
        &[
            "sendc_get",
            "sendp_get",
            "get_async",
            "sendc_get_a",
            "sendp_get_a",
            "get_a_async",
            "sendc_set_a",
            "sendp_set_a",
            "set_a_async",
            "sendc_get_name",
            "sendp_get_name",
            "get_name_async",
        ],
    );
    let q = &all["impl Q"];
    for old in ["a_async", "name_async"] {
        assert!(!q.iter().any(|m| m == old), "{old} in {q:?}");
    }
}
