//! [`RoundRobin`]: each replica in turn, in the order they registered.

use super::{BalancingPolicy, Candidate};

/// Forwards the group's clients to its replicas in turn: the n-th choice
/// goes to replica n modulo their number. Loads are not looked at.
///
/// ```
/// use armillary_lb::policy::{BalancingPolicy, Candidate, RoundRobin};
/// let three = [Candidate { load: 0.0, recent_forwards: 0.0 }; 3];
/// let picks: Vec<usize> = (0..6).map(|turn| RoundRobin.choose(&three, turn)).collect();
/// assert_eq!(picks, [0, 1, 2, 0, 1, 2]);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobin;

impl BalancingPolicy for RoundRobin {
    fn name(&self) -> &'static str {
        "round-robin"
    }

    fn choose(&self, candidates: &[Candidate], turn: u64) -> usize {
        (turn % candidates.len().max(1) as u64) as usize
    }
}
