//! `armillary bench invocation`: the two experiments of the AMI paper
//! (`ami-asynchronous-method-invocation-tao`, section 4), synchronous
//! against asynchronous invocation of one two-way operation, against one
//! Armillary server in another process (`armillary bench serve-echo`).
//!
//! The operation is the paper's: one 64-bit argument, returned as is
//! (`Interop::Everything::echo_longlong`, compiled from
//! `tests/interop/idl/invocation_bench.idl` by this crate's `build.rs`).
//! Every reply's value is checked.
//!
//! The AMI forms are the generated stub's: `sendc_echo_longlong` with a
//! reply handler (a generated `AMI_EverythingHandler` servant activated in
//! the client's own ORB, as in the paper and in omniORB's client), and
//! `echo_longlong_async`. The client ORB runs with `-ORBConcurrency
//! application`, so that the handler is run by a thread of the
//! application driving the ORB, as in the paper.
//!
//! **Table 1, latency**: `--calls` two-way calls (10,000 by default) one
//! at a time, each call timed on its own; minimum, mean, maximum and
//! jitter (standard deviation), in µs. The forms are interleaved: in each
//! of `--rounds` rounds (100 by default) every form makes its share of
//! the calls, the forms' order turned by one each round, so that a slow
//! spell of this shared machine falls on every form alike and the ratios
//! below compare the forms, not the moments they ran in. Forms:
//! - `smi`: the generated stub's synchronous call;
//! - `ami_callback`: the request sent with a callback, then the caller
//!   drives the ORB (`Orb::perform_work`) until the callback has run;
//! - `ami_poller`: the request sent with `sendp_`, its poller collected at
//!   once (`take`: the waiting caller reads its own reply);
//! - `ami_future`: the request sent as a future, awaited at once (on a
//!   minimal executor of this module's: the ORB needs none);
//! - `dii_deferred`: a DII request sent with `send_deferred` and collected
//!   with `get_response` at once (the paper's "DII" row).
//!
//! As the project's latency benchmarks do, the latency phase runs with
//! every process on the CPUs of `--cpus` (default `0`, by running itself
//! again under `taskset`): a wake-up across CPUs costs more than the ORB.
//!
//! **Table 2, throughput**: `--throughput-calls` calls (100,000 by
//! default) per form, timed from the first send to the last reply, in
//! calls per second. Forms:
//! - `smi_220`, `smi_7`: 220 and 7 threads each making synchronous calls
//!   (the calls split evenly between them);
//! - `ami_callback`: one thread sending with `sendc_`, one running the
//!   ORB's event loop (`Orb::run`) that delivers the replies to the
//!   handler;
//! - `ami_poller`: pollers on one thread, many in flight, collected
//!   oldest first;
//! - `ami_future`: futures on one thread, many in flight;
//! - `dii_deferred`: `Orb::send_multiple_requests` and
//!   `Orb::get_next_response`, many in flight;
//! - `omniorb_ami`: omniORB's AMI client (`tests/interop/cpp/
//!   ami_bench_client.cc`, `sendc_` and a reply handler) against omniORB's
//!   server (`interop_server`), in the same run, as the baseline (built
//!   on first use into a cache directory, see `omniorb_peers`);
//! - `raw_tcp`: no ORB, the same traffic over raw TCP, pipelined: messages
//!   of the sizes of the GIOP request and reply, one thread writing each
//!   request on its own, one reading the replies, `armillary bench
//!   serve-raw` reading each request and writing its reply: what one
//!   write per message costs on this machine, with no ORB at all.
//!
//! `--forms a,b` measures only the forms named (from either table; a
//! name in both, such as `ami_future`, in both).
//!
//! **Goals** (issues 22 and 23), each a ratio of two figures of the same
//! run, printed after the tables with PASS or MISS (a miss is reported,
//! never a failure of the command): a poller's mean latency ≤ 1.05 ×
//! SMI's, a future's ≤ 1.15 ×, a callback's ≤ 1.2 ×, and the callback
//! form's throughput ≥ 0.5 × the futures'.
//!
//! The asynchronous forms keep at most `--in-flight` requests (100 by
//! default) awaiting their reply; the client ORB's
//! `-ORBClientMaxOutstanding` is set to at least that. The throughput
//! phase is not pinned: the client and server processes share the
//! machine's CPUs as the scheduler places them.
//!
//! **JSON** (`--json FILE`), every key always present, a form that was
//! not measured (not asked for, or omniORB's peers cannot be built: the
//! reason is said on standard error) is `null`:
//! - `latency.smi`, `latency.ami_callback`, `latency.ami_poller`,
//!   `latency.ami_future`,
//!   `latency.dii_deferred`: each `{calls, min_us, avg_us, max_us,
//!   jitter_us}`;
//! - `throughput.smi_220`, `throughput.smi_7`, `throughput.ami_callback`,
//!   `throughput.ami_poller`, `throughput.ami_future`,
//!   `throughput.dii_deferred`,
//!   `throughput.omniorb_ami`, `throughput.raw_tcp`: each `{calls,
//!   calls_per_s}` (and `threads` for the SMI forms, `in_flight` for the
//!   others, `request_bytes` and `reply_bytes` for `raw_tcp`);
//! - `goals.ami_poller_vs_smi`, `goals.ami_future_vs_smi`,
//!   `goals.ami_callback_vs_smi` (each `{ratio, at_most, met}`) and
//!   `goals.ami_callback_vs_ami_future` (`{ratio, at_least, met}`);
//!   `ratio` and `met` are `null` when a figure was not measured;
//! - `benchmark` (`"invocation"`), `calls`, `rounds`, `throughput_calls`,
//!   `in_flight`, `latency_pinning`, `throughput_pinning`,
//!   `server_concurrency`.
//!
//! **Plot** (`--plot FILE.svg`): two bar charts, mean latency per form
//! and throughput per form.

mod ami;
mod latency;
mod throughput;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, PoisonError};

use armillary::{Any, Orb, TypeCode};
use clap::Args;
use serde_json::json;

use crate::bench_process::Peer;
use crate::bench_report::{goal, plot_bars_svg, print_goal_table, print_table, write_json, Bars};
use latency::latency_phase;
use throughput::throughput_phase;

/// The Rust generated from `invocation_bench.idl`.
// The server side (servant trait, skeleton) is generated but unused here:
// the server is `armillary bench serve-echo`. The generated `_async`
// methods carry a `#[must_use]` their return type already has.
#[allow(
    missing_docs,
    missing_debug_implementations,
    dead_code,
    clippy::double_must_use
)]
mod generated {
    armillary::include_idl!("invocation_bench");
}

use generated::interop::{
    AmiEverythingHandler, AmiEverythingHandlerServant, AmiEverythingHandlerSkeleton, Everything,
};

/// The latency forms, in table order.
const LATENCY_FORMS: [&str; 5] = [
    "smi",
    "ami_callback",
    "ami_poller",
    "ami_future",
    "dii_deferred",
];

/// The throughput forms, in table order.
const THROUGHPUT_FORMS: [&str; 8] = [
    "smi_220",
    "smi_7",
    "ami_callback",
    "ami_poller",
    "ami_future",
    "dii_deferred",
    "omniorb_ami",
    "raw_tcp",
];

/// What `armillary bench invocation` is asked to do (its options).
#[derive(Debug, Args)]
pub struct InvocationOptions {
    /// Calls per form in the latency table, one at a time.
    #[arg(long, default_value_t = 10_000)]
    calls: usize,
    /// Rounds of the latency table: in each, every form makes its share
    /// of `--calls`, the forms' order turned by one each round.
    #[arg(long, default_value_t = 100)]
    rounds: usize,
    /// Calls per form in the throughput table.
    #[arg(long, default_value_t = 100_000)]
    throughput_calls: usize,
    /// Most requests awaiting their reply in the asynchronous forms.
    #[arg(long, default_value_t = 100)]
    in_flight: usize,
    /// CPUs of the latency phase (taskset list, e.g. `0`), or `none`.
    #[arg(long, default_value = "0")]
    cpus: String,
    /// The Armillary server's concurrency model (`-ORBConcurrency`); the
    /// ORB's default when not given.
    #[arg(long, default_value_t = crate::bench_process::default_concurrency())]
    concurrency: String,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Draw the results as SVG bar charts into this file.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Measure only these forms (comma-separated names from both tables,
    /// e.g. `ami_future,raw_tcp`; a name in both tables, such as
    /// `ami_future`, measures both); the others are reported as not
    /// measured (`null` in the JSON).
    #[arg(long, value_delimiter = ',')]
    forms: Vec<String>,
    /// (internal) Run only the latency phase, writing its JSON here.
    #[arg(long, hide = true)]
    latency_only: Option<PathBuf>,
}

impl InvocationOptions {
    /// Whether `form` is to be measured (`--forms`).
    fn measures(&self, form: &str) -> bool {
        self.forms.is_empty() || self.forms.iter().any(|f| f == form)
    }
}

/// `--forms` as given, for the latency phase's child process.
fn forms_args(options: &InvocationOptions) -> Vec<String> {
    if options.forms.is_empty() {
        Vec::new()
    } else {
        vec!["--forms".to_owned(), options.forms.join(",")]
    }
}

/// An Armillary echo server in another process and a client ORB with the
/// benchmark's stub on it.
struct Contender {
    _server: Peer,
    orb: Orb,
    echo: Everything,
    /// The reply handler, a servant of `orb`, and where it sends what it
    /// hears.
    handler: AmiEverythingHandler,
    sink: Arc<ReplySink>,
}

/// Where the reply handler sends each outcome: set by each form that
/// uses the handler.
type Deliver = Box<dyn Fn(Result<i64, String>) + Send + Sync>;

#[derive(Default)]
struct ReplySink(Mutex<Option<Deliver>>);

impl ReplySink {
    fn set(&self, deliver: impl Fn(Result<i64, String>) + Send + Sync + 'static) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(deliver));
    }

    fn deliver(&self, outcome: Result<i64, String>) {
        if let Some(deliver) = &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            deliver(outcome);
        }
    }
}

/// The generated reply handler's servant: hands each reply to the sink.
struct EchoHandler(Arc<ReplySink>);

impl AmiEverythingHandlerServant for EchoHandler {
    fn echo_longlong(&self, ami_return_val: i64) -> Result<(), armillary::SystemException> {
        self.0.deliver(Ok(ami_return_val));
        Ok(())
    }

    fn echo_longlong_excep(
        &self,
        excep_holder: armillary::ami::ExceptionHolder<armillary::SystemException>,
    ) -> Result<(), armillary::SystemException> {
        self.0.deliver(Err(excep_holder.raise().to_string()));
        Ok(())
    }
}

impl Contender {
    fn start(dir: &Path, concurrency: &str, in_flight: usize) -> Result<Contender, String> {
        let (server, ior) = crate::echo_peer::start(dir, "echo", concurrency, None)?;
        let outstanding = in_flight.max(256).to_string();
        // Application threads: AMI callbacks wait for a thread of ours to
        // run them (`perform_work`), the paper's event loop.
        let (orb, _) = Orb::init([
            "-ORBConcurrency",
            "application",
            "-ORBClientMaxOutstanding",
            outstanding.as_str(),
        ])
        .map_err(|e| e.to_string())?;
        let echo = Everything::from_object(orb.string_to_object(&ior).map_err(|e| e.to_string())?);
        let poa = orb.root_poa();
        poa.manager().activate().map_err(|e| e.to_string())?;
        let sink = Arc::new(ReplySink::default());
        let handler = AmiEverythingHandlerSkeleton::new(EchoHandler(Arc::clone(&sink)))
            .activate(&poa)
            .map_err(|e| e.to_string())?;
        // Connect and warm up.
        for i in 0..100 {
            check(i, echo.echo_longlong(i).map_err(|e| e.to_string())?)?;
        }
        Ok(Contender {
            _server: server,
            orb,
            echo,
            handler,
            sink,
        })
    }
}

impl Drop for Contender {
    fn drop(&mut self) {
        // Not an upcall: cannot fail in a way that matters here.
        let _ = self.orb.shutdown(armillary::WaitForCompletion::No);
    }
}

fn check(sent: i64, got: i64) -> Result<(), String> {
    if sent == got {
        Ok(())
    } else {
        Err(format!("echo_longlong({sent}) returned {got}"))
    }
}

/// A DII request for `echo_longlong(v)`.
fn dii_echo(echo: &Everything, v: i64) -> armillary::Request {
    echo.as_object()
        .request("echo_longlong")
        .with_in(Any::from(v))
        .returns(TypeCode::longlong())
}

/// The value a completed DII `echo_longlong` returned.
fn dii_result(request: &mut armillary::Request) -> Result<i64, String> {
    request.get_response().map_err(|e| e.to_string())?;
    request
        .return_value()
        .and_then(|v| v.get::<i64>())
        .ok_or_else(|| "echo_longlong returned no long long".to_owned())
}

/// Runs `armillary bench invocation`.
pub fn run(options: InvocationOptions) -> Result<ExitCode, String> {
    let dir = std::env::temp_dir().join(format!("armillary-bench-inv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = run_in(&options, &dir);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn run_in(options: &InvocationOptions, dir: &Path) -> Result<ExitCode, String> {
    if let Some(out) = &options.latency_only {
        let latency = latency_phase(options, dir)?;
        write_json(out, &latency)?;
        return Ok(ExitCode::SUCCESS);
    }
    // omniORB's peers, built first if they are not yet; none (said once
    // on stderr) when they cannot be.
    let omniorb = if options.measures("omniorb_ami") {
        crate::omniorb_peers::find()
    } else {
        None
    };
    let (latency, latency_pinning) = pinned_latency(options, dir)?;
    let throughput = throughput_phase(options, dir, omniorb)?;

    println!(
        "Table 1: latency of {} two-way calls, one at a time (µs; {latency_pinning})",
        options.calls
    );
    let rows: Vec<Vec<String>> = LATENCY_FORMS
        .iter()
        .map(|form| {
            let v = &latency[*form];
            let cell = |key: &str| match v[key].as_f64() {
                Some(x) => format!("{x:.1}"),
                None => "not measured".to_owned(),
            };
            vec![
                (*form).to_owned(),
                cell("min_us"),
                cell("avg_us"),
                cell("max_us"),
                cell("jitter_us"),
            ]
        })
        .collect();
    print_table(1, &["form", "min", "avg", "max", "jitter"], &rows);
    println!();
    println!(
        "Table 2: throughput, {} calls per form (calls/s; unpinned)",
        options.throughput_calls
    );
    let rows: Vec<Vec<String>> = THROUGHPUT_FORMS
        .iter()
        .map(|form| {
            let cell = match throughput[*form]["calls_per_s"].as_f64() {
                Some(x) => format!("{x:.0}"),
                None => "not measured".to_owned(),
            };
            vec![(*form).to_owned(), cell]
        })
        .collect();
    print_table(1, &["form", "calls/s"], &rows);
    let goals = goals(&latency, &throughput);
    println!();
    println!("Goals (issues 22 and 23), each a ratio of two figures of this run");
    print_goal_table(&goals, &GOAL_NAMES);

    let report = json!({
        "benchmark": "invocation",
        "calls": options.calls,
        "rounds": options.rounds,
        "throughput_calls": options.throughput_calls,
        "in_flight": options.in_flight,
        "latency_pinning": latency_pinning,
        "throughput_pinning": "unpinned",
        "server_concurrency": options.concurrency,
        "latency": latency,
        "throughput": throughput,
        "goals": goals,
    });
    if let Some(path) = &options.json {
        write_json(path, &report)?;
    }
    if let Some(path) = &options.plot {
        let bars = |forms: &[&str], section: &str, key: &str| -> Vec<(String, f64)> {
            forms
                .iter()
                .map(|f| {
                    let v = report[section][*f][key].as_f64().unwrap_or(f64::NAN);
                    ((*f).to_owned(), v)
                })
                .collect()
        };
        plot_bars_svg(
            path,
            &[
                Bars {
                    caption: format!("Latency, mean of {} calls", options.calls),
                    y_label: "µs".into(),
                    bars: bars(&LATENCY_FORMS, "latency", "avg_us"),
                },
                Bars {
                    caption: "Throughput".into(),
                    y_label: "calls/s".into(),
                    bars: bars(&THROUGHPUT_FORMS, "throughput", "calls_per_s"),
                },
            ],
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The goals' keys and labels, in table order.
const GOAL_NAMES: [(&str, &str); 4] = [
    ("ami_poller_vs_smi", "ami_poller / smi, mean latency"),
    ("ami_future_vs_smi", "ami_future / smi, mean latency"),
    ("ami_callback_vs_smi", "ami_callback / smi, mean latency"),
    (
        "ami_callback_vs_ami_future",
        "ami_callback / ami_future, throughput",
    ),
];

/// The goals of issues 22 and 23 judged on this run: a poller's mean
/// latency ≤ 1.05 × SMI's, a future's ≤ 1.15 ×, a callback's ≤ 1.2 ×,
/// and the callback form's throughput ≥ 0.5 × the futures'.
fn goals(latency: &serde_json::Value, throughput: &serde_json::Value) -> serde_json::Value {
    let mean = |form: &str| &latency[form]["avg_us"];
    let rate = |form: &str| &throughput[form]["calls_per_s"];
    json!({
        "ami_poller_vs_smi": goal(mean("ami_poller"), mean("smi"), "at_most", 1.05),
        "ami_future_vs_smi": goal(mean("ami_future"), mean("smi"), "at_most", 1.15),
        "ami_callback_vs_smi": goal(mean("ami_callback"), mean("smi"), "at_most", 1.2),
        "ami_callback_vs_ami_future": goal(
            rate("ami_callback"),
            rate("ami_future"),
            "at_least",
            0.5
        ),
    })
}

/// The latency phase, in a copy of this command running under `taskset`
/// on `--cpus` (in this process, unpinned, when `--cpus none` or when
/// taskset cannot run). Returns the `latency` JSON and how it was pinned.
fn pinned_latency(
    options: &InvocationOptions,
    dir: &Path,
) -> Result<(serde_json::Value, String), String> {
    if options.cpus != "none" {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let out = dir.join("latency.json");
        let status = Command::new("taskset")
            .arg("-c")
            .arg(&options.cpus)
            .arg(&exe)
            .args(["bench", "invocation", "--calls"])
            .arg(options.calls.to_string())
            .arg("--rounds")
            .arg(options.rounds.to_string())
            .args(["--concurrency", &options.concurrency])
            .args(forms_args(options))
            .arg("--latency-only")
            .arg(&out)
            .stdout(Stdio::null())
            .status();
        match status {
            Ok(s) if s.success() => {
                let text = std::fs::read_to_string(&out)
                    .map_err(|e| format!("cannot read {}: {e}", out.display()))?;
                let latency = serde_json::from_str(&text).map_err(|e| e.to_string())?;
                return Ok((
                    latency,
                    format!("all processes on CPU {} (taskset)", options.cpus),
                ));
            }
            Ok(_) => return Err("the latency phase failed".into()),
            Err(e) => eprintln!("warning: cannot pin with taskset ({e}); running unpinned"),
        }
    }
    Ok((latency_phase(options, dir)?, "unpinned".to_owned()))
}
