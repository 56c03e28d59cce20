//! The balancing policy family: which replica of a group the locator
//! forwards the next client to. One trait, [`BalancingPolicy`], one file
//! per policy (`round_robin.rs`, `least_loaded.rs`), chosen from a
//! [`PolicyKind`] in one place ([`PolicyKind::build`]).
//!
//! A policy sees the group's replicas as [`Candidate`]s, in the order
//! they registered, and the group's count of choices made so far (its
//! `turn`); it keeps no state of its own, so one policy serves every
//! group and a replica that leaves shifts nothing but the positions.

mod least_loaded;
mod round_robin;

use std::fmt;
use std::str::FromStr;

pub use least_loaded::LeastLoaded;
pub use round_robin::RoundRobin;

/// One replica as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// The load it last reported (0 until it reports).
    pub load: f64,
    /// Clients forwarded to it lately: each forward counts 1 when made,
    /// less and less as time passes (`LocatorConfig::forward_memory`).
    pub recent_forwards: f64,
}

/// Picks the replica the next client of a group is forwarded to.
pub trait BalancingPolicy: Send + Sync + fmt::Debug + 'static {
    /// The policy's name, as `--policy` and `Locator::policy` spell it.
    fn name(&self) -> &'static str;

    /// The index in `candidates` (never empty) of the replica to forward
    /// to; `turn` counts the choices made for the group before this one.
    fn choose(&self, candidates: &[Candidate], turn: u64) -> usize;
}

/// The policies there are, by name (`round-robin`, `least-loaded`).
///
/// ```
/// use armillary_lb::PolicyKind;
/// let kind: PolicyKind = "least-loaded".parse().unwrap();
/// assert_eq!(kind, PolicyKind::LeastLoaded);
/// assert_eq!(kind.to_string(), "least-loaded");
/// assert!("random".parse::<PolicyKind>().is_err());
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PolicyKind {
    /// Each replica in turn ([`RoundRobin`]; the default).
    #[default]
    RoundRobin,
    /// The replica with the least load ([`LeastLoaded`]).
    LeastLoaded,
}

impl PolicyKind {
    /// Every policy, in the order `--help` lists them.
    pub const ALL: [PolicyKind; 2] = [PolicyKind::RoundRobin, PolicyKind::LeastLoaded];

    /// The policy's name.
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyKind::RoundRobin => "round-robin",
            PolicyKind::LeastLoaded => "least-loaded",
        }
    }

    /// The policy itself: the one place a kind becomes a strategy.
    /// `forward_weight` is [`LeastLoaded::forward_weight`].
    pub fn build(self, forward_weight: f64) -> Box<dyn BalancingPolicy> {
        match self {
            PolicyKind::RoundRobin => Box::new(RoundRobin),
            PolicyKind::LeastLoaded => Box::new(LeastLoaded { forward_weight }),
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A policy name that is none of [`PolicyKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy {0:?}: expected round-robin or least-loaded")]
pub struct UnknownPolicy(pub String);

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;

    fn from_str(s: &str) -> Result<Self, UnknownPolicy> {
        PolicyKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == s)
            .ok_or_else(|| UnknownPolicy(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_builds_the_policy_of_its_name() {
        for kind in PolicyKind::ALL {
            assert_eq!(kind.build(1.0).name(), kind.as_str());
            assert_eq!(kind.as_str().parse::<PolicyKind>(), Ok(kind));
        }
        assert_eq!(
            "fastest".parse::<PolicyKind>().unwrap_err().to_string(),
            "unknown policy \"fastest\": expected round-robin or least-loaded"
        );
    }
}
