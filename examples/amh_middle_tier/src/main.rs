//! The AMH paper's middle tier (Deshpande et al., section 4.1), in one
//! process: a sink quoter, a middle tier in front of it, and a client, each
//! in an ORB of its own, talking IIOP on loopback.
//!
//! - The sink is an ordinary synchronous `Stock::Quoter`.
//! - The middle tier runs on ONE thread (`SingleThreadedReactive`). Its
//!   AMH servant ([`ResponderMiddleTier`]) forwards each request to the sink
//!   with AMI (`sendc_get_quote`), its upcall returning at once; the AMI
//!   reply handler ([`Forwarded`]) holds the request's responder and answers
//!   the client with the sink's reply or exception — the paper's
//!   `Stock_AMHQuoter_i` and `Quoter_Callback`. So the one thread is free
//!   while every forwarded request waits for the sink.
//! - The same middle tier in the `async fn` form ([`AsyncMiddleTier`]):
//!   `self.sink.get_quote_async(&name).await`, the ORB driving the future.
//! - The client sends several requests to each at once, then one for a
//!   symbol the sink does not know, prints what came back, and everything
//!   shuts down: the program ends by itself (exit 0, or 1 on a wrong
//!   answer).
//!
//! Run it with `cargo run -p armillary-amh-middle-tier`; add
//! `-- -ORBTraceLevel 4` (or set `RUST_LOG=armillary=debug`) to see every
//! request of the three ORBs on standard error (`docs/tracing.md`).

use std::sync::{Arc, Mutex};

use armillary::ami::ExceptionHolder;
use armillary::config::{ConcurrencyModel, OrbConfig, TraceLevel};
use armillary::poa::PoaCurrent;
use armillary::{Orb, SystemException, WaitForCompletion};

/// The Rust generated from `quoter.idl` with AMH for `Stock::Quoter`.
/// (A program uses part of what is generated; a library would export it.)
#[allow(missing_docs, dead_code)]
mod generated {
    armillary::include_idl!("quoter");
}

use generated::stock::{
    quoter::GetQuoteError, AmiQuoterHandlerServant, AmiQuoterHandlerSkeleton, InvalidStockSymbol,
    Quoter, QuoterAmhServant, QuoterAmhSkeleton, QuoterAsyncServant, QuoterGetQuoteResponder,
    QuoterServant, QuoterSkeleton,
};

/// The sink: a synchronous quoter with a table of prices, in cents.
struct Sink;

impl QuoterServant for Sink {
    fn get_quote(&self, stock_name: String) -> Result<i32, GetQuoteError> {
        match stock_name.as_str() {
            "ACME" => Ok(4217),
            "GLOBEX" => Ok(18_950),
            "INITECH" => Ok(733),
            _ => Err(InvalidStockSymbol {}.into()),
        }
    }
}

/// The middle tier in the responder form: forwards with AMI, answers from
/// the reply handler.
struct ResponderMiddleTier {
    sink: Quoter,
}

impl QuoterAmhServant for ResponderMiddleTier {
    fn get_quote(&self, responder: QuoterGetQuoteResponder, stock_name: String) {
        let forwarded = Forwarded {
            responder: Mutex::new(Some(responder)),
        };
        // The reply handler is a CORBA object of this ORB, one per request.
        let sent = PoaCurrent
            .poa()
            .map_err(SystemException::from)
            .and_then(|poa| {
                let handler = AmiQuoterHandlerSkeleton::new(forwarded).activate(&poa)?;
                self.sink.sendc_get_quote(&handler, &stock_name)
            });
        if let Err(e) = sent {
            // Not sent: the handler (and the responder it holds) is gone,
            // and the client gets NO_RESPONSE. Nothing else to do here.
            eprintln!("middle tier: cannot forward {stock_name}: {e}");
        }
    }
}

/// The AMI reply handler of one forwarded request: holds its responder.
struct Forwarded {
    responder: Mutex<Option<QuoterGetQuoteResponder>>,
}

impl Forwarded {
    /// Answers the client once with `outcome`, then deactivates the
    /// handler (it has served its one reply).
    fn answer(&self, outcome: Result<i32, GetQuoteError>) {
        let responder = self.responder.lock().ok().and_then(|mut r| r.take());
        if let Some(responder) = responder {
            responder.answer(outcome);
        }
        if let (Ok(poa), Ok(id)) = (PoaCurrent.poa(), PoaCurrent.object_id()) {
            let _ = poa.deactivate_object(id);
        }
    }
}

impl AmiQuoterHandlerServant for Forwarded {
    fn get_quote(&self, ami_return_val: i32) -> Result<(), SystemException> {
        self.answer(Ok(ami_return_val));
        Ok(())
    }

    fn get_quote_excep(
        &self,
        excep_holder: ExceptionHolder<GetQuoteError>,
    ) -> Result<(), SystemException> {
        self.answer(Err(excep_holder.raise()));
        Ok(())
    }
}

/// The middle tier in the `async fn` form.
struct AsyncMiddleTier {
    sink: Quoter,
}

impl QuoterAsyncServant for AsyncMiddleTier {
    async fn get_quote(self: Arc<Self>, stock_name: String) -> Result<i32, GetQuoteError> {
        self.sink.get_quote_async(&stock_name).await
    }
}

/// An ORB serving its root POA.
fn server(config: OrbConfig) -> Result<Orb, Box<dyn std::error::Error>> {
    let orb = Orb::with_config(config)?;
    orb.root_poa().manager().activate()?;
    Ok(orb)
}

/// `reference` as `orb` sees it (through its IOR, so calls go over IIOP).
fn seen_by(
    orb: &Orb,
    from: &Orb,
    reference: &Quoter,
) -> Result<Quoter, Box<dyn std::error::Error>> {
    let ior = from.object_to_string(reference.as_object());
    Ok(Quoter::from_object(orb.string_to_object(&ior)?))
}

/// Asks `quoter` for every symbol at once, then for an unknown one;
/// prints the answers and says whether they were right.
fn ask(form: &str, quoter: &Quoter) -> bool {
    let symbols = ["ACME", "GLOBEX", "INITECH", "ACME"];
    let expected = [4217, 18_950, 733, 4217];
    // Sent together: the middle tier holds them all while the sink answers.
    let mut pollers: Vec<_> = symbols.iter().map(|s| quoter.sendp_get_quote(s)).collect();
    let mut right = true;
    for ((symbol, want), poller) in symbols.iter().zip(expected).zip(&mut pollers) {
        let got = poller.take();
        println!("{form}: {symbol} = {got:?}");
        right &= got == Ok(want);
    }
    let unknown = quoter.get_quote("NOSUCH");
    println!("{form}: NOSUCH = {unknown:?}");
    right && matches!(unknown, Err(GetQuoteError::InvalidStockSymbol(_)))
}

/// Installs a `tracing` subscriber on standard error for `level`, or for
/// `RUST_LOG` when it is set; nothing at level 0 without `RUST_LOG`. (The
/// quoter example's `armillary_quoter::logging` is the same.)
fn install_subscriber(level: TraceLevel) {
    use tracing_subscriber::{fmt::format::FmtSpan, EnvFilter};
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::new(spec),
        _ if level == TraceLevel::Off => return,
        _ => EnvFilter::new(level.directive()),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_span_events(FmtSpan::CLOSE)
        .try_init();
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `-ORB…` options on the command line apply to the three ORBs.
    let mut options = OrbConfig::new();
    let rest = options.apply_args(std::env::args().skip(1))?;
    if let Some(unknown) = rest.first() {
        return Err(format!("unknown argument {unknown:?} (only -ORB… options)").into());
    }
    install_subscriber(options.get_trace_level());
    let sink_orb = server(options.clone().concurrency(ConcurrencyModel::ThreadPool(2)))?;
    let sink = QuoterSkeleton::new(Sink).activate(&sink_orb.root_poa())?;

    // The middle tier: one thread serves every request and every reply.
    let middle_orb = server(
        options
            .clone()
            .concurrency(ConcurrencyModel::SingleThreadedReactive),
    )?;
    let to_sink = seen_by(&middle_orb, &sink_orb, &sink)?;
    let responder_form = QuoterAmhSkeleton::new(ResponderMiddleTier {
        sink: to_sink.clone(),
    })
    .activate(&middle_orb.root_poa())?;
    let async_form = QuoterAmhSkeleton::from_async(AsyncMiddleTier { sink: to_sink })
        .activate(&middle_orb.root_poa())?;

    let client_orb = Orb::with_config(options)?;
    let right = ask(
        "responder form",
        &seen_by(&client_orb, &middle_orb, &responder_form)?,
    ) & ask(
        "async fn form",
        &seen_by(&client_orb, &middle_orb, &async_form)?,
    );

    for orb in [&client_orb, &middle_orb, &sink_orb] {
        orb.shutdown(WaitForCompletion::Yes)?;
    }
    if !right {
        eprintln!("some answers were wrong");
        std::process::exit(1);
    }
    println!("every answer came back through the middle tier");
    Ok(())
}
