//! The locator's liveness probes: every probe period, one thread asks
//! each replica `_non_existent` (bounded by the probe timeout), one
//! replica after the other, and drops the replicas that are gone or that
//! could not be reached `failures_to_drop` times in a row. The table's
//! lock is not held during a probe.
//!
//! What a probe's answer means is decided in one place,
//! [`outcome_of`]: an answer is life, whatever it says (a server that
//! does not know `_non_existent` answers BAD_OPERATION and is alive);
//! "the object does not exist" is death; a failure to reach the server
//! (TRANSIENT, COMM_FAILURE, TIMEOUT, an unusable reference, a POA that
//! no longer serves: OBJ_ADAPTER, or BAD_INV_ORDER from a shut-down ORB
//! carrying the reference) is a missed probe.

use std::sync::{Arc, Weak};

use armillary::{minor, SystemException, SystemExceptionKind};

use crate::groups::ProbeOutcome;
use crate::periodic::Periodic;
use crate::{LocatorConfig, Shared};

/// Starts probing the replicas of `shared` as `config` says, until the
/// returned handle is dropped (or the locator's state is gone).
pub(crate) fn start(shared: &Arc<Shared>, config: &LocatorConfig) -> std::io::Result<Periodic> {
    let shared: Weak<Shared> = Arc::downgrade(shared);
    let (timeout, failures_to_drop) = (config.probe_timeout, config.failures_to_drop);
    Periodic::spawn("armillary-lb-probe", config.probe_period, move || {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        for (group, id, replica) in shared.groups.probe_targets() {
            let answer = replica.with_call_timeout(timeout).non_existent();
            shared
                .groups
                .record_probe(&group, &id, outcome_of(answer), failures_to_drop);
        }
    })
}

/// What a `_non_existent` probe's result says of the replica.
pub(crate) fn outcome_of(answer: Result<bool, SystemException>) -> ProbeOutcome {
    match answer {
        Ok(false) => ProbeOutcome::Alive,
        // `non_existent` turns OBJECT_NOT_EXIST into `Ok(true)`.
        Ok(true) => ProbeOutcome::Gone,
        Err(e) => match e.kind() {
            SystemExceptionKind::Transient
            | SystemExceptionKind::CommFailure
            | SystemExceptionKind::Timeout
            | SystemExceptionKind::InvObjref
            | SystemExceptionKind::ObjAdapter => ProbeOutcome::Unreachable,
            // The ORB that carries the reference has shut down (a replica
            // registered from an ORB of this process, by a collocated
            // call, keeps that ORB).
            SystemExceptionKind::BadInvOrder if e.minor() == minor::ORB_SHUT_DOWN => {
                ProbeOutcome::Unreachable
            }
            _ => ProbeOutcome::Alive,
        },
    }
}

#[cfg(test)]
mod tests {
    use armillary::CompletionStatus::No;

    use super::*;

    #[test]
    fn answers_are_life_and_failures_to_reach_are_missed_probes() {
        assert_eq!(outcome_of(Ok(false)), ProbeOutcome::Alive);
        assert_eq!(outcome_of(Ok(true)), ProbeOutcome::Gone);
        for missed in [
            SystemException::transient(2, No),
            SystemException::comm_failure(0, No),
            SystemException::timeout(0, No),
            SystemException::inv_objref(0, No),
            SystemException::bad_inv_order(minor::ORB_SHUT_DOWN, No),
        ] {
            assert_eq!(outcome_of(Err(missed)), ProbeOutcome::Unreachable);
        }
        for answered in [
            SystemException::bad_operation(0, No),
            SystemException::bad_inv_order(0, No),
        ] {
            assert_eq!(outcome_of(Err(answered)), ProbeOutcome::Alive);
        }
    }
}
