//! `ami_handler [LINES] [-ORB...]`: an Armillary reply handler for
//! `Interop::Everything` in a process of its own, for the AMI tests
//! (`tests/ami_interop.rs`) to send replies to from another process.
//!
//! It activates a [`LineHandler`] (the generated
//! `AmiEverythingHandlerSkeleton`) in an ORB configured by the `-ORB…`
//! options, prints the handler's IOR on a line of standard output, then
//! one line per reply it hears (see `line_handler` for their form). It
//! exits (status 0) after printing LINES reply lines, when given, or when
//! its standard input closes.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

use armillary::{Orb, WaitForCompletion};
use armillary_codegen_tests::interop::interop::AmiEverythingHandlerSkeleton;
use armillary_codegen_tests::LineHandler;

fn main() {
    let (orb, rest) = Orb::init(std::env::args().skip(1)).unwrap_or_else(|e| {
        eprintln!("ami_handler: {e}");
        std::process::exit(2)
    });
    let limit: Option<usize> = match rest.as_slice() {
        [] => None,
        [n] => Some(n.parse().unwrap_or_else(|_| {
            eprintln!("usage: ami_handler [LINES] [-ORB...]");
            std::process::exit(2)
        })),
        _ => {
            eprintln!("usage: ami_handler [LINES] [-ORB...]");
            std::process::exit(2)
        }
    };

    let (done, finished) = mpsc::channel::<()>();
    let printed = AtomicUsize::new(0);
    let reached = Mutex::new(done.clone());
    let handler = LineHandler::new(move |line| {
        let mut out = std::io::stdout().lock();
        // A closed pipe: the test is gone, and so should this be.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            std::process::exit(1);
        }
        if Some(printed.fetch_add(1, Ordering::SeqCst) + 1) == limit {
            let _ = reached.lock().unwrap().send(());
        }
    });

    let poa = orb.root_poa();
    poa.manager().activate().expect("the POA manager activates");
    let reference = AmiEverythingHandlerSkeleton::new(handler)
        .activate(&poa)
        .expect("the handler activates");
    println!("{}", orb.object_to_string(reference.as_object()));

    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = done.send(());
    });
    let _ = finished.recv();
    // Lets the upcall that printed the last line send its reply.
    orb.shutdown(WaitForCompletion::Yes)
        .expect("the ORB shuts down");
}
