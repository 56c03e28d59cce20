//! Compiles the quoter example's `quoter.idl` with `Stock::Quoter`
//! selected for asynchronous method handling (AMH): the generated code
//! has, beside the stub and the synchronous skeleton, `QuoterAmhServant`,
//! `QuoterAsyncServant`, `QuoterAmhSkeleton` and `QuoterGetQuoteResponder`.

fn main() {
    let built = armillary_idl::Builder::new()
        .file("../quoter/quoter.idl")
        .amh("Stock::Quoter")
        .compile();
    if let Err(e) = built {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
