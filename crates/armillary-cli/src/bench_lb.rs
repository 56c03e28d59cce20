//! `armillary bench lb`: the Visibroker study's load-balancing
//! experiment (§5.3.3): clients against one server, and against three
//! replicas of it behind a locator (there Visibroker's Smart Agent, here
//! `armillary lb serve`, once with each policy).
//!
//! Every server is an `armillary lb worker` process (`lb_worker`): each
//! request holds the server's one backend for `--service-us`, asleep —
//! the study's servers went through one mutex-protected database
//! connection; sleeping keeps the machine's two CPUs out of what is
//! measured (see `lb_worker` for why). One server can then serve at most
//! one request per service time; three replicas three. The locators are
//! two `armillary lb serve` processes (round robin and least loaded),
//! with which every worker registers; "one server" is the first worker,
//! called directly.
//!
//! The clients are threads of this process, each with an ORB of its own
//! (so its own connections), each making `--calls` synchronous `work`
//! calls per point and round. An Armillary client asks the locator again
//! on every call (it does not keep a forward), so every call through the
//! group pays a round trip to the locator too. For each number of clients
//! in `--clients` the three setups take turns, round after round; a point
//! reports the median round's throughput (calls/s) and the percentiles of
//! all its calls' latencies, and which replica served how many calls.
//!
//! Output: a table on stdout, a progress bar on stderr, `--json FILE`
//! (`single`, `replicated` and `replicated_least_loaded`, each with
//! `calls_per_s`, `p50_ms`, `p99_ms`, `errors` and `per_replica` at the
//! largest number of clients, the paper's ten; `points`, one record per
//! setup and number of clients) and `--plot FILE.svg` (throughput,
//! speed-up over one server, p50 and p99 latency against the number of
//! clients).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use armillary::config::OrbConfig;
use armillary::{Orb, WaitForCompletion};
use armillary_lb::load_balancing::Locator;
use clap::Args;
use serde_json::{json, Value};

use crate::bench_process::{wait_for_file_from, Peer};
use crate::bench_report::{
    pin, plot_lines_svg, print_table, progress, write_json, Latencies, Panel, Pinning, Series,
};
use crate::lb_worker::Worker;

/// The group the workers register in.
const GROUP: &str = "bench";

/// `armillary bench lb …`
#[derive(Debug, Args)]
pub struct LbBenchOptions {
    /// The numbers of clients to measure, comma-separated; the largest
    /// (the paper's 10) is the one the JSON's headline figures are of.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,6,8,10")]
    clients: Vec<usize>,
    /// Replicas behind the locator.
    #[arg(long, default_value_t = 3)]
    replicas: usize,
    /// Service time: how long each request holds its server's one
    /// backend, in microseconds.
    #[arg(long, default_value_t = 1000)]
    service_us: u32,
    /// Calls each client makes per point and round.
    #[arg(long, default_value_t = 100)]
    calls: usize,
    /// Rounds: the setups take turns in each; the median round's
    /// throughput is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// CPUs to pin every process to (taskset list, e.g. `0,1`), or
    /// `none`.
    #[arg(long, default_value = "none")]
    cpus: String,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the results into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// What the clients call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// The first worker, directly.
    Single,
    /// The group, through the round-robin locator.
    RoundRobin,
    /// The group, through the least-loaded locator.
    LeastLoaded,
}

impl Setup {
    const ALL: [Setup; 3] = [Setup::Single, Setup::RoundRobin, Setup::LeastLoaded];

    /// Its key in the JSON.
    fn key(self) -> &'static str {
        match self {
            Setup::Single => "single",
            Setup::RoundRobin => "replicated",
            Setup::LeastLoaded => "replicated_least_loaded",
        }
    }

    /// Its name in the table.
    fn label(self, replicas: usize) -> String {
        match self {
            Setup::Single => "one server".to_owned(),
            Setup::RoundRobin => format!("{replicas} replicas, round robin"),
            Setup::LeastLoaded => format!("{replicas} replicas, least loaded"),
        }
    }

    /// Its name in the plot's legends (the captions say how many
    /// replicas).
    fn short_label(self) -> &'static str {
        match self {
            Setup::Single => "one server",
            Setup::RoundRobin => "round robin",
            Setup::LeastLoaded => "least loaded",
        }
    }
}

/// What one setup with one number of clients measured, over the rounds.
#[derive(Debug, Clone)]
struct PointResult {
    setup: Setup,
    clients: usize,
    /// Throughput of each round.
    rounds: Vec<f64>,
    latencies: Latencies,
    /// Calls each replica (by name) answered.
    per_replica: BTreeMap<String, u64>,
    errors: u64,
}

impl PointResult {
    fn calls_per_s(&self) -> f64 {
        let mut r = self.rounds.clone();
        r.sort_by(f64::total_cmp);
        r.get(r.len() / 2).copied().unwrap_or(f64::NAN)
    }

    fn to_json(&self) -> Value {
        let r2 = |x: f64| (x * 100.0).round() / 100.0;
        json!({
            "setup": self.setup.key(),
            "clients": self.clients,
            "calls_per_s": r2(self.calls_per_s()),
            "p50_ms": r2(self.latencies.quantile_ms(0.5)),
            "p99_ms": r2(self.latencies.quantile_ms(0.99)),
            "errors": self.errors,
            "per_replica": self.per_replica,
        })
    }
}

/// Runs `armillary bench lb`.
pub fn run(options: LbBenchOptions) -> Result<ExitCode, String> {
    if options.clients.is_empty() || options.clients.contains(&0) {
        return Err("--clients needs numbers of clients of at least 1".into());
    }
    if options.replicas == 0 || options.calls == 0 {
        return Err("--replicas and --calls must be at least 1".into());
    }
    let pinning = match pin(&options.cpus)? {
        Pinning::RanPinned(code) => return Ok(code),
        Pinning::Here(pinning) => pinning,
    };
    eprintln!("pinning: {pinning}");
    let dir = std::env::temp_dir().join(format!("armillary-bench-lb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let result = measure(&options, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    let points = result?;
    report(&options, &pinning, &points)?;
    Ok(ExitCode::SUCCESS)
}

/// The servers: two locators and the workers registered with both.
struct Servers {
    _processes: Vec<Peer>,
    /// The IOR each setup's clients call.
    targets: [String; 3],
}

fn start_servers(options: &LbBenchOptions, dir: &Path) -> Result<Servers, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut processes = Vec::new();
    let mut locators = Vec::new();
    for policy in ["round-robin", "least-loaded"] {
        let ior_file = dir.join(format!("lb-{policy}.ior"));
        let mut locator = Peer(
            Command::new(&exe)
                .args(["lb", "serve", "--endpoint", "iiop://127.0.0.1:0"])
                .args(["--policy", policy, "--ior-file"])
                .arg(&ior_file)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start the {policy} locator: {e}"))?,
        );
        let ior = wait_for_file_from(&mut locator, &ior_file)
            .map_err(|e| format!("the {policy} locator did not start: {e}"))?;
        processes.push(locator);
        locators.push(ior);
    }
    let mut first_worker = None;
    for n in 1..=options.replicas {
        let ior_file = dir.join(format!("w{n}.ior"));
        let mut worker = Command::new(&exe);
        worker.args(["lb", "worker", "--group", GROUP, "--name", &format!("w{n}")]);
        for locator in &locators {
            worker.args(["--lb", locator]);
        }
        let mut worker = Peer(
            worker
                .args(["--report-ms", "50", "--ior-file"])
                .arg(&ior_file)
                .spawn()
                .map_err(|e| format!("cannot start worker w{n}: {e}"))?,
        );
        let ior = wait_for_file_from(&mut worker, &ior_file)
            .map_err(|e| format!("worker w{n} did not start: {e}"))?;
        processes.push(worker);
        first_worker.get_or_insert(ior);
    }
    let orb = Orb::with_config(OrbConfig::default()).map_err(|e| e.to_string())?;
    let group_of = |locator: &str| -> Result<String, String> {
        let locator = Locator::from_object(
            orb.string_to_object(locator)
                .map_err(|e| format!("bad locator reference: {e}"))?,
        );
        let group = locator
            .group_reference(GROUP)
            .map_err(|e| format!("the locator has no group {GROUP}: {e:?}"))?;
        Ok(orb.object_to_string(&group))
    };
    let targets = [
        first_worker.unwrap_or_default(),
        group_of(&locators[0])?,
        group_of(&locators[1])?,
    ];
    let _ = orb.shutdown(WaitForCompletion::No);
    Ok(Servers {
        _processes: processes,
        targets,
    })
}

fn measure(options: &LbBenchOptions, dir: &Path) -> Result<Vec<PointResult>, String> {
    let servers = start_servers(options, dir)?;
    let most = options.clients.iter().copied().max().unwrap_or(1);
    let orbs: Vec<Orb> = (0..most)
        .map(|_| Orb::with_config(OrbConfig::default()).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut points: Vec<PointResult> = Vec::new();
    for &clients in &options.clients {
        for setup in Setup::ALL {
            points.push(PointResult {
                setup,
                clients,
                rounds: Vec::new(),
                latencies: Latencies::new(),
                per_replica: BTreeMap::new(),
                errors: 0,
            });
        }
    }
    let bar = progress((options.rounds.max(1) * points.len()) as u64, " points");
    for round in 0..options.rounds.max(1) {
        for point in points.iter_mut() {
            bar.set_message(format!(
                "round {} {} clients, {}",
                round + 1,
                point.clients,
                point.setup.label(options.replicas)
            ));
            let target = &servers.targets[Setup::ALL
                .iter()
                .position(|s| *s == point.setup)
                .unwrap_or(0)];
            run_point(&orbs[..point.clients], target, options, point)?;
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    for orb in orbs {
        let _ = orb.shutdown(WaitForCompletion::No);
    }
    Ok(points)
}

/// One round of one point: each client warms up with one call, then all
/// start together and make `options.calls` calls.
fn run_point(
    orbs: &[Orb],
    target: &str,
    options: &LbBenchOptions,
    point: &mut PointResult,
) -> Result<(), String> {
    let start = Barrier::new(orbs.len() + 1);
    let micros = i32::try_from(options.service_us).unwrap_or(i32::MAX);
    let (outcomes, elapsed) = std::thread::scope(|scope| {
        let clients: Vec<_> = orbs
            .iter()
            .map(|orb| {
                let start = &start;
                scope.spawn(move || -> Result<ClientOutcome, String> {
                    let warmed = orb
                        .string_to_object(target)
                        .map_err(|e| format!("bad target reference: {e}"))
                        .map(Worker::from_object)
                        .and_then(|worker| match worker.work(0) {
                            Ok(_) => Ok(worker),
                            Err(e) => Err(format!("the warm-up call failed: {e}")),
                        });
                    // Every client reaches the start, ready or not.
                    start.wait();
                    let worker = warmed?;
                    let mut outcome = ClientOutcome::default();
                    for _ in 0..options.calls {
                        let t = Instant::now();
                        match worker.work(micros) {
                            Ok(name) => {
                                outcome.latencies.record(t.elapsed());
                                *outcome.per_replica.entry(name).or_default() += 1;
                            }
                            Err(_) => outcome.errors += 1,
                        }
                    }
                    Ok(outcome)
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let outcomes: Vec<_> = clients
            .into_iter()
            .map(|c| c.join().unwrap_or_else(|_| Err("a client panicked".into())))
            .collect();
        (outcomes, began.elapsed())
    });
    let mut calls = 0u64;
    for outcome in outcomes {
        let outcome = outcome?;
        point.latencies.merge(&outcome.latencies);
        point.errors += outcome.errors;
        for (name, n) in outcome.per_replica {
            calls += n;
            *point.per_replica.entry(name).or_default() += n;
        }
    }
    point
        .rounds
        .push(calls as f64 / elapsed.max(Duration::from_micros(1)).as_secs_f64());
    Ok(())
}

/// What one client measured in one round.
struct ClientOutcome {
    latencies: Latencies,
    per_replica: BTreeMap<String, u64>,
    errors: u64,
}

impl Default for ClientOutcome {
    fn default() -> Self {
        ClientOutcome {
            latencies: Latencies::new(),
            per_replica: BTreeMap::new(),
            errors: 0,
        }
    }
}

fn report(options: &LbBenchOptions, pinning: &str, points: &[PointResult]) -> Result<(), String> {
    let header = [
        "setup",
        "clients",
        "calls/s",
        "p50 ms",
        "p99 ms",
        "errors",
        "calls per replica",
    ];
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.setup.label(options.replicas),
                p.clients.to_string(),
                format!("{:.0}", p.calls_per_s()),
                format!("{:.2}", p.latencies.quantile_ms(0.5)),
                format!("{:.2}", p.latencies.quantile_ms(0.99)),
                p.errors.to_string(),
                p.per_replica
                    .iter()
                    .map(|(name, n)| format!("{name} {n}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ]
        })
        .collect();
    // The setup names on the left; the calls per replica are words too,
    // but last, so aligned right they still read.
    print_table(1, &header, &rows);
    let most = options.clients.iter().copied().max().unwrap_or(1);
    let headline = |setup: Setup| {
        points
            .iter()
            .find(|p| p.setup == setup && p.clients == most)
    };
    if let (Some(single), Some(replicated)) = (headline(Setup::Single), headline(Setup::RoundRobin))
    {
        println!(
            "{most} clients: {} replicas behind the locator serve {:.2} x the calls/s of one server \
             (capacity: {:.0} calls/s each)",
            options.replicas,
            replicated.calls_per_s() / single.calls_per_s(),
            1e6 / f64::from(options.service_us.max(1)),
        );
    }
    if let Some(path) = &options.json {
        let mut result = json!({
            "benchmark": "lb",
            "clients": options.clients,
            "replicas": options.replicas,
            "service_us": options.service_us,
            "calls_per_client": options.calls,
            "rounds": options.rounds.max(1),
            "pinning": pinning,
            "capacity_calls_per_s": {
                "single": 1e6 / f64::from(options.service_us.max(1)),
                "replicated": options.replicas as f64 * 1e6 / f64::from(options.service_us.max(1)),
            },
            "points": points.iter().map(PointResult::to_json).collect::<Vec<_>>(),
        });
        for setup in Setup::ALL {
            if let Some(p) = headline(setup) {
                result[setup.key()] = p.to_json();
            }
        }
        write_json(path, &result)?;
    }
    if let Some(path) = &options.plot {
        plot(path, options, points)?;
    }
    Ok(())
}

fn plot(path: &Path, options: &LbBenchOptions, points: &[PointResult]) -> Result<(), String> {
    // Every panel has the three setups in the same order, so each keeps
    // its colour throughout.
    let series = |value: &dyn Fn(&PointResult) -> Option<f64>| -> Vec<Series> {
        Setup::ALL
            .iter()
            .map(|&setup| Series {
                name: setup.short_label().to_owned(),
                points: points
                    .iter()
                    .filter(|p| p.setup == setup)
                    .filter_map(|p| Some((p.clients as f64, value(p)?)))
                    .collect(),
            })
            .collect()
    };
    let single: BTreeMap<usize, f64> = points
        .iter()
        .filter(|p| p.setup == Setup::Single)
        .map(|p| (p.clients, p.calls_per_s()))
        .collect();
    let mut speed_up = series(&|p| Some(p.calls_per_s() / single.get(&p.clients)?));
    speed_up.push(Series {
        name: "ideal".to_owned(),
        points: options
            .clients
            .iter()
            .map(|&c| (c as f64, c.min(options.replicas) as f64))
            .collect(),
    });
    let replicas = options.replicas;
    let panel = |caption: String, y_label: &str, series: Vec<Series>| Panel {
        caption,
        x_label: "clients".to_owned(),
        y_label: y_label.to_owned(),
        series,
        group: None,
    };
    let panels = [
        panel(
            format!("throughput: one server, {replicas} replicas behind the locator"),
            "calls/s",
            series(&|p| Some(p.calls_per_s())),
        ),
        panel(
            "speed-up over one server".to_owned(),
            "x one server",
            speed_up,
        ),
        panel(
            "median latency".to_owned(),
            "p50 ms",
            series(&|p| Some(p.latencies.quantile_ms(0.5))),
        ),
        panel(
            "tail latency".to_owned(),
            "p99 ms",
            series(&|p| Some(p.latencies.quantile_ms(0.99))),
        ),
    ];
    plot_lines_svg(path, &panels, Some("ideal"), &[])
}
