//! A large `sequence<octet>` mapped to `armillary::Bytes` crosses a call
//! without being copied into a message on either side: the client's
//! request shares the `&Bytes` argument, the server's reply shares the
//! servant's result (spliced into the message, written with one vectored
//! write), and each side reads the message it receives, from its first
//! byte, into a buffer it keeps from the last large one (its frame
//! decoder lends that buffer for the read that brings the message's
//! start). So in the steady state a 1 MiB echo allocates less than a
//! kilobyte or so, for the megabytes that it moves: counted by a
//! counting global allocator (`stats_alloc`) over client and server
//! together (one process, over IIOP), one call at a time, after calls to
//! warm up; deterministic, no timing.

use std::alloc::System;

use armillary::config::{Collocation, OrbConfig};
use armillary::{Bytes, Orb, WaitForCompletion};
use armillary_codegen_tests::bytes::octets::{Store, StoreAmhSkeleton};
use armillary_codegen_tests::PassThroughStore;
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const SIZE: usize = 1 << 20;
const CALLS: usize = 20;

#[test]
fn a_large_echo_allocates_a_fraction_of_what_it_moves() {
    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let client = Orb::with_config(OrbConfig::default().collocation(Collocation::None)).unwrap();
    server.root_poa().manager().activate().unwrap();
    let reference = StoreAmhSkeleton::new(PassThroughStore)
        .activate(&server.root_poa())
        .unwrap();
    let ior = server.object_to_string(reference.as_object());
    let store = Store::from_object(client.string_to_object(&ior).unwrap());

    let payload: Bytes = (0..SIZE).map(|i| (i * 7 + i / 251) as u8).collect();
    for _ in 0..5 {
        assert_eq!(store.echo(&payload).unwrap(), payload);
    }
    let region = Region::new(GLOBAL);
    for _ in 0..CALLS {
        let reply = store.echo(&payload).unwrap();
        assert!(reply == payload, "the echo came back changed");
    }
    let stats = region.change();
    let per_call = stats.bytes_allocated / CALLS;
    println!(
        "a {SIZE}-octet echo: {per_call} bytes allocated a call, client and server together \
         ({} allocations)",
        stats.allocations / CALLS
    );
    // Copying the value into each side's message would allocate 2 MiB a
    // call, and reading into fresh buffers 2 MiB more; a message's first
    // bytes read into a decoder's own buffer before they moved to the
    // large one, 64 KiB a side. What is left is the calls' own bookkeeping
    // (912 bytes in 6 allocations when this was written).
    assert!(
        per_call < 16 * 1024,
        "{per_call} bytes allocated a call for a {SIZE}-octet echo"
    );
    client.shutdown(WaitForCompletion::Yes).unwrap();
    server.shutdown(WaitForCompletion::Yes).unwrap();
}
