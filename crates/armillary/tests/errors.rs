//! The error types of the public API cross it with `?`: `OrbError` and
//! `PoaError` convert into the system exceptions their documentation lists,
//! and `OrbError::Destroyed` (the ORB is shut down) is BAD_INV_ORDER.

use armillary::poa::PoaError;
use armillary::WaitForCompletion;
use armillary::{minor, CompletionStatus, Orb, OrbError, SystemException, SystemExceptionKind};

fn orb() -> Orb {
    let (orb, _) = Orb::init([
        "-ORBConcurrency",
        "application",
        "-ORBListenEndpoints",
        "iiop://127.0.0.1:0",
    ])
    .unwrap();
    orb
}

#[test]
fn a_bad_option_becomes_initialize() {
    let error = match Orb::init(["-ORBClientCallTimeout", "soon"]) {
        Err(e) => e,
        Ok(_) => panic!("a non-numeric timeout is refused"),
    };
    assert!(matches!(error, OrbError::Option(_)), "{error:?}");
    let e = SystemException::from(error);
    assert_eq!(e.kind(), SystemExceptionKind::Initialize);
    assert_eq!(e.minor(), 0);
    assert_eq!(e.completed(), CompletionStatus::No);
}

#[test]
fn a_shut_down_orb_reports_destroyed_and_bad_inv_order() {
    let orb = orb();
    assert!(!orb.endpoints().is_empty());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    // The server is closed and not started again.
    assert!(orb.endpoints().is_empty());
    let error = OrbError::Destroyed;
    assert_eq!(error.to_string(), "the ORB has been shut down");
    let e = SystemException::from(error);
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
    assert_eq!(e.minor(), minor::ORB_SHUT_DOWN);
    assert_eq!(e.completed(), CompletionStatus::No);
    // The same exception the ORB's own operations raise once shut down.
    assert_eq!(orb.work_pending().unwrap_err(), e);
}

/// `?` turns both error types into the exception an operation returns.
fn operation(orb: &Orb, poa_error: Option<PoaError>) -> Result<usize, SystemException> {
    if let Some(e) = poa_error {
        Err(e)?;
    }
    if orb.work_pending().is_err() {
        Err(OrbError::Destroyed)?;
    }
    Ok(orb.endpoints().len())
}

#[test]
fn question_mark_crosses_into_system_exception() {
    let orb = orb();
    assert!(operation(&orb, None).unwrap() >= 1);
    let e = operation(&orb, Some(PoaError::AdapterInactive)).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjAdapter);
    assert_eq!(e.minor(), minor::ADAPTER_INACTIVE);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    let e = operation(&orb, None).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
    assert_eq!(e.minor(), minor::ORB_SHUT_DOWN);
}
