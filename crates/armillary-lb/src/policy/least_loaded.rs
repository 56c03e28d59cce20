//! [`LeastLoaded`]: the replica with the least load, as reported, plus
//! what was sent its way lately.

use super::{BalancingPolicy, Candidate};

/// Forwards each client to the replica with the least estimated load:
/// the load it last reported plus `forward_weight` times its recent
/// forwards (each forward counting 1 when made, and less as time passes:
/// [`Candidate::recent_forwards`]). Without that term every client
/// between two reports would go to the same replica (the one that was
/// least loaded when it last reported); with it, the locator's own
/// forwards count until the replicas' reports can say how busy they
/// made them. A weight of 1 suits loads counted in requests in progress
/// ([`RequestsInProgress`](crate::replica::RequestsInProgress)).
///
/// Ties are shared in turn: of the k replicas tied for the least load,
/// the choice goes to the (`turn` modulo k)-th.
///
/// ```
/// use armillary_lb::policy::{BalancingPolicy, Candidate, LeastLoaded};
/// let at = |load| Candidate { load, recent_forwards: 0.0 };
/// let policy = LeastLoaded { forward_weight: 1.0 };
/// assert_eq!(policy.choose(&[at(3.0), at(1.0), at(2.0)], 0), 1);
/// // A recent forward makes the second as loaded as the third:
/// // the two share the clients in turn.
/// let busy = Candidate { load: 1.0, recent_forwards: 1.0 };
/// assert_eq!(policy.choose(&[at(3.0), busy, at(2.0)], 0), 1);
/// assert_eq!(policy.choose(&[at(3.0), busy, at(2.0)], 1), 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LeastLoaded {
    /// The load one forward adds to a replica's estimate until its next
    /// report.
    pub forward_weight: f64,
}

impl LeastLoaded {
    fn estimate(&self, c: &Candidate) -> f64 {
        let load = if c.load.is_nan() {
            f64::INFINITY
        } else {
            c.load
        };
        load + self.forward_weight * c.recent_forwards
    }
}

impl BalancingPolicy for LeastLoaded {
    fn name(&self) -> &'static str {
        "least-loaded"
    }

    fn choose(&self, candidates: &[Candidate], turn: u64) -> usize {
        let estimates: Vec<f64> = candidates.iter().map(|c| self.estimate(c)).collect();
        let least = estimates.iter().copied().fold(f64::INFINITY, f64::min);
        let tied: Vec<usize> = (0..estimates.len())
            .filter(|&i| estimates[i] <= least)
            .collect();
        match tied.len() {
            0 => 0,
            k => tied[(turn % k as u64) as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(load: f64) -> Candidate {
        Candidate {
            load,
            recent_forwards: 0.0,
        }
    }

    #[test]
    fn the_least_loaded_wins_whatever_the_turn() {
        let policy = LeastLoaded {
            forward_weight: 0.0,
        };
        for turn in 0..6 {
            assert_eq!(policy.choose(&[at(5.0), at(1.0), at(3.0)], turn), 1);
        }
    }

    #[test]
    fn ties_are_shared_in_turn() {
        let policy = LeastLoaded {
            forward_weight: 0.0,
        };
        let picks: Vec<usize> = (0..4)
            .map(|turn| policy.choose(&[at(1.0), at(1.0), at(2.0)], turn))
            .collect();
        assert_eq!(picks, [0, 1, 0, 1]);
    }

    #[test]
    fn recent_forwards_add_to_the_estimate() {
        let policy = LeastLoaded {
            forward_weight: 1.0,
        };
        let mut candidates = [at(0.0), at(0.0), at(0.0)];
        for turn in 0..6 {
            let i = policy.choose(&candidates, turn);
            candidates[i].recent_forwards += 1.0;
            // Never more than one ahead of another.
            let counts = candidates.iter().map(|c| c.recent_forwards);
            let (least, most) = counts.fold((f64::MAX, 0.0f64), |(l, m), c| (l.min(c), m.max(c)));
            assert!(most - least <= 1.0, "{candidates:?}");
        }
        assert!(candidates.iter().all(|c| c.recent_forwards == 2.0));
    }

    #[test]
    fn a_nan_load_counts_as_the_most_loaded() {
        let policy = LeastLoaded {
            forward_weight: 1.0,
        };
        assert_eq!(policy.choose(&[at(f64::NAN), at(7.0)], 0), 1);
    }
}
