//! The ORB's metrics, for scraping: with `-ORBMetricsEndpoint HOST:PORT`
//! ([`OrbConfig::metrics_endpoint`](crate::config::OrbConfig::metrics_endpoint))
//! the ORB serves `http://HOST:PORT/metrics` in the Prometheus text format
//! (version 0.0.4), from a thread of its own (`endpoint.rs`; any other
//! path is 404, a request that is not HTTP is 400, and the listener
//! closes when the ORB shuts down). The text is written by the
//! `prometheus-client` crate.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `armillary_server_requests_total` | counter | `operation`, `outcome` | upcalls the server ran, by the operation's name and what they came to: `normal`, `user_exception`, `system_exception`, `location_forward` |
//! | `armillary_server_request_duration_seconds` | histogram | `operation`, `outcome` | how long each took, from the start of its upcall until its reply was written (an AMH servant's: until its responder answered) |
//! | `armillary_server_accept_calls_total` | counter | | [`ServerStats::accept_calls`](crate::ServerStats::accept_calls) |
//! | `armillary_server_accept_failures_total` | counter | | [`ServerStats::accept_failures`](crate::ServerStats::accept_failures) |
//! | `armillary_server_connections_refused_total` | counter | | [`ServerStats::connections_refused`](crate::ServerStats::connections_refused) |
//! | `armillary_server_connections_open` | gauge | | [`ServerStats::connections_open`](crate::ServerStats::connections_open) |
//! | `armillary_server_partial_bytes` | gauge | | [`ServerStats::partial_bytes`](crate::ServerStats::partial_bytes) |
//! | `armillary_server_timed_out_waits_total` | counter | | [`ServerStats::timed_out_waits`](crate::ServerStats::timed_out_waits) |
//! | `armillary_server_pacer_wakeups_total` | counter | | [`ServerStats::pacer_wakeups`](crate::ServerStats::pacer_wakeups) |
//!
//! The server's counters read zero until the server starts. Requests
//! are counted over IIOP only (collocated calls are not), and only with an
//! endpoint: without one, a request does no metrics work at all (one
//! check of an `Option`). Operation names are the client's to choose, so
//! at most [`MAX_LABEL_SETS`] (operation, outcome) pairs are kept; the
//! requests of any further one are counted under the operation `_other`.
//!
//! ```
//! use std::io::{Read, Write};
//! use armillary::config::{ListenEndpoint, OrbConfig};
//!
//! let config = OrbConfig::new().metrics_endpoint(ListenEndpoint::new("127.0.0.1", 0));
//! let orb = armillary::Orb::with_config(config)?;
//! let address = orb.metrics_endpoint().expect("configured");
//! let mut scrape = std::net::TcpStream::connect(address)?;
//! scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: armillary\r\n\r\n")?;
//! let mut answer = String::new();
//! scrape.read_to_string(&mut answer)?;
//! assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"));
//! assert!(answer.contains("\narmillary_server_connections_open 0\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod endpoint;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use armillary_giop::giop::OperationName;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::trace::Outcome;

/// The most (operation, outcome) label sets the request metrics keep;
/// beyond, requests are counted under the operation `_other`.
pub const MAX_LABEL_SETS: usize = 512;

/// The operation label of the requests beyond [`MAX_LABEL_SETS`].
const OTHER_OPERATIONS: &str = "_other";

/// The labels of one request metric.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    operation: OperationLabel,
    outcome: OutcomeLabel,
}

/// An operation's name as a label value (inline for short names, so that
/// counting a request allocates nothing once its label set exists).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct OperationLabel(OperationName);

impl EncodeLabelValue for OperationLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        // The encoder escapes what the text format must.
        encoder.write_str(&self.0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct OutcomeLabel(Outcome);

impl EncodeLabelValue for OutcomeLabel {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        encoder.write_str(self.0.as_str())
    }
}

fn duration_histogram() -> Histogram {
    // 50 µs to about 3.3 s, doubling.
    Histogram::new(exponential_buckets(50e-6, 2.0, 17))
}

/// The server's per-operation request metrics: a count and a duration
/// histogram by operation and outcome. Cloning shares them.
#[derive(Debug, Clone)]
pub(crate) struct RequestMetrics {
    requests: Family<RequestLabels, Counter>,
    durations: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// The label sets made so far (about: two threads may count one
    /// twice).
    label_sets: Arc<AtomicUsize>,
}

impl RequestMetrics {
    pub(crate) fn new() -> RequestMetrics {
        RequestMetrics {
            requests: Family::default(),
            durations: Family::new_with_constructor(duration_histogram),
            label_sets: Arc::default(),
        }
    }

    /// Counts one upcall of `operation` that came to `outcome` in `took`.
    pub(crate) fn observe(&self, operation: &str, outcome: Outcome, took: Duration) {
        let mut labels = RequestLabels {
            operation: OperationLabel(OperationName::from(operation)),
            outcome: OutcomeLabel(outcome),
        };
        if self.requests.get(&labels).is_none()
            && self.label_sets.fetch_add(1, Ordering::Relaxed) >= MAX_LABEL_SETS
        {
            labels.operation = OperationLabel(OperationName::from(OTHER_OPERATIONS));
        }
        self.requests.get_or_create(&labels).inc();
        self.durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Registers the metrics in `registry` (they keep counting there).
    pub(crate) fn register(&self, registry: &mut Registry) {
        registry.register(
            "armillary_server_requests",
            "Upcalls the server ran, by operation and outcome",
            self.requests.clone(),
        );
        registry.register(
            "armillary_server_request_duration_seconds",
            "Time from the start of an upcall until its reply was written, by operation and \
             outcome",
            self.durations.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(metrics: &RequestMetrics) -> String {
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut out, &registry).unwrap();
        out
    }

    #[test]
    fn requests_are_counted_by_operation_and_outcome() {
        let metrics = RequestMetrics::new();
        let ms = Duration::from_millis(1);
        metrics.observe("get_quote", Outcome::Normal, ms);
        metrics.observe("get_quote", Outcome::Normal, ms);
        metrics.observe("get_quote", Outcome::UserException, ms);
        metrics.observe("we\"ird\n", Outcome::SystemException, ms);
        let text = text(&metrics);
        for line in [
            r#"armillary_server_requests_total{operation="get_quote",outcome="normal"} 2"#,
            r#"armillary_server_requests_total{operation="get_quote",outcome="user_exception"} 1"#,
            r#"armillary_server_requests_total{operation="we\"ird\n",outcome="system_exception"} 1"#,
            r#"armillary_server_request_duration_seconds_count{operation="get_quote",outcome="normal"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }

    #[test]
    fn label_sets_are_bounded() {
        let metrics = RequestMetrics::new();
        for i in 0..MAX_LABEL_SETS + 10 {
            metrics.observe(&format!("op{i}"), Outcome::Normal, Duration::ZERO);
        }
        metrics.observe("op0", Outcome::Normal, Duration::ZERO);
        let text = text(&metrics);
        let sets = text
            .lines()
            .filter(|l| l.starts_with("armillary_server_requests_total{"))
            .count();
        assert_eq!(sets, MAX_LABEL_SETS + 1);
        assert!(text.contains(
            r#"armillary_server_requests_total{operation="_other",outcome="normal"} 10"#
        ));
        assert!(
            text.contains(r#"armillary_server_requests_total{operation="op0",outcome="normal"} 2"#)
        );
    }
}
