//! The middle tiers `armillary bench middle-tier` compares, and how
//! `--models` names them: how the servant answers (synchronously, or
//! with AMH) and the server concurrency model (`-ORBConcurrency`) it
//! runs under.
//!
//! | name | servant | `-ORBConcurrency` | the AMH paper's name |
//! |---|---|---|---|
//! | `tpc` | synchronous | `thread-per-connection` | TPC |
//! | `reactive` | synchronous | `reactive` | TPR-ST |
//! | `pool:N` | synchronous | `thread-pool:N` | TPR-N |
//! | `amh` | AMH | `reactive` | AMH-ST |
//! | `amh-pool:N` | AMH | `thread-pool:N` | AMH-N |
//! | `amh:MODEL` | AMH | `MODEL` (any spelling) | |
//! | `MODEL` | synchronous | `MODEL` (any spelling, e.g. `thread-per-request`, `worker-pool:2`, `locality:2`, `thread-per-object`, `application`) | |
//!
//! A name is printed back in its shortest form (`thread-pool:2` is
//! printed `pool:2`). `direct` names no middle tier ([`Contender::Direct`]):
//! the clients call the sink themselves, the baseline of what the clients
//! and the sink alone reach on the machine.

use std::fmt;
use std::str::FromStr;

use armillary::config::ConcurrencyModel;

/// How the middle tier's servant answers a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answering {
    /// Calls the sink synchronously inside the upcall and returns its
    /// answer: the upcall's thread waits for the sink.
    Synchronous,
    /// Takes the reply out of the request (`ServerRequest::respond_later`),
    /// sends the sink's request with an AMI callback and returns; the
    /// callback answers the client.
    Amh,
}

/// One middle tier: how it answers and under which concurrency model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MiddleTierModel {
    pub(crate) answering: Answering,
    pub(crate) concurrency: ConcurrencyModel,
}

/// A `--models` name that names no middle tier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown middle-tier model {name:?}: expected tpc, reactive, pool:N, amh, amh-pool:N, \
     amh:MODEL, direct or an -ORBConcurrency model (reactive, thread-pool:N, thread-per-connection, \
     application, thread-per-request[:CAP], worker-pool:N[:QUEUE], thread-per-object, \
     locality:N)"
)]
pub(crate) struct UnknownModel {
    name: String,
}

/// What one `--models` name measures: a middle tier, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contender {
    /// No middle tier: the clients call the sink (`direct`).
    Direct,
    /// The clients call this middle tier, which calls the sink.
    Middle(MiddleTierModel),
}

impl FromStr for Contender {
    type Err = UnknownModel;

    fn from_str(name: &str) -> Result<Self, UnknownModel> {
        match name.trim() {
            "direct" => Ok(Contender::Direct),
            name => name.parse().map(Contender::Middle),
        }
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contender::Direct => f.write_str("direct"),
            Contender::Middle(model) => model.fmt(f),
        }
    }
}

impl MiddleTierModel {
    /// The AMH paper's five, in its order: TPC, TPR-ST, TPR-2, AMH-ST,
    /// AMH-2.
    pub(crate) fn papers() -> Vec<MiddleTierModel> {
        ["tpc", "reactive", "pool:2", "amh", "amh-pool:2"]
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect()
    }

    fn synchronous(concurrency: ConcurrencyModel) -> Self {
        MiddleTierModel {
            answering: Answering::Synchronous,
            concurrency,
        }
    }

    fn amh(concurrency: ConcurrencyModel) -> Self {
        MiddleTierModel {
            answering: Answering::Amh,
            concurrency,
        }
    }
}

impl FromStr for MiddleTierModel {
    type Err = UnknownModel;

    fn from_str(name: &str) -> Result<Self, UnknownModel> {
        let name = name.trim();
        let unknown = || UnknownModel {
            name: name.to_owned(),
        };
        let concurrency = |spelling: &str| ConcurrencyModel::parse(spelling).ok_or_else(unknown);
        let threads = |n: &str| match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(ConcurrencyModel::ThreadPool(n)),
            _ => Err(unknown()),
        };
        match name {
            "tpc" => Ok(Self::synchronous(ConcurrencyModel::ThreadPerConnection)),
            "amh" => Ok(Self::amh(ConcurrencyModel::SingleThreadedReactive)),
            _ => {
                if let Some(n) = name.strip_prefix("amh-pool:") {
                    threads(n).map(Self::amh)
                } else if let Some(spelling) = name.strip_prefix("amh:") {
                    concurrency(spelling).map(Self::amh)
                } else if let Some(n) = name.strip_prefix("pool:") {
                    threads(n).map(Self::synchronous)
                } else {
                    concurrency(name).map(Self::synchronous)
                }
            }
        }
    }
}

impl fmt::Display for MiddleTierModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConcurrencyModel::{SingleThreadedReactive, ThreadPerConnection, ThreadPool};
        match (self.answering, self.concurrency) {
            (Answering::Synchronous, ThreadPerConnection) => f.write_str("tpc"),
            (Answering::Synchronous, ThreadPool(n)) => write!(f, "pool:{n}"),
            (Answering::Synchronous, model) => write!(f, "{model}"),
            (Answering::Amh, SingleThreadedReactive) => f.write_str("amh"),
            (Answering::Amh, ThreadPool(n)) => write!(f, "amh-pool:{n}"),
            (Answering::Amh, model) => write!(f, "amh:{model}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str) -> MiddleTierModel {
        name.parse().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_papers_five_are_named_as_the_issue_names_them() {
        let names: Vec<String> = MiddleTierModel::papers()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(names, ["tpc", "reactive", "pool:2", "amh", "amh-pool:2"]);
        assert_eq!(
            model("amh-pool:2"),
            MiddleTierModel {
                answering: Answering::Amh,
                concurrency: ConcurrencyModel::ThreadPool(2)
            }
        );
        assert_eq!(
            model("tpc").concurrency,
            ConcurrencyModel::ThreadPerConnection
        );
    }

    #[test]
    fn every_concurrency_model_is_a_model_with_either_servant() {
        for concurrency in ConcurrencyModel::menu(3) {
            let spelling = concurrency.to_string();
            let sync = model(&spelling);
            assert_eq!(sync, MiddleTierModel::synchronous(concurrency));
            assert_eq!(model(&sync.to_string()), sync, "{sync} prints back");
            let amh = model(&format!("amh:{spelling}"));
            assert_eq!(amh, MiddleTierModel::amh(concurrency));
            assert_eq!(model(&amh.to_string()), amh, "{amh} prints back");
        }
    }

    #[test]
    fn direct_names_no_middle_tier() {
        assert_eq!("direct".parse::<Contender>(), Ok(Contender::Direct));
        assert_eq!(Contender::Direct.to_string(), "direct");
        assert_eq!(
            "amh".parse::<Contender>(),
            Ok(Contender::Middle(model("amh")))
        );
        assert!("direct".parse::<MiddleTierModel>().is_err());
    }

    #[test]
    fn a_bad_name_says_what_is_expected() {
        for bad in ["tpr", "pool:0", "amh-pool:x", "amh:nonsense", ""] {
            let error = bad.parse::<MiddleTierModel>().unwrap_err().to_string();
            assert!(
                error.contains("expected tpc, reactive, pool:N, amh"),
                "{error}"
            );
        }
    }
}
