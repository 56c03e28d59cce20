//! Table 2, throughput: each form's calls as fast as it can make them,
//! one form after the other, on one client ORB and one server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{
    ami, check, dii_echo, dii_result, Contender, Everything, InvocationOptions, THROUGHPUT_FORMS,
};
use crate::bench_process::{message_sizes, start_raw_server, RawShape};
use crate::bench_report::progress;
use crate::omniorb_peers::{OmniorbPeers, Program};

/// Table 2: each form's calls as fast as it can make them.
pub(super) fn throughput_phase(
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
