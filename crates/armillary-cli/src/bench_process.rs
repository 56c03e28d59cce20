//! The child processes of the benchmarks and what both sides of them
//! share: [`Peer`] (a child killed when dropped), [`wait_for_file`] and
//! [`wait_for_file_from`] (how a parent learns that a child is ready: the
//! child writes a file with [`write_atomically`]), the CPU time a process
//! and the whole machine used ([`process_cpu_seconds`],
//! [`machine_busy_seconds`]), and the raw TCP baseline, a ping-pong server
//! (`armillary bench serve-raw`, [`serve_raw`]) started with
//! [`start_raw_server`] and sized with [`message_sizes`] like the GIOP
//! messages it stands for.
//!
//! The omniORB peers are in `omniorb_peers`; what the benchmarks share to
//! report is in `bench_report`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitCode};
use std::time::{Duration, Instant};

use armillary::giop::giop::{
    MessageBody, MessageBuilder, ReplyHeader, ReplyStatus, RequestHeader, TargetAddress,
};
use armillary::giop::{ByteOrder, GiopVersion};
use armillary::ObjectRef;

/// Writes `text` to `path` through a temporary file and a rename, so that a
/// reader waiting for the file ([`wait_for_file`]) never sees it half
/// written.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `armillary bench serve-raw`: writes its port to `port_file`, then
/// answers each `request_size`-byte message with a `reply_size`-byte one,
/// on every connection, until killed.
pub(crate) fn serve_raw(
    port_file: &Path,
    request_size: usize,
    reply_size: usize,
) -> Result<ExitCode, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    write_atomically(port_file, &port.to_string())?;
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let mut request = vec![0u8; request_size];
        let reply = vec![0u8; reply_size];
        while stream.read_exact(&mut request).is_ok() {
            if stream.write_all(&reply).is_err() {
                break;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts `armillary bench serve-raw` answering each `request_size`-byte
/// message with a `reply_size`-byte one; returns it and its port.
pub(crate) fn start_raw_server(
    dir: &Path,
    request_size: usize,
    reply_size: usize,
) -> Result<(Peer, u16), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let port_file = dir.join("raw.port");
    let _ = std::fs::remove_file(&port_file);
    let server = Peer(
        Command::new(&exe)
            .args(["bench", "serve-raw", "--port-file"])
            .arg(&port_file)
            .args([
                "--request-size",
                &request_size.to_string(),
                "--reply-size",
                &reply_size.to_string(),
            ])
            .spawn()
            .map_err(|e| format!("cannot start the raw TCP server: {e}"))?,
    );
    let port = wait_for_file(&port_file)?
        .parse()
        .map_err(|_| "bad raw port".to_string())?;
    Ok((server, port))
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
    let key = obj
        .ior()
        .iiop_profiles()
        .first()
        .map(|p| p.object_key.clone())
        .unwrap_or_default();
    let request = MessageBody::Request(RequestHeader {
        request_id: 1,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(key.into()),
        operation: "echo_longlong".into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let reply = MessageBody::Reply(ReplyHeader {
        request_id: 1,
        reply_status: ReplyStatus::NoException,
        service_contexts: Vec::new(),
    });
    let size = |body: &MessageBody| {
        MessageBuilder::new(GiopVersion::V1_2, ByteOrder::NATIVE, body)
            .map(|mut b| {
                b.body().write_longlong(0);
                b.finish(false).len()
            })
            .unwrap_or(64)
    };
    (size(&request), size(&reply))
}
