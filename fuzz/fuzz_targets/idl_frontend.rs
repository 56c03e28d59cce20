//! Fuzzes the IDL front end (preprocessor, parser, resolver) and the Rust
//! back end on what it accepts (see `armillary_idl::fuzzing::front_end`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    armillary_idl::fuzzing::front_end(data);
});
