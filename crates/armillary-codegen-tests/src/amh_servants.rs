//! Servants written against the generated AMH code (`Builder::amh`): the
//! quoter in its responder and `async fn` forms, and `Interop::Everything`
//! answering every call from a thread of its own. `tests/amh.rs` and
//! `tests/amh_interop.rs` serve them.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};

use armillary::{CompletionStatus, SystemException};

use crate::interop::interop::{self as r, BaseServant, EverythingAmhServant, EverythingServant};
use crate::quoter::stock::{
    quoter::GetQuoteError, InvalidStockSymbol, Quoter, QuoterAmhServant, QuoterAsyncServant,
    QuoterGetQuoteResponder, QuoterServant,
};

/// The symbol whose request a [`LaterQuoter`] answers with a system
/// exception (NO_PERMISSION, minor 7, COMPLETED_YES).
pub const REFUSED_SYMBOL: &str = "REFUSED";

/// The symbol whose responder a [`LaterQuoter`] drops unanswered.
pub const DROPPED_SYMBOL: &str = "DROPPED";

/// Prices of a few made-up companies, in cents.
fn price_of(symbol: &str) -> Result<i32, GetQuoteError> {
    match symbol {
        "ACME" => Ok(4217),
        "GLOBEX" => Ok(18_950),
        "INITECH" => Ok(733),
        REFUSED_SYMBOL => Err(SystemException::no_permission(7, CompletionStatus::Yes).into()),
        _ => Err(InvalidStockSymbol {}.into()),
    }
}

/// A synchronous quoter (the sink of a middle tier): the table of
/// `price_of`.
#[derive(Debug, Default)]
pub struct TableQuoter;

impl QuoterServant for TableQuoter {
    fn get_quote(&self, stock_name: String) -> Result<i32, GetQuoteError> {
        price_of(&stock_name)
    }
}

/// An AMH quoter that hands every responder to a thread of its own, which
/// answers from the table of `price_of` (and drops the responder of
/// [`DROPPED_SYMBOL`]): every answer comes later, from another thread.
#[derive(Debug)]
pub struct LaterQuoter {
    work: Mutex<Sender<(QuoterGetQuoteResponder, String)>>,
}

impl Default for LaterQuoter {
    fn default() -> Self {
        let (work, requests) = mpsc::channel::<(QuoterGetQuoteResponder, String)>();
        std::thread::spawn(move || {
            for (responder, symbol) in requests {
                if symbol == DROPPED_SYMBOL {
                    drop(responder);
                } else {
                    responder.answer(price_of(&symbol));
                }
            }
        });
        LaterQuoter {
            work: Mutex::new(work),
        }
    }
}

impl QuoterAmhServant for LaterQuoter {
    fn get_quote(&self, responder: QuoterGetQuoteResponder, stock_name: String) {
        // The thread ends only when the servant goes: it is there.
        let _ = self.work.lock().unwrap().send((responder, stock_name));
    }
}

/// An AMH quoter that keeps its responders until the test answers them.
#[derive(Debug, Default)]
pub struct HeldQuoter {
    held: Mutex<Vec<(QuoterGetQuoteResponder, String)>>,
}

impl HeldQuoter {
    /// How many responders it holds.
    pub fn held(&self) -> usize {
        self.held.lock().unwrap().len()
    }

    /// Takes the oldest held responder and its symbol.
    pub fn take(&self) -> Option<(QuoterGetQuoteResponder, String)> {
        let mut held = self.held.lock().unwrap();
        (!held.is_empty()).then(|| held.remove(0))
    }
}

impl QuoterAmhServant for HeldQuoter {
    fn get_quote(&self, responder: QuoterGetQuoteResponder, stock_name: String) {
        self.held.lock().unwrap().push((responder, stock_name));
    }
}

/// The paper's middle tier in the `async fn` form: every request is
/// forwarded to the sink with AMI (`get_quote_async`) and answered with
/// the sink's reply, exceptions included.
#[derive(Debug)]
pub struct ForwardingQuoter {
    sink: Quoter,
}

impl ForwardingQuoter {
    /// A middle tier in front of `sink`.
    pub fn new(sink: Quoter) -> Self {
        ForwardingQuoter { sink }
    }
}

impl QuoterAsyncServant for ForwardingQuoter {
    async fn get_quote(self: Arc<Self>, stock_name: String) -> Result<i32, GetQuoteError> {
        self.sink.get_quote_async(&stock_name).await
    }
}

/// The value of `echo_long` whose responder [`AmhEverything`] drops.
pub const DROPPED_LONG: i32 = -424_242;

type Job = Box<dyn FnOnce(&crate::EverythingImpl) + Send>;

/// `Interop::Everything` through its AMH skeleton: each call's answer is
/// computed and sent by a thread of the servant's own, after the upcall
/// has returned (what needs the upcall's context, `_this`, is taken
/// first). `echo_long(DROPPED_LONG)` drops its responder.
#[derive(Debug)]
pub struct AmhEverything {
    inner: Arc<crate::EverythingImpl>,
    work: Mutex<Sender<Job>>,
}

impl Default for AmhEverything {
    fn default() -> Self {
        let inner = Arc::new(crate::EverythingImpl::default());
        let (work, jobs) = mpsc::channel::<Job>();
        let worker = Arc::clone(&inner);
        std::thread::spawn(move || {
            for job in jobs {
                job(&worker);
            }
        });
        AmhEverything {
            inner,
            work: Mutex::new(work),
        }
    }
}

impl AmhEverything {
    /// Runs `job` on the servant's thread.
    fn later(&self, job: impl FnOnce(&crate::EverythingImpl) + Send + 'static) {
        let _ = self.work.lock().unwrap().send(Box::new(job));
    }
}

/// Each listed method answers later with what the synchronous servant
/// returns.
macro_rules! answered_later {
    ($($method:ident($($arg:ident: $ty:ty),*) => $responder:ident;)*) => {
        $(
            fn $method(&self, responder: r::$responder, $($arg: $ty),*) {
                self.later(move |inner| {
                    responder.answer(EverythingServant::$method(inner, $($arg),*));
                });
            }
        )*
    };
}

impl EverythingAmhServant for AmhEverything {
    fn base_op(&self, responder: r::EverythingBaseOpResponder) {
        self.later(move |inner| responder.answer(BaseServant::base_op(inner)));
    }

    fn base_name(&self, responder: r::EverythingGetBaseNameResponder) {
        self.later(move |inner| responder.answer(BaseServant::base_name(inner)));
    }

    fn echo_long(&self, responder: r::EverythingEchoLongResponder, v: i32) {
        if v == DROPPED_LONG {
            drop(responder);
            return;
        }
        self.later(move |_| responder.reply(v));
    }

    fn split(&self, responder: r::EverythingSplitResponder, a: i32, b: i32) {
        self.later(move |inner| {
            let mut b = b;
            match EverythingServant::split(inner, a, &mut b) {
                Ok((sum, c)) => responder.reply(sum, b, c),
                Err(e) => responder.raise(e),
            }
        });
    }

    fn fail(&self, responder: r::EverythingFailResponder, code: i32) {
        // The exception holder's role: the operation's error enum.
        self.later(move |inner| responder.answer(EverythingServant::fail(inner, code)));
    }

    // `_this` needs the upcall's context: taken now, answered later.
    fn get_self(&self, responder: r::EverythingGetSelfResponder) {
        let this = self.inner.get_self();
        self.later(move |_| responder.answer(this));
    }

    fn get_base(&self, responder: r::EverythingGetBaseResponder) {
        let this = self.inner.get_base();
        self.later(move |_| responder.answer(this));
    }

    // Oneway: synchronous in the AMH trait too.
    fn ping(&self, n: i32) -> Result<(), SystemException> {
        EverythingServant::ping(&*self.inner, n)
    }

    answered_later! {
        echo_short(v: i16) => EverythingEchoShortResponder;
        echo_ushort(v: u16) => EverythingEchoUshortResponder;
        echo_ulong(v: u32) => EverythingEchoUlongResponder;
        echo_longlong(v: i64) => EverythingEchoLonglongResponder;
        echo_ulonglong(v: u64) => EverythingEchoUlonglongResponder;
        echo_float(v: f32) => EverythingEchoFloatResponder;
        echo_double(v: f64) => EverythingEchoDoubleResponder;
        echo_boolean(v: bool) => EverythingEchoBooleanResponder;
        echo_char(v: char) => EverythingEchoCharResponder;
        echo_wchar(v: char) => EverythingEchoWcharResponder;
        echo_octet(v: u8) => EverythingEchoOctetResponder;
        echo_primitives(v: r::Primitives) => EverythingEchoPrimitivesResponder;
        echo_money(v: armillary::Fixed) => EverythingEchoMoneyResponder;
        echo_string(v: String) => EverythingEchoStringResponder;
        echo_wstring(v: String) => EverythingEchoWstringResponder;
        echo_short_string(v: r::ShortString) => EverythingEchoShortStringResponder;
        echo_longs(v: r::LongSeq) => EverythingEchoLongsResponder;
        echo_strings(v: r::StringSeq) => EverythingEchoStringsResponder;
        echo_octets(v: r::OctetSeq) => EverythingEchoOctetsResponder;
        echo_bounded(v: r::BoundedLongSeq) => EverythingEchoBoundedResponder;
        echo_matrix(v: r::Matrix) => EverythingEchoMatrixResponder;
        echo_shape(v: r::Shape) => EverythingEchoShapeResponder;
        echo_color(v: r::Color) => EverythingEchoColorResponder;
        echo_value(v: r::Value) => EverythingEchoValueResponder;
        echo_choice(v: r::Choice) => EverythingEchoChoiceResponder;
        echo_flag(v: r::Flag) => EverythingEchoFlagResponder;
        echo_any(v: armillary::Any) => EverythingEchoAnyResponder;
        out_shape() => EverythingOutShapeResponder;
        fail_system(minor: i32) => EverythingFailSystemResponder;
        call_peer(p: r::Peer, text: String) => EverythingCallPeerResponder;
        same_object(a: armillary::ObjectRef, b: armillary::ObjectRef) => EverythingSameObjectResponder;
        name() => EverythingGetNameResponder;
        counter() => EverythingGetCounterResponder;
        set_counter(value: i32) => EverythingSetCounterResponder;
        oneway_count() => EverythingOnewayCountResponder;
    }
}
