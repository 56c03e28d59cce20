//! Stopping a server cleanly on SIGINT and SIGTERM: the signal only wakes
//! a watcher thread (signal-hook does the async-signal-safe part), which
//! shuts the ORB down; `Orb::run` then returns in the main thread and the
//! program exits normally, its listeners closed.

use std::thread::JoinHandle;

use armillary::{Orb, WaitForCompletion};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

/// Watches for SIGINT and SIGTERM until dropped; the first one shuts
/// the ORB down (waiting for the requests in progress).
#[derive(Debug)]
pub struct ShutdownOnSignals {
    handle: Handle,
    watcher: Option<JoinHandle<()>>,
}

impl ShutdownOnSignals {
    /// Starts watching for `orb`. Fails only when the signal handlers
    /// cannot be installed.
    pub fn install(orb: &Orb) -> std::io::Result<ShutdownOnSignals> {
        let mut signals = Signals::new([SIGINT, SIGTERM])?;
        let handle = signals.handle();
        let orb = orb.clone();
        let watcher = std::thread::Builder::new()
            .name("armillary-signals".into())
            .spawn(move || {
                // `forever` ends when the handle is closed.
                if let Some(signal) = signals.forever().next() {
                    let name = if signal == SIGINT {
                        "SIGINT"
                    } else {
                        "SIGTERM"
                    };
                    eprintln!("{name}: shutting down");
                    // Not an upcall: waiting cannot deadlock.
                    let _ = orb.shutdown(WaitForCompletion::Yes);
                }
            })?;
        Ok(ShutdownOnSignals {
            handle,
            watcher: Some(watcher),
        })
    }
}

impl Drop for ShutdownOnSignals {
    /// Stops watching (the default dispositions are not restored: the
    /// program is on its way out).
    fn drop(&mut self) {
        self.handle.close();
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
    }
}
