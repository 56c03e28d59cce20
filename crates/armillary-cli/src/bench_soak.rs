//! `armillary bench soak`: a long run of mixed traffic against an Armillary
//! server in another process, counting every request and every answer, and
//! watching the server's resident memory and descriptors.
//!
//! Each of `--connections` client threads runs sessions one after another:
//! a session is a fresh client ORB (so a fresh connection), a random number
//! of calls, mostly synchronous `echo` (a unique id and a payload of random
//! size, answered with both) and some `note` oneways (a unique id), ending
//! with a synchronous call and the ORB's orderly close. So connections
//! open and close throughout. The server counts what it ran, with a hash
//! sum of the ids per kind; at the end the client compares: a request lost
//! or run twice shows in the counts or the sums, a reply routed to the
//! wrong call in its id. The server's `VmRSS` and open descriptors
//! (`/proc/PID/status`, `/proc/PID/fd`) are sampled every second; the
//! report gives first, last, largest and the slope after the first tenth
//! of the run (warm-up), and the values once the clients are gone. The
//! command fails (exit 1) when anything was lost,
//! duplicated, misrouted or raised.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use armillary::config::OrbConfig;
use armillary::giop::cdr::CdrError;
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::{ObjectRef, Orb, Servant, ServerRequest};
use serde_json::json;

use crate::bench_process::{wait_for_file, write_atomically, Peer};

/// What `armillary bench soak` is asked to do.
pub struct SoakOptions {
    /// How long to run.
    pub duration: Duration,
    /// Client threads, each with its own sessions (connections).
    pub connections: usize,
    /// The server's `-ORBConcurrency`.
    pub concurrency: String,
    /// Where to write the JSON report.
    pub json: Option<PathBuf>,
}

/// SplitMix64: the hash of ids summed on both sides, and the clients'
/// random numbers.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// What the server ran, by kind: how many and the wrapping sum of
/// `mix(id)`.
#[derive(Default)]
struct Tally {
    count: AtomicU64,
    hash: AtomicU64,
}

impl Tally {
    fn add(&self, id: u64) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.hash.fetch_add(mix(id), Ordering::Relaxed);
    }

    fn get(&self) -> (u64, u64) {
        (
            self.count.load(Ordering::SeqCst),
            self.hash.load(Ordering::SeqCst),
        )
    }
}

/// The soak servant: `echo(id, payload) -> (id, payload length)`,
/// `note(id)` (oneway), `stats() -> (echo count, echo hash, note count,
/// note hash)`.
#[derive(Default)]
struct SoakServant {
    echoes: Tally,
    notes: Tally,
}

impl Servant for SoakServant {
    fn repository_id(&self) -> &'static str {
        "IDL:Armillary/Soak:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Armillary/Soak:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let bad = |e: CdrError| SystemException::from_cdr_error(&e, CompletionStatus::No);
        match req.operation() {
            "echo" => {
                let id = req.args().read_ulonglong().map_err(bad)?;
                let len = req.args().read_octet_seq().map_err(bad)?.len();
                self.echoes.add(id);
                // One writer: `results()` starts the reply afresh.
                let w = req.results();
                w.write_ulonglong(id);
                w.write_ulong(len as u32);
            }
            "note" => {
                let id = req.args().read_ulonglong().map_err(bad)?;
                self.notes.add(id);
            }
            "stats" => {
                let (echo_count, echo_hash) = self.echoes.get();
                let (note_count, note_hash) = self.notes.get();
                let w = req.results();
                for v in [echo_count, echo_hash, note_count, note_hash] {
                    w.write_ulonglong(v);
                }
            }
            _ => return Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
        Ok(())
    }
}

/// `armillary bench serve-soak`: the server side, in its own process.
pub fn serve(ior_file: &Path, concurrency: &str) -> Result<ExitCode, String> {
    let (orb, _) = Orb::init(["-ORBConcurrency", concurrency]).map_err(|e| e.to_string())?;
    let poa = orb.root_poa();
    poa.manager().activate().map_err(|e| e.to_string())?;
    let servant: Arc<dyn Servant> = Arc::new(SoakServant::default());
    let obj = poa
        .servant_to_reference(&servant)
        .map_err(|e| e.to_string())?;
    write_atomically(ior_file, &orb.object_to_string(&obj))?;
    orb.run().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// What the clients did, all threads together.
#[derive(Default)]
struct ClientCounts {
    echoes_sent: AtomicU64,
    echo_hash: AtomicU64,
    replies: AtomicU64,
    /// Replies whose id or length was not the request's.
    misrouted: AtomicU64,
    notes_sent: AtomicU64,
    note_hash: AtomicU64,
    exceptions: AtomicU64,
    sessions: AtomicU64,
    first_errors: ErrorLog,
}

/// The first few unexpected exceptions, for the report.
#[derive(Default)]
struct ErrorLog(Mutex<Vec<String>>);

impl ErrorLog {
    fn push(&self, message: String) {
        if let Ok(mut v) = self.0.lock() {
            if v.len() < 5 {
                v.push(message);
            }
        }
    }

    fn take(&self) -> Vec<String> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

fn echo(obj: &ObjectRef, id: u64, payload: &[u8]) -> Result<(u64, u32), SystemException> {
    obj.invoke_plain(
        "echo",
        &|w| {
            w.write_ulonglong(id);
            w.write_octet_seq(payload)
        },
        |r| Ok((r.read_ulonglong()?, r.read_ulong()?)),
    )
}

/// One client thread: sessions until `stop`.
fn client_thread(ior: &str, worker: u64, stop: &AtomicBool, counts: &ClientCounts) {
    let mut rng = mix(worker + 1);
    let mut next = || {
        rng = mix(rng);
        rng
    };
    // Ids are unique across threads: the worker number in the top bits.
    let mut serial = 0u64;
    let mut id = || {
        serial += 1;
        (worker << 40) | serial
    };
    let payload = vec![0x5au8; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        let orb = match Orb::with_config(OrbConfig::default()) {
            Ok(orb) => orb,
            Err(e) => {
                counts.exceptions.fetch_add(1, Ordering::Relaxed);
                counts.first_errors.push(format!("client ORB: {e}"));
                return;
            }
        };
        counts.sessions.fetch_add(1, Ordering::Relaxed);
        let obj = match orb.string_to_object(ior) {
            Ok(obj) => obj,
            Err(e) => {
                counts.exceptions.fetch_add(1, Ordering::Relaxed);
                counts.first_errors.push(format!("string_to_object: {e}"));
                orb.destroy();
                return;
            }
        };
        let calls = 1 + next() % 200;
        for i in 0..calls {
            // The last call of a session is synchronous: every oneway
            // before it has been read by the server when it returns.
            let oneway = i + 1 < calls && next() % 10 < 3;
            let id = id();
            if oneway {
                counts.notes_sent.fetch_add(1, Ordering::Relaxed);
                counts.note_hash.fetch_add(mix(id), Ordering::Relaxed);
                if let Err(e) = obj.invoke_oneway("note", &|w| {
                    w.write_ulonglong(id);
                    Ok(())
                }) {
                    counts.exceptions.fetch_add(1, Ordering::Relaxed);
                    counts.first_errors.push(format!("note: {e}"));
                }
                continue;
            }
            let len = (next() % payload.len() as u64) as usize;
            counts.echoes_sent.fetch_add(1, Ordering::Relaxed);
            counts.echo_hash.fetch_add(mix(id), Ordering::Relaxed);
            match echo(&obj, id, &payload[..len]) {
                Ok((got, got_len)) if got == id && got_len as usize == len => {
                    counts.replies.fetch_add(1, Ordering::Relaxed);
                }
                Ok(_) => {
                    counts.replies.fetch_add(1, Ordering::Relaxed);
                    counts.misrouted.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    counts.exceptions.fetch_add(1, Ordering::Relaxed);
                    counts.first_errors.push(format!("echo: {e}"));
                }
            }
        }
        // Closes the connection with CloseConnection.
        orb.destroy();
    }
}

/// One sample of the server process.
#[derive(Clone, Copy)]
struct Sample {
    secs: f64,
    rss_kib: f64,
    fds: f64,
}

fn sample(pid: u32, started: Instant) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as f64;
    Some(Sample {
        secs: started.elapsed().as_secs_f64(),
        rss_kib,
        fds,
    })
}

/// First, last, largest and least-squares slope per minute (after the
/// warm-up tenth) of one measure while the clients run, and its value once
/// they are gone (`after`).
fn trend(
    samples: &[Sample],
    after: Option<Sample>,
    value: fn(&Sample) -> f64,
) -> serde_json::Value {
    let (Some(first), Some(last)) = (samples.first(), samples.last()) else {
        return json!(null);
    };
    let max = samples.iter().map(value).fold(f64::MIN, f64::max);
    let steady = &samples[samples.len() / 10..];
    let n = steady.len() as f64;
    let slope = if steady.len() < 2 {
        0.0
    } else {
        let mx = steady.iter().map(|s| s.secs).sum::<f64>() / n;
        let my = steady.iter().map(value).sum::<f64>() / n;
        let sxy: f64 = steady.iter().map(|s| (s.secs - mx) * (value(s) - my)).sum();
        let sxx: f64 = steady.iter().map(|s| (s.secs - mx).powi(2)).sum();
        if sxx > 0.0 {
            sxy / sxx * 60.0
        } else {
            0.0
        }
    };
    json!({
        "first": value(first),
        "last": value(last),
        "max": max,
        "slope_per_minute": (slope * 100.0).round() / 100.0,
        "after": after.as_ref().map(value),
    })
}

/// Runs the soak.
pub fn run(options: SoakOptions) -> Result<ExitCode, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("armillary-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let ior_file = dir.join("soak.ior");
    let server = Peer(
        Command::new(&exe)
            .args([
                "bench",
                "serve-soak",
                "--concurrency",
                &options.concurrency,
                "--ior-file",
            ])
            .arg(&ior_file)
            .spawn()
            .map_err(|e| format!("cannot start the soak server: {e}"))?,
    );
    let pid = server.0.id();
    let ior = wait_for_file(&ior_file)?;
    let _ = std::fs::remove_dir_all(&dir);

    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(ClientCounts::default());
    let workers: Vec<_> = (0..options.connections.max(1) as u64)
        .map(|w| {
            let (ior, stop, counts) = (ior.clone(), stop.clone(), counts.clone());
            std::thread::spawn(move || client_thread(&ior, w, &stop, &counts))
        })
        .collect();

    let total = options.duration.as_secs().max(1);
    let bar = crate::bench_report::progress(total, " s");
    let mut samples = Vec::new();
    while started.elapsed() < options.duration {
        std::thread::sleep(Duration::from_secs(1).min(options.duration));
        if let Some(s) = sample(pid, started) {
            samples.push(s);
            bar.set_message(format!(
                "{} calls, {} sessions, server {:.1} MiB, {} fds",
                counts.echoes_sent.load(Ordering::Relaxed)
                    + counts.notes_sent.load(Ordering::Relaxed),
                counts.sessions.load(Ordering::Relaxed),
                s.rss_kib / 1024.0,
                s.fds
            ));
        }
        bar.set_position(started.elapsed().as_secs().min(total));
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join()
            .map_err(|_| "a client thread panicked".to_string())?;
    }
    bar.finish_and_clear();
    let elapsed = started.elapsed();

    // What the server ran. Oneways read before the last call of their
    // session may still be running on a server thread: ask until the
    // counts stop short of nothing, for a few seconds at most.
    let orb = Orb::with_config(OrbConfig::default()).map_err(|e| e.to_string())?;
    let obj = orb.string_to_object(&ior).map_err(|e| e.to_string())?;
    let notes_sent = counts.notes_sent.load(Ordering::SeqCst);
    let stats = || {
        obj.invoke_plain("stats", &|_| Ok(()), |r| {
            Ok([
                r.read_ulonglong()?,
                r.read_ulonglong()?,
                r.read_ulonglong()?,
                r.read_ulonglong()?,
            ])
        })
    };
    let settle = Instant::now() + Duration::from_secs(10);
    let [echo_count, echo_hash, note_count, note_hash] = loop {
        let s = stats().map_err(|e| format!("the soak server's stats: {e}"))?;
        if s[2] >= notes_sent || Instant::now() > settle {
            break s;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Once the clients are gone: what the server keeps when idle.
    let after = sample(pid, started);
    orb.destroy();
    drop(server);

    let echoes_sent = counts.echoes_sent.load(Ordering::SeqCst);
    let replies = counts.replies.load(Ordering::SeqCst);
    let misrouted = counts.misrouted.load(Ordering::SeqCst);
    let exceptions = counts.exceptions.load(Ordering::SeqCst);
    let sessions = counts.sessions.load(Ordering::SeqCst);
    let sums_match = echo_hash == counts.echo_hash.load(Ordering::SeqCst)
        && note_hash == counts.note_hash.load(Ordering::SeqCst);
    let lost = echoes_sent.saturating_sub(echo_count) + notes_sent.saturating_sub(note_count);
    let duplicated = echo_count.saturating_sub(echoes_sent) + note_count.saturating_sub(notes_sent);
    let rss = trend(&samples, after, |s| s.rss_kib);
    let fds = trend(&samples, after, |s| s.fds);

    println!(
        "soak: {:.0} s, {} client threads, server {}",
        elapsed.as_secs_f64(),
        options.connections,
        options.concurrency
    );
    println!("{:<34} {:>14}", "sessions (connections opened)", sessions);
    println!("{:<34} {:>14}", "synchronous requests sent", echoes_sent);
    println!("{:<34} {:>14}", "replies received", replies);
    println!("{:<34} {:>14}", "oneways sent", notes_sent);
    println!(
        "{:<34} {:>14}",
        "server ran (sync + oneway)",
        echo_count + note_count
    );
    println!("{:<34} {:>14}", "lost", lost);
    println!("{:<34} {:>14}", "duplicated", duplicated);
    println!("{:<34} {:>14}", "misrouted replies", misrouted);
    println!(
        "{:<34} {:>14}",
        "id sums match",
        if sums_match { "yes" } else { "NO" }
    );
    println!("{:<34} {:>14}", "unexpected exceptions", exceptions);
    println!(
        "{:<34} {:>14.0}",
        "calls per second",
        (echoes_sent + notes_sent) as f64 / elapsed.as_secs_f64()
    );
    println!(
        "{:<16} {:>10} {:>10} {:>10} {:>14} {:>10}",
        "server", "first", "last", "max", "slope / min", "after"
    );
    for (name, t) in [("RSS KiB", &rss), ("descriptors", &fds)] {
        let f = |k: &str| t[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<16} {:>10.0} {:>10.0} {:>10.0} {:>14.1} {:>10.0}",
            name,
            f("first"),
            f("last"),
            f("max"),
            f("slope_per_minute"),
            f("after")
        );
    }
    for e in counts.first_errors.take() {
        eprintln!("exception: {e}");
    }

    let ok = lost == 0
        && duplicated == 0
        && misrouted == 0
        && exceptions == 0
        && sums_match
        && replies == echoes_sent;
    let report = json!({
        "benchmark": "soak",
        "seconds": (elapsed.as_secs_f64() * 10.0).round() / 10.0,
        "client_threads": options.connections,
        "server_concurrency": options.concurrency,
        "sessions": sessions,
        "sync_sent": echoes_sent,
        "replies": replies,
        "oneway_sent": notes_sent,
        "server_ran_sync": echo_count,
        "server_ran_oneway": note_count,
        "lost": lost,
        "duplicated": duplicated,
        "misrouted": misrouted,
        "id_sums_match": sums_match,
        "unexpected_exceptions": exceptions,
        "server_rss_kib": rss,
        "server_fds": fds,
        "samples": samples.len(),
        "ok": ok,
    });
    if let Some(path) = &options.json {
        crate::bench_report::write_json(path, &report)?;
    }
    if ok {
        Ok(ExitCode::SUCCESS)
    } else {
        Err("requests were lost, duplicated or misrouted, or raised exceptions".into())
    }
}
