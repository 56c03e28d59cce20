//! An unbound reference (what a reference decoded outside any ORB's
//! message is: from an `any` whose ORB is gone, say) binds on first use
//! to the newest running ORB of the process, and reaches an object served
//! in the process without IIOP, typed and marshalled.
//!
//! Alone in its test binary: which ORB is the newest is process-wide, and
//! the ORBs of other tests running beside it (started later, shut down
//! any time) would decide it; `tests/collocation.rs` covers every other
//! source of a reference.

use armillary::config::OrbConfig;
use armillary::{ObjectRef, Orb, WaitForCompletion};
use armillary_quoter::{generated, QuoterImpl};
use generated::stock::{Quoter, QuoterSkeleton};

#[test]
fn an_unbound_reference_is_collocated_without_iiop() {
    let orb = Orb::with_config(OrbConfig::new()).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let quoter = QuoterSkeleton::new(QuoterImpl::default())
        .activate(&poa)
        .unwrap();
    let unbound = ObjectRef::unbound(quoter.as_object().ior().clone());
    // Typed (the generated stub) and marshalled (an untyped call).
    assert_eq!(
        Quoter::from_object(unbound.clone())
            .get_quote("ACME")
            .unwrap(),
        4217
    );
    assert!(unbound.is_a(Quoter::REPOSITORY_ID).unwrap());
    let accepted = orb.server_stats().map_or(0, |s| s.accept_calls);
    assert_eq!(accepted, 0, "no connection was made");
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
