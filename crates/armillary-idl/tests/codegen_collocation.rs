//! What the generated code hands the runtime for collocation: every
//! synchronous stub method calls `ObjectRef::invoke_typed` (oneways
//! `invoke_oneway_typed`) on the servant trait of the interface that
//! declares it, with a `local` closure that copies the arguments once; every
//! skeleton answers `Servant::local_interface` for its interface and each
//! ancestor, and AMH skeletons keep the default. The code itself is compiled
//! and run by `crates/armillary-codegen-tests` (`tests/collocation.rs`).

use std::path::PathBuf;
use std::sync::OnceLock;

use armillary_idl::Builder;

const IDL: &str = "\
module Colloc {
    exception Refused { string why; };
    struct Point { long x; long y; };
    typedef sequence<long> Longs;
    interface Base { long twice(in long n); };
    interface Left : Base { string shout(in string text); };
    interface Right : Base { attribute long level; };
    interface Diamond : Left, Right {
        long long mix(in string label, out Point where, inout Longs values,
                      inout long counter) raises (Refused);
        oneway void note(in string text);
    };
    interface Unrelated { void nothing(); };
    typedef sequence<long, 4> Few;
    interface Checked {
        any echo_any(in any value);
        void take_few(in Few values);
        oneway void tell(in string<8> short_text);
    };
};
";

/// The code generated from [`IDL`], with `Colloc::Unrelated` selected for
/// AMH too, [`normalized`] (prettyplease breaks lines as it likes).
fn generated() -> &'static str {
    static CODE: OnceLock<String> = OnceLock::new();
    CODE.get_or_init(generate)
}

fn generate() -> String {
    let dir = std::env::temp_dir().join(format!(
        "armillary-codegen-collocation-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file: PathBuf = dir.join("colloc.idl");
    std::fs::write(&file, IDL).unwrap();
    let (code, _) = Builder::new()
        .file(&file)
        .amh("Colloc::Unrelated")
        .rustfmt(false)
        .quiet(true)
        .generate()
        .unwrap();
    normalized(&code)
}

/// `code` without whitespace and without the commas before closing
/// brackets that prettyplease adds where it breaks a line.
fn normalized(code: &str) -> String {
    let compact: String = code.split_whitespace().collect();
    compact
        .replace(",>", ">")
        .replace(",)", ")")
        .replace(",}", "}")
        .replace(",]", "]")
}

/// The part of `code` from `start` to the next `end` after it.
fn between<'a>(code: &'a str, start: &str, end: &str) -> &'a str {
    let from = code
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in\n{code}"));
    let to = code[from..]
        .find(end)
        .map_or(code.len(), |i| from + i + end.len());
    &code[from..to]
}

#[test]
fn stub_methods_call_invoke_typed_on_the_declaring_servant_trait() {
    let code = generated();
    for (method, call) in [
        (
            "pubfntwice(",
            "invoke_typed::<dynBaseServant,_,_,_>(\"twice\"",
        ),
        (
            "pubfnshout(",
            "invoke_typed::<dynLeftServant,_,_,_>(\"shout\"",
        ),
        (
            "pubfnlevel(",
            "invoke_typed::<dynRightServant,_,_,_>(\"_get_level\"",
        ),
        (
            "pubfnset_level(",
            "invoke_typed::<dynRightServant,_,_,_>(\"_set_level\"",
        ),
        (
            "pubfnmix(",
            "invoke_typed::<dynDiamondServant,_,_,_>(\"mix\"",
        ),
        (
            "pubfnnote(",
            "invoke_oneway_typed::<dynDiamondServant,_>(\"note\"",
        ),
        // A reply handler's operations are plain operations too.
        (
            "pubfntwice(&self,ami_return_val",
            "invoke_typed::<dynAmiBaseHandlerServant,_,_,_>(\"twice\"",
        ),
        (
            "pubfnmix_excep(",
            "invoke_typed::<dynAmiDiamondHandlerServant,_,_,_>(\"mix_excep\"",
        ),
    ] {
        assert!(
            between(code, method, "&|").contains(call),
            "{method} does not call {call}: {}",
            between(code, method, "&|")
        );
    }
    // Operations whose types hold an `any` or a bounded string or
    // sequence go encoded (the bound is checked, references in the `any`
    // belong to the receiving ORB); nothing calls `invoke_plain` any more.
    for (method, call) in [
        ("pubfnecho_any(", ".invoke(\"echo_any\""),
        ("pubfntake_few(", ".invoke(\"take_few\""),
        ("pubfntell(", ".invoke_oneway(\"tell\""),
    ] {
        assert!(
            between(code, method, "&|").contains(call),
            "{method} does not call {call}"
        );
    }
    // (And the reply handler's `echo_any`, whose reply value is an `any`.)
    assert_eq!(code.matches(".invoke(").count(), 3);
    assert_eq!(code.matches(".invoke_oneway(").count(), 1);
    assert!(!code.contains(".invoke_plain("));
    // The derived stub delegates an inherited method to the base's stub.
    let diamond = between(code, "implDiamond{", "pubfnmix(");
    assert!(diamond.contains("Base::from_object(self.object.clone()).twice(n)"));
}

#[test]
fn the_local_closure_copies_the_arguments_once_and_returns_the_reply_values() {
    let code = generated();
    let mix = between(code, "pubfnmix(&self,label:&str", "&|w|");
    // The in string and the inouts are copied once, in the closure `local`;
    // the servant's return value and out are completed with the inouts,
    // in IDL order, as the reply decoder gives them.
    let expected = "||{\
        letlabel=::std::borrow::ToOwned::to_owned(label);\
        letmutvalues=values.clone();\
        letmutcounter=*counter;\
        move|servant:&dynDiamondServant|{\
        servant.mix(label,&mutvalues,&mutcounter)\
        .map(|(result,r#where)|(result,r#where,values,counter))\
        }}";
    assert!(mix.contains(expected), "{mix}");
    // A `Copy` argument is moved in as it is.
    let twice = between(code, "pubfntwice(&self,n:i32)", "&|w|");
    assert!(
        twice.contains("||move|servant:&dynBaseServant|servant.twice(n)"),
        "{twice}"
    );
    // A oneway drops what the servant returns.
    let note = between(code, "pubfnnote(", "&|w|");
    assert!(
        note.contains("move|servant:&dynDiamondServant|{let_=servant.note(text);}"),
        "{note}"
    );
}

#[test]
fn skeletons_answer_local_interface_for_each_ancestor() {
    let code = generated();
    let servant = |name: &str| format!("::core::any::TypeId::of::<::std::sync::Arc<dyn{name}>>()");
    let diamond = between(
        code,
        "impl<T:DiamondServant>::armillary::ServantforDiamondSkeleton<T>{",
        "fndispatch(",
    );
    let local = between(
        diamond,
        "fnlocal_interface(",
        "::core::option::Option::None}",
    );
    for name in [
        "DiamondServant",
        "LeftServant",
        "RightServant",
        "BaseServant",
    ] {
        assert_eq!(
            local.matches(&servant(name)).count(),
            1,
            "{name} in {local}"
        );
    }
    assert!(!local.contains("Unrelated"), "{local}");
    // The views are made once, with the skeleton.
    let from_arc = between(
        between(code, "impl<T:DiamondServant>DiamondSkeleton<T>{", "}}"),
        "pubfnfrom_arc(",
        "servant}",
    );
    assert_eq!(
        from_arc
            .matches("::std::sync::Arc::<T>::clone(&servant)")
            .count(),
        4,
        "{from_arc}"
    );
    // A reply handler's skeleton answers for its ancestors' handlers.
    let handler = between(
        code,
        "impl<T:AmiDiamondHandlerServant>::armillary::ServantforAmiDiamondHandlerSkeleton<T>{",
        "fndispatch(",
    );
    for name in [
        "AmiDiamondHandlerServant",
        "AmiLeftHandlerServant",
        "AmiRightHandlerServant",
        "AmiBaseHandlerServant",
    ] {
        assert!(handler.contains(&servant(name)), "{name} in {handler}");
    }
    // An AMH skeleton keeps the default (`None`): only the synchronous
    // skeletons of the six interfaces and of their six reply handlers
    // answer.
    let amh = between(
        code,
        "impl<T:UnrelatedAmhServant>::armillary::ServantforUnrelatedAmhSkeleton<T>{",
        "fndispatch(",
    );
    assert!(!amh.contains("local_interface"), "{amh}");
    assert_eq!(code.matches("fnlocal_interface(").count(), 12);
}
