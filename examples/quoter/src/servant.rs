//! The quoter's implementation: a table of prices behind the generated
//! `QuoterServant` trait.

use std::collections::BTreeMap;

use parking_lot::RwLock;

use crate::stock::{quoter::GetQuoteError, InvalidStockSymbol, QuoterServant};

/// A quoter answering from a table of prices (in cents); an unknown
/// symbol raises `Stock::Invalid_Stock_Symbol`.
#[derive(Debug)]
pub struct QuoterImpl {
    prices: RwLock<BTreeMap<String, i32>>,
}

impl QuoterImpl {
    /// A quoter that knows `prices` (symbol, cents).
    pub fn with_prices<I, S>(prices: I) -> Self
    where
        I: IntoIterator<Item = (S, i32)>,
        S: Into<String>,
    {
        QuoterImpl {
            prices: RwLock::new(prices.into_iter().map(|(s, p)| (s.into(), p)).collect()),
        }
    }

    /// Sets (or adds) the price of `symbol`.
    pub fn set_price(&self, symbol: &str, cents: i32) {
        self.prices.write().insert(symbol.to_owned(), cents);
    }

    /// The symbols the quoter knows, in order.
    pub fn symbols(&self) -> Vec<String> {
        self.prices.read().keys().cloned().collect()
    }
}

impl Default for QuoterImpl {
    /// A few made-up companies.
    fn default() -> Self {
        QuoterImpl::with_prices([("ACME", 4217), ("GLOBEX", 18_950), ("INITECH", 733)])
    }
}

impl QuoterServant for QuoterImpl {
    fn get_quote(&self, stock_name: String) -> Result<i32, GetQuoteError> {
        self.prices
            .read()
            .get(&stock_name)
            .copied()
            .ok_or(GetQuoteError::InvalidStockSymbol(InvalidStockSymbol {}))
    }
}
