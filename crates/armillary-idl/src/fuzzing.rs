//! The entry point of the IDL front end's fuzz target (`fuzz/`), shared
//! with the stable tests (`tests/robustness.rs`) so that both run exactly
//! the same code. No input may panic or overflow the stack: the answer is
//! a `Spec` or diagnostics with at least one error.

use crate::{codegen, Frontend, MemoryLoader};

/// Runs the whole front end over `data` (as text, bad UTF-8 replaced) as
/// the main file `fuzz.idl`, with two includable files (`helper.idl`, and
/// `self.idl`, which includes itself). A checked `Spec` is walked and
/// handed to the Rust back end; diagnostics are printed.
pub fn front_end(data: &[u8]) {
    front_end_str(&String::from_utf8_lossy(data));
}

/// [`front_end`] on text.
pub fn front_end_str(text: &str) {
    let mut loader = MemoryLoader::new();
    loader.insert("inc/helper.idl", "module Helper { typedef long T; };\n");
    loader.insert("inc/self.idl", "#include \"self.idl\"\n");
    let frontend = Frontend::new().include_dir("inc").loader(loader);
    match frontend.parse_str("fuzz.idl", text) {
        Ok(spec) => {
            for (id, def) in spec.definitions() {
                let _ = spec.contents(id);
                let _ = spec.ancestors(id);
                let _ = spec.all_operations(id);
                let _ = def.absolute_name();
            }
            let _ = codegen::generate(&spec, &codegen::Options::default());
        }
        Err(error) => {
            assert!(error.errors().next().is_some(), "rejected without an error");
            let _ = error.to_string();
        }
    }
}
