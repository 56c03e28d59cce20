//! [`Groups`]: the locator's table of object groups, their replicas and
//! what the locator knows of each (reported load, forwards, failed
//! probes), behind one lock that is never held during a remote call.
//!
//! It does no I/O: the servant (`locator.rs`), the servant locator that
//! forwards (`forwarder.rs`) and the liveness probes (`liveness.rs`) call
//! it with what they learnt and act on what it answers.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use armillary::ObjectRef;
use parking_lot::Mutex;

use crate::policy::{BalancingPolicy, Candidate};

/// The locator's groups.
#[derive(Debug)]
pub(crate) struct Groups {
    table: Mutex<Table>,
    /// How long a forward counts in a replica's recent forwards: they
    /// decay by a factor e per this much time.
    forward_memory: Duration,
}

#[derive(Debug, Default)]
struct Table {
    groups: BTreeMap<String, Group>,
    /// The number of the next replica to register, in any group.
    next_replica: u64,
}

#[derive(Debug)]
struct Group {
    repository_id: String,
    replicas: Vec<Replica>,
    /// Choices made for the group so far (a policy's `turn`).
    turns: u64,
    /// When the replicas' recent forwards were last decayed.
    decayed_at: Instant,
}

impl Group {
    fn new(repository_id: &str) -> Group {
        Group {
            repository_id: repository_id.to_owned(),
            replicas: Vec::new(),
            turns: 0,
            decayed_at: Instant::now(),
        }
    }
}

/// One replica of a group.
#[derive(Debug, Clone)]
pub(crate) struct Replica {
    pub(crate) id: String,
    pub(crate) reference: ObjectRef,
    pub(crate) load: f64,
    /// Clients forwarded to it lately, each counting for less as time
    /// passes (see [`Groups::choose`]).
    pub(crate) recent_forwards: f64,
    pub(crate) forwarded: u64,
    pub(crate) reports: u64,
    /// Probes in a row that could not reach it.
    failed_probes: u32,
}

/// One group as [`Groups::snapshot`] copies it.
#[derive(Debug, Clone)]
pub(crate) struct GroupSnapshot {
    pub(crate) name: String,
    pub(crate) repository_id: String,
    pub(crate) replicas: Vec<Replica>,
}

/// Why a replica of a group could not be found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missing {
    /// There is no group of that name.
    Group,
    /// The group has no replica of that id.
    Replica,
}

/// Why no replica could be chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoChoice {
    /// There is no group of that name.
    UnknownGroup,
    /// The group has no replica now.
    Empty,
}

/// What one liveness probe of a replica found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProbeOutcome {
    /// It answered.
    Alive,
    /// Its server says the object no longer exists: dropped at once.
    Gone,
    /// It could not be reached (refused, broken, timed out): dropped
    /// after `failures_to_drop` such probes in a row.
    Unreachable,
}

impl Groups {
    /// No groups yet; forwards count in the least-loaded estimate for
    /// about `forward_memory`.
    pub(crate) fn new(forward_memory: Duration) -> Groups {
        Groups {
            table: Mutex::new(Table::default()),
            forward_memory,
        }
    }

    /// The interface of group `name`, if it exists.
    pub(crate) fn repository_id(&self, name: &str) -> Option<String> {
        let table = self.table.lock();
        table.groups.get(name).map(|g| g.repository_id.clone())
    }

    /// Creates group `name` for replicas of `repository_id` unless it
    /// exists; returns the interface the group has (the one given, or
    /// the existing group's).
    pub(crate) fn create(&self, name: &str, repository_id: &str) -> String {
        let mut table = self.table.lock();
        table
            .groups
            .entry(name.to_owned())
            .or_insert_with(|| Group::new(repository_id))
            .repository_id
            .clone()
    }

    /// Adds `reference` to group `name` (created for `repository_id` if
    /// it does not exist) and returns its replica id; a reference already
    /// in the group keeps its id.
    pub(crate) fn add(&self, name: &str, repository_id: &str, reference: &ObjectRef) -> String {
        let mut table = self.table.lock();
        let number = table.next_replica + 1;
        let group = table
            .groups
            .entry(name.to_owned())
            .or_insert_with(|| Group::new(repository_id));
        if let Some(known) = group
            .replicas
            .iter()
            .find(|r| r.reference.is_equivalent(reference))
        {
            return known.id.clone();
        }
        let id = number.to_string();
        group.replicas.push(Replica {
            id: id.clone(),
            reference: reference.clone(),
            load: 0.0,
            recent_forwards: 0.0,
            forwarded: 0,
            reports: 0,
            failed_probes: 0,
        });
        table.next_replica = number;
        id
    }

    /// Takes replica `id` out of group `name`.
    pub(crate) fn remove(&self, name: &str, id: &str) -> Result<(), Missing> {
        let mut table = self.table.lock();
        let group = table.groups.get_mut(name).ok_or(Missing::Group)?;
        let at = group
            .replicas
            .iter()
            .position(|r| r.id == id)
            .ok_or(Missing::Replica)?;
        group.replicas.remove(at);
        Ok(())
    }

    /// Records the load replica `id` of group `name` reports.
    pub(crate) fn report_load(&self, name: &str, id: &str, load: f64) -> Result<(), Missing> {
        let mut table = self.table.lock();
        let group = table.groups.get_mut(name).ok_or(Missing::Group)?;
        let replica = group
            .replicas
            .iter_mut()
            .find(|r| r.id == id)
            .ok_or(Missing::Replica)?;
        replica.load = load;
        replica.reports += 1;
        Ok(())
    }

    /// The replica of group `name` that `policy` picks for the next
    /// client, counted as forwarded to. Each replica's recent forwards
    /// decay first: a forward counts 1 when made and e⁻ᵗᐟᵐ after t, m
    /// being the forward memory. They are not reset by a load report:
    /// replicas report at different moments, and a count that dropped to
    /// 0 at one replica's report while the others' still held their
    /// forwards would send every client to it until their next reports.
    pub(crate) fn choose(
        &self,
        name: &str,
        policy: &dyn BalancingPolicy,
    ) -> Result<ObjectRef, NoChoice> {
        let mut table = self.table.lock();
        let group = table.groups.get_mut(name).ok_or(NoChoice::UnknownGroup)?;
        if group.replicas.is_empty() {
            return Err(NoChoice::Empty);
        }
        let now = Instant::now();
        let elapsed = now.duration_since(group.decayed_at).as_secs_f64();
        let decay = if self.forward_memory.is_zero() {
            0.0
        } else {
            (-elapsed / self.forward_memory.as_secs_f64()).exp()
        };
        group.decayed_at = now;
        for r in &mut group.replicas {
            r.recent_forwards *= decay;
        }
        let candidates: Vec<Candidate> = group
            .replicas
            .iter()
            .map(|r| Candidate {
                load: r.load,
                recent_forwards: r.recent_forwards,
            })
            .collect();
        let at = policy
            .choose(&candidates, group.turns)
            .min(group.replicas.len() - 1);
        group.turns += 1;
        let replica = &mut group.replicas[at];
        replica.forwarded += 1;
        replica.recent_forwards += 1.0;
        Ok(replica.reference.clone())
    }

    /// Every group, in name order, with its replicas in registration
    /// order.
    pub(crate) fn snapshot(&self) -> Vec<GroupSnapshot> {
        let table = self.table.lock();
        table
            .groups
            .iter()
            .map(|(name, g)| GroupSnapshot {
                name: name.clone(),
                repository_id: g.repository_id.clone(),
                replicas: g.replicas.clone(),
            })
            .collect()
    }

    /// What the liveness probes call: (group, replica id, reference) of
    /// every replica.
    pub(crate) fn probe_targets(&self) -> Vec<(String, String, ObjectRef)> {
        let table = self.table.lock();
        table
            .groups
            .iter()
            .flat_map(|(name, g)| {
                g.replicas
                    .iter()
                    .map(move |r| (name.clone(), r.id.clone(), r.reference.clone()))
            })
            .collect()
    }

    /// Records what a probe of replica `id` of group `name` found, and
    /// drops the replica when it is gone or was unreachable
    /// `failures_to_drop` times in a row; true when it was dropped. A
    /// replica removed meanwhile is left alone.
    pub(crate) fn record_probe(
        &self,
        name: &str,
        id: &str,
        outcome: ProbeOutcome,
        failures_to_drop: u32,
    ) -> bool {
        let mut table = self.table.lock();
        let Some(group) = table.groups.get_mut(name) else {
            return false;
        };
        let Some(at) = group.replicas.iter().position(|r| r.id == id) else {
            return false;
        };
        let replica = &mut group.replicas[at];
        let drop = match outcome {
            ProbeOutcome::Alive => {
                replica.failed_probes = 0;
                false
            }
            ProbeOutcome::Gone => true,
            ProbeOutcome::Unreachable => {
                replica.failed_probes += 1;
                replica.failed_probes >= failures_to_drop.max(1)
            }
        };
        if drop {
            group.replicas.remove(at);
        }
        drop
    }
}

#[cfg(test)]
mod tests {
    use armillary::giop::ior::{Ior, ProfileBody};
    use armillary::giop::GiopVersion;

    use super::*;
    use crate::policy::{LeastLoaded, RoundRobin};

    /// A reference that no ORB serves, told apart by its port.
    fn reference(n: u16) -> ObjectRef {
        let body = ProfileBody::new(GiopVersion::V1_2, "127.0.0.1", 40000 + n, b"r".to_vec());
        ObjectRef::unbound(Ior::iiop("IDL:T:1.0", &body).unwrap())
    }

    fn three() -> (Groups, Vec<String>) {
        let groups = Groups::new(Duration::MAX);
        let ids = (1..=3)
            .map(|n| groups.add("g", "IDL:T:1.0", &reference(n)))
            .collect();
        (groups, ids)
    }

    fn chosen(groups: &Groups, policy: &dyn BalancingPolicy) -> ObjectRef {
        groups.choose("g", policy).unwrap()
    }

    #[test]
    fn replicas_get_ids_once_and_keep_them() {
        let (groups, ids) = three();
        assert_eq!(ids, ["1", "2", "3"]);
        assert_eq!(groups.add("g", "IDL:T:1.0", &reference(2)), "2");
        assert_eq!(groups.add("h", "IDL:U:1.0", &reference(9)), "4");
        assert_eq!(groups.repository_id("h").as_deref(), Some("IDL:U:1.0"));
        assert_eq!(groups.create("h", "IDL:other:1.0"), "IDL:U:1.0");
    }

    #[test]
    fn round_robin_counts_every_forward() {
        let (groups, _) = three();
        for _ in 0..6 {
            chosen(&groups, &RoundRobin);
        }
        let snapshot = groups.snapshot();
        let forwarded: Vec<u64> = snapshot[0].replicas.iter().map(|r| r.forwarded).collect();
        assert_eq!(forwarded, [2, 2, 2]);
    }

    #[test]
    fn a_report_sets_the_load_and_forwards_keep_counting() {
        let (groups, ids) = three();
        let policy = LeastLoaded {
            forward_weight: 1.0,
        };
        groups.report_load("g", &ids[0], 5.0).unwrap();
        groups.report_load("g", &ids[2], 2.0).unwrap();
        // Replica 2 (0 + 1 per forward) takes the first two.
        for _ in 0..2 {
            assert!(chosen(&groups, &policy).is_equivalent(&reference(2)));
        }
        groups.report_load("g", &ids[1], 9.0).unwrap();
        assert!(chosen(&groups, &policy).is_equivalent(&reference(3)));
        let replica = &groups.snapshot()[0].replicas[1];
        assert_eq!(
            (replica.load, replica.reports, replica.recent_forwards),
            (9.0, 1, 2.0)
        );
    }

    #[test]
    fn with_no_forward_memory_the_reports_alone_decide() {
        let groups = Groups::new(Duration::ZERO);
        let ids: Vec<String> = (1..=2)
            .map(|n| groups.add("g", "IDL:T:1.0", &reference(n)))
            .collect();
        groups.report_load("g", &ids[0], 1.0).unwrap();
        let policy = LeastLoaded {
            forward_weight: 1.0,
        };
        for _ in 0..5 {
            assert!(chosen(&groups, &policy).is_equivalent(&reference(2)));
        }
    }

    #[test]
    fn unknown_groups_and_replicas_are_told_apart() {
        let (groups, ids) = three();
        assert_eq!(
            groups.report_load("nope", &ids[0], 1.0),
            Err(Missing::Group)
        );
        assert_eq!(groups.report_load("g", "77", 1.0), Err(Missing::Replica));
        assert_eq!(groups.remove("g", "77"), Err(Missing::Replica));
        assert_eq!(
            groups.choose("nope", &RoundRobin).unwrap_err(),
            NoChoice::UnknownGroup
        );
        for id in &ids {
            groups.remove("g", id).unwrap();
        }
        assert_eq!(
            groups.choose("g", &RoundRobin).unwrap_err(),
            NoChoice::Empty
        );
    }

    #[test]
    fn probes_drop_a_gone_replica_at_once_and_an_unreachable_one_after_enough_failures() {
        let (groups, ids) = three();
        assert!(groups.record_probe("g", &ids[0], ProbeOutcome::Gone, 3));
        assert!(!groups.record_probe("g", &ids[1], ProbeOutcome::Unreachable, 2));
        // An answer in between starts the count again.
        assert!(!groups.record_probe("g", &ids[1], ProbeOutcome::Alive, 2));
        assert!(!groups.record_probe("g", &ids[1], ProbeOutcome::Unreachable, 2));
        assert!(groups.record_probe("g", &ids[1], ProbeOutcome::Unreachable, 2));
        // Already gone: nothing to do.
        assert!(!groups.record_probe("g", &ids[1], ProbeOutcome::Gone, 2));
        let left: Vec<String> = groups.snapshot()[0]
            .replicas
            .iter()
            .map(|r| r.id.clone())
            .collect();
        assert_eq!(left, [ids[2].clone()]);
        assert_eq!(groups.probe_targets().len(), 1);
    }
}
