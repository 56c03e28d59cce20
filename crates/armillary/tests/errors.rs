//! The error types of the public API cross it with `?`: `OrbError` and
//! `PoaError` convert into the system exceptions their documentation lists,
//! and a shut-down ORB says so with `OrbError::Destroyed`.

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::poa::PoaError;
use armillary::{minor, CompletionStatus, Orb, OrbError, SystemException, SystemExceptionKind};

fn orb() -> Orb {
    Orb::with_config(OrbConfig::new().concurrency(ConcurrencyModel::ApplicationThreads)).unwrap()
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
    assert!(!orb.endpoints().unwrap().is_empty());
    orb.shutdown(true);
    // The server is not started again.
    let error = orb
        .endpoints()
        .expect_err("a shut-down ORB has no endpoints");
    assert!(matches!(error, OrbError::Destroyed), "{error:?}");
    assert!(matches!(orb.tls_endpoints(), Err(OrbError::Destroyed)));
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
    Ok(orb.endpoints()?.len())
}

#[test]
fn question_mark_crosses_into_system_exception() {
    let orb = orb();
    assert!(operation(&orb, None).unwrap() >= 1);
    let e = operation(&orb, Some(PoaError::AdapterInactive)).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjAdapter);
    assert_eq!(e.minor(), minor::ADAPTER_INACTIVE);
    orb.shutdown(true);
    let e = operation(&orb, None).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadInvOrder);
    assert_eq!(e.minor(), minor::ORB_SHUT_DOWN);
}
