//! Fuzzes whole GIOP messages: every header field, service context, target
//! address and body (see `armillary_giop::fuzzing::giop_message`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    armillary_giop::fuzzing::giop_message(data);
});
