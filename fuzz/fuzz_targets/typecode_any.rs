//! Fuzzes TypeCode and Any decoding (see
//! `armillary_giop::fuzzing::typecode_any`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    armillary_giop::fuzzing::typecode_any(data);
});
