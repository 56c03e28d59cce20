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
//! at a time, each form in turn, each call timed on its own; minimum,
//! mean, maximum and jitter (standard deviation), in µs. Forms:
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
//! - `benchmark` (`"invocation"`), `calls`, `throughput_calls`,
//!   `in_flight`, `latency_pinning`, `throughput_pinning`,
//!   `server_concurrency`.
//!
//! **Plot** (`--plot FILE.svg`): two bar charts, mean latency per form
//! and throughput per form.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use armillary::{Any, Orb, TypeCode};
use clap::Args;
use indicatif::ProgressBar;
use serde_json::json;

use crate::bench_process::{message_sizes, start_raw_server, Peer, RawShape};
use crate::bench_report::{plot_bars_svg, print_table, progress, write_json, Bars, Summary};
use crate::omniorb_peers::{OmniorbPeers, Program};

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

    let report = json!({
        "benchmark": "invocation",
        "calls": options.calls,
        "throughput_calls": options.throughput_calls,
        "in_flight": options.in_flight,
        "latency_pinning": latency_pinning,
        "throughput_pinning": "unpinned",
        "server_concurrency": options.concurrency,
        "latency": latency,
        "throughput": throughput,
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

/// Table 1: each form's calls one at a time, each timed.
fn latency_phase(options: &InvocationOptions, dir: &Path) -> Result<serde_json::Value, String> {
    let c = Contender::start(dir, &options.concurrency, 1)?;
    let calls = options.calls.max(1);
    let bar = progress((calls * LATENCY_FORMS.len()) as u64, " calls");
    let mut result = serde_json::Map::new();
    for form in LATENCY_FORMS {
        bar.set_message(format!("latency {form}"));
        let times = match form {
            _ if !options.measures(form) => None,
            "smi" => Some(timed_calls(calls, &bar, |v| {
                c.echo.echo_longlong(v).map_err(|e| e.to_string())
            })?),
            "dii_deferred" => Some(timed_calls(calls, &bar, |v| {
                let mut request = dii_echo(&c.echo, v);
                request.send_deferred().map_err(|e| e.to_string())?;
                dii_result(&mut request)
            })?),
            "ami_callback" => {
                // One thread: send, then drive the ORB until the handler
                // has run.
                let reply = Arc::new(Mutex::new(None));
                let slot = Arc::clone(&reply);
                c.sink.set(move |outcome| {
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                });
                Some(timed_calls(calls, &bar, |v| {
                    c.echo
                        .sendc_echo_longlong(&c.handler, v)
                        .map_err(|e| e.to_string())?;
                    loop {
                        if let Some(outcome) =
                            reply.lock().unwrap_or_else(PoisonError::into_inner).take()
                        {
                            return outcome;
                        }
                        c.orb.perform_work().map_err(|e| e.to_string())?;
                    }
                })?)
            }
            "ami_poller" => Some(timed_calls(calls, &bar, |v| {
                // Sent, then collected at once: the poller's wait reads
                // the reply itself.
                c.echo
                    .sendp_echo_longlong(v)
                    .take()
                    .map_err(|e| e.to_string())
            })?),
            "ami_future" => Some(timed_calls(calls, &bar, |v| {
                ami::block_on(ami::echo_async(&c.echo, v)).map_err(|e| e.to_string())
            })?),
            _ => None,
        };
        let value = times.map_or(serde_json::Value::Null, |t| Summary::of(&t).to_json());
        result.insert(form.to_owned(), value);
    }
    bar.finish_and_clear();
    Ok(serde_json::Value::Object(result))
}

/// `calls` calls of `call`, each timed; every reply checked.
fn timed_calls(
    calls: usize,
    bar: &ProgressBar,
    mut call: impl FnMut(i64) -> Result<i64, String>,
) -> Result<Vec<Duration>, String> {
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls {
        let v = i as i64;
        let t = Instant::now();
        let got = call(v)?;
        times.push(t.elapsed());
        check(v, got)?;
        if i % 100 == 99 {
            bar.inc(100);
        }
    }
    bar.inc((calls % 100) as u64);
    Ok(times)
}

/// Table 2: each form's calls as fast as it can make them.
fn throughput_phase(
    options: &InvocationOptions,
    dir: &Path,
    omniorb: Option<&OmniorbPeers>,
) -> Result<serde_json::Value, String> {
    let in_flight = options.in_flight.max(1);
    let c = Contender::start(dir, &options.concurrency, in_flight)?;
    let calls = options.throughput_calls.max(1);
    let bar = progress(THROUGHPUT_FORMS.len() as u64, " forms");
    let mut result = serde_json::Map::new();
    for form in THROUGHPUT_FORMS {
        bar.set_message(format!("throughput {form}"));
        let value = match form {
            _ if !options.measures(form) => serde_json::Value::Null,
            "smi_220" => smi_threads(&c.echo, 220, calls)?,
            "smi_7" => smi_threads(&c.echo, 7, calls)?,
            "dii_deferred" => dii_deferred(&c, calls, in_flight)?,
            "omniorb_ami" => match omniorb {
                Some(peers) => omniorb_ami(peers, dir, calls, in_flight)?,
                None => serde_json::Value::Null,
            },
            "ami_callback" => ami_callback(&c, calls, in_flight)?,
            "ami_poller" => ami_poller(&c, calls, in_flight)?,
            "ami_future" => ami_future(&c, calls, in_flight)?,
            "raw_tcp" => raw_tcp(&c, dir, calls, in_flight)?,
            _ => serde_json::Value::Null,
        };
        result.insert(form.to_owned(), value);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(serde_json::Value::Object(result))
}

fn per_second(calls: usize, elapsed: Duration) -> f64 {
    (calls as f64 / elapsed.as_secs_f64()).round()
}

/// `threads` threads each making synchronous calls, `calls` in all.
fn smi_threads(
    echo: &Everything,
    threads: usize,
    calls: usize,
) -> Result<serde_json::Value, String> {
    let threads = threads.min(calls).max(1);
    let start = Arc::new(Barrier::new(threads + 1));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let echo = echo.clone();
            let start = Arc::clone(&start);
            // Thread t makes calls t, t + threads, t + 2·threads, …
            std::thread::Builder::new()
                .name(format!("smi-{t}"))
                .stack_size(256 * 1024)
                .spawn(move || -> Result<(), String> {
                    start.wait();
                    for v in (t..calls).step_by(threads) {
                        let v = v as i64;
                        check(v, echo.echo_longlong(v).map_err(|e| e.to_string())?)?;
                    }
                    Ok(())
                })
                .map_err(|e| format!("cannot start a client thread: {e}"))
        })
        .collect::<Result<_, _>>()?;
    start.wait();
    let t = Instant::now();
    let mut failure = None;
    for handle in handles {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some("a client thread panicked".into()),
        }
    }
    let elapsed = t.elapsed();
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(json!({
        "calls": calls,
        "threads": threads,
        "calls_per_s": per_second(calls, elapsed),
    }))
}

/// DII deferred requests, `in_flight` outstanding, through
/// `send_multiple_requests` / `get_next_response`.
fn dii_deferred(
    c: &Contender,
    calls: usize,
    in_flight: usize,
) -> Result<serde_json::Value, String> {
    let first = in_flight.min(calls);
    let t = Instant::now();
    c.orb
        .send_multiple_requests((0..first).map(|v| dii_echo(&c.echo, v as i64)))
        .map_err(|e| e.to_string())?;
    let (mut sent, mut sum, mut received) = (first, 0i64, 0usize);
    while received < calls {
        let mut request = c.orb.get_next_response().map_err(|e| e.to_string())?;
        sum = sum.wrapping_add(dii_result(&mut request)?);
        received += 1;
        if sent < calls {
            c.orb
                .send_multiple_requests([dii_echo(&c.echo, sent as i64)])
                .map_err(|e| e.to_string())?;
            sent += 1;
        }
    }
    let elapsed = t.elapsed();
    let expected = (0..calls as i64).fold(0i64, i64::wrapping_add);
    if sum != expected {
        return Err("the DII replies do not add up to the values sent".into());
    }
    Ok(json!({
        "calls": calls,
        "in_flight": in_flight,
        "calls_per_s": per_second(calls, elapsed),
    }))
}

/// omniORB's AMI client against omniORB's server.
fn omniorb_ami(
    peers: &OmniorbPeers,
    dir: &Path,
    calls: usize,
    in_flight: usize,
) -> Result<serde_json::Value, String> {
    let (_server, ior_file) = peers.start_server(dir)?;
    let out = Command::new(peers.program(Program::AmiBenchClient))
        .arg(&ior_file)
        .arg(calls.to_string())
        .arg(in_flight.to_string())
        .output()
        .map_err(|e| format!("cannot run omniORB's ami_bench_client: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "omniORB's ami_bench_client failed: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let rate = stdout
        .lines()
        .find_map(|l| l.strip_prefix("calls_per_s "))
        .and_then(|x| x.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("unexpected output from ami_bench_client: {stdout}"))?;
    Ok(json!({
        "calls": calls,
        "in_flight": in_flight,
        "calls_per_s": rate.round(),
    }))
}

/// The callback form's replies, counted: the sender waits on `changed`
/// while `in_flight` requests await their reply.
#[derive(Default)]
struct Window {
    state: Mutex<WindowState>,
    changed: Condvar,
}

#[derive(Default)]
struct WindowState {
    in_flight: usize,
    replies: usize,
    sum: i64,
    failure: Option<String>,
}

impl Window {
    fn lock(&self) -> std::sync::MutexGuard<'_, WindowState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until fewer than `limit` requests are in flight, then counts
    /// one more.
    fn acquire(&self, limit: usize) {
        let mut state = self.lock();
        while state.in_flight >= limit {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.in_flight += 1;
    }

    /// One reply arrived.
    fn reply(&self, outcome: Result<i64, String>) {
        let mut state = self.lock();
        state.in_flight -= 1;
        state.replies += 1;
        match outcome {
            Ok(v) => state.sum = state.sum.wrapping_add(v),
            Err(e) => state.failure = Some(e),
        }
        self.changed.notify_all();
    }

    /// `n` replies arrived at once (their values not looked at).
    fn replies_arrived(&self, n: usize) {
        let mut state = self.lock();
        state.in_flight -= n;
        state.replies += n;
        self.changed.notify_all();
    }

    /// Waits until `replies` replies have arrived.
    fn wait_for(&self, replies: usize) {
        let mut state = self.lock();
        while state.replies < replies {
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// The sum of `0..calls`, what the replies must add up to.
fn expected_sum(calls: usize) -> i64 {
    (0..calls as i64).fold(0i64, i64::wrapping_add)
}

/// AMI callbacks: this thread sends, `in_flight` at most awaiting their
/// reply; another runs the ORB's event loop (`perform_work`), which
/// delivers the replies to the handler.
fn ami_callback(
    c: &Contender,
    calls: usize,
    in_flight: usize,
) -> Result<serde_json::Value, String> {
    let window = Arc::new(Window::default());
    let w = Arc::clone(&window);
    c.sink.set(move |outcome| w.reply(outcome));
    let stop = Arc::new(AtomicBool::new(false));
    let event_loop = {
        let orb = c.orb.clone();
        let stop = Arc::clone(&stop);
        std::thread::Builder::new()
            .name("ami-event-loop".into())
            .spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    if orb.perform_work().is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start the event loop thread: {e}"))?
    };
    let t = Instant::now();
    let mut sent = Ok(());
    for v in 0..calls {
        window.acquire(in_flight);
        sent = c
            .echo
            .sendc_echo_longlong(&c.handler, v as i64)
            .map_err(|e| e.to_string());
        if sent.is_err() {
            break;
        }
    }
    if sent.is_ok() {
        window.wait_for(calls);
    }
    let elapsed = t.elapsed();
    stop.store(true, Ordering::Release);
    let _ = event_loop.join();
    sent?;
    let state = window.lock();
    if let Some(e) = &state.failure {
        return Err(e.clone());
    }
    ami_throughput(calls, in_flight, state.sum, elapsed)
}

/// An AMI throughput form's figures, once the replies' values (`sum`)
/// are checked against those sent.
fn ami_throughput(
    calls: usize,
    in_flight: usize,
    sum: i64,
    elapsed: Duration,
) -> Result<serde_json::Value, String> {
    if sum != expected_sum(calls) {
        return Err("the AMI replies do not add up to the values sent".into());
    }
    Ok(json!({
        "calls": calls,
        "in_flight": in_flight,
        "calls_per_s": per_second(calls, elapsed),
    }))
}

/// Pollers on one thread, `in_flight` at most outstanding, collected
/// oldest first.
fn ami_poller(c: &Contender, calls: usize, in_flight: usize) -> Result<serde_json::Value, String> {
    let t = Instant::now();
    let mut window = std::collections::VecDeque::with_capacity(in_flight);
    let mut sum = 0i64;
    let mut sent = 0usize;
    while sent < calls || !window.is_empty() {
        if sent < calls && window.len() < in_flight {
            window.push_back(c.echo.sendp_echo_longlong(sent as i64));
            sent += 1;
            continue;
        }
        if let Some(mut poller) = window.pop_front() {
            sum = sum.wrapping_add(poller.take().map_err(|e| e.to_string())?);
        }
    }
    let elapsed = t.elapsed();
    ami_throughput(calls, in_flight, sum, elapsed)
}

/// AMI futures on one thread, `in_flight` at most awaiting their reply.
fn ami_future(c: &Contender, calls: usize, in_flight: usize) -> Result<serde_json::Value, String> {
    let t = Instant::now();
    let sum = ami::run_window(calls, in_flight, |v| ami::echo_async(&c.echo, v))?;
    let elapsed = t.elapsed();
    ami_throughput(calls, in_flight, sum, elapsed)
}

/// Raw TCP, pipelined: messages of the sizes of `echo_longlong`'s GIOP
/// 1.2 request and reply to `armillary bench serve-raw` (which reads each
/// request and writes its reply), `in_flight` at most awaiting their
/// reply; this thread writes each request on its own, another reads the
/// replies. What one write per message costs, with no ORB.
fn raw_tcp(
    c: &Contender,
    dir: &Path,
    calls: usize,
    in_flight: usize,
) -> Result<serde_json::Value, String> {
    let (request_size, reply_size) = message_sizes(c.echo.as_object());
    let (_server, port) =
        start_raw_server(dir, "raw", RawShape::ping_pong(request_size, reply_size))?;
    let mut stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut replies = stream.try_clone().map_err(|e| e.to_string())?;
    let window = Arc::new(Window::default());
    let reader = {
        let window = Arc::clone(&window);
        std::thread::Builder::new()
            .name("raw-tcp-reader".into())
            .spawn(move || -> Result<(), String> {
                let mut buf = vec![0u8; 64 * 1024];
                let (mut bytes, mut counted) = (0usize, 0usize);
                while counted < calls {
                    let n = replies.read(&mut buf).map_err(|e| e.to_string())?;
                    if n == 0 {
                        return Err("the raw TCP server closed the connection".into());
                    }
                    bytes += n;
                    let complete = bytes / reply_size;
                    window.replies_arrived(complete - counted);
                    counted = complete;
                }
                Ok(())
            })
            .map_err(|e| format!("cannot start the reader thread: {e}"))?
    };
    let request = vec![1u8; request_size];
    let t = Instant::now();
    let mut sent = Ok(());
    for _ in 0..calls {
        window.acquire(in_flight);
        sent = stream.write_all(&request).map_err(|e| e.to_string());
        if sent.is_err() {
            break;
        }
    }
    if sent.is_ok() {
        window.wait_for(calls);
    }
    let elapsed = t.elapsed();
    sent?;
    reader
        .join()
        .map_err(|_| "the reader thread panicked".to_owned())??;
    Ok(json!({
        "calls": calls,
        "in_flight": in_flight,
        "request_bytes": request_size,
        "reply_bytes": reply_size,
        "calls_per_s": per_second(calls, elapsed),
    }))
}

/// The future form of `echo_longlong`, and the little executor the
/// future forms run on (the ORB needs none of its own).
mod ami {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::task::{Context, Poll, Wake, Waker};
    use std::thread::Thread;

    use armillary::ami::ReplyFuture;
    use armillary::giop::cdr::CdrError;
    use armillary::giop::system_exception::CompletionStatus;
    use armillary::runtime::ReplyBody;
    use armillary::SystemException;

    use super::{check, Everything};

    fn write_arg(v: i64) -> impl Fn(&mut armillary::giop::cdr::CdrWriter) -> Result<(), CdrError> {
        move |w| {
            w.write_longlong(v);
            Ok(())
        }
    }

    fn decode(reply: ReplyBody<'_, '_>) -> Result<Result<i64, SystemException>, CdrError> {
        match reply {
            ReplyBody::Result(r) => Ok(Ok(r.read_longlong()?)),
            // echo_longlong declares no user exception.
            ReplyBody::UserException { .. } => {
                Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
            }
        }
    }

    /// `echo_longlong(v)` as a future (what a generated
    /// `echo_longlong_async` returns).
    pub(super) fn echo_async(echo: &Everything, v: i64) -> ReplyFuture<i64, SystemException> {
        echo.as_object()
            .send_future("echo_longlong", write_arg(v), decode)
    }

    /// Wakes a thread blocked in [`block_on`] or [`run_window`], noting
    /// which future asked.
    struct Unpark {
        thread: Thread,
        index: usize,
        woken: Arc<Mutex<Vec<usize>>>,
    }

    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.woken
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(self.index);
            self.thread.unpark();
        }
    }

    fn waker(index: usize, woken: &Arc<Mutex<Vec<usize>>>) -> Waker {
        Waker::from(Arc::new(Unpark {
            thread: std::thread::current(),
            index,
            woken: Arc::clone(woken),
        }))
    }

    /// Runs `future` to completion on this thread.
    pub(super) fn block_on<F: Future + Unpin>(mut future: F) -> F::Output {
        let woken = Arc::new(Mutex::new(Vec::new()));
        let waker = waker(0, &woken);
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(out) = Pin::new(&mut future).poll(&mut cx) {
                return out;
            }
            // A wake before the park makes the park return at once.
            std::thread::park();
        }
    }

    /// Calls `start(0)`, `start(1)`, … `start(calls - 1)`, keeping up to
    /// `in_flight` of their futures pending at once, on this thread; each
    /// value is checked against its argument. Returns the sum of the
    /// values.
    pub(super) fn run_window<F>(
        calls: usize,
        in_flight: usize,
        mut start: impl FnMut(i64) -> F,
    ) -> Result<i64, String>
    where
        F: Future<Output = Result<i64, SystemException>> + Unpin,
    {
        let woken = Arc::new(Mutex::new(Vec::new()));
        let slots = in_flight.min(calls).max(1);
        let mut pending: Vec<Option<(i64, F, Waker)>> = (0..slots).map(|_| None).collect();
        let (mut next, mut done, mut sum) = (0usize, 0usize, 0i64);
        // Every slot starts with one call, polled once to register.
        let mut to_poll: Vec<usize> = (0..slots).collect();
        while done < calls {
            for index in to_poll.drain(..) {
                loop {
                    let slot = &mut pending[index];
                    if slot.is_none() {
                        if next == calls {
                            break;
                        }
                        let v = next as i64;
                        next += 1;
                        *slot = Some((v, start(v), waker(index, &woken)));
                    }
                    let Some((v, future, waker)) = slot.as_mut() else {
                        break;
                    };
                    match Pin::new(future).poll(&mut Context::from_waker(waker)) {
                        Poll::Pending => break,
                        Poll::Ready(outcome) => {
                            let got = outcome.map_err(|e| e.to_string())?;
                            check(*v, got)?;
                            sum = sum.wrapping_add(got);
                            done += 1;
                            *slot = None;
                        }
                    }
                }
            }
            if done == calls {
                break;
            }
            let ready = std::mem::take(&mut *woken.lock().unwrap_or_else(PoisonError::into_inner));
            if ready.is_empty() {
                std::thread::park();
            } else {
                to_poll = ready;
            }
        }
        Ok(sum)
    }
}
