//! The Rust names the back end gives methods: what each stub, servant
//! trait and reply handler calls its operations and attributes, read off
//! the generated code (parsed with `syn`).

use std::collections::BTreeMap;

use armillary_idl::codegen::{generate, Options};
use armillary_idl::Frontend;

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
