//! The Dynamic Skeleton Interface: servants that serve any operation
//! without generated skeletons, reading arguments and writing results as
//! `any`s by TypeCode.
//!
//! A [`DynamicServant`] names the interfaces it implements and carries out
//! each request in [`invoke`](DynamicServant::invoke): it declares the
//! operation's parameters (modes and TypeCodes) to
//! [`DynamicRequest::arguments`], which reads the in and inout values, then
//! stores the out and inout values in the returned [`NvList`], sets the
//! result ([`DynamicRequest::set_result`]) or raises a user exception given
//! as an `any` ([`DynamicRequest::set_exception`]) or a system exception
//! (the `Err` it returns). Every `DynamicServant` is a [`Servant`], so a POA
//! activates it like any other; `_is_a` and `_non_existent` are answered
//! for it from the repository ids it declares.
//!
//! ```
//! use armillary::{Any, TypeCode};
//! use armillary::dii::ArgMode;
//! use armillary::dsi::{DynamicRequest, DynamicServant};
//! use armillary::dii::NvList;
//! use armillary::SystemException;
//!
//! /// `interface Adder { long add(in long a, inout long b); };`
//! struct Adder;
//!
//! impl DynamicServant for Adder {
//!     fn primary_interface(&self) -> &'static str {
//!         "IDL:Adder:1.0"
//!     }
//!
//!     fn invoke(&self, request: &mut DynamicRequest<'_, '_>) -> Result<(), SystemException> {
//!         match request.operation() {
//!             "add" => {
//!                 let args = request.arguments(
//!                     NvList::new()
//!                         .with_param(ArgMode::In, TypeCode::long())
//!                         .with_param(ArgMode::InOut, TypeCode::long()),
//!                 )?;
//!                 let a = args.value(0).and_then(|v| v.get::<i32>()).unwrap_or(0);
//!                 let b = args.value(1).and_then(|v| v.get::<i32>()).unwrap_or(0);
//!                 args.set_value(1, Any::from(b * 2))?;
//!                 request.set_result(Any::from(a + b))
//!             }
//!             _ => Err(SystemException::bad_operation(0, armillary::CompletionStatus::No)),
//!         }
//!     }
//! }
//! ```

use std::fmt;

use armillary_giop::any::Any;
use armillary_giop::cdr::CdrError;
use armillary_giop::system_exception::{minor, CompletionStatus, SystemException};
use armillary_giop::typecode::TCKind;

use crate::dii::{Message, NvList};
use crate::servant::{Servant, ServerRequest, OBJECT_REPOSITORY_ID};

/// A servant that serves its operations dynamically (CORBA's
/// `PortableServer::DynamicImplementation`). See the [module
/// documentation](self).
pub trait DynamicServant: Send + Sync + 'static {
    /// The repository id of the most derived interface it implements
    /// (`_primary_interface`), e.g. `IDL:Stock/Quoter:1.0`.
    #[doc(alias = "_primary_interface")]
    fn primary_interface(&self) -> &'static str;

    /// The repository ids of the other interfaces it implements (its base
    /// interfaces), which `_is_a` also answers true for. None by default.
    fn base_interfaces(&self) -> &[&'static str] {
        &[]
    }

    /// Carries out one request. An `Err` becomes a SYSTEM_EXCEPTION reply
    /// (BAD_OPERATION for an operation it does not know).
    fn invoke(&self, request: &mut DynamicRequest<'_, '_>) -> Result<(), SystemException>;
}

impl<S: DynamicServant> Servant for S {
    fn repository_id(&self) -> &'static str {
        self.primary_interface()
    }

    fn is_a(&self, repository_id: &str) -> bool {
        repository_id == self.primary_interface()
            || repository_id == OBJECT_REPOSITORY_ID
            || self.base_interfaces().contains(&repository_id)
    }

    fn dispatch(&self, request: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let mut dynamic = DynamicRequest {
            request,
            arguments: None,
            reply: Reply::Normal(None),
        };
        self.invoke(&mut dynamic)?;
        dynamic.finish()
    }
}

/// How the reply will end.
enum Reply {
    /// Normally, with this result (`None`: none set, as for `void`).
    Normal(Option<Any>),
    /// With this user exception.
    User(Any),
}

/// One request as a [`DynamicServant`] sees it (CORBA's
/// `ServerRequest`): the operation, its arguments read by TypeCode, and
/// the result or exception to reply with.
pub struct DynamicRequest<'r, 'a> {
    request: &'r mut ServerRequest<'a>,
    arguments: Option<NvList>,
    reply: Reply,
}

impl fmt::Debug for DynamicRequest<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DynamicRequest")
            .field("operation", &self.request.operation())
            .field("arguments", &self.arguments)
            .field("raised", &matches!(self.reply, Reply::User(_)))
            .finish()
    }
}

impl<'r, 'a> DynamicRequest<'r, 'a> {
    /// The operation name (`get_quote`, `_get_name`, `_set_counter`).
    pub fn operation(&self) -> &'a str {
        self.request.operation()
    }

    /// The object id the request was addressed to (within its POA).
    pub fn object_id(&self) -> &'a crate::poa::ObjectId {
        self.request.object_id()
    }

    /// False for a oneway request: its result is discarded.
    pub fn response_expected(&self) -> bool {
        self.request.response_expected()
    }

    /// Reads the arguments (`arguments`): `parameters` declares every
    /// parameter of the operation, in order, with its mode and TypeCode
    /// ([`NvList::with_param`]); the in and inout values are read from the
    /// request into it. Store the out and inout values to return in the
    /// list this gives back ([`NvList::set_value`]).
    ///
    /// MARSHAL (COMPLETED_NO) when the request does not hold such values;
    /// BAD_INV_ORDER (`minor::ARGUMENTS_ALREADY_READ`) when called twice or
    /// after [`set_exception`](Self::set_exception).
    pub fn arguments(&mut self, parameters: NvList) -> Result<&mut NvList, SystemException> {
        if self.arguments.is_some() || matches!(self.reply, Reply::User(_)) {
            return Err(SystemException::bad_inv_order(
                minor::ARGUMENTS_ALREADY_READ,
                CompletionStatus::No,
            ));
        }
        // Each decoding attempt fills a list of its own (a GIOP 1.1 request
        // may be decoded more than once, see `ServerRequest::decode_args`).
        let parameters = self.request.decode_args(|r| {
            let mut list = parameters.clone();
            list.read_values(r, Message::Request)?;
            Ok(list)
        })?;
        Ok(self.arguments.insert(parameters))
    }

    /// The arguments read by [`arguments`](Self::arguments), if they were.
    pub fn argument_list(&mut self) -> Option<&mut NvList> {
        self.arguments.as_mut()
    }

    /// Sets the result (`set_result`), for an operation that returns one.
    ///
    /// BAD_INV_ORDER (`minor::RESULT_ALREADY_SET`) when a result or an
    /// exception was set already.
    pub fn set_result(&mut self, value: Any) -> Result<(), SystemException> {
        match self.reply {
            Reply::Normal(None) => {
                self.reply = Reply::Normal(Some(value));
                Ok(())
            }
            _ => Err(SystemException::bad_inv_order(
                minor::RESULT_ALREADY_SET,
                CompletionStatus::No,
            )),
        }
    }

    /// Raises a user exception (`set_exception`): an `any` whose TypeCode
    /// is the exception's (`tk_except`) and whose value holds its members.
    /// It replaces a result set before.
    ///
    /// BAD_PARAM when the `any` does not hold an exception.
    pub fn set_exception(&mut self, exception: Any) -> Result<(), SystemException> {
        if exception.type_code.unalias().kind() != TCKind::Except {
            return Err(SystemException::bad_param(0, CompletionStatus::No));
        }
        self.reply = Reply::User(exception);
        Ok(())
    }

    /// Writes the reply: the user exception, or the result and then the
    /// inout and out values in order. A returned parameter left without a
    /// value is BAD_PARAM (COMPLETED_YES).
    fn finish(self) -> Result<(), SystemException> {
        // The ORB's server interceptors see them in their ending point.
        if let Some(interception) = self.request.interception_mut() {
            let result = match &self.reply {
                Reply::Normal(result) => result.clone(),
                Reply::User(_) => None,
            };
            interception.set_results(self.arguments.clone(), result);
        }
        match self.reply {
            Reply::User(exception) => self.request.raise_any(&exception),
            Reply::Normal(result) => {
                let arguments = self.arguments;
                let missing = arguments
                    .iter()
                    .flatten()
                    .any(|a| a.mode().is_returned() && a.value().is_none());
                if missing {
                    return Err(SystemException::bad_param(0, CompletionStatus::Yes));
                }
                self.request.encode_results(|w| {
                    if let Some(result) = &result {
                        result.encode_value(w)?;
                    }
                    match &arguments {
                        Some(arguments) => arguments.write_values(w, Message::Reply),
                        None => Ok::<(), CdrError>(()),
                    }
                })
            }
        }
    }
}
