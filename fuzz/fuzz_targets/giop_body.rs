//! Fuzzes the body of every GIOP message type, behind a header made to fit
//! (see `armillary_giop::fuzzing::giop_body`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    armillary_giop::fuzzing::giop_body(data);
});
