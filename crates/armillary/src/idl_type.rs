//! [`IdlType`]: what every type generated from IDL can do besides CDR —
//! name its TypeCode and go into and out of an `any`.
//!
//! Besides the generated structs, unions, enums, exceptions and stubs,
//! the Rust types IDL's anonymous types map to implement it too, so that
//! every value can become an `any` without naming a TypeCode: the
//! primitives, `String` (`string`), `Vec<T>` (unbounded `sequence<T>`),
//! `[T; N]` (arrays), [`Any`] (an `any` in an `any`), [`ObjectRef`]
//! (`Object`) and [`TypeCode`]. A typedef is a Rust alias, so its values
//! go in under the unaliased TypeCode this way; the generated
//! `<typedef>_to_any` / `<typedef>_from_any` functions use the typedef's
//! own TypeCode (and are the way for typedefs that involve `wstring` or
//! `wchar`, which share `String` and `char` with `string` and `char`;
//! [`Any::wstring`] is the plain `wstring` any).

use armillary_giop::any::Any;
use armillary_giop::cdr::{CdrDecode, CdrEncode, CdrError, LongDouble};
use armillary_giop::typecode::TypeCode;

use crate::object::ObjectRef;

/// A Rust type generated from an IDL struct, union, enum, exception or
/// interface. The generated code implements [`IdlType::type_code`]; the
/// conversions to and from `any` come with it.
///
/// ```
/// use armillary::IdlType;
/// use armillary::runtime::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
/// use armillary::TypeCode;
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

macro_rules! primitive_idl_types {
    ($($ty:ty => $tc:ident,)*) => {
        $(
            impl IdlType for $ty {
                fn type_code() -> TypeCode {
                    TypeCode::$tc()
                }
            }
        )*
    };
}

primitive_idl_types! {
    i16 => short,
    i32 => long,
    u16 => ushort,
    u32 => ulong,
    i64 => longlong,
    u64 => ulonglong,
    f32 => float,
    f64 => double,
    bool => boolean,
    u8 => octet,
    char => char,
    LongDouble => longdouble,
    Any => any,
    TypeCode => tc_typecode,
}

impl IdlType for String {
    /// An unbounded `string` (see [`Any::wstring`] for `wstring`).
    fn type_code() -> TypeCode {
        TypeCode::string(0)
    }
}

impl<T: IdlType> IdlType for Vec<T> {
    /// An unbounded `sequence<T>`.
    fn type_code() -> TypeCode {
        TypeCode::sequence(T::type_code(), 0)
    }
}

impl IdlType for bytes::Bytes {
    /// An unbounded `sequence<octet>` (the IDL compiler's
    /// `octet_sequences_as_bytes` mapping).
    fn type_code() -> TypeCode {
        TypeCode::sequence(TypeCode::octet(), 0)
    }
}

impl<T: IdlType, const N: usize> IdlType for [T; N] {
    /// `T[N]`. An array longer than `u32::MAX` has no TypeCode: it gets
    /// one of that length, which no value fits.
    fn type_code() -> TypeCode {
        TypeCode::array(T::type_code(), u32::try_from(N).unwrap_or(u32::MAX))
    }
}

impl IdlType for ObjectRef {
    /// `Object`.
    fn type_code() -> TypeCode {
        TypeCode::objref(crate::servant::OBJECT_REPOSITORY_ID, "Object")
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
