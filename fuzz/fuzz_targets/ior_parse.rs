//! Fuzzes the IOR, corbaloc and corbaname parsers and the IIOP profile
//! decoder (see `armillary_giop::fuzzing::ior_parse`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    armillary_giop::fuzzing::ior_parse(data);
});
