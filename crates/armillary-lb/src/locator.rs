//! [`LocatorImpl`]: the servant of `LoadBalancing::Locator`, where
//! replicas register and report their load and operators list the
//! groups. It keeps nothing itself: the groups are the shared
//! [`Groups`](crate::groups::Groups) table, and a group's reference is
//! made by the groups' POA from the group's name.

use std::sync::Arc;

use armillary::poa::{Poa, PoaError};
use armillary::{ObjectRef, SystemException};

use crate::groups::Missing;
use crate::load_balancing::locator::{
    AddReplicaError, CreateGroupError, GroupReferenceError, RemoveReplicaError, ReportLoadError,
};
use crate::load_balancing::{
    GroupInfo, GroupInfoList, GroupName, InterfaceMismatch, InvalidName, InvalidReplica,
    LocatorServant, ReplicaId, ReplicaInfo, UnknownGroup, UnknownReplica,
};
use crate::{Shared, MAX_GROUP_NAME};

/// Serves `LoadBalancing::Locator` over the locator's groups.
pub(crate) struct LocatorImpl {
    pub(crate) shared: Arc<Shared>,
    /// The POA whose references are the groups' (object id: the name).
    pub(crate) groups_poa: Poa,
}

impl LocatorImpl {
    /// The reference of group `name` for replicas of `repository_id`.
    pub(crate) fn reference(&self, name: &str, repository_id: &str) -> Result<ObjectRef, PoaError> {
        group_reference(&self.groups_poa, name, repository_id)
    }

    /// Why a reference cannot be a replica, if it cannot.
    fn refusal(&self, replica: &ObjectRef) -> Option<&'static str> {
        if replica.is_nil() {
            return Some("the reference is nil");
        }
        let profiles = replica.ior().iiop_profiles();
        if profiles.is_empty() {
            return Some("the reference has no IIOP profile");
        }
        // A group of this locator: an object key of its groups' POA, at
        // an address where its group references point.
        if self.groups_poa.reference_to_id(replica).is_ok() {
            let ours = self.reference("", "").ok()?.ior().iiop_profiles();
            let here = profiles
                .iter()
                .any(|p| ours.iter().any(|o| o.host == p.host && o.port == p.port));
            if here {
                return Some("the reference is a group of this locator");
            }
        }
        None
    }
}

/// The reference of group `name` on `groups_poa`.
pub(crate) fn group_reference(
    groups_poa: &Poa,
    name: &str,
    repository_id: &str,
) -> Result<ObjectRef, PoaError> {
    groups_poa.create_reference_with_id(name, repository_id)
}

/// Why `name` cannot name a group, if it cannot.
fn invalid_name(name: &str) -> Option<InvalidName> {
    let reason = if name.is_empty() {
        "the name is empty".to_owned()
    } else if name.len() > MAX_GROUP_NAME {
        format!("the name is longer than {MAX_GROUP_NAME} bytes")
    } else {
        return None;
    };
    Some(InvalidName {
        group: name.to_owned(),
        reason,
    })
}

fn unknown_group(group: &str) -> UnknownGroup {
    UnknownGroup {
        group: group.to_owned(),
    }
}

fn unknown_replica(group: &str, replica: &str) -> UnknownReplica {
    UnknownReplica {
        group: group.to_owned(),
        replica: replica.to_owned(),
    }
}

impl LocatorServant for LocatorImpl {
    fn policy(&self) -> Result<String, SystemException> {
        Ok(self.shared.policy.name().to_owned())
    }

    fn create_group(
        &self,
        group: GroupName,
        repository_id: String,
    ) -> Result<ObjectRef, CreateGroupError> {
        if let Some(e) = invalid_name(&group) {
            return Err(CreateGroupError::InvalidName(e));
        }
        let existing = self.shared.groups.create(&group, &repository_id);
        if existing != repository_id && !existing.is_empty() && !repository_id.is_empty() {
            return Err(CreateGroupError::InterfaceMismatch(InterfaceMismatch {
                group,
                group_interface: existing,
                replica_interface: repository_id,
            }));
        }
        Ok(self.reference(&group, &existing)?)
    }

    fn group_reference(&self, group: GroupName) -> Result<ObjectRef, GroupReferenceError> {
        let repository_id = self
            .shared
            .groups
            .repository_id(&group)
            .ok_or_else(|| GroupReferenceError::UnknownGroup(unknown_group(&group)))?;
        Ok(self.reference(&group, &repository_id)?)
    }

    fn add_replica(
        &self,
        group: GroupName,
        replica: ObjectRef,
    ) -> Result<ReplicaId, AddReplicaError> {
        if let Some(e) = invalid_name(&group) {
            return Err(AddReplicaError::InvalidName(e));
        }
        if let Some(reason) = self.refusal(&replica) {
            return Err(AddReplicaError::InvalidReplica(InvalidReplica {
                reason: reason.to_owned(),
            }));
        }
        let replica_interface = replica.type_id().to_owned();
        if let Some(group_interface) = self.shared.groups.repository_id(&group) {
            // A replica of a derived interface is one of the group's too:
            // its own server says so (asked without the table's lock).
            if !group_interface.is_empty()
                && replica_interface != group_interface
                && !replica.is_a(&group_interface)?
            {
                return Err(AddReplicaError::InterfaceMismatch(InterfaceMismatch {
                    group,
                    group_interface,
                    replica_interface,
                }));
            }
        }
        Ok(self.shared.groups.add(&group, &replica_interface, &replica))
    }

    fn remove_replica(
        &self,
        group: GroupName,
        replica: ReplicaId,
    ) -> Result<(), RemoveReplicaError> {
        self.shared
            .groups
            .remove(&group, &replica)
            .map_err(|missing| match missing {
                Missing::Group => RemoveReplicaError::UnknownGroup(unknown_group(&group)),
                Missing::Replica => {
                    RemoveReplicaError::UnknownReplica(unknown_replica(&group, &replica))
                }
            })
    }

    fn report_load(
        &self,
        group: GroupName,
        replica: ReplicaId,
        load: f64,
    ) -> Result<(), ReportLoadError> {
        self.shared
            .groups
            .report_load(&group, &replica, load)
            .map_err(|missing| match missing {
                Missing::Group => ReportLoadError::UnknownGroup(unknown_group(&group)),
                Missing::Replica => {
                    ReportLoadError::UnknownReplica(unknown_replica(&group, &replica))
                }
            })
    }

    fn list_groups(&self) -> Result<GroupInfoList, SystemException> {
        self.shared
            .groups
            .snapshot()
            .into_iter()
            .map(|g| {
                Ok(GroupInfo {
                    group_reference: self.reference(&g.name, &g.repository_id)?,
                    name: g.name,
                    repository_id: g.repository_id,
                    replicas: g
                        .replicas
                        .into_iter()
                        .map(|r| ReplicaInfo {
                            id: r.id,
                            reference: r.reference,
                            load: r.load,
                            forwarded: r.forwarded,
                            reports: r.reports,
                        })
                        .collect(),
                })
            })
            .collect()
    }
}
