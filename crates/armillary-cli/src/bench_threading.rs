//! `armillary bench threading`: the server concurrency models side by
//! side, in the experiments of the Visibroker threading study
//! (`conversation`, `contention`, `traffic`, `train`, `demux`) and the
//! MICO locality study (`locality`).
//!
//! Every point of every experiment runs `--rounds` times per model, the
//! models taking turns round after round (so load from elsewhere on the
//! machine spreads over all of them); a point reports the median round's
//! throughput and the percentiles of all its calls. A small conversation
//! per model warms up first and is not reported. The models are those of
//! [`ConcurrencyModel::menu`] unless `--models` names others. For each
//! point a fresh server ORB with that model serves fresh servants in this
//! process, and client threads, each with its own client ORB (so its own
//! connection), make synchronous calls over loopback IIOP. Unless `--cpus`
//! pins the run, server and client threads share the machine's CPUs.
//!
//! - `conversation`: 10 clients, each holding conversations (a fresh
//!   connection, then a chain of N requests with a 1,000-byte buffer to one
//!   object), N = 10 … 100.
//! - `contention`: 1 … 25 clients, each a chain of requests that take one
//!   mutex shared by every request and compute inside it.
//! - `traffic`: 10 clients, buffers of 1,000 … 4,000 bytes, conversations
//!   of 1 … 20 requests.
//! - `train`: 10 clients calling three objects, as a request train (all
//!   requests to the first, then the second, then the third) and round
//!   robin (first, second, third, first, …).
//! - `demux`: one client, a train to one object and a round robin over up
//!   to 1,000 objects spread over 1, 1,000 or 100,000 active objects: the
//!   server's demultiplexing (object key → POA → servant) is in every
//!   call's latency.
//! - `locality`: c clients, each with its own object owning a working set
//!   of n × s bytes; a request touches n bytes of it with stride s. A
//!   client sends bursts of oneway requests closed by a two-way one, so
//!   requests of several streams wait at the server together; throughput
//!   is requests per second, latency that of a whole burst.
//!
//! Output: a table on stdout, a progress bar on stderr, `--json FILE` (an
//! array, one record per point: `experiment`, `model`, the point's
//! parameters, `throughput` in requests/s, `p50_ms`, `p99_ms`, `errors`)
//! and `--plot FILE.svg` (one chart per experiment). `--size tiny|quick`
//! shrinks every experiment; timings never decide anything here.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use armillary::config::{Collocation, ConcurrencyModel, OrbConfig};
use armillary::giop::cdr::CdrError;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::{ObjectRef, Orb, Servant, ServerRequest, WaitForCompletion};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};

use crate::bench_report::{
    plot_lines_svg, print_table, progress, write_json, Latencies, Panel, Series,
};

/// `armillary bench threading …`
#[derive(Debug, Args)]
pub struct ThreadingArgs {
    /// The experiments to run (repeatable; default: all).
    #[arg(long = "experiment", value_enum)]
    experiments: Vec<Experiment>,
    /// The server concurrency models, comma-separated, in the
    /// `-ORBConcurrency` spelling (default: every model the ORB offers).
    #[arg(long, value_delimiter = ',')]
    models: Vec<String>,
    /// Threads of the models that take a thread count, when `--models`
    /// does not say.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// How big each experiment is: `full` (the papers' sizes, about three
    /// minutes in all), `quick` (fewer points and calls) or `tiny` (a
    /// smoke test).
    #[arg(long, value_enum, default_value_t = Size::Full)]
    size: Size,
    /// Rounds: each point runs this many times per model, the models
    /// taking turns; the throughput reported is the median round's, the
    /// percentiles are over every call of every round.
    #[arg(long, default_value_t = 2)]
    rounds: usize,
    /// CPUs to pin the whole run to (taskset list, e.g. `0`), or `none`.
    /// `0` puts clients and server on one CPU, which makes the `demux`
    /// latencies comparable (no cross-CPU wake-ups).
    #[arg(long, default_value = "none")]
    cpus: String,
    /// Write one JSON record per point to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the results into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// The experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Experiment {
    Conversation,
    Contention,
    Traffic,
    Train,
    Demux,
    Locality,
}

impl Experiment {
    const ALL: [Experiment; 6] = [
        Experiment::Conversation,
        Experiment::Contention,
        Experiment::Traffic,
        Experiment::Train,
        Experiment::Demux,
        Experiment::Locality,
    ];

    fn name(self) -> &'static str {
        match self {
            Experiment::Conversation => "conversation",
            Experiment::Contention => "contention",
            Experiment::Traffic => "traffic",
            Experiment::Train => "train",
            Experiment::Demux => "demux",
            Experiment::Locality => "locality",
        }
    }
}

/// How big the experiments are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Size {
    Full,
    Quick,
    Tiny,
}

/// Which object each request of a client goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pattern {
    /// All requests to one object, then all to the next.
    Train,
    /// One request to each object in turn.
    RoundRobin,
}

impl Pattern {
    fn name(self) -> &'static str {
        match self {
            Pattern::Train => "train",
            Pattern::RoundRobin => "round-robin",
        }
    }

    /// The object of request `i` of `calls` over `objects` objects.
    fn target(self, i: usize, calls: usize, objects: usize) -> usize {
        match self {
            Pattern::Train => i * objects / calls.max(1),
            Pattern::RoundRobin => i % objects.max(1),
        }
    }
}

/// One point of one experiment.
#[derive(Debug, Clone, Copy)]
enum Point {
    Conversation {
        clients: usize,
        chain: usize,
        conversations: usize,
    },
    Contention {
        clients: usize,
        requests: usize,
    },
    Traffic {
        clients: usize,
        buffer: usize,
        requests: usize,
        conversations: usize,
    },
    Train {
        clients: usize,
        pattern: Pattern,
        per_object: usize,
    },
    Demux {
        objects: usize,
        pattern: Pattern,
        calls: usize,
    },
    Locality {
        clients: usize,
        stride: usize,
        accesses: usize,
        bursts: usize,
    },
}

/// The buffer of a conversation (the Visibroker study's 1,000 characters).
const CONVERSATION_BUFFER: usize = 1000;
/// The objects of the `train` experiment.
const TRAIN_OBJECTS: usize = 3;
/// The most objects a `demux` round robin visits.
const DEMUX_SAMPLE: usize = 1000;
/// Oneway requests in a `locality` burst before its two-way request.
const LOCALITY_BURST: usize = 8;
/// Rounds of mixing a `contention` request does inside the mutex.
const CONTENTION_WORK: u64 = 20_000;

impl Point {
    fn experiment(&self) -> Experiment {
        match self {
            Point::Conversation { .. } => Experiment::Conversation,
            Point::Contention { .. } => Experiment::Contention,
            Point::Traffic { .. } => Experiment::Traffic,
            Point::Train { .. } => Experiment::Train,
            Point::Demux { .. } => Experiment::Demux,
            Point::Locality { .. } => Experiment::Locality,
        }
    }

    /// The points of `experiment` at `size`.
    fn all(experiment: Experiment, size: Size) -> Vec<Point> {
        let pick = |full: &[usize], quick: &[usize], tiny: &[usize]| match size {
            Size::Full => full.to_vec(),
            Size::Quick => quick.to_vec(),
            Size::Tiny => tiny.to_vec(),
        };
        let one = |full: usize, quick: usize, tiny: usize| pick(&[full], &[quick], &[tiny])[0];
        let clients = one(10, 10, 2);
        let mut points = Vec::new();
        match experiment {
            Experiment::Conversation => {
                let chains: Vec<usize> = (1..=10).map(|i| i * 10).collect();
                for chain in pick(&chains, &[10, 50, 100], &[2, 4]) {
                    points.push(Point::Conversation {
                        clients,
                        chain,
                        conversations: one(4, 2, 1),
                    });
                }
            }
            Experiment::Contention => {
                for clients in pick(&[1, 5, 10, 15, 20, 25], &[1, 10, 25], &[1, 2]) {
                    points.push(Point::Contention {
                        clients,
                        requests: one(40, 20, 3),
                    });
                }
            }
            Experiment::Traffic => {
                for buffer in pick(&[1000, 2000, 3000, 4000], &[1000, 4000], &[1000]) {
                    for requests in pick(&[1, 5, 10, 20], &[1, 20], &[1, 2]) {
                        points.push(Point::Traffic {
                            clients,
                            buffer,
                            requests,
                            // About the same number of calls at each point.
                            conversations: (one(40, 20, 2) / requests).max(1),
                        });
                    }
                }
            }
            Experiment::Train => {
                for per_object in pick(&[10, 50, 100], &[20], &[2]) {
                    for pattern in [Pattern::Train, Pattern::RoundRobin] {
                        points.push(Point::Train {
                            clients,
                            pattern,
                            per_object,
                        });
                    }
                }
            }
            Experiment::Demux => {
                for objects in pick(&[1, 1000, 100_000], &[1, 1000, 100_000], &[1, 10]) {
                    for pattern in [Pattern::Train, Pattern::RoundRobin] {
                        points.push(Point::Demux {
                            objects,
                            pattern,
                            calls: one(4000, 1000, 20),
                        });
                    }
                }
            }
            Experiment::Locality => {
                for clients in pick(&[4, 16], &[8], &[2]) {
                    for stride in pick(&[16, 64], &[64], &[16]) {
                        points.push(Point::Locality {
                            clients,
                            stride,
                            accesses: one(8192, 8192, 64),
                            bursts: one(20, 10, 2),
                        });
                    }
                }
            }
        }
        points
    }

    /// The point's parameters, as JSON fields.
    fn params(&self) -> Vec<(&'static str, Value)> {
        match *self {
            Point::Conversation {
                clients,
                chain,
                conversations,
            } => vec![
                ("clients", json!(clients)),
                ("chain", json!(chain)),
                ("buffer_bytes", json!(CONVERSATION_BUFFER)),
                ("conversations", json!(conversations)),
            ],
            Point::Contention { clients, requests } => {
                vec![("clients", json!(clients)), ("requests", json!(requests))]
            }
            Point::Traffic {
                clients,
                buffer,
                requests,
                conversations,
            } => vec![
                ("clients", json!(clients)),
                ("buffer_bytes", json!(buffer)),
                ("requests", json!(requests)),
                ("conversations", json!(conversations)),
            ],
            Point::Train {
                clients,
                pattern,
                per_object,
            } => vec![
                ("clients", json!(clients)),
                ("pattern", json!(pattern.name())),
                ("objects", json!(TRAIN_OBJECTS)),
                ("requests_per_object", json!(per_object)),
            ],
            Point::Demux {
                objects,
                pattern,
                calls,
            } => vec![
                ("active_objects", json!(objects)),
                ("pattern", json!(pattern.name())),
                ("objects_called", json!(demux_targets(objects, pattern))),
                ("calls", json!(calls)),
            ],
            Point::Locality {
                clients,
                stride,
                accesses,
                bursts,
            } => vec![
                ("clients", json!(clients)),
                ("stride", json!(stride)),
                ("accesses", json!(accesses)),
                ("bursts", json!(bursts)),
                ("burst", json!(LOCALITY_BURST + 1)),
            ],
        }
    }

    /// The point as a short table cell.
    fn label(&self) -> String {
        self.params()
            .iter()
            .filter(|(k, _)| !matches!(*k, "conversations" | "bursts" | "burst" | "calls"))
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                v => format!("{k}={v}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Where the point goes on its experiment's chart: x, and the name
    /// of its line besides the model's (empty for one line per model).
    fn plot_position(&self) -> (f64, String) {
        match *self {
            Point::Conversation { chain, .. } => (chain as f64, String::new()),
            Point::Contention { clients, .. } => (clients as f64, String::new()),
            Point::Traffic {
                buffer, requests, ..
            } => (requests as f64, format!("{buffer} B")),
            Point::Train {
                pattern,
                per_object,
                ..
            } => (per_object as f64, pattern.name().into()),
            Point::Demux {
                objects, pattern, ..
            } => ((objects as f64).log10(), pattern.name().into()),
            Point::Locality {
                clients, stride, ..
            } => (clients as f64, format!("s={stride}")),
        }
    }

    /// The objects the server activates for this point.
    fn objects(&self) -> usize {
        match *self {
            Point::Conversation { .. } | Point::Contention { .. } | Point::Traffic { .. } => 1,
            Point::Train { .. } => TRAIN_OBJECTS,
            Point::Demux { objects, .. } => objects,
            Point::Locality { clients, .. } => clients,
        }
    }

    /// Bytes of working set each object owns.
    fn working_set(&self) -> usize {
        match *self {
            Point::Locality {
                stride, accesses, ..
            } => stride * accesses,
            _ => 0,
        }
    }
}

/// How many objects a `demux` point calls.
fn demux_targets(objects: usize, pattern: Pattern) -> usize {
    match pattern {
        Pattern::Train => 1,
        Pattern::RoundRobin => objects.min(DEMUX_SAMPLE),
    }
}

/// SplitMix64's mixing function: the computing a `contention` request does.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The benchmark servant. `chain(buffer) -> length`, `contend(x) ->
/// mixed x` (inside the mutex every object shares), `touch(stride,
/// accesses) -> sum` (adds one to `accesses` bytes of this object's
/// working set, `stride` apart; also as a oneway).
struct Bench {
    shared: Arc<Mutex<u64>>,
    working_set: Mutex<Vec<u8>>,
}

impl Servant for Bench {
    fn repository_id(&self) -> &'static str {
        "IDL:Armillary/ThreadingBench:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == self.repository_id()
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        match req.operation() {
            "chain" => {
                let len = req.args().read_octet_seq().map_err(bad)?.len();
                req.results().write_ulong(len as u32);
            }
            "contend" => {
                let x = req.args().read_ulonglong().map_err(bad)?;
                let mut shared = self
                    .shared
                    .lock()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                let mut v = x ^ *shared;
                for _ in 0..CONTENTION_WORK {
                    v = mix(v);
                }
                *shared = v;
                drop(shared);
                req.results().write_ulonglong(v);
            }
            "touch" => {
                let stride = req.args().read_ulong().map_err(bad)? as usize;
                let accesses = req.args().read_ulong().map_err(bad)? as usize;
                let mut set = self
                    .working_set
                    .lock()
                    .map_err(|_| SystemException::internal(0, CompletionStatus::No))?;
                let len = set.len();
                let mut sum = 0u32;
                if len > 0 {
                    for i in 0..accesses {
                        let b = &mut set[(i * stride.max(1)) % len];
                        *b = b.wrapping_add(1);
                        sum = sum.wrapping_add(u32::from(*b));
                    }
                }
                drop(set);
                req.results().write_ulong(sum);
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

/// A server ORB with one model, serving a point's objects, with a thread
/// in `Orb::run` (which the `application` model needs and the others
/// ignore).
struct Server {
    orb: Orb,
    runner: Option<std::thread::JoinHandle<()>>,
    /// Stringified references to the objects the clients call.
    iors: Vec<String>,
}

impl Server {
    fn start(model: ConcurrencyModel, point: &Point) -> Result<Server, String> {
        let orb = Orb::with_config(OrbConfig::new().concurrency(model))
            .map_err(|e| format!("cannot start a {model} server: {e}"))?;
        let poa = orb.root_poa();
        poa.manager().activate().map_err(|e| e.to_string())?;
        let shared = Arc::new(Mutex::new(0u64));
        let objects = point.objects();
        let called = match *point {
            Point::Demux {
                objects, pattern, ..
            } => demux_targets(objects, pattern),
            _ => objects,
        };
        let mut iors = Vec::with_capacity(called);
        for i in 0..objects {
            let servant = Bench {
                shared: shared.clone(),
                working_set: Mutex::new(vec![0u8; point.working_set()]),
            };
            let id = poa.activate_object(servant).map_err(|e| e.to_string())?;
            // The objects called are spread evenly over the active ones.
            if i * called / objects != (i + 1) * called / objects || objects == called {
                let obj = poa.id_to_reference(id).map_err(|e| e.to_string())?;
                iors.push(orb.object_to_string(&obj));
            }
        }
        let runner = {
            let orb = orb.clone();
            std::thread::spawn(move || {
                let _ = orb.run();
            })
        };
        Ok(Server {
            orb,
            runner: Some(runner),
            iors,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Not an upcall of this ORB: shutting down cannot fail.
        let _ = self.orb.shutdown(WaitForCompletion::Yes);
        if let Some(runner) = self.runner.take() {
            let _ = runner.join();
        }
    }
}

/// What one client thread saw.
struct Tally {
    latencies: Latencies,
    requests: u64,
    errors: u64,
    first_error: Option<String>,
}

impl Tally {
    fn new() -> Self {
        Tally {
            latencies: Latencies::new(),
            requests: 0,
            errors: 0,
            first_error: None,
        }
    }

    /// Times `call`, which makes `requests` requests, recording the time
    /// if it succeeds and an error if it fails.
    fn time<T>(
        &mut self,
        requests: u64,
        call: impl FnOnce() -> Result<T, SystemException>,
    ) -> Option<T> {
        let start = Instant::now();
        match call() {
            Ok(v) => {
                self.latencies.record(start.elapsed());
                self.requests += requests;
                Some(v)
            }
            Err(e) => self.error(e.to_string()),
        }
    }

    fn error<T>(&mut self, message: String) -> Option<T> {
        self.errors += 1;
        self.first_error.get_or_insert(message);
        None
    }
}

/// A client ORB and its references to the server's objects.
struct Client {
    orb: Orb,
    objects: Vec<ObjectRef>,
}

impl Client {
    fn connect(iors: &[String]) -> Result<Client, String> {
        // Over loopback IIOP, as the study's clients called: the server's
        // ORB is in this process, and a collocated call would never reach
        // the concurrency model being measured.
        let orb = Orb::with_config(OrbConfig::default().collocation(Collocation::None))
            .map_err(|e| e.to_string())?;
        let objects = iors
            .iter()
            .map(|ior| orb.string_to_object(ior).map_err(|e| e.to_string()))
            .collect::<Result<_, _>>()?;
        Ok(Client { orb, objects })
    }

    /// The object `i`, or the last.
    fn object(&self, i: usize) -> &ObjectRef {
        &self.objects[i.min(self.objects.len() - 1)]
    }

    fn close(self) {
        self.orb.destroy();
    }
}

fn chain(obj: &ObjectRef, buffer: &[u8]) -> Result<u32, SystemException> {
    obj.invoke_plain("chain", &|w| w.write_octet_seq(buffer), |r| r.read_ulong())
}

fn touch_args(
    stride: usize,
    accesses: usize,
) -> impl Fn(&mut armillary::giop::cdr::CdrWriter) -> Result<(), CdrError> {
    move |w| {
        w.write_ulong(stride as u32);
        w.write_ulong(accesses as u32);
        Ok(())
    }
}

/// One client's part of a point: `c` is the client's number.
fn client_run(point: &Point, c: usize, iors: &[String], tally: &mut Tally) {
    // A client that cannot connect counts one error and stops.
    let connect = |tally: &mut Tally| match Client::connect(iors) {
        Ok(client) => Some(client),
        Err(e) => tally.error(format!("client ORB: {e}")),
    };
    match *point {
        Point::Conversation {
            chain: n,
            conversations,
            ..
        } => conversations_run(conversations, n, CONVERSATION_BUFFER, &connect, tally),
        Point::Traffic {
            buffer,
            requests,
            conversations,
            ..
        } => conversations_run(conversations, requests, buffer, &connect, tally),
        Point::Contention { requests, .. } => {
            let Some(client) = connect(tally) else { return };
            for i in 0..requests {
                let x = (c * requests + i) as u64;
                tally.time(1, || {
                    client.object(0).invoke_plain(
                        "contend",
                        &|w| {
                            w.write_ulonglong(x);
                            Ok(())
                        },
                        |r| r.read_ulonglong(),
                    )
                });
            }
            client.close();
        }
        Point::Train {
            pattern,
            per_object,
            ..
        } => {
            let Some(client) = connect(tally) else { return };
            let buffer = vec![0x5a; CONVERSATION_BUFFER];
            let calls = per_object * TRAIN_OBJECTS;
            for i in 0..calls {
                let obj = client.object(pattern.target(i, calls, TRAIN_OBJECTS));
                tally.time(1, || chain(obj, &buffer));
            }
            client.close();
        }
        Point::Demux { pattern, calls, .. } => {
            let Some(client) = connect(tally) else { return };
            let targets = client.objects.len();
            for i in 0..calls {
                let obj = client.object(pattern.target(i, calls, targets));
                tally.time(1, || chain(obj, &[]));
            }
            client.close();
        }
        Point::Locality {
            stride,
            accesses,
            bursts,
            ..
        } => {
            let Some(client) = connect(tally) else { return };
            // Each client has its own object: a stream, a working set.
            let obj = client.object(c);
            let args = touch_args(stride, accesses);
            for _ in 0..bursts {
                tally.time(LOCALITY_BURST as u64 + 1, || {
                    for _ in 0..LOCALITY_BURST {
                        obj.invoke_oneway("touch", &args)?;
                    }
                    obj.invoke_plain("touch", &args, |r| r.read_ulong())
                });
            }
            client.close();
        }
    }
}

/// `conversations` conversations of `requests` requests with a buffer of
/// `buffer` bytes, each on a fresh connection (a fresh client ORB).
fn conversations_run(
    conversations: usize,
    requests: usize,
    buffer: usize,
    connect: &dyn Fn(&mut Tally) -> Option<Client>,
    tally: &mut Tally,
) {
    let buffer = vec![0x5a; buffer];
    for _ in 0..conversations {
        let Some(client) = connect(tally) else { return };
        for _ in 0..requests {
            if let Some(len) = tally.time(1, || chain(client.object(0), &buffer)) {
                if len as usize != buffer.len() {
                    tally.error::<()>(format!("chain answered {len} for {}", buffer.len()));
                }
            }
        }
        client.close();
    }
}

/// The clients of a point.
fn clients(point: &Point) -> usize {
    match *point {
        Point::Conversation { clients, .. }
        | Point::Contention { clients, .. }
        | Point::Traffic { clients, .. }
        | Point::Train { clients, .. }
        | Point::Locality { clients, .. } => clients,
        Point::Demux { .. } => 1,
    }
}

/// The measurement of one point with one model, over its rounds.
struct Record {
    point: Point,
    model: ConcurrencyModel,
    /// Requests per second of each round.
    rounds: Vec<f64>,
    /// The median round's.
    throughput: f64,
    latencies: Latencies,
    errors: u64,
    first_error: Option<String>,
}

impl Record {
    fn json(&self) -> Value {
        let mut record = serde_json::Map::new();
        record.insert("experiment".into(), json!(self.point.experiment().name()));
        record.insert("model".into(), json!(self.model.to_string()));
        for (k, v) in self.point.params() {
            record.insert(k.into(), v);
        }
        let round = |v: f64, digits: i32| {
            let scale = 10f64.powi(digits);
            json!((v * scale).round() / scale)
        };
        record.insert("rounds".into(), json!(self.rounds.len()));
        record.insert("throughput".into(), round(self.throughput, 1));
        let (p50, p99) = (
            self.latencies.quantile_ms(0.5),
            self.latencies.quantile_ms(0.99),
        );
        // NaN is not JSON: a point whose calls all failed has no latency.
        for (k, v) in [("p50_ms", p50), ("p99_ms", p99)] {
            record.insert(
                k.into(),
                if v.is_finite() {
                    round(v, 3)
                } else {
                    Value::Null
                },
            );
        }
        record.insert("errors".into(), json!(self.errors));
        Value::Object(record)
    }
}

/// Runs `point` against a fresh `model` server.
/// The server is shut down on a thread added to `reaper`.
fn measure(
    point: &Point,
    model: ConcurrencyModel,
    reaper: &mut Vec<std::thread::JoinHandle<()>>,
) -> Result<Record, String> {
    let server = Server::start(model, point)?;
    let n = clients(point);
    let start = Instant::now();
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|c| {
                let iors = &server.iors;
                s.spawn(move || {
                    let mut tally = Tally::new();
                    client_run(point, c, iors, &mut tally);
                    tally
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    let mut t = Tally::new();
                    t.error::<()>("a client thread panicked".into());
                    t
                })
            })
            .collect()
    });
    let elapsed = start.elapsed().max(Duration::from_nanos(1));
    // Every client connected to the server (each connection takes an
    // accept): none of the calls measured went around its transport.
    let accepts = server.orb.server_stats().map_or(0, |s| s.accept_calls);
    if accepts < n as u64 {
        return Err(format!(
            "the {model} server made {accepts} accept calls for {n} clients: \
             the calls did not go over IIOP"
        ));
    }
    // A pool's threads may take a while to notice the shutdown: let them,
    // on another thread, while the next point runs.
    reaper.push(std::thread::spawn(move || drop(server)));
    let mut record = Record {
        point: *point,
        model,
        rounds: Vec::new(),
        throughput: 0.0,
        latencies: Latencies::new(),
        errors: 0,
        first_error: None,
    };
    let mut requests = 0;
    for t in tallies {
        record.latencies.merge(&t.latencies);
        requests += t.requests;
        record.errors += t.errors;
        if record.first_error.is_none() {
            record.first_error = t.first_error;
        }
    }
    record.throughput = requests as f64 / elapsed.as_secs_f64();
    record.rounds.push(record.throughput);
    Ok(record)
}

impl Record {
    /// Adds another round of the same point and model.
    fn add_round(&mut self, other: Record) {
        self.rounds.extend(other.rounds);
        self.latencies.merge(&other.latencies);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        let mut sorted = self.rounds.clone();
        sorted.sort_by(f64::total_cmp);
        self.throughput = sorted[sorted.len() / 2];
    }
}

/// The models to compare: `--models`, or the ORB's whole menu.
fn models(args: &ThreadingArgs) -> Result<Vec<ConcurrencyModel>, String> {
    if args.models.is_empty() {
        return Ok(ConcurrencyModel::menu(args.threads));
    }
    args.models
        .iter()
        .map(|m| {
            m.trim()
                .parse()
                .map_err(|why| format!("bad model {m:?}: {why}"))
        })
        .collect()
}

/// The charts: per experiment, one line per model (and per the point's
/// second parameter), throughput against the first parameter; `demux`
/// shows the median latency. `models` ran at each point: each setting's
/// lines come in a group of that many.
fn panels(records: &[Record], experiments: &[Experiment], models: usize) -> Vec<Panel> {
    experiments
        .iter()
        .map(|&experiment| {
            let mut series: Vec<Series> = Vec::new();
            for r in records
                .iter()
                .filter(|r| r.point.experiment() == experiment)
            {
                let (x, line) = r.point.plot_position();
                let name = if line.is_empty() {
                    r.model.to_string()
                } else {
                    format!("{} {line}", r.model)
                };
                let y = if experiment == Experiment::Demux {
                    r.latencies.quantile_ms(0.5) * 1000.0
                } else {
                    r.throughput
                };
                match series.iter_mut().find(|s| s.name == name) {
                    Some(s) => s.points.push((x, y)),
                    None => series.push(Series {
                        name,
                        points: vec![(x, y)],
                    }),
                }
            }
            let (x_label, y_label) = match experiment {
                Experiment::Conversation => ("requests per conversation", "requests/s"),
                Experiment::Contention => ("clients", "requests/s"),
                Experiment::Traffic => ("requests per conversation", "requests/s"),
                Experiment::Train => ("requests per object", "requests/s"),
                Experiment::Demux => ("log10(active objects)", "p50 µs"),
                Experiment::Locality => ("clients", "requests/s"),
            };
            Panel {
                caption: experiment.name().into(),
                x_label: x_label.into(),
                y_label: y_label.into(),
                series,
                // Each setting's line for every model: a model keeps its
                // colour across settings.
                group: Some(models),
            }
        })
        .collect()
}

/// Runs `armillary bench threading`.
pub fn run(args: ThreadingArgs) -> Result<ExitCode, String> {
    let pinning = match crate::bench_report::pin(&args.cpus)? {
        crate::bench_report::Pinning::RanPinned(code) => return Ok(code),
        crate::bench_report::Pinning::Here(pinning) => pinning,
    };
    let models = models(&args)?;
    if models.is_empty() {
        return Err("no models to compare".into());
    }
    let experiments: Vec<Experiment> = if args.experiments.is_empty() {
        Experiment::ALL.to_vec()
    } else {
        let mut chosen = args.experiments.clone();
        chosen.dedup();
        chosen
    };
    let points: Vec<Point> = experiments
        .iter()
        .flat_map(|&e| Point::all(e, args.size))
        .collect();
    let rounds = args.rounds.max(1);
    eprintln!(
        "{} points × {} models ({}) × {rounds} rounds; {pinning}, {} CPUs",
        points.len(),
        models.len(),
        models
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let bar = progress((points.len() * models.len() * rounds) as u64, "");
    let mut reaper = Vec::new();
    // Warm up every model (first connections, thread stacks, allocator)
    // with a small conversation whose figures are not kept.
    let warm_up = Point::Conversation {
        clients: 2,
        chain: 20,
        conversations: 1,
    };
    for &model in &models {
        bar.set_message(format!("warming up {model}"));
        measure(&warm_up, model, &mut reaper)?;
    }
    let mut records: Vec<Record> = Vec::new();
    for point in &points {
        let first = records.len();
        for round in 0..rounds {
            for (i, &model) in models.iter().enumerate() {
                bar.set_message(format!(
                    "{} {} {model} (round {})",
                    point.experiment().name(),
                    point.label(),
                    round + 1
                ));
                let measured = measure(point, model, &mut reaper)?;
                if round == 0 {
                    records.push(measured);
                } else {
                    records[first + i].add_round(measured);
                }
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    for server in reaper {
        let _ = server.join();
    }

    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            vec![
                r.point.experiment().name().into(),
                r.point.label(),
                r.model.to_string(),
                format!("{:.0}", r.throughput),
                format!("{:.3}", r.latencies.quantile_ms(0.5)),
                format!("{:.3}", r.latencies.quantile_ms(0.99)),
                r.errors.to_string(),
            ]
        })
        .collect();
    print_table(
        3,
        &[
            "experiment",
            "point",
            "model",
            "requests/s",
            "p50 ms",
            "p99 ms",
            "errors",
        ],
        &rows,
    );
    for r in records.iter().filter(|r| r.errors > 0) {
        eprintln!(
            "warning: {} {} {}: {} errors, the first: {}",
            r.point.experiment().name(),
            r.point.label(),
            r.model,
            r.errors,
            r.first_error.as_deref().unwrap_or("?")
        );
    }
    if let Some(path) = &args.json {
        write_json(
            path,
            &Value::Array(records.iter().map(Record::json).collect()),
        )?;
    }
    if let Some(path) = &args.plot {
        plot_lines_svg(
            path,
            &panels(&records, &experiments, models.len()),
            None,
            &[],
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_visit_objects_in_trains_or_in_turn() {
        let train: Vec<usize> = (0..6).map(|i| Pattern::Train.target(i, 6, 3)).collect();
        assert_eq!(train, [0, 0, 1, 1, 2, 2]);
        let rr: Vec<usize> = (0..6)
            .map(|i| Pattern::RoundRobin.target(i, 6, 3))
            .collect();
        assert_eq!(rr, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn the_full_sizes_are_the_papers() {
        let chains: Vec<usize> = Point::all(Experiment::Conversation, Size::Full)
            .iter()
            .map(|p| match p {
                Point::Conversation { chain, clients, .. } => {
                    assert_eq!(*clients, 10);
                    *chain
                }
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(chains, (1..=10).map(|i| i * 10).collect::<Vec<_>>());
        let demux = Point::all(Experiment::Demux, Size::Full);
        let objects: Vec<usize> = demux.iter().map(Point::objects).collect();
        assert_eq!(objects, [1, 1, 1000, 1000, 100_000, 100_000]);
    }
}
