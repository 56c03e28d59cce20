//! The source clients of `armillary bench middle-tier`: one process
//! (`armillary bench drive-middle-tier`, [`drive`]) driving every client
//! of a point with AMI, from a few threads.
//!
//! Each client is its own TCP connection to the middle tier, carrying
//! one request at a time: it sends `get_quote(stamp)`, and its next
//! request when the reply comes, `--requests` times (errors included, so
//! a client whose middle tier fails still ends). The clients are split
//! into groups of at most [`CLIENTS_PER_ORB`]; each group has an ORB of
//! its own with the exclusive transport (`-ORBTransportMux exclusive`: a
//! connection carries one request at a time, and more are opened while
//! all are busy, so a group of n clients with one request each in flight
//! holds n connections) and a reactor (it listens on loopback, unused),
//! which reads the replies of all the group's connections on one thread
//! and runs their AMI callbacks. A callback records the reply and queues
//! its client; one sender thread sends every client's next request (not
//! the reactor's thread: a request sent from inside a reactor's callback
//! would get a reader thread of its own, and a thread per client).
//! Threads: one reactor per group, one sender. The clients start spread
//! evenly over `--stagger-ms` (the sink's delay): started at once, they
//! would stay in step, every request of a round arriving at the middle
//! tier, and every reply at the clients, in one burst.
//!
//! The throughput counts the replies of the paper's window: from the
//! moment every client has had its first reply to the moment the first
//! client has had its last one (or the deadline, if that comes first),
//! divided by its length; the percentiles are those of the requests
//! answered in the window. When the window is empty (a client ended
//! before another began: very few requests per client), every reply of
//! the run counts, over the whole run, and the report says so.
//!
//! The report ([`DriverReport`]) is one JSON object on standard output.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use armillary::ami::ExceptionHolder;
use armillary::giop::system_exception::SystemException;
use armillary::{Orb, WaitForCompletion};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::bench_report::Latencies;
use crate::middle_tier_peers::generated::middle_tier_bench::Quoter;

/// Clients sharing one ORB (one reactor thread), each on a connection of
/// its own: the ORB's limit of connections to one server
/// (`-ORBMaxConnectionsPerServer`, 8 by default) is raised to this.
pub(crate) const CLIENTS_PER_ORB: usize = 50;

/// The queue's "stop" message to the sender thread.
const STOP: usize = usize::MAX;

/// `armillary bench drive-middle-tier …` (internal).
#[derive(Debug, Args)]
pub struct DriveOptions {
    /// The middle tier's reference.
    #[arg(long)]
    ior_file: PathBuf,
    /// Clients, each its own connection.
    #[arg(long)]
    clients: usize,
    /// Requests per client.
    #[arg(long)]
    requests: usize,
    /// Stop after this long even if clients have requests left.
    #[arg(long)]
    deadline_ms: u64,
    /// Start the clients spread evenly over this long (the sink's delay),
    /// so that their requests do not arrive in waves.
    #[arg(long, default_value_t = 0)]
    stagger_ms: u64,
}

/// What the driver measured, as it prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DriverReport {
    /// Replies counted (those of the window, or of the whole run).
    pub(crate) replies: u64,
    /// Seconds they were counted over.
    pub(crate) seconds: f64,
    /// Replies per second.
    pub(crate) throughput: f64,
    /// False when the window was empty and the whole run was counted.
    pub(crate) windowed: bool,
    /// Median and 99th percentile latency of the counted requests, ms
    /// (`None` when none was answered).
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p99_ms: Option<f64>,
    /// Requests answered (in and out of the window), and asked for.
    pub(crate) answered: u64,
    pub(crate) planned: u64,
    /// Requests that failed (an exception, or a wrong value).
    pub(crate) errors: u64,
    pub(crate) first_error: Option<String>,
    /// The deadline came before every client was done.
    pub(crate) cut_short: bool,
    /// Connections the middle tier had accepted at the end (established,
    /// on its port), to check there is one per client.
    pub(crate) connections: Option<usize>,
    /// CPU time this process used, in seconds.
    pub(crate) cpu_seconds: Option<f64>,
}

/// One client's record, times in nanoseconds since the start.
#[derive(Debug, Default, Clone)]
struct ClientLog {
    /// Requests finished (answered or failed).
    done: usize,
    sent_at: Option<Instant>,
    first_reply: Option<u64>,
    finished: Option<u64>,
    /// (when, latency in µs) of each answered request.
    replies: Vec<(u64, u64)>,
    errors: u64,
    first_error: Option<String>,
}

/// What every thread of a run shares.
struct Run {
    start: Instant,
    requests: usize,
    clients: Vec<Mutex<ClientLog>>,
    /// Each group's reference to the middle tier (its own ORB's).
    targets: Vec<Quoter>,
    /// Clients whose next request is to be sent.
    queue: Mutex<Sender<usize>>,
    /// Clients not done yet.
    remaining: Mutex<usize>,
    all_done: Condvar,
    stopped: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Run {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn enqueue(&self, client: usize) {
        // The receiver lives as long as the sender thread; after it ends
        // nothing is sent any more.
        let _ = lock(&self.queue).send(client);
    }

    /// Sends `client`'s next request.
    fn send(self: &Arc<Self>, client: usize) {
        let stamp = {
            let mut log = lock(&self.clients[client]);
            log.sent_at = Some(Instant::now());
            ((client as i64) << 32) | log.done as i64
        };
        let run = Arc::clone(self);
        let target = &self.targets[client / CLIENTS_PER_ORB];
        let sent = target.as_object().send_callback(
            "get_quote",
            move |w| {
                w.write_longlong(stamp);
                Ok(())
            },
            |r| r.read_longlong(),
            move |outcome: Result<i64, ExceptionHolder<SystemException>>| {
                run.finished(client, stamp, outcome.map_err(|h| h.raise()));
            },
        );
        if let Err(e) = sent {
            self.finished(client, stamp, Err(e));
        }
    }

    /// `client`'s request `stamp` ended with `outcome`.
    fn finished(&self, client: usize, stamp: i64, outcome: Result<i64, SystemException>) {
        if self.stopped.load(Ordering::Acquire) {
            return;
        }
        let now = self.now();
        let mut log = lock(&self.clients[client]);
        let failure = match outcome {
            Ok(v) if v == stamp => {
                let took = log.sent_at.map_or(Duration::ZERO, |t| t.elapsed());
                log.replies.push((now, took.as_micros() as u64));
                log.first_reply.get_or_insert(now);
                None
            }
            Ok(v) => Some(format!("get_quote({stamp}) returned {v}")),
            Err(e) => Some(e.to_string()),
        };
        if let Some(failure) = failure {
            log.errors += 1;
            log.first_error.get_or_insert(failure);
        }
        log.done += 1;
        if log.done < self.requests {
            drop(log);
            self.enqueue(client);
        } else {
            log.finished = Some(now);
            drop(log);
            let mut remaining = lock(&self.remaining);
            *remaining -= 1;
            if *remaining == 0 {
                self.all_done.notify_all();
            }
        }
    }
}

/// The paper's window over `logs`: from the last first reply to the
/// first last one (a client not done counts as done at `cut`); `None`
/// when some client had no reply or the window is empty.
fn window(logs: &[ClientLog], cut: u64) -> Option<(u64, u64)> {
    let mut start = 0;
    let mut stop = u64::MAX;
    for log in logs {
        start = start.max(log.first_reply?);
        stop = stop.min(log.finished.unwrap_or(cut));
    }
    (stop > start).then_some((start, stop))
}

/// Counts the replies of `logs` in the window (or in the whole run, `cut`
/// long, when the window is empty) into a report without its error and
/// connection fields.
fn measure(logs: &[ClientLog], cut: u64, planned: u64) -> DriverReport {
    let bounds = window(logs, cut);
    let (from, to) = bounds.unwrap_or((0, cut));
    let mut latencies = Latencies::new();
    let (mut replies, mut answered) = (0u64, 0u64);
    for log in logs {
        for &(at, us) in &log.replies {
            answered += 1;
            let counted = match bounds {
                Some((start, stop)) => at > start && at <= stop,
                None => true,
            };
            if counted {
                replies += 1;
                latencies.record(Duration::from_micros(us));
            }
        }
    }
    let seconds = to.saturating_sub(from) as f64 / 1e9;
    let finite = |v: f64| v.is_finite().then_some(v);
    DriverReport {
        replies,
        seconds,
        throughput: if seconds > 0.0 {
            replies as f64 / seconds
        } else {
            0.0
        },
        windowed: bounds.is_some(),
        p50_ms: finite(latencies.quantile_ms(0.5)),
        p99_ms: finite(latencies.quantile_ms(0.99)),
        answered,
        planned,
        errors: logs.iter().map(|l| l.errors).sum(),
        first_error: logs.iter().find_map(|l| l.first_error.clone()),
        cut_short: logs.iter().any(|l| l.finished.is_none()),
        connections: None,
        cpu_seconds: None,
    }
}

/// Established TCP connections whose local port is `port` (the server
/// side of every connection to it), from `/proc/net/tcp{,6}`; `None`
/// where there is no such file.
fn connections_to(port: u16) -> Option<usize> {
    let mut found = None;
    for file in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let n = text
            .lines()
            .skip(1)
            .filter(|line| {
                let fields: Vec<&str> = line.split_whitespace().collect();
                let local_port = fields
                    .get(1)
                    .and_then(|a| a.rsplit(':').next())
                    .and_then(|p| u16::from_str_radix(p, 16).ok());
                // State 01: ESTABLISHED.
                local_port == Some(port) && fields.get(3) == Some(&"01")
            })
            .count();
        found = Some(found.unwrap_or(0) + n);
    }
    found
}

/// `armillary bench drive-middle-tier`: runs the clients, prints the
/// report.
pub(crate) fn drive(options: &DriveOptions) -> Result<ExitCode, String> {
    let ior = crate::bench_process::wait_for_file(&options.ior_file)?;
    let clients = options.clients.max(1);
    let requests = options.requests.max(1);
    let deadline = Duration::from_millis(options.deadline_ms);
    let timeout = format!("{}ms", options.deadline_ms.max(1));
    let connections = CLIENTS_PER_ORB.to_string();
    let mut orbs = Vec::new();
    let mut targets = Vec::new();
    for _ in 0..clients.div_ceil(CLIENTS_PER_ORB) {
        let (orb, _) = Orb::init([
            "-ORBConcurrency",
            "reactive",
            "-ORBTransportMux",
            "exclusive",
            "-ORBMaxConnectionsPerServer",
            connections.as_str(),
            // A server, so that its reactor reads the replies.
            "-ORBListenEndpoints",
            "iiop://127.0.0.1:0",
            "-ORBClientCallTimeout",
            timeout.as_str(),
        ])
        .map_err(|e| e.to_string())?;
        let obj = orb.string_to_object(&ior).map_err(|e| e.to_string())?;
        targets.push(Quoter::from_object(obj));
        orbs.push(orb);
    }
    let port = targets
        .first()
        .and_then(|t| t.as_object().ior().iiop_profiles().first().map(|p| p.port));
    let (queue, to_send) = channel();
    let run = Arc::new(Run {
        start: Instant::now(),
        requests,
        clients: (0..clients).map(|_| Mutex::default()).collect(),
        targets,
        queue: Mutex::new(queue),
        remaining: Mutex::new(clients),
        all_done: Condvar::new(),
        stopped: AtomicBool::new(false),
    });
    let sender = {
        let run = Arc::clone(&run);
        std::thread::Builder::new()
            .name("client-sender".into())
            .spawn(move || {
                for client in to_send {
                    if client == STOP || run.stopped.load(Ordering::Acquire) {
                        break;
                    }
                    run.send(client);
                }
            })
            .map_err(|e| format!("cannot start the sender thread: {e}"))?
    };
    let stagger = Duration::from_millis(options.stagger_ms);
    for client in 0..clients {
        let at = run.start + stagger.mul_f64(client as f64 / clients as f64);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        run.enqueue(client);
    }
    let until = run.start + deadline;
    let mut remaining = lock(&run.remaining);
    while *remaining > 0 {
        let now = Instant::now();
        if now >= until {
            break;
        }
        remaining = run
            .all_done
            .wait_timeout(remaining, until - now)
            .map(|(r, _)| r)
            .unwrap_or_else(|e| e.into_inner().0);
    }
    drop(remaining);
    let cut = run.now();
    run.stopped.store(true, Ordering::Release);
    run.enqueue(STOP);
    let _ = sender.join();
    let connections = port.and_then(connections_to);
    let logs: Vec<ClientLog> = run.clients.iter().map(|c| lock(c).clone()).collect();
    let mut report = measure(&logs, cut, (clients * requests) as u64);
    report.connections = connections;
    report.cpu_seconds = crate::bench_process::process_cpu_seconds("self");
    for orb in orbs {
        // Not an upcall: cannot fail in a way that matters here.
        let _ = orb.shutdown(WaitForCompletion::No);
    }
    let text = serde_json::to_string(&report).map_err(|e| e.to_string())?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(replies: &[u64], finished: Option<u64>) -> ClientLog {
        ClientLog {
            done: replies.len(),
            first_reply: replies.first().copied(),
            finished,
            replies: replies.iter().map(|&at| (at, 1000)).collect(),
            ..ClientLog::default()
        }
    }

    #[test]
    fn the_window_runs_from_the_last_first_reply_to_the_first_last_one() {
        let logs = [
            client(&[10, 20, 30, 40, 50], Some(50)),
            client(&[25, 35, 45, 55, 65], Some(65)),
        ];
        assert_eq!(window(&logs, 100), Some((25, 50)));
        let report = measure(&logs, 100, 10);
        // 30, 40, 50 and 35, 45: in (25, 50].
        assert_eq!(report.replies, 5);
        assert!(report.windowed);
        assert!((report.seconds - 25e-9).abs() < 1e-15);
        assert_eq!(report.answered, 10);
        assert!(!report.cut_short);
    }

    #[test]
    fn a_client_cut_short_ends_the_window_at_the_cut() {
        // The second client's only reply is the last first reply, and its
        // last: the window is empty.
        let logs = [client(&[10, 20], None), client(&[15], Some(15))];
        assert_eq!(window(&logs, 100), None);
        let logs = [client(&[10, 20, 30], None), client(&[12, 40], None)];
        assert_eq!(window(&logs, 100), Some((12, 100)));
        assert!(measure(&logs, 100, 10).cut_short);
    }

    #[test]
    fn an_empty_window_counts_the_whole_run() {
        let logs = [client(&[10], Some(10)), client(&[20], Some(20))];
        let report = measure(&logs, 40, 2);
        assert!(!report.windowed);
        assert_eq!(report.replies, 2);
        assert!((report.throughput - 2.0 / 40e-9).abs() < 1.0);
        let silent = [client(&[], None)];
        assert_eq!(measure(&silent, 40, 1).replies, 0);
        assert_eq!(measure(&silent, 40, 1).p50_ms, None);
    }
}
