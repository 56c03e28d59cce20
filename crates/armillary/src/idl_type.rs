//! [`IdlType`]: what every type generated from IDL can do besides CDR —
//! name its TypeCode and go into and out of an `any`.

use armillary_giop::any::Any;
use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError};
use armillary_giop::typecode::TypeCode;

/// A Rust type generated from an IDL struct, union, enum, exception or
/// interface. The generated code implements [`IdlType::type_code`]; the
/// conversions to and from `any` come with it.
///
/// ```
/// use armillary::IdlType;
/// use armillary::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
/// use armillary::giop::typecode::TypeCode;
///
/// #[derive(Debug, PartialEq)]
/// struct Celsius(f64);
/// impl CdrEncode for Celsius {
///     fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
///         w.write_double(self.0);
///         Ok(())
///     }
/// }
/// impl CdrDecode for Celsius {
///     fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
///         Ok(Celsius(r.read_double()?))
///     }
/// }
/// impl IdlType for Celsius {
///     fn type_code() -> TypeCode {
///         TypeCode::alias("IDL:Celsius:1.0", "Celsius", TypeCode::double())
///     }
/// }
///
/// let any = Celsius(21.5).to_any().unwrap();
/// assert_eq!(Celsius::from_any(&any), Some(Celsius(21.5)));
/// ```
pub trait IdlType: CdrEncode + CdrDecode {
    /// The TypeCode that describes the type.
    fn type_code() -> TypeCode;

    /// Puts a copy of the value into an `any`. Fails only when the value
    /// cannot be encoded (a bounded string or sequence over its bound).
    fn to_any(&self) -> Result<Any, CdrError> {
        Any::from_cdr_value(Self::type_code(), self)
    }

    /// Takes the value out of an `any` whose TypeCode is equivalent to
    /// this type's; `None` for any other `any`.
    fn from_any(any: &Any) -> Option<Self> {
        any.to_cdr_value(&Self::type_code())
    }
}

/// Includes the Rust code that `armillary_idl::Builder` generated into
/// `OUT_DIR` from a build script: `armillary::include_idl!("quoter")`
/// expands to `include!(concat!(env!("OUT_DIR"), "/quoter.rs"))`.
#[macro_export]
macro_rules! include_idl {
    ($name:literal) => {
        include!(concat!(env!("OUT_DIR"), "/", $name, ".rs"));
    };
}
