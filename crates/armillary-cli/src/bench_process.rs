//! The child processes of the benchmarks and what both sides of them
//! share: [`Peer`] (a child killed when dropped), [`wait_for_file`] and
//! [`wait_for_file_from`] (how a parent learns that a child is ready: the
//! child writes a file with [`write_atomically`]), [`command_on_cpus`]
//! (a child on other CPUs than its parent, through `taskset`), the CPU
//! time a process and the whole machine used ([`process_cpu_seconds`],
//! [`machine_busy_seconds`]), and the raw TCP baseline, a server
//! (`armillary bench serve-raw`, [`serve_raw`]) that answers messages of
//! one size with another, echoes them, or acknowledges a stream of them
//! ([`RawShape`]), started with [`start_raw_server`] and sized with
//! [`message_sizes`], [`request_size`] and [`reply_size`] like the GIOP
//! messages it stands for.
//!
//! The omniORB peers are in `omniorb_peers`; the Armillary echo server in
//! `echo_peer`; what the benchmarks share to report is in `bench_report`.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use armillary::giop::cdr::CdrWriter;
use armillary::giop::giop::{
    MessageBody, MessageBuilder, ReplyHeader, ReplyStatus, RequestHeader, TargetAddress,
};
use armillary::giop::{ByteOrder, GiopVersion};
use armillary::ObjectRef;

use crate::bench_report::CallTimes;

/// Writes `text` to `path` through a temporary file and a rename, so that a
/// reader waiting for the file ([`wait_for_file`]) never sees it half
/// written.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// What a raw TCP server ([`serve_raw`]) reads and writes: after every
/// `requests_per_reply` messages of `request_size` bytes, one of
/// `reply_size` bytes. When both sizes are equal the reply is the last
/// request sent back (an echo the client can check); otherwise it is
/// zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawShape {
    pub(crate) request_size: usize,
    pub(crate) reply_size: usize,
    pub(crate) requests_per_reply: usize,
}

impl RawShape {
    /// A ping-pong: each request answered by one reply.
    pub(crate) fn ping_pong(request_size: usize, reply_size: usize) -> RawShape {
        RawShape {
            request_size,
            reply_size,
            requests_per_reply: 1,
        }
    }
}

/// `armillary bench serve-raw`: writes its port to `port_file`, then
/// serves every connection, one after another, as `shape` says, until
/// killed. A ping-pong reads each request with its own reads (as the
/// client writes them); a stream (more than one request per reply) reads
/// through a 64 KiB buffer, as a server reading a stream of messages
/// would.
pub(crate) fn serve_raw(port_file: &Path, shape: RawShape) -> Result<ExitCode, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    write_atomically(port_file, &port.to_string())?;
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        if shape.requests_per_reply > 1 {
            let Ok(writer) = stream.try_clone() else {
                continue;
            };
            let _ = serve_raw_connection(BufReader::with_capacity(1 << 16, stream), writer, shape);
        } else {
            let Ok(writer) = stream.try_clone() else {
                continue;
            };
            let _ = serve_raw_connection(stream, writer, shape);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Serves one connection of [`serve_raw`] until the client closes it.
fn serve_raw_connection(
    mut reader: impl Read,
    mut writer: impl Write,
    shape: RawShape,
) -> std::io::Result<()> {
    let mut request = vec![0u8; shape.request_size];
    let reply = vec![0u8; shape.reply_size];
    let echo = shape.request_size == shape.reply_size;
    loop {
        for _ in 0..shape.requests_per_reply.max(1) {
            reader.read_exact(&mut request)?;
        }
        writer.write_all(if echo { &request } else { &reply })?;
    }
}

/// Starts `armillary bench serve-raw` serving as `shape` says, its port
/// written to `dir/NAME.port`; returns it and its port.
pub(crate) fn start_raw_server(
    dir: &Path,
    name: &str,
    shape: RawShape,
) -> Result<(Peer, u16), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let port_file = dir.join(format!("{name}.port"));
    let _ = std::fs::remove_file(&port_file);
    let server = Peer(
        Command::new(&exe)
            .args(["bench", "serve-raw", "--port-file"])
            .arg(&port_file)
            .args([
                "--request-size",
                &shape.request_size.to_string(),
                "--reply-size",
                &shape.reply_size.to_string(),
                "--requests-per-reply",
                &shape.requests_per_reply.to_string(),
            ])
            .spawn()
            .map_err(|e| format!("cannot start the raw TCP server: {e}"))?,
    );
    let port = wait_for_file(&port_file)?
        .parse()
        .map_err(|_| "bad raw port".to_string())?;
    Ok((server, port))
}

/// Makes `calls` round trips of `shape` (one reply per request) on
/// `stream`, one after another, each timed on its own into `times`.
pub(crate) fn raw_ping_pongs(
    stream: &mut TcpStream,
    shape: RawShape,
    calls: usize,
    times: &mut CallTimes,
) -> Result<(), String> {
    let request = vec![1u8; shape.request_size];
    let mut reply = vec![0u8; shape.reply_size];
    for _ in 0..calls {
        let t = Instant::now();
        stream.write_all(&request).map_err(|e| e.to_string())?;
        stream.read_exact(&mut reply).map_err(|e| e.to_string())?;
        times.record(t.elapsed());
    }
    Ok(())
}

/// The `-ORBConcurrency` spelling of the ORB's default server model
/// (`thread-per-connection:64`): what an Armillary benchmark server runs
/// unless told otherwise.
pub(crate) fn default_concurrency() -> String {
    armillary::config::OrbConfig::new()
        .get_concurrency()
        .to_string()
}

/// A command running `program`, on the CPUs `cpus` (a `taskset` list)
/// when given: `taskset -c CPUS PROGRAM`, which may widen the CPUs the
/// child inherits (a pinned benchmark's unpinned phase).
pub(crate) fn command_on_cpus(program: &Path, cpus: Option<&str>) -> Command {
    match cpus {
        Some(cpus) => {
            let mut command = Command::new("taskset");
            command.arg("-c").arg(cpus).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Whether `taskset` can be run here (util-linux).
pub(crate) fn taskset_runs() -> bool {
    Command::new("taskset")
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Every CPU the machine has online, as a `taskset` list (`0-1`), from
/// `/sys/devices/system/cpu/online`; `None` where there is no such file.
pub(crate) fn online_cpus() -> Option<String> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// A child process killed when dropped.
pub(crate) struct Peer(pub(crate) Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The trimmed text of `path` once a child has written it (not empty),
/// waiting up to 30 s.
pub(crate) fn wait_for_file(path: &Path) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.trim().is_empty() {
                return Ok(text.trim().to_owned());
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{} was never written", path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// As [`wait_for_file`], but gives up at once when `child` exits before
/// writing it (a child that cannot start says so in its exit status).
pub(crate) fn wait_for_file_from(child: &mut Peer, path: &Path) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.trim().is_empty() {
                return Ok(text.trim().to_owned());
            }
        }
        if let Ok(Some(status)) = child.0.try_wait() {
            return Err(format!("it exited ({status})"));
        }
        if Instant::now() > deadline {
            return Err(format!("{} was never written", path.display()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Clock ticks per second of `/proc`'s CPU times (`USER_HZ`, 100 on
/// every Linux this runs on).
const USER_HZ: f64 = 100.0;

/// CPU time (user and system, every thread) process `pid` (a number, or
/// `self`) has used so far, in seconds, from `/proc/PID/stat`; `None`
/// where there is no such file.
pub(crate) fn process_cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces), from
    // the third: utime and stime are the 14th and 15th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / USER_HZ)
}

/// CPU time the whole machine has spent busy so far (every CPU, every
/// process, the kernel's too), in seconds, from `/proc/stat`; `None`
/// where there is no such file.
pub(crate) fn machine_busy_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal …: idle and iowait
    // are not busy; guest time is already counted in user.
    let busy: u64 = ticks
        .iter()
        .take(8)
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .sum();
    Some(busy as f64 / USER_HZ)
}

/// The Request and Reply sizes of one `echo_longlong` call to `obj`.
pub(crate) fn message_sizes(obj: &ObjectRef) -> (usize, usize) {
    (
        request_size(obj, "echo_longlong", true, |w| w.write_longlong(0)),
        reply_size(|w| w.write_longlong(0)),
    )
}

/// The size of a GIOP 1.2 Request to `obj` for `operation` (a reply
/// expected or not), its arguments written by `args`.
pub(crate) fn request_size(
    obj: &ObjectRef,
    operation: &str,
    response_expected: bool,
    args: impl Fn(&mut CdrWriter),
) -> usize {
    let key = obj
        .ior()
        .iiop_profiles()
        .first()
        .map(|p| p.object_key.clone())
        .unwrap_or_default();
    let request = MessageBody::Request(RequestHeader {
        request_id: 1,
        response_flags: if response_expected { 3 } else { 0 },
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: operation.into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    message_size(&request, args)
}

/// The size of a GIOP 1.2 Reply (no exception), its results written by
/// `results`.
pub(crate) fn reply_size(results: impl Fn(&mut CdrWriter)) -> usize {
    let reply = MessageBody::Reply(ReplyHeader {
        request_id: 1,
        reply_status: ReplyStatus::NoException,
        service_contexts: Vec::new(),
    });
    message_size(&reply, results)
}

fn message_size(body: &MessageBody, write: impl Fn(&mut CdrWriter)) -> usize {
    MessageBuilder::new(GiopVersion::V1_2, ByteOrder::NATIVE, body)
        .map(|mut b| {
            write(b.body());
            b.finish(false).len()
        })
        .unwrap_or(64)
}
