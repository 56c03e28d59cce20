//! `armillary bench collocation`: the collocation paper's Figure 4
//! (`collocation-optimizations-tao`, section 5): calls per second of one
//! operation on an object served by the caller's own process, made
//! remotely over loopback, through the POA (`thru-poa`), straight to the
//! servant (`direct`), and as a plain Rust call on the servant.
//!
//! The operation is the paper's: `cube` returns its `sequence<long>`
//! argument with every element cubed (`CollocationBench::Cuber`,
//! compiled from `omniorb-peers/idl/collocation_bench.idl` by this
//! crate's `build.rs`), for sequences of 4 and of 1,024 elements. The
//! servant cubes in place, with wrapping 32-bit arithmetic, in the
//! vector it is handed and returns it.
//!
//! One ORB in this process (default options) serves one `Cuber` servant
//! in its RootPOA; the caller is this thread. The strategies:
//! - `remote`: the generated stub with
//!   `.with_collocation(Collocation::None)`: over loopback IIOP to the
//!   ORB's own endpoint, as if the object were in another process;
//! - `thru_poa`: the stub with `.with_collocation(Collocation::ThruPoa)`;
//! - `direct`: the stub with `.with_collocation(Collocation::Direct)`;
//! - `plain`: no ORB: the servant held as `Arc<dyn CuberServant>` and
//!   called through the trait object (the paper's "direct virtual
//!   function calls on the skeleton class"). The stub takes the sequence
//!   as a slice and the servant an owned `Vec`, so this call clones the
//!   input each time, as a stub must: the same argument conversion, and
//!   nothing else.
//!
//! The strategies are chosen per reference, through the public API only,
//! so this measures whatever the ORB does for each.
//!
//! **How it is measured.** Each (strategy, size) makes a few checked
//! calls first (warm-up: the loopback connection opened, the caches
//! filled). Then, in each of `--rounds` rounds (3 by default), every
//! (strategy, size) in turn makes calls one after another for
//! `--seconds` (1 by default; the default run takes about 25 s), or
//! exactly `--calls` calls when that is given; calls per second is the
//! calls made over the time they took, the clock read once per batch of
//! calls (batches grow while they are short, so that reading the clock
//! costs nothing next to the calls). Each figure is the **best** round's:
//! other load on the machine only ever slows calls down, so the fastest
//! round is the closest to what the call itself costs. Every reply is
//! compared with the expected cubes: a wrong value or an exception fails
//! the bench with an error.
//!
//! As the project's latency benchmarks do, the bench runs with its
//! threads on the CPUs of `--cpus` (default `0`, by running itself again
//! under `taskset`; `none` to leave it unpinned): the remote strategy's
//! two threads (the caller and the ORB's reactor) then hand each call
//! over on one CPU instead of waking each other across CPUs.
//!
//! **Goals** (issue 22), each a ratio of two figures of the same run,
//! judged at 4 elements, where what the ORB adds weighs most (the ratios
//! at 1,024 elements are reported beside them): `direct ≥ 0.7 × plain`,
//! `thru_poa ≥ 0.3 × direct`, `thru_poa ≥ 100 × remote` (TAO reached 30
//! to 60 ×). A goal missed is reported as `MISS`, never as a failure: only
//! errors fail the command.
//!
//! `--strategies a,b` measures only the strategies named (to profile
//! one, say); the others are reported as not measured, and a goal that
//! needs one of them is not judged.
//!
//! Output: a progress bar on stderr; on stdout a table of calls/s per
//! strategy and size and one of the goals' ratios with PASS or MISS.
//! `--json FILE`: `remote`, `thru_poa`, `direct`, `plain`, each with
//! `"4"` and `"1024"`, each `{calls_per_s, calls, seconds}` (the best
//! round's), or `null` when not measured; `goals.direct_vs_plain`,
//! `goals.thru_poa_vs_direct`, `goals.thru_poa_vs_remote`, each
//! `{ratio, at_least, n, met, ratio_at_1024}` (`ratio` and `met` `null`
//! when a strategy it needs was not measured); and `benchmark`
//! (`"collocation"`), `rounds`, `seconds_per_round` or
//! `calls_per_round` (the other `null`),
//! `statistic` (`"best round"`), `pinning`. `--plot FILE.svg`: Figure 4,
//! calls/s per strategy as bars grouped by size, on a logarithmic axis
//! (the figures span four to five orders of magnitude), each bar
//! labelled with its value.

use std::hint::black_box;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary::config::{Collocation, OrbConfig};
use armillary::{Interface, Orb, SystemException};
use clap::Args;
use serde_json::{json, Map, Value};

use crate::bench_report::{
    pin, plot_grouped_bars_svg, print_table, progress, write_json, GroupedBars, Pinning,
};

/// The Rust generated from `collocation_bench.idl`.
// Only the stub, the servant trait and the skeleton are used; the AMI
// forms are generated too. The generated `_async` methods carry a
// `#[must_use]` their return type already has.
#[allow(
    missing_docs,
    missing_debug_implementations,
    dead_code,
    clippy::double_must_use
)]
mod generated {
    armillary::include_idl!("collocation_bench");
}

use generated::collocation_bench::{Cuber, CuberServant, CuberSkeleton, Longs};

/// The sequence lengths, the paper's.
const SIZES: [usize; 2] = [4, 1024];

/// Checked calls each (strategy, size) makes before it is measured.
const WARM_UP_CALLS: usize = 100;

/// A batch of calls between two readings of the clock grows (doubling)
/// while it takes less than this share of a round's time budget.
const BATCH_SHARE_OF_BUDGET: u32 = 100;

/// How a call reaches the servant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strategy {
    Remote,
    ThruPoa,
    Direct,
    Plain,
}

impl Strategy {
    /// Every strategy, in table (and plot) order.
    const ALL: [Strategy; 4] = [
        Strategy::Remote,
        Strategy::ThruPoa,
        Strategy::Direct,
        Strategy::Plain,
    ];

    /// The name in the table and the JSON.
    fn key(self) -> &'static str {
        match self {
            Strategy::Remote => "remote",
            Strategy::ThruPoa => "thru_poa",
            Strategy::Direct => "direct",
            Strategy::Plain => "plain",
        }
    }

    /// The strategy named `key` (as [`Strategy::key`] spells it).
    fn parse(key: &str) -> Result<Strategy, String> {
        Strategy::ALL
            .into_iter()
            .find(|s| s.key() == key)
            .ok_or_else(|| format!("no strategy {key} (remote, thru_poa, direct, plain)"))
    }

    /// The name in the plot's legend.
    fn label(self) -> &'static str {
        match self {
            Strategy::Remote => "remote (loopback IIOP)",
            Strategy::ThruPoa => "thru-POA",
            Strategy::Direct => "direct",
            Strategy::Plain => "plain Rust call",
        }
    }
}

/// What `armillary bench collocation` is asked to do (its options).
#[derive(Debug, Args)]
pub struct CollocationOptions {
    /// Seconds each (strategy, size) makes calls for in each round.
    #[arg(long, default_value_t = 1.0, conflicts_with = "calls")]
    seconds: f64,
    /// Calls each (strategy, size) makes in each round, instead of a time
    /// budget (`--seconds`).
    #[arg(long)]
    calls: Option<u64>,
    /// Rounds; each figure is the best round's.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// CPUs to pin the bench to (taskset list, e.g. `0` or `0,1`), or
    /// `none`.
    #[arg(long, default_value = "0")]
    cpus: String,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the results (the paper's Figure 4) into this SVG file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Measure only these strategies (comma-separated: `remote`,
    /// `thru_poa`, `direct`, `plain`), e.g. to profile one; the others
    /// are reported as not measured (`null` in the JSON).
    #[arg(long, value_delimiter = ',', value_parser = Strategy::parse)]
    strategies: Vec<Strategy>,
}

/// How long one (strategy, size) runs in one round.
#[derive(Debug, Clone, Copy)]
enum Budget {
    /// Exactly this many calls.
    Calls(u64),
    /// Calls until this much time has passed.
    Time(Duration),
}

/// The benchmark's servant: cubes every element, in place.
struct Cube;

impl CuberServant for Cube {
    fn cube(&self, mut values: Longs) -> Result<Longs, SystemException> {
        for v in &mut values {
            *v = cubed(*v);
        }
        Ok(values)
    }
}

/// `v³`, wrapping as 32-bit arithmetic does.
fn cubed(v: i32) -> i32 {
    v.wrapping_mul(v).wrapping_mul(v)
}

/// One size's argument and the reply it must get.
struct Workload {
    input: Vec<i32>,
    expected: Vec<i32>,
}

impl Workload {
    /// `n` values, negative and positive, some large enough that their
    /// cubes wrap.
    fn of(n: usize) -> Workload {
        let input: Vec<i32> = (0..n as i32)
            .map(|i| i.wrapping_mul(4099).wrapping_sub(2_000_000))
            .collect();
        let expected = input.iter().copied().map(cubed).collect();
        Workload { input, expected }
    }

    /// `Ok` when `got` is the expected reply; else what is wrong with it.
    fn check(&self, got: &[i32]) -> Result<(), String> {
        // One comparison of the whole slices (a memcmp); the element
        // that differs is looked for only when one does.
        if got == self.expected.as_slice() {
            return Ok(());
        }
        if got.len() != self.expected.len() {
            return Err(format!(
                "{} elements returned for {}",
                got.len(),
                self.expected.len()
            ));
        }
        // Same length, different contents: some element differs.
        let differs = got
            .iter()
            .zip(self.expected.iter().zip(&self.input))
            .enumerate()
            .find(|(_, (g, (e, _)))| g != e);
        match differs {
            Some((i, (g, (e, v)))) => Err(format!("element {i} is {g} instead of {e} ({v}³)")),
            None => Err("the reply differs from the expected cubes".into()),
        }
    }
}

/// What the bench calls: one ORB serving one `Cuber`, a reference to it
/// per ORB strategy, and the servant itself.
struct Bench {
    orb: Orb,
    remote: Cuber,
    thru_poa: Cuber,
    direct: Cuber,
    plain: Arc<dyn CuberServant>,
}

impl Bench {
    fn start() -> Result<Bench, String> {
        let orb = Orb::with_config(OrbConfig::default())
            .map_err(|e| format!("cannot start the ORB: {e}"))?;
        let poa = orb.root_poa();
        poa.manager()
            .activate()
            .map_err(|e| format!("cannot activate the RootPOA: {e}"))?;
        let servant = Arc::new(Cube);
        let cuber = CuberSkeleton::from_arc(Arc::clone(&servant))
            .activate(&poa)
            .map_err(|e| format!("cannot activate the Cuber: {e}"))?;
        Ok(Bench {
            remote: cuber.with_collocation(Collocation::None),
            thru_poa: cuber.with_collocation(Collocation::ThruPoa),
            direct: cuber.with_collocation(Collocation::Direct),
            plain: servant,
            orb,
        })
    }

    /// `budget` of calls to `cube(work.input)` by `strategy`, each reply
    /// checked; the calls made and the time they took.
    fn calls(
        &self,
        strategy: Strategy,
        work: &Workload,
        budget: Budget,
    ) -> Result<(u64, Duration), String> {
        let failed = |e: String| format!("{}, {} elements: {e}", strategy.key(), work.input.len());
        // Each strategy its own loop, so that the plain call is nothing
        // but the call (`black_box` keeps it a call through the trait
        // object, as the compiler cannot see which servant it holds).
        match strategy {
            Strategy::Remote => timed(budget, || self.remote.cube(&work.input), work),
            Strategy::ThruPoa => timed(budget, || self.thru_poa.cube(&work.input), work),
            Strategy::Direct => timed(budget, || self.direct.cube(&work.input), work),
            Strategy::Plain => timed(
                budget,
                || black_box(&self.plain).cube(work.input.to_vec()),
                work,
            ),
        }
        .map_err(failed)
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        // Not an upcall: cannot fail in a way that matters here.
        let _ = self.orb.shutdown(armillary::WaitForCompletion::No);
    }
}

/// Calls `call` until `budget` is spent, checking each reply against
/// `work`; the calls made and the time they took. The clock is read once
/// per batch of calls; a batch doubles while it takes less than a
/// hundredth of a time budget.
fn timed(
    budget: Budget,
    mut call: impl FnMut() -> Result<Longs, SystemException>,
    work: &Workload,
) -> Result<(u64, Duration), String> {
    let started = Instant::now();
    let (mut calls, mut batch) = (0u64, 1u64);
    loop {
        let this_batch = match budget {
            Budget::Calls(n) => batch.min(n - calls),
            Budget::Time(_) => batch,
        };
        let batch_started = Instant::now();
        for _ in 0..this_batch {
            let got = call().map_err(|e| e.to_string())?;
            work.check(&got)?;
        }
        calls += this_batch;
        let elapsed = started.elapsed();
        match budget {
            Budget::Calls(n) if calls >= n => return Ok((calls, elapsed)),
            Budget::Time(t) if elapsed >= t => return Ok((calls, elapsed)),
            Budget::Time(t) if batch_started.elapsed() < t / BATCH_SHARE_OF_BUDGET => batch *= 2,
            Budget::Calls(_) => batch = batch.saturating_mul(2),
            Budget::Time(_) => {}
        }
    }
}

/// The best round of one (strategy, size) so far.
#[derive(Debug, Clone, Copy, Default)]
struct Best {
    calls: u64,
    seconds: f64,
    calls_per_s: f64,
}

impl Best {
    fn offer(&mut self, calls: u64, took: Duration) {
        // A clock too coarse to see the calls counts them as taking 1 ns.
        let seconds = took.as_secs_f64().max(1e-9);
        let rate = calls as f64 / seconds;
        if rate > self.calls_per_s {
            *self = Best {
                calls,
                seconds,
                calls_per_s: rate,
            };
        }
    }
}

/// One goal of issue 22: `numerator ≥ at_least × denominator`, judged at
/// 4 elements.
struct Goal {
    key: &'static str,
    numerator: Strategy,
    denominator: Strategy,
    at_least: f64,
}

const GOALS: [Goal; 3] = [
    Goal {
        key: "direct_vs_plain",
        numerator: Strategy::Direct,
        denominator: Strategy::Plain,
        at_least: 0.7,
    },
    Goal {
        key: "thru_poa_vs_direct",
        numerator: Strategy::ThruPoa,
        denominator: Strategy::Direct,
        at_least: 0.3,
    },
    Goal {
        key: "thru_poa_vs_remote",
        numerator: Strategy::ThruPoa,
        denominator: Strategy::Remote,
        at_least: 100.0,
    },
];

/// The size the goals are judged at.
const GOAL_SIZE: usize = 4;

/// Runs `armillary bench collocation`.
pub fn run(options: CollocationOptions) -> Result<ExitCode, String> {
    let pinning = match pin(&options.cpus)? {
        Pinning::RanPinned(code) => return Ok(code),
        Pinning::Here(pinning) => pinning,
    };
    let budget = match options.calls {
        Some(n) => Budget::Calls(n.max(1)),
        None if options.seconds.is_finite() && options.seconds > 0.0 => {
            Budget::Time(Duration::from_secs_f64(options.seconds))
        }
        None => return Err(format!("--seconds {} is not a time", options.seconds)),
    };
    let rounds = options.rounds.max(1);
    let measured: Vec<Strategy> = Strategy::ALL
        .into_iter()
        .filter(|s| options.strategies.is_empty() || options.strategies.contains(s))
        .collect();
    let best = measure(budget, rounds, &measured)?;
    // NaN for a strategy not measured.
    let rate = |s: Strategy, n: usize| -> f64 {
        SIZES
            .iter()
            .position(|&size| size == n)
            .filter(|_| measured.contains(&s))
            .map_or(f64::NAN, |i| best[s as usize][i].calls_per_s)
    };

    println!(
        "cube(sequence<long>) on a servant in this process, calls/s (best of {rounds} round{}; {pinning})",
        if rounds == 1 { "" } else { "s" },
    );
    let rows: Vec<Vec<String>> = Strategy::ALL
        .iter()
        .map(|&s| {
            std::iter::once(s.key().to_owned())
                .chain(SIZES.iter().map(|&n| match rate(s, n) {
                    r if r.is_finite() => format!("{r:.0}"),
                    _ => "not measured".to_owned(),
                }))
                .collect()
        })
        .collect();
    print_table(1, &["strategy", "n=4", "n=1024"], &rows);
    println!();
    let mut goals = Map::new();
    let mut goal_rows = Vec::new();
    for goal in &GOALS {
        let ratio = |n| rate(goal.numerator, n) / rate(goal.denominator, n);
        let (at_goal, at_1024) = (ratio(GOAL_SIZE), ratio(1024));
        // Judged only when both figures were measured.
        let met = at_goal.is_finite().then_some(at_goal >= goal.at_least);
        let shown = |r: f64| {
            if r.is_finite() {
                format!("{r:.3}")
            } else {
                "–".to_owned()
            }
        };
        goal_rows.push(vec![
            format!("{} / {}", goal.numerator.key(), goal.denominator.key()),
            format!("≥ {}", goal.at_least),
            shown(at_goal),
            match met {
                Some(true) => "PASS",
                Some(false) => "MISS",
                None => "not measured",
            }
            .to_owned(),
            shown(at_1024),
        ]);
        goals.insert(
            goal.key.to_owned(),
            json!({
                "ratio": finite_or_null(at_goal),
                "at_least": goal.at_least,
                "n": GOAL_SIZE,
                "met": met,
                "ratio_at_1024": finite_or_null(at_1024),
            }),
        );
    }
    print_table(
        2,
        &["goal", "needed", "ratio n=4", "result", "ratio n=1024"],
        &goal_rows,
    );

    let mut report = json!({
        "benchmark": "collocation",
        "rounds": rounds,
        "seconds_per_round": match budget {
            Budget::Time(t) => json!(t.as_secs_f64()),
            Budget::Calls(_) => Value::Null,
        },
        "calls_per_round": match budget {
            Budget::Calls(n) => json!(n),
            Budget::Time(_) => Value::Null,
        },
        "statistic": "best round",
        "pinning": pinning,
        "goals": goals,
    });
    for s in Strategy::ALL {
        if !measured.contains(&s) {
            report[s.key()] = Value::Null;
            continue;
        }
        let mut sizes = Map::new();
        for (i, n) in SIZES.iter().enumerate() {
            let b = best[s as usize][i];
            sizes.insert(
                n.to_string(),
                json!({
                    "calls_per_s": b.calls_per_s.round(),
                    "calls": b.calls,
                    "seconds": b.seconds,
                }),
            );
        }
        report[s.key()] = Value::Object(sizes);
    }
    if let Some(path) = &options.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &options.plot {
        plot_grouped_bars_svg(
            path,
            &GroupedBars {
                caption: "cube(sequence<long>) on a servant in the same process".into(),
                y_label: "calls/s (log scale)".into(),
                groups: SIZES.iter().map(|&n| elements(n)).collect(),
                series: measured
                    .iter()
                    .map(|&s| (s.label().to_owned(), SIZES.map(|n| rate(s, n)).to_vec()))
                    .collect(),
                // The strategies span four to five orders of magnitude.
                log_y: true,
            },
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `4 elements`, `1,024 elements`.
fn elements(n: usize) -> String {
    if n >= 1000 {
        format!("{},{:03} elements", n / 1000, n % 1000)
    } else {
        format!("{n} elements")
    }
}

/// `x` as a JSON number, `null` when it is not finite.
fn finite_or_null(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// Warms every (strategy, size) of `strategies` up, then runs `rounds`
/// rounds of them all; the best round of each, indexed
/// `[strategy][size]` (a strategy not measured keeps its default).
fn measure(
    budget: Budget,
    rounds: usize,
    strategies: &[Strategy],
) -> Result<[[Best; 2]; 4], String> {
    let bench = Bench::start()?;
    let work = SIZES.map(Workload::of);
    let steps = (strategies.len() * SIZES.len() * (rounds + 1)) as u64;
    let bar = progress(steps, "");
    for &s in strategies {
        for w in &work {
            bar.set_message(format!("warm-up {} n={}", s.key(), w.input.len()));
            bench.calls(s, w, Budget::Calls(WARM_UP_CALLS as u64))?;
            bar.inc(1);
        }
    }
    let mut best = [[Best::default(); 2]; 4];
    for round in 1..=rounds {
        for (i, w) in work.iter().enumerate() {
            for &s in strategies {
                bar.set_message(format!(
                    "round {round}/{rounds} {} n={}",
                    s.key(),
                    w.input.len()
                ));
                let (calls, took) = bench.calls(s, w, budget)?;
                best[s as usize][i].offer(calls, took);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_servant_cubes_with_wrapping_arithmetic() {
        let work = Workload::of(1024);
        let got = Cube.cube(work.input.clone()).unwrap();
        assert_eq!(work.check(&got), Ok(()));
        // Some cubes wrap, so the check is of 32-bit arithmetic.
        assert!(work.input.iter().any(|&v| v.checked_pow(3).is_none()));
        assert_eq!(cubed(-3), -27);
        assert_eq!(cubed(2_000), 8_000_000_000i64 as i32);
    }

    #[test]
    fn a_wrong_reply_is_an_error_naming_the_element() {
        let work = Workload::of(4);
        let mut got = work.expected.clone();
        got[2] += 1;
        let e = work.check(&got).unwrap_err();
        assert!(e.starts_with("element 2 is "), "{e}");
        assert!(work.check(&got[..3]).unwrap_err().contains("3 elements"));
    }

    #[test]
    fn a_call_budget_makes_exactly_that_many_calls() {
        let work = Workload::of(4);
        let mut made = 0u64;
        let (calls, _) = timed(
            Budget::Calls(1000),
            || {
                made += 1;
                Cube.cube(work.input.clone())
            },
            &work,
        )
        .unwrap();
        assert_eq!((calls, made), (1000, 1000));
    }

    #[test]
    fn an_exception_stops_the_calls_with_an_error() {
        let work = Workload::of(4);
        let e = timed(
            Budget::Calls(10),
            || {
                Err(SystemException::transient(
                    0,
                    armillary::CompletionStatus::No,
                ))
            },
            &work,
        )
        .unwrap_err();
        assert!(e.contains("TRANSIENT"), "{e}");
    }

    #[test]
    fn the_best_round_is_the_fastest() {
        let mut best = Best::default();
        best.offer(100, Duration::from_secs(2));
        best.offer(300, Duration::from_secs(2));
        best.offer(200, Duration::from_secs(2));
        assert_eq!(best.calls, 300);
        assert!((best.calls_per_s - 150.0).abs() < 1e-9);
    }
}
