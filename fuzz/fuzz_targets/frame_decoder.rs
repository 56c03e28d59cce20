//! Fuzzes the frame decoder and GIOP message decoding
//! (see `armillary_giop::fuzzing::frame_decoder`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    armillary_giop::fuzzing::frame_decoder(data);
});
