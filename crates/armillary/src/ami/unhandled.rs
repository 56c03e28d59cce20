//! What a generated reply handler does with a reply its servant leaves to
//! the default: the bodies of the `AmiIHandlerServant` methods that the
//! servant does not implement, so that a handler for one operation of a
//! large interface implements only that operation's methods.
//!
//! - A normal reply (`<op>(ami_return_val, …)`) is ignored: the
//!   application sent that call without wanting its values, or never sends
//!   that call to this handler.
//! - An exception (`<op>_excep(excep_holder)`) is a failure the
//!   application may not expect, so it is not dropped silently:
//!   [`unhandled_exception`] reports it as a warning through `tracing`
//!   (the event `armillary.ami.unhandled_exception`, see [`crate::trace`]),
//!   one line naming the call and the exception, which a subscriber prints
//!   (`-ORBTraceLevel 2` and above where the application honours it).
//!   Implement `<op>_excep` to handle it (or, with an empty body, to
//!   ignore it).
//!
//! Either way the handler's operation succeeds: the reply has been
//! delivered, and the ORB that delivered it hears nothing more.

use super::ExceptionHolder;

/// What a reply handler's `<op>_excep` method does unless its servant
/// implements it: reports, as a warning-level `tracing` event
/// (`armillary.ami.unhandled_exception`), that `call` (the IDL operation,
/// `Stock::Quoter::get_quote`) raised the exception `holder` holds and
/// that the handler has no `handler_method` for it. Nothing is printed
/// unless the application installs a `tracing` subscriber.
///
/// ```
/// use armillary::ami::{unhandled_exception, ExceptionHolder};
/// use armillary::{minor, CompletionStatus, SystemException};
/// let timeout = SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::Maybe);
/// let holder = ExceptionHolder::<SystemException>::from_system_exception(&timeout);
/// // armillary: Stock::Quoter::get_quote raised IDL:omg.org/CORBA/TIMEOUT:1.0 (…)
/// unhandled_exception("Stock::Quoter::get_quote", "get_quote_excep", &holder);
/// ```
pub fn unhandled_exception<E>(call: &str, handler_method: &str, holder: &ExceptionHolder<E>) {
    tracing::warn!(
        name: crate::trace::AMI_UNHANDLED, target: "armillary::ami",
        call,
        handler_method,
        exception = holder.repository_id().as_deref().unwrap_or("-"),
        "{}", message(call, handler_method, holder)
    );
}

/// The line [`unhandled_exception`] reports.
fn message<E>(call: &str, handler_method: &str, holder: &ExceptionHolder<E>) -> String {
    let exception = holder
        .repository_id()
        .unwrap_or_else(|| "an exception that does not decode".to_owned());
    format!(
        "armillary: {call} raised {exception}, and its AMI reply handler does not implement \
         {handler_method}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{minor, CompletionStatus, SystemException};

    #[test]
    fn the_line_names_the_call_the_exception_and_the_method() {
        let timeout = SystemException::timeout(minor::CALL_TIMEOUT, CompletionStatus::Maybe);
        let holder = ExceptionHolder::<SystemException>::from_system_exception(&timeout);
        assert_eq!(
            message("Stock::Quoter::get_quote", "get_quote_excep", &holder),
            "armillary: Stock::Quoter::get_quote raised IDL:omg.org/CORBA/TIMEOUT:1.0, and its \
             AMI reply handler does not implement get_quote_excep"
        );
    }
}
