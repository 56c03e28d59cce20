//! `armillary bench sync`: the synchronous path measured against omniORB
//! and raw TCP in one run (issue 23), on four figures:
//! - `latency`: `echo_longlong` round trips one at a time, each timed;
//!   p50 and p99 over every call of every round. Contenders: Armillary
//!   with its server in the default model (`thread-per-connection:64`) and in
//!   `thread-per-connection`, omniORB, and raw TCP (a ping-pong of the
//!   GIOP request's and reply's sizes).
//! - `throughput`: two-way `echo_longlong` calls per second from 1, 2 and
//!   8 client threads sharing one object reference, in a client process
//!   of their own. Contenders: Armillary (its default client and server)
//!   and omniORB (its default client: one call per connection at a time,
//!   so it opens a connection per busy thread, up to 5 to a server,
//!   `maxGIOPConnectionPerServer`; its default server, a thread per
//!   connection).
//! - `oneway`: oneway `ping` calls per second from one thread, timed from
//!   the first to the two-way `oneway_count` that shows the server has run
//!   them all (read again until it has, within a minute). Contenders:
//!   Armillary, omniORB, and raw TCP (messages of `ping`'s request size
//!   written one by one, the server acknowledging the turn's worth with
//!   one message of `oneway_count`'s reply size).
//! - `bytes`: echoes of a `sequence<octet>` of 1 KiB, 64 KiB and 1 MiB
//!   one at a time, in MB/s: bytes sent plus bytes received (10⁶ a MB)
//!   over the time the calls took. Contenders: Armillary, omniORB, and raw
//!   TCP (the client writes the bytes, the server reads them all and
//!   writes them back); each turn on a new connection (see `sync_rig`).
//!
//! Every reply is checked (the check is not timed): a wrong echo, a lost
//! oneway or an exception fails the command with an error, never a figure.
//! The operations are `Interop::Everything`'s (`sync_bench.idl`, see
//! `echo_peer`), so omniORB's `interop_server` and Armillary's `bench
//! serve-echo` serve them both; the servers, clients and raw TCP peers
//! are in `sync_rig`.
//!
//! **How it runs.** As `bench latency`, the command runs itself again
//! pinned to `--cpus` (default `0`; `none` leaves it unpinned), so that
//! every server and client of the latency, oneway and bytes figures
//! shares one CPU. The throughput figure is the exception (threads need
//! CPUs): its servers and clients run with `taskset -c
//! --throughput-cpus` (default `all`: every online CPU), which widens
//! what they inherit; `none` leaves them as the rest. In each of
//! `--rounds` rounds (5), every figure in turn, and within it every
//! point (thread count, size) in turn, each contender makes its calls:
//! the contenders take turns, so slow periods of a shared machine fall
//! on all of them. Latency percentiles are over every call of every
//! round; each rate is the median of the rounds' rates.
//!
//! Calls per contender and round: `--latency-calls` (20,000),
//! `--throughput-calls` (60,000 for each thread count), `--oneway-calls`
//! (100,000), `--bytes-calls` (8,000 of 1 KiB; a quarter as many of
//! 64 KiB, a 32nd of 1 MiB). The default run takes about 1–2 minutes on
//! a 2-core machine; `--quick` makes each a tenth, in 2 rounds (about
//! 10 s; explicit counts and `--rounds` still win).
//!
//! **Goals** (issue 23), each a ratio of two figures of the same run:
//! latency p50 ≤ omniORB's, in the default model and in thread per
//! connection (and, for reference, ≤ 1.05 × raw TCP's); throughput ≥
//! omniORB's at 1, 2 and 8 threads; oneways ≥ omniORB's; the 1 MiB echo ≥
//! 90 % of raw TCP's. A goal missed is `MISS` in the table, never a
//! failure.
//!
//! Output: a progress bar on stderr; on stdout a table of every figure
//! with its ratios to omniORB's and raw TCP's (value / baseline: below 1
//! is better for latency, above 1 for the rates), then the goals.
//! `--json FILE`: `latency.<contender>.{p50_us, p99_us, samples}`,
//! `throughput.<contender>.{t1, t2, t8}` (calls/s),
//! `oneway.<contender>.calls_per_s`,
//! `bytes.<contender>.{kib1_mb_s, kib64_mb_s, mib1_mb_s}`, contenders
//! `armillary`, `armillary_thread_per_connection` (latency only),
//! `omniorb` (`null` when omniORB's peers cannot be had: said once on
//! stderr) and `raw_tcp` (not in throughput); `goals.<name>.{ratio,
//! at_most | at_least, met}`; and `benchmark` (`"sync"`), `rounds`,
//! `calls_per_round`, `pinning`, `throughput_pinning`,
//! `armillary_server_concurrency`, `statistic`, `message_bytes`.
//! `--plot FILE.svg`: a grouped bar chart per figure (absolute values, a
//! logarithmic axis), each contender in the same colour in all four.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use serde_json::{json, Map, Value};

use crate::bench_process::{online_cpus, taskset_runs};
use crate::bench_report::{
    goal, number, pin, plot_grouped_bar_panels_svg, print_goal_table, print_table, progress,
    write_json, CallTimes, GroupedBars, Pinning,
};
use crate::sync_rig::{Contender, Measured, Rig, Turn, SIZES, THREADS};

/// What `armillary bench sync` is asked to do (its options).
#[derive(Debug, Args)]
pub struct SyncOptions {
    /// Rounds; in each, every contender of every figure takes its turn
    /// [default: 5; 2 with --quick].
    #[arg(long)]
    rounds: Option<usize>,
    /// A short run (about 10 s): a tenth of the calls, 2 rounds.
    #[arg(long)]
    quick: bool,
    /// Latency: calls per contender and round [default: 20000].
    #[arg(long)]
    latency_calls: Option<usize>,
    /// Throughput: calls per contender, thread count and round
    /// [default: 60000].
    #[arg(long)]
    throughput_calls: Option<usize>,
    /// Oneways per contender and round [default: 100000].
    #[arg(long)]
    oneway_calls: Option<usize>,
    /// Bytes: 1 KiB echoes per contender and round; a quarter as many of
    /// 64 KiB, a 32nd of 1 MiB (at least 1) [default: 8000].
    #[arg(long)]
    bytes_calls: Option<usize>,
    /// CPUs to pin every process to (taskset list, e.g. `0` or `0,1`),
    /// or `none`; the throughput figure's are `--throughput-cpus`.
    #[arg(long, default_value = "0")]
    cpus: String,
    /// CPUs of the throughput figure's servers and clients (taskset
    /// list), `all` (every online CPU) or `none` (as the others).
    #[arg(long, default_value = "all")]
    throughput_cpus: String,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the results as SVG bar charts into this file.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Calls per contender and round of each figure.
#[derive(Debug, Clone, Copy)]
struct Counts {
    rounds: usize,
    latency: usize,
    throughput: usize,
    oneway: usize,
    /// One per entry of [`SIZES`].
    bytes: [usize; 3],
}

impl Counts {
    fn of(options: &SyncOptions) -> Counts {
        let scale = |default: usize| {
            if options.quick {
                (default / 10).max(1)
            } else {
                default
            }
        };
        let bytes = options.bytes_calls.unwrap_or_else(|| scale(8_000)).max(1);
        Counts {
            rounds: options
                .rounds
                .unwrap_or(if options.quick { 2 } else { 5 })
                .max(1),
            latency: options
                .latency_calls
                .unwrap_or_else(|| scale(20_000))
                .max(1),
            throughput: options
                .throughput_calls
                .unwrap_or_else(|| scale(60_000))
                .max(1),
            oneway: options
                .oneway_calls
                .unwrap_or_else(|| scale(100_000))
                .max(1),
            bytes: [bytes, (bytes / 4).max(1), (bytes / 32).max(1)],
        }
    }
}

/// The figures, in the order they run and are reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Figure {
    Latency,
    Throughput,
    Oneway,
    Bytes,
}

impl Figure {
    fn key(self) -> &'static str {
        match self {
            Figure::Latency => "latency",
            Figure::Throughput => "throughput",
            Figure::Oneway => "oneway",
            Figure::Bytes => "bytes",
        }
    }

    /// Who takes part (omniORB's contender dropped later if absent).
    fn contenders(self) -> &'static [Contender] {
        match self {
            Figure::Latency => &[
                Contender::Armillary,
                Contender::ArmillaryThreadPerConnection,
                Contender::Omniorb,
                Contender::RawTcp,
            ],
            Figure::Throughput => &[Contender::Armillary, Contender::Omniorb],
            Figure::Oneway | Figure::Bytes => {
                &[Contender::Armillary, Contender::Omniorb, Contender::RawTcp]
            }
        }
    }

    /// Its points: (JSON key, table label, the turn there).
    fn points(self, counts: &Counts) -> Vec<(&'static str, String, Turn)> {
        match self {
            Figure::Latency => vec![(
                "",
                "latency".into(),
                Turn::Latency {
                    calls: counts.latency,
                },
            )],
            Figure::Throughput => THREADS
                .iter()
                .map(|&(key, threads)| {
                    let label = format!("throughput, {}", threads_label(threads));
                    let turn = Turn::Throughput {
                        threads,
                        calls: counts.throughput,
                    };
                    (key, label, turn)
                })
                .collect(),
            Figure::Oneway => vec![(
                "calls_per_s",
                "oneway".into(),
                Turn::Oneway {
                    calls: counts.oneway,
                },
            )],
            Figure::Bytes => SIZES
                .iter()
                .zip(counts.bytes)
                .map(|(&(key, label, size), calls)| {
                    let key = match key {
                        "kib1" => "kib1_mb_s",
                        "kib64" => "kib64_mb_s",
                        _ => "mib1_mb_s",
                    };
                    (key, format!("bytes, {label}"), Turn::Bytes { size, calls })
                })
                .collect(),
        }
    }
}

/// `1 thread`, `8 threads`.
fn threads_label(n: usize) -> String {
    format!("{n} thread{}", if n == 1 { "" } else { "s" })
}

const FIGURES: [Figure; 4] = [
    Figure::Latency,
    Figure::Throughput,
    Figure::Oneway,
    Figure::Bytes,
];

/// Where a rate was measured: figure, point (its JSON key), contender.
type Point = (Figure, &'static str, Contender);

/// Everything measured so far.
#[derive(Default)]
struct Tally {
    /// Latency: every call of every round, per contender.
    times: BTreeMap<Contender, CallTimes>,
    /// Rates: each round's, per point.
    rates: BTreeMap<Point, Vec<f64>>,
}

impl Tally {
    fn add(&mut self, figure: Figure, point: &'static str, contender: Contender, m: Measured) {
        match m {
            Measured::Times(times) => {
                let all = self.times.entry(contender).or_default();
                for took in times {
                    all.record(took);
                }
            }
            Measured::Rate(rate) => {
                self.rates
                    .entry((figure, point, contender))
                    .or_default()
                    .push(rate);
            }
        }
    }

    /// The median of the rounds' rates, NaN when there are none.
    fn rate(&self, figure: Figure, point: &'static str, contender: Contender) -> f64 {
        let mut v = self
            .rates
            .get(&(figure, point, contender))
            .cloned()
            .unwrap_or_default();
        v.sort_by(f64::total_cmp);
        match v.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => v[n / 2],
            n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
        }
    }
}

/// Runs `armillary bench sync`.
pub fn run(options: SyncOptions) -> Result<ExitCode, String> {
    let pinning = match pin(&options.cpus)? {
        Pinning::RanPinned(code) => return Ok(code),
        Pinning::Here(pinning) => pinning,
    };
    let inherited = || (None, format!("as the other figures: {pinning}"));
    let on = |cpus: String| {
        let said = format!("servers and clients on CPUs {cpus} (taskset)");
        (Some(cpus), said)
    };
    let (throughput_cpus, throughput_pinning) = match options.throughput_cpus.as_str() {
        "none" => inherited(),
        _ if !taskset_runs() => {
            eprintln!("warning: cannot run taskset; the throughput figure runs as the others");
            inherited()
        }
        "all" => online_cpus().map_or_else(inherited, on),
        cpus => on(cpus.to_owned()),
    };
    eprintln!("pinning: {pinning}; throughput: {throughput_pinning}");
    let counts = Counts::of(&options);
    // omniORB's peers, built first if they are not yet; none (said once
    // on stderr) when they cannot be.
    let omniorb = crate::omniorb_peers::find();
    let dir = std::env::temp_dir().join(format!("armillary-bench-sync-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = measure(&dir, omniorb, throughput_cpus, &counts);
    let _ = std::fs::remove_dir_all(&dir);
    let (tally, message_bytes) = result?;

    let report = report_json(
        &tally,
        &counts,
        message_bytes,
        &pinning,
        &throughput_pinning,
    );
    print_figures(&report);
    println!();
    print_goals(&report);
    if let Some(path) = &options.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &options.plot {
        plot_svg(path, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Every round of every figure; returns what was measured and the GIOP
/// message sizes the raw TCP contender stood for.
fn measure(
    dir: &std::path::Path,
    omniorb: Option<&'static crate::omniorb_peers::OmniorbPeers>,
    throughput_cpus: Option<String>,
    counts: &Counts,
) -> Result<(Tally, Value), String> {
    let mut rig = Rig::start(dir, omniorb, throughput_cpus, counts.oneway)?;
    let mut turns = Vec::new();
    for figure in FIGURES {
        for (point, label, turn) in figure.points(counts) {
            for &contender in figure.contenders() {
                if contender != Contender::Omniorb || rig.has_omniorb() {
                    turns.push((figure, point, label.clone(), contender, turn));
                }
            }
        }
    }
    let bar = progress((counts.rounds * turns.len()) as u64, " turns");
    let mut tally = Tally::default();
    for round in 1..=counts.rounds {
        for (figure, point, label, contender, turn) in &turns {
            bar.set_message(format!("round {round}: {label}, {}", contender.label()));
            let measured = rig
                .measure(*contender, *turn)
                .map_err(|e| format!("{label}, {}: {e}", contender.label()))?;
            tally.add(*figure, point, *contender, measured);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    Ok((tally, rig.message_bytes.clone()))
}

fn report_json(
    tally: &Tally,
    counts: &Counts,
    message_bytes: Value,
    pinning: &str,
    throughput_pinning: &str,
) -> Value {
    let mut report = json!({
        "benchmark": "sync",
        "rounds": counts.rounds,
        "calls_per_round": {
            "latency": counts.latency,
            "throughput": counts.throughput,
            "oneway": counts.oneway,
            "bytes": {
                "kib1": counts.bytes[0],
                "kib64": counts.bytes[1],
                "mib1": counts.bytes[2],
            },
        },
        "pinning": pinning,
        "throughput_pinning": throughput_pinning,
        "armillary_server_concurrency": crate::bench_process::default_concurrency(),
        "statistic": "latency: percentiles of every call of every round; \
                      rates: the median of the rounds' rates",
        "bytes_unit": "MB/s: bytes sent plus bytes received, 10^6 a MB",
        "message_bytes": message_bytes,
    });
    for figure in FIGURES {
        let mut section = Map::new();
        for &contender in figure.contenders() {
            let value = if figure == Figure::Latency {
                tally
                    .times
                    .get(&contender)
                    .map_or(Value::Null, CallTimes::summary)
            } else {
                let decimals = if figure == Figure::Bytes { 1 } else { 0 };
                let points: Map<String, Value> = figure
                    .points(counts)
                    .iter()
                    .map(|(point, _, _)| {
                        let rate = tally.rate(figure, point, contender);
                        ((*point).to_owned(), number(rate, decimals))
                    })
                    .collect();
                if points.values().all(Value::is_null) {
                    Value::Null
                } else {
                    Value::Object(points)
                }
            };
            section.insert(contender.key().to_owned(), value);
        }
        report[figure.key()] = Value::Object(section);
    }
    let at = |path: &[&str]| path.iter().fold(&report, |v, k| &v[*k]).clone();
    let p50 = |c: &str| at(&["latency", c, "p50_us"]);
    let mut goals = Map::new();
    goals.insert(
        "latency_p50_vs_omniorb".into(),
        goal(&p50("armillary"), &p50("omniorb"), "at_most", 1.0),
    );
    goals.insert(
        "latency_thread_per_connection_p50_vs_omniorb".into(),
        goal(
            &p50("armillary_thread_per_connection"),
            &p50("omniorb"),
            "at_most",
            1.0,
        ),
    );
    goals.insert(
        "latency_p50_vs_raw_tcp".into(),
        goal(&p50("armillary"), &p50("raw_tcp"), "at_most", 1.05),
    );
    for (key, _) in THREADS {
        goals.insert(
            format!("throughput_{key}_vs_omniorb"),
            goal(
                &at(&["throughput", "armillary", key]),
                &at(&["throughput", "omniorb", key]),
                "at_least",
                1.0,
            ),
        );
    }
    goals.insert(
        "oneway_vs_omniorb".into(),
        goal(
            &at(&["oneway", "armillary", "calls_per_s"]),
            &at(&["oneway", "omniorb", "calls_per_s"]),
            "at_least",
            1.0,
        ),
    );
    goals.insert(
        "bytes_mib1_vs_raw_tcp".into(),
        goal(
            &at(&["bytes", "armillary", "mib1_mb_s"]),
            &at(&["bytes", "raw_tcp", "mib1_mb_s"]),
            "at_least",
            0.9,
        ),
    );
    report["goals"] = Value::Object(goals);
    report
}

/// A figure's rows: (label, unit, JSON key of the value) per point.
fn rows_of(figure: Figure) -> Vec<(String, &'static str, &'static str)> {
    match figure {
        Figure::Latency => vec![
            ("latency p50".into(), "µs", "p50_us"),
            ("latency p99".into(), "µs", "p99_us"),
        ],
        Figure::Throughput => THREADS
            .iter()
            .map(|&(key, n)| (format!("throughput, {}", threads_label(n)), "calls/s", key))
            .collect(),
        Figure::Oneway => vec![("oneway".into(), "calls/s", "calls_per_s")],
        Figure::Bytes => SIZES
            .iter()
            .zip(["kib1_mb_s", "kib64_mb_s", "mib1_mb_s"])
            .map(|(&(_, label, _), key)| (format!("bytes, {label}"), "MB/s", key))
            .collect(),
    }
}

/// The table of every figure, with its ratios to omniORB's and raw TCP's.
fn print_figures(report: &Value) {
    let cell = |x: Option<f64>, decimals: usize| match x {
        Some(x) => format!("{x:.decimals$}"),
        None => "–".to_owned(),
    };
    let mut rows = Vec::new();
    for figure in FIGURES {
        let section = &report[figure.key()];
        for (label, unit, key) in rows_of(figure) {
            let of = |c: Contender| section[c.key()][key].as_f64();
            for &contender in figure.contenders() {
                let value = of(contender);
                let ratio = |base: Contender| match (value, of(base)) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                };
                let decimals = if unit == "µs" || unit == "MB/s" {
                    1
                } else {
                    0
                };
                rows.push(vec![
                    label.clone(),
                    contender.label().to_owned(),
                    match value {
                        Some(_) => format!("{} {unit}", cell(value, decimals)),
                        None => "not measured".to_owned(),
                    },
                    cell(ratio(Contender::Omniorb), 2),
                    cell(ratio(Contender::RawTcp), 2),
                ]);
            }
        }
    }
    println!(
        "bench sync, {} rounds ({}; throughput: {})",
        report["rounds"],
        report["pinning"].as_str().unwrap_or(""),
        report["throughput_pinning"].as_str().unwrap_or("")
    );
    print_table(
        2,
        &["figure", "contender", "value", "/ omniORB", "/ raw TCP"],
        &rows,
    );
}

/// The goals' table: ratio, bound, PASS or MISS.
fn print_goals(report: &Value) {
    let names = [
        ("latency_p50_vs_omniorb", "latency p50 / omniORB's"),
        (
            "latency_thread_per_connection_p50_vs_omniorb",
            "latency p50 (thread per conn.) / omniORB's",
        ),
        ("latency_p50_vs_raw_tcp", "latency p50 / raw TCP's"),
        (
            "throughput_t1_vs_omniorb",
            "throughput, 1 thread / omniORB's",
        ),
        (
            "throughput_t2_vs_omniorb",
            "throughput, 2 threads / omniORB's",
        ),
        (
            "throughput_t8_vs_omniorb",
            "throughput, 8 threads / omniORB's",
        ),
        ("oneway_vs_omniorb", "oneway / omniORB's"),
        ("bytes_mib1_vs_raw_tcp", "bytes, 1 MiB / raw TCP's"),
    ];
    print_goal_table(&report["goals"], &names);
}

/// A grouped bar chart per figure.
fn plot_svg(path: &std::path::Path, report: &Value) -> Result<(), String> {
    let chart = |figure: Figure, caption: &str, y_label: &str, groups: Vec<String>, log_y| {
        let keys: Vec<&str> = rows_of(figure).iter().map(|r| r.2).collect();
        GroupedBars {
            caption: caption.to_owned(),
            y_label: y_label.to_owned(),
            groups,
            series: figure
                .contenders()
                .iter()
                .map(|c| {
                    let values = keys
                        .iter()
                        .map(|k| {
                            report[figure.key()][c.key()][*k]
                                .as_f64()
                                .unwrap_or(f64::NAN)
                        })
                        .collect();
                    (c.label().to_owned(), values)
                })
                .collect(),
            log_y,
        }
    };
    let charts = [
        chart(
            Figure::Latency,
            "Latency, echo_longlong (lower is better)",
            "µs",
            vec!["p50".into(), "p99".into()],
            false,
        ),
        chart(
            Figure::Throughput,
            "Two-way throughput, threads sharing one reference",
            "calls/s",
            THREADS.iter().map(|&(_, n)| threads_label(n)).collect(),
            false,
        ),
        chart(
            Figure::Oneway,
            "Oneways from one thread",
            "calls/s",
            vec!["ping".into()],
            false,
        ),
        chart(
            Figure::Bytes,
            "sequence<octet> echo (sent + received)",
            "MB/s (log scale)",
            SIZES
                .iter()
                .map(|(_, label, _)| (*label).to_owned())
                .collect(),
            // 1 KiB and 1 MiB differ by one to two orders of magnitude.
            true,
        ),
    ];
    plot_grouped_bar_panels_svg(path, &charts, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_is_the_median_of_the_rounds() {
        let mut tally = Tally::default();
        let c = Contender::Armillary;
        assert!(tally.rate(Figure::Oneway, "calls_per_s", c).is_nan());
        for rate in [5.0, 1.0, 100.0] {
            tally.add(Figure::Oneway, "calls_per_s", c, Measured::Rate(rate));
        }
        assert_eq!(tally.rate(Figure::Oneway, "calls_per_s", c), 5.0);
        tally.add(Figure::Oneway, "calls_per_s", c, Measured::Rate(7.0));
        assert_eq!(tally.rate(Figure::Oneway, "calls_per_s", c), 6.0);
        assert!(tally
            .rate(Figure::Oneway, "calls_per_s", Contender::RawTcp)
            .is_nan());
    }

    #[test]
    fn a_goal_is_a_ratio_against_its_bound_or_unknown() {
        let g = goal(&json!(12.0), &json!(10.0), "at_most", 1.0);
        assert_eq!(g, json!({"ratio": 1.2, "at_most": 1.0, "met": false}));
        let g = goal(&json!(12.0), &json!(10.0), "at_least", 1.0);
        assert_eq!(g, json!({"ratio": 1.2, "at_least": 1.0, "met": true}));
        let g = goal(&json!(12.0), &Value::Null, "at_least", 0.9);
        assert_eq!(g, json!({"ratio": null, "at_least": 0.9, "met": null}));
    }

    #[test]
    fn quick_is_a_tenth_of_the_calls_and_explicit_counts_win() {
        let options = |args: &[&str]| {
            #[derive(clap::Parser)]
            struct Cli {
                #[command(flatten)]
                sync: SyncOptions,
            }
            let cli: Cli =
                clap::Parser::parse_from(std::iter::once("sync").chain(args.iter().copied()));
            Counts::of(&cli.sync)
        };
        let full = options(&[]);
        assert_eq!(
            (full.rounds, full.latency, full.bytes),
            (5, 20_000, [8_000, 2_000, 250])
        );
        let quick = options(&["--quick"]);
        assert_eq!(
            (quick.rounds, quick.latency, quick.oneway),
            (2, 2_000, 10_000)
        );
        let tiny = options(&["--quick", "--rounds", "1", "--bytes-calls", "8"]);
        assert_eq!((tiny.rounds, tiny.bytes), (1, [8, 2, 1]));
    }
}
