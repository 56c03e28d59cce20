//! `armillary bench middle-tier`: the AMH paper's section 5
//! (`amh-asynchronous-method-handling-tao`): source clients call a middle
//! tier, which calls a sink that answers after a delay; the middle tier's
//! throughput under each server model.
//!
//! Three kinds of processes per point, all children of this one (see
//! `middle_tier_peers` and `middle_tier_clients`): the sink (`bench
//! serve-sink`, AMH with one timer thread, so that it holds any number of
//! delayed requests), the middle tier (`bench serve-middle-tier`, one of
//! the models of `middle_tier_model`: a synchronous servant that waits
//! for the sink under an `-ORBConcurrency` model, or an AMH servant that
//! forwards with an AMI callback) and the clients (`bench
//! drive-middle-tier`, one process driving every client of the point with
//! AMI from a few threads, each client its own connection, sending its
//! next request when its reply comes). A point is one (model, clients,
//! delay); each point gets fresh processes. The models take turns at each
//! point. `direct` in `--models` runs the clients against the sink with
//! no middle tier: how close to the ideal the clients and the sink alone
//! come on this machine, the ceiling of every middle tier.
//!
//! Throughput is the paper's: the replies of the window in which every
//! client is active (from the moment each has had its first reply to the
//! moment the first has had its last) per second of it. The ideal is
//! clients ÷ delay (each client has one request at the sink at a time).
//!
//! Points (`--clients`, `--delay-ms`): by default the paper's two
//! experiments, client scalability (1 … 400 clients, sink delay 40 ms)
//! and latency scalability (150 clients, delay 0 … 160 ms); with either
//! option, every combination of the two lists (the other defaulting to
//! 40 ms, or to 150 clients).
//!
//! A point whose clients are not done by a deadline (5 s plus twice
//! what the ideal takes) is cut there and measured up to the cut
//! (`cut_short`); a child that dies makes an error record; the bench goes
//! on with the next point.
//!
//! Output: a table on stdout, a progress bar on stderr, `--json FILE` (an
//! array, one record per point: `model`, `clients`, `delay_ms`,
//! `requests`, `throughput` (replies/s), `ideal` (null at delay 0),
//! `p50_ms`, `p99_ms`, `errors`, `first_error`, `answered`, `planned`,
//! `window_s`, `windowed`, `cut_short`, `connections` (the middle tier's
//! established client connections at the end), `middle_tier_exit`, and
//! the CPUs busy on average while the clients ran: `cpu_middle_tier`,
//! `cpu_sink`, `cpu_clients` and `cpu_others`, every other process on the
//! machine, from `/proc`, to tell a slow model from a busy machine) and
//! `--plot FILE.svg` (throughput against clients, and against delay, one
//! line per model and the ideal; the throughput against the delay on a
//! logarithmic axis, as it spans two orders of magnitude). `--replot
//! FILE.json --plot FILE.svg` draws an earlier run's records again,
//! measuring nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use crate::bench_process::{machine_busy_seconds, process_cpu_seconds, wait_for_file_from, Peer};
use crate::bench_report::{plot_lines_svg, print_table, progress, write_json, Panel, Series};
use crate::middle_tier_clients::DriverReport;
use crate::middle_tier_model::{Contender, MiddleTierModel};

/// Requests per client by default. The paper's 1,000 would take 160 s
/// per point at a 160 ms delay; 100 keeps the default run (the paper's
/// five models, both experiments) under ten minutes on 2 CPUs.
const DEFAULT_REQUESTS: usize = 100;

/// The client scalability experiment (the paper's Figure 8): clients …
const CLIENT_SCALABILITY: [usize; 9] = [1, 50, 100, 150, 200, 250, 300, 350, 400];
/// … at this sink delay.
const CLIENT_SCALABILITY_DELAY_MS: u64 = 40;
/// The latency scalability experiment (Figure 10): delays …
const LATENCY_SCALABILITY: [u64; 6] = [0, 10, 20, 40, 80, 160];
/// … with this many clients.
const LATENCY_SCALABILITY_CLIENTS: usize = 150;

/// `armillary bench middle-tier …`
#[derive(Debug, Args)]
pub struct MiddleTierOptions {
    /// The middle tiers, comma-separated: tpc, reactive, pool:N, amh,
    /// amh-pool:N, amh:MODEL, or any -ORBConcurrency model (synchronous
    /// servant); `direct` for none (the clients call the sink: what the
    /// clients and the sink alone reach). Default: the paper's five,
    /// tpc,reactive,pool:2,amh,amh-pool:2.
    #[arg(long, value_delimiter = ',')]
    models: Vec<Contender>,
    /// Numbers of clients, comma-separated (default: the paper's
    /// experiments, see above).
    #[arg(long, value_delimiter = ',')]
    clients: Vec<usize>,
    /// Sink delays in milliseconds, comma-separated (default: the
    /// paper's experiments).
    #[arg(long = "delay-ms", value_delimiter = ',')]
    delay_ms: Vec<u64>,
    /// Requests per client (the paper made 1,000; the default keeps the
    /// default run under ten minutes).
    #[arg(long, default_value_t = DEFAULT_REQUESTS)]
    requests: usize,
    /// Write one JSON record per point to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the throughputs into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Measure nothing: draw the records of this earlier `--json` file
    /// into the `--plot` file.
    #[arg(long, requires = "plot")]
    replot: Option<PathBuf>,
}

/// One point: this many clients, this sink delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Point {
    clients: usize,
    delay_ms: u64,
}

impl Point {
    /// Requests per second if the middle tier added nothing: each client
    /// has one request at the sink at a time. None at delay 0.
    fn ideal(self) -> Option<f64> {
        (self.delay_ms > 0).then(|| self.clients as f64 * 1000.0 / self.delay_ms as f64)
    }

    /// How long the clients may take: 5 s plus twice what `requests`
    /// requests per client take at the ideal rate.
    fn deadline(self, requests: usize) -> Duration {
        Duration::from_secs(5) + Duration::from_millis(2 * requests as u64 * self.delay_ms)
    }
}

/// The points of `--clients` and `--delay-ms`.
fn points(clients: &[usize], delays: &[u64]) -> Vec<Point> {
    let mut points = Vec::new();
    let mut add = |clients: usize, delay_ms: u64| {
        let point = Point {
            clients: clients.max(1),
            delay_ms,
        };
        if !points.contains(&point) {
            points.push(point);
        }
    };
    if clients.is_empty() && delays.is_empty() {
        for c in CLIENT_SCALABILITY {
            add(c, CLIENT_SCALABILITY_DELAY_MS);
        }
        for d in LATENCY_SCALABILITY {
            add(LATENCY_SCALABILITY_CLIENTS, d);
        }
        return points;
    }
    let clients = if clients.is_empty() {
        &[LATENCY_SCALABILITY_CLIENTS][..]
    } else {
        clients
    };
    let delays = if delays.is_empty() {
        &[CLIENT_SCALABILITY_DELAY_MS][..]
    } else {
        delays
    };
    for &d in delays {
        for &c in clients {
            add(c, d);
        }
    }
    points
}

/// The measurement of one point with one model.
struct Record {
    model: Contender,
    point: Point,
    requests: usize,
    /// What the clients measured; `None` when the driver died.
    report: Option<DriverReport>,
    /// Why there is no report, or what went wrong besides.
    failure: Option<String>,
    /// How the middle tier ended, if it did before the clients were done.
    middle_tier_exit: Option<String>,
    /// Where the CPU time went while the clients ran.
    cpu: Option<CpuUse>,
}

/// CPUs busy on average while a point's clients ran (1.0: one CPU all
/// the time), by whom.
#[derive(Debug, Clone, Copy)]
struct CpuUse {
    middle_tier: f64,
    sink: f64,
    clients: f64,
    /// Every other process on the machine (and the kernel's own work).
    others: f64,
}

/// CPU seconds of `peer` so far (0 once it is gone).
fn cpu_of(peer: &Peer) -> f64 {
    process_cpu_seconds(&peer.0.id().to_string()).unwrap_or(0.0)
}

impl Record {
    fn throughput(&self) -> f64 {
        self.report.as_ref().map_or(0.0, |r| r.throughput)
    }

    fn errors(&self) -> u64 {
        match &self.report {
            Some(r) => r.errors,
            // Nothing is known to have succeeded.
            None => (self.point.clients * self.requests) as u64,
        }
    }

    fn first_error(&self) -> Option<String> {
        self.failure
            .clone()
            .or_else(|| self.report.as_ref().and_then(|r| r.first_error.clone()))
    }

    fn json(&self) -> Value {
        let round = |v: f64, digits: i32| {
            let scale = 10f64.powi(digits);
            (v * scale).round() / scale
        };
        let r = self.report.as_ref();
        json!({
            "model": self.model.to_string(),
            "clients": self.point.clients,
            "delay_ms": self.point.delay_ms,
            "requests": self.requests,
            "throughput": round(self.throughput(), 1),
            "ideal": self.point.ideal().map(|v| round(v, 1)),
            "p50_ms": r.and_then(|r| r.p50_ms).map(|v| round(v, 3)),
            "p99_ms": r.and_then(|r| r.p99_ms).map(|v| round(v, 3)),
            "errors": self.errors(),
            "first_error": self.first_error(),
            "answered": r.map_or(0, |r| r.answered),
            "planned": (self.point.clients * self.requests) as u64,
            "window_s": r.map(|r| round(r.seconds, 3)),
            "windowed": r.is_some_and(|r| r.windowed),
            "cut_short": r.is_none_or(|r| r.cut_short),
            "connections": r.and_then(|r| r.connections),
            "middle_tier_exit": self.middle_tier_exit,
            "cpu_middle_tier": self.cpu.map(|c| round(c.middle_tier, 2)),
            "cpu_sink": self.cpu.map(|c| round(c.sink, 2)),
            "cpu_clients": self.cpu.map(|c| round(c.clients, 2)),
            "cpu_others": self.cpu.map(|c| round(c.others, 2)),
        })
    }
}

/// Starts `armillary bench ARGS`, its standard error into `log`.
fn start(args: &[&str], log: &Path, stdout: Stdio) -> Result<Peer, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let log = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    Command::new(exe)
        .arg("bench")
        .args(args)
        .stdout(stdout)
        .stderr(log)
        .spawn()
        .map(Peer)
        .map_err(|e| format!("cannot start `armillary bench {}`: {e}", args[0]))
}

/// The last lines of a child's log, for an error message.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" / ")
}

/// Runs one point with one model in fresh processes, in `dir`.
fn measure(model: Contender, point: Point, requests: usize, dir: &Path) -> Result<Record, String> {
    let mut record = Record {
        model,
        point,
        requests,
        report: None,
        failure: None,
        middle_tier_exit: None,
        cpu: None,
    };
    let file = |name: &str| {
        let path = dir.join(name);
        let _ = std::fs::remove_file(&path);
        path
    };
    let (sink_ior, middle_ior) = (file("sink.ior"), file("middle.ior"));
    let (sink_log, middle_log, clients_log) =
        (file("sink.log"), file("middle.log"), file("clients.log"));
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut sink = start(
        &[
            "serve-sink",
            "--delay-ms",
            &point.delay_ms.to_string(),
            "--ior-file",
            &path(&sink_ior),
        ],
        &sink_log,
        Stdio::null(),
    )?;
    if let Err(e) = wait_for_file_from(&mut sink, &sink_ior) {
        record.failure = Some(format!(
            "the sink did not start: {e} {}",
            log_tail(&sink_log)
        ));
        return Ok(record);
    }
    // No middle tier: the clients call the sink.
    let (mut middle, target_ior) = match model {
        Contender::Direct => (None, sink_ior.clone()),
        Contender::Middle(model) => {
            let mut middle = start(
                &[
                    "serve-middle-tier",
                    "--model",
                    &model.to_string(),
                    "--sink-ior-file",
                    &path(&sink_ior),
                    "--ior-file",
                    &path(&middle_ior),
                ],
                &middle_log,
                Stdio::null(),
            )?;
            if let Err(e) = wait_for_file_from(&mut middle, &middle_ior) {
                record.failure = Some(format!(
                    "the middle tier did not start: {e} {}",
                    log_tail(&middle_log)
                ));
                return Ok(record);
            }
            (Some(middle), middle_ior.clone())
        }
    };
    let deadline = point.deadline(requests);
    let (started, busy_before) = (Instant::now(), machine_busy_seconds());
    let middle_cpu_now = |middle: &Option<Peer>| middle.as_ref().map_or(0.0, cpu_of);
    let (middle_before, sink_before) = (middle_cpu_now(&middle), cpu_of(&sink));
    let mut clients = start(
        &[
            "drive-middle-tier",
            "--ior-file",
            &path(&target_ior),
            "--clients",
            &point.clients.to_string(),
            "--requests",
            &requests.to_string(),
            "--deadline-ms",
            &deadline.as_millis().to_string(),
            "--stagger-ms",
            &point.delay_ms.to_string(),
        ],
        &clients_log,
        Stdio::piped(),
    )?;
    // The driver stops itself at the deadline; past it and a grace
    // period, it is killed (when `clients` is dropped).
    let kill_at = Instant::now() + deadline + Duration::from_secs(30);
    let status = loop {
        match clients.0.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < kill_at => std::thread::sleep(Duration::from_millis(20)),
            _ => break None,
        }
    };
    let ran = started.elapsed().as_secs_f64().max(1e-9);
    let (middle_cpu, sink_cpu) = (
        middle_cpu_now(&middle) - middle_before,
        cpu_of(&sink) - sink_before,
    );
    let busy = busy_before
        .zip(machine_busy_seconds())
        .map(|(before, after)| after - before);
    if let Some(Ok(Some(status))) = middle.as_mut().map(|m| m.0.try_wait()) {
        record.middle_tier_exit = Some(format!("{status} {}", log_tail(&middle_log)));
    }
    let mut out = String::new();
    if let Some(stdout) = clients.0.stdout.as_mut() {
        use std::io::Read;
        let _ = stdout.read_to_string(&mut out);
    }
    match status {
        Some(status) if status.success() => {
            match serde_json::from_str::<DriverReport>(out.trim()) {
                Ok(report) => {
                    let clients_cpu = report.cpu_seconds.unwrap_or(0.0);
                    record.cpu = busy.map(|busy| CpuUse {
                        middle_tier: middle_cpu / ran,
                        sink: sink_cpu / ran,
                        clients: clients_cpu / ran,
                        others: ((busy - middle_cpu - sink_cpu - clients_cpu) / ran).max(0.0),
                    });
                    record.report = Some(report);
                }
                Err(e) => record.failure = Some(format!("the clients' report is unreadable: {e}")),
            }
        }
        Some(status) => {
            record.failure = Some(format!(
                "the clients failed ({status}): {}",
                log_tail(&clients_log)
            ))
        }
        None => record.failure = Some("the clients did not finish; killed".into()),
    }
    Ok(record)
}

/// What a plot shows of one record.
struct Measured {
    model: Contender,
    point: Point,
    throughput: f64,
}

impl Measured {
    /// The plotted fields of a record of `--json`.
    fn from_json(record: &Value) -> Option<Measured> {
        Some(Measured {
            model: record["model"].as_str()?.parse().ok()?,
            point: Point {
                clients: usize::try_from(record["clients"].as_u64()?).ok()?,
                delay_ms: record["delay_ms"].as_u64()?,
            },
            throughput: record["throughput"].as_f64()?,
        })
    }
}

/// Draws `measured` into the SVG file `path`: the models' lines in their
/// order, the points' panels (see [`panels`]).
fn plot(path: &Path, measured: &[Measured]) -> Result<(), String> {
    let mut models: Vec<Contender> = Vec::new();
    let mut points: Vec<Point> = Vec::new();
    for m in measured {
        if !models.contains(&m.model) {
            models.push(m.model);
        }
        if !points.contains(&m.point) {
            points.push(m.point);
        }
    }
    let panels = panels(measured, &models, &points);
    // Against the delay, throughput spans two orders of magnitude.
    let log_y: Vec<usize> = panels
        .iter()
        .enumerate()
        .filter(|(_, p)| p.x_label.starts_with("sink delay"))
        .map(|(i, _)| i)
        .collect();
    plot_lines_svg(path, &panels, Some("ideal"), &log_y)
}

/// `--replot FILE.json`: draws the records of an earlier run's `--json`.
fn replot(json: &Path, svg: &Path) -> Result<ExitCode, String> {
    let text = std::fs::read_to_string(json)
        .map_err(|e| format!("cannot read {}: {e}", json.display()))?;
    let records: Vec<Value> =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let measured: Option<Vec<Measured>> = records.iter().map(Measured::from_json).collect();
    let measured =
        measured.ok_or_else(|| format!("{}: not a bench middle-tier record", json.display()))?;
    plot(svg, &measured)?;
    Ok(ExitCode::SUCCESS)
}

/// The charts: throughput against clients for each delay measured with
/// several client counts, and against the delay for each client count
/// measured with several delays; one line per model and the ideal.
fn panels(records: &[Measured], models: &[Contender], points: &[Point]) -> Vec<Panel> {
    let mut delays: Vec<u64> = points.iter().map(|p| p.delay_ms).collect();
    delays.dedup();
    delays.sort_unstable();
    delays.dedup();
    let mut client_counts: Vec<usize> = points.iter().map(|p| p.clients).collect();
    client_counts.sort_unstable();
    client_counts.dedup();
    let line = |name: String, pts: Vec<(f64, f64)>| Series { name, points: pts };
    let mut panels = Vec::new();
    for &delay in &delays {
        let at: Vec<&Point> = points.iter().filter(|p| p.delay_ms == delay).collect();
        if at.len() < 2 {
            continue;
        }
        let mut series: Vec<Series> = models
            .iter()
            .map(|m| {
                let mut pts: Vec<(f64, f64)> = records
                    .iter()
                    .filter(|r| r.model == *m && r.point.delay_ms == delay)
                    .map(|r| (r.point.clients as f64, r.throughput))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                line(m.to_string(), pts)
            })
            .collect();
        let mut ideal: Vec<(f64, f64)> = at
            .iter()
            .filter_map(|p| p.ideal().map(|i| (p.clients as f64, i)))
            .collect();
        ideal.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push(line("ideal".into(), ideal));
        panels.push(Panel {
            caption: format!("throughput vs clients, sink delay {delay} ms"),
            x_label: "clients".into(),
            y_label: "replies/s".into(),
            series,
            group: None,
        });
    }
    for &clients in &client_counts {
        let at: Vec<&Point> = points.iter().filter(|p| p.clients == clients).collect();
        if at.len() < 2 {
            continue;
        }
        let mut series: Vec<Series> = models
            .iter()
            .map(|m| {
                let mut pts: Vec<(f64, f64)> = records
                    .iter()
                    .filter(|r| r.model == *m && r.point.clients == clients)
                    .map(|r| (r.point.delay_ms as f64, r.throughput))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                line(m.to_string(), pts)
            })
            .collect();
        let mut ideal: Vec<(f64, f64)> = at
            .iter()
            .filter_map(|p| p.ideal().map(|i| (p.delay_ms as f64, i)))
            .collect();
        ideal.sort_by(|a, b| a.0.total_cmp(&b.0));
        series.push(line("ideal".into(), ideal));
        panels.push(Panel {
            caption: format!("throughput vs sink delay, {clients} clients (log scale)"),
            x_label: "sink delay (ms)".into(),
            y_label: "replies/s".into(),
            series,
            group: None,
        });
    }
    panels
}

/// Runs `armillary bench middle-tier`.
pub fn run(options: MiddleTierOptions) -> Result<ExitCode, String> {
    if let (Some(json), Some(svg)) = (&options.replot, &options.plot) {
        return replot(json, svg);
    }
    let models = if options.models.is_empty() {
        MiddleTierModel::papers()
            .into_iter()
            .map(Contender::Middle)
            .collect()
    } else {
        options.models.clone()
    };
    let points = points(&options.clients, &options.delay_ms);
    let requests = options.requests.max(1);
    eprintln!(
        "{} points × {} models ({}), {requests} requests per client, {} CPUs",
        points.len(),
        models.len(),
        models
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "),
        std::thread::available_parallelism().map_or(1, usize::from)
    );
    let dir = std::env::temp_dir().join(format!("armillary-middle-tier-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let bar = progress((points.len() * models.len()) as u64, " points");
    let mut records = Vec::new();
    for &point in &points {
        for &model in &models {
            bar.set_message(format!(
                "{model}, {} clients, delay {} ms",
                point.clients, point.delay_ms
            ));
            records.push(measure(model, point, requests, &dir)?);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let _ = std::fs::remove_dir_all(&dir);

    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            let ideal = r.point.ideal();
            let report = r.report.as_ref();
            let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
            let mut notes = Vec::new();
            if report.is_some_and(|r| r.cut_short) {
                notes.push("cut at deadline");
            }
            if report.is_some_and(|r| !r.windowed) {
                notes.push("whole run");
            }
            if r.report.is_none() {
                notes.push("no report");
            }
            if r.middle_tier_exit.is_some() {
                notes.push("middle tier died");
            }
            vec![
                r.model.to_string(),
                r.point.clients.to_string(),
                r.point.delay_ms.to_string(),
                format!("{:.0}", r.throughput()),
                ideal.map_or("-".into(), |i| format!("{i:.0}")),
                ideal.map_or("-".into(), |i| format!("{:.1}", 100.0 * r.throughput() / i)),
                ms(report.and_then(|r| r.p50_ms)),
                ms(report.and_then(|r| r.p99_ms)),
                r.errors().to_string(),
                report
                    .and_then(|r| r.connections)
                    .map_or("-".into(), |c| c.to_string()),
                r.cpu
                    .map_or("-".into(), |c| format!("{:.2}", c.middle_tier)),
                r.cpu.map_or("-".into(), |c| format!("{:.2}", c.others)),
                notes.join(", "),
            ]
        })
        .collect();
    print_table(
        1,
        &[
            "model",
            "clients",
            "delay ms",
            "replies/s",
            "ideal",
            "% ideal",
            "p50 ms",
            "p99 ms",
            "errors",
            "conns",
            "mid CPU",
            "other CPU",
            "notes",
        ],
        &rows,
    );
    for r in records
        .iter()
        .filter(|r| r.errors() > 0 || r.failure.is_some())
    {
        eprintln!(
            "warning: {} {} clients {} ms: {} errors, the first: {}",
            r.model,
            r.point.clients,
            r.point.delay_ms,
            r.errors(),
            r.first_error().as_deref().unwrap_or("?")
        );
    }
    if let Some(path) = &options.json {
        write_json(
            path,
            &Value::Array(records.iter().map(Record::json).collect()),
        )?;
    }
    if let Some(path) = &options.plot {
        let measured: Vec<Measured> = records
            .iter()
            .map(|r| Measured {
                model: r.model,
                point: r.point,
                throughput: r.throughput(),
            })
            .collect();
        plot(path, &measured)?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_points_are_the_papers_two_experiments() {
        let all = points(&[], &[]);
        let at_40: Vec<usize> = all
            .iter()
            .filter(|p| p.delay_ms == 40)
            .map(|p| p.clients)
            .collect();
        assert_eq!(at_40, CLIENT_SCALABILITY);
        let at_150: Vec<u64> = all
            .iter()
            .filter(|p| p.clients == 150)
            .map(|p| p.delay_ms)
            .collect();
        // 150 clients at 40 ms is in both, measured once.
        assert_eq!(at_150, [40, 0, 10, 20, 80, 160]);
        assert_eq!(all.len(), 9 + 6 - 1);
    }

    #[test]
    fn given_lists_combine_and_a_missing_one_takes_its_experiments_value() {
        let p = points(&[2, 4], &[5]);
        assert_eq!(
            p,
            [
                Point {
                    clients: 2,
                    delay_ms: 5
                },
                Point {
                    clients: 4,
                    delay_ms: 5
                }
            ]
        );
        assert!(points(&[7], &[]).iter().all(|p| p.delay_ms == 40));
        assert!(points(&[], &[7]).iter().all(|p| p.clients == 150));
        let ideal = Point {
            clients: 150,
            delay_ms: 160,
        }
        .ideal();
        assert_eq!(ideal, Some(937.5));
        assert_eq!(
            Point {
                clients: 1,
                delay_ms: 0
            }
            .ideal(),
            None
        );
    }
}
