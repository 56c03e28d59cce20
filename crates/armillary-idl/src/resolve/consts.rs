//! Constant expressions: evaluation in the type of the constant, with the
//! OMG rules for which literals and operators go with which types.
//!
//! Integer expressions are evaluated exactly (in 128 bits) and every
//! intermediate value must fit in 64 bits (signed or unsigned); the result
//! must fit the declared type. `~` complements in the declared type's
//! width. Floating-point expressions use `f64`; fixed-point ones use
//! decimal arithmetic with at most 31 digits. A literal of one kind in a
//! constant of another (`const double d = 1;`) is an error, as in omniidl.

use super::scope::{ScopeId, Target};
use super::Resolver;
use crate::ast::{BinaryOp, Expr, Literal, UnaryOp};
use crate::diagnostic::Diag;
use crate::ir::{ConstValue, DefId, DefKind, FixedValue, Primitive, Type};
use crate::source::Loc;

/// The most digits a fixed-point value may have.
const MAX_FIXED_DIGITS: u8 = 31;

/// The type a constant expression is evaluated in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum ConstKind {
    /// An integer type or `octet`.
    Integer(Primitive),
    /// `float`, `double` or `long double`.
    Float(Primitive),
    Char,
    WChar,
    Boolean,
    String {
        bound: Option<u32>,
    },
    WString {
        bound: Option<u32>,
    },
    /// `fixed<digits, scale>`, or plain `fixed` (`None`).
    Fixed(Option<(u8, u8)>),
    Enum(DefId),
}

/// A value during evaluation.
#[derive(Debug, Clone, PartialEq)]
enum Val {
    Int(i128),
    Float(f64),
    Fixed(FixedValue),
    Char(u8),
    WChar(char),
    Bool(bool),
    Str(String),
    WStr(String),
    Enum(DefId, u32),
}

impl Resolver<'_> {
    /// The kind of a constant of type `ty`, or `None` if constants cannot
    /// have that type.
    pub(super) fn const_kind(&self, ty: &Type) -> Option<ConstKind> {
        Some(match self.unalias(ty) {
            Type::Primitive(p) => match p {
                Primitive::Float | Primitive::Double | Primitive::LongDouble => ConstKind::Float(p),
                Primitive::Char => ConstKind::Char,
                Primitive::WChar => ConstKind::WChar,
                Primitive::Boolean => ConstKind::Boolean,
                integer => ConstKind::Integer(integer),
            },
            Type::String { bound } => ConstKind::String { bound },
            Type::WString { bound } => ConstKind::WString { bound },
            Type::Fixed { digits, scale } => ConstKind::Fixed(Some((digits, scale))),
            Type::Named(id) if matches!(self.defs[id.index()].kind, DefKind::Enum(_)) => {
                ConstKind::Enum(id)
            }
            _ => return None,
        })
    }

    /// The kind of a union discriminator of type `ty`, if it can be one.
    pub(super) fn discriminator_kind(&self, ty: &Type) -> Option<ConstKind> {
        match self.const_kind(ty)? {
            kind @ (ConstKind::Integer(_)
            | ConstKind::Char
            | ConstKind::WChar
            | ConstKind::Boolean
            | ConstKind::Enum(_)) => Some(kind),
            _ => None,
        }
    }

    /// A word for a kind, for messages.
    pub(super) fn describe_kind(&self, kind: ConstKind) -> String {
        match kind {
            ConstKind::Integer(p) | ConstKind::Float(p) => p.idl_name().to_owned(),
            ConstKind::Char => "char".into(),
            ConstKind::WChar => "wchar".into(),
            ConstKind::Boolean => "boolean".into(),
            ConstKind::String { bound: None } => "string".into(),
            ConstKind::String { bound: Some(b) } => format!("string<{b}>"),
            ConstKind::WString { bound: None } => "wstring".into(),
            ConstKind::WString { bound: Some(b) } => format!("wstring<{b}>"),
            ConstKind::Fixed(None) => "fixed".into(),
            ConstKind::Fixed(Some((d, s))) => format!("fixed<{d},{s}>"),
            ConstKind::Enum(id) => format!("enum {}", self.defs[id.index()].name),
        }
    }

    /// Evaluates `expr` as a value of `kind`.
    pub(super) fn evaluate(
        &mut self,
        expr: &Expr,
        kind: ConstKind,
        scope: ScopeId,
    ) -> Result<ConstValue, Diag> {
        let value = self.eval(expr, kind, scope, 0)?;
        self.convert(value, kind, expr.start())
    }

    /// Evaluates a `positive_int_const`: a bound, dimension, or fixed
    /// digit count. `what` names it for messages.
    pub(super) fn evaluate_positive(
        &mut self,
        expr: &Expr,
        scope: ScopeId,
        what: &str,
        allow_zero: bool,
    ) -> Result<u32, Diag> {
        let kind = ConstKind::Integer(Primitive::ULong);
        let value = match self.eval(expr, kind, scope, 0)? {
            Val::Int(value) => value,
            _ => {
                return Err(Diag::error(
                    expr.start(),
                    format!("{what} must be an integer"),
                ))
            }
        };
        let minimum = if allow_zero { 0 } else { 1 };
        if value < minimum {
            let which = if allow_zero {
                "a non-negative"
            } else {
                "a positive"
            };
            return Err(Diag::error(
                expr.start(),
                format!("{what} must be {which} integer, not {value}"),
            ));
        }
        u32::try_from(value).map_err(|_| {
            Diag::error(
                expr.start(),
                format!("{what} {value} is too large (the limit is {})", u32::MAX),
            )
        })
    }

    fn eval(
        &mut self,
        expr: &Expr,
        kind: ConstKind,
        scope: ScopeId,
        depth: usize,
    ) -> Result<Val, Diag> {
        if depth > 512 {
            return Err(Diag::error(
                expr.loc(),
                "constant expression nests too deeply",
            ));
        }
        match expr {
            Expr::Literal(literal, loc) => self.literal(literal, kind, *loc),
            Expr::Name(name) => {
                let target = self.lookup(scope, name, true)?;
                match target {
                    Target::Def(id) => {
                        let def = &self.defs[id.index()];
                        let DefKind::Const(constant) = &def.kind else {
                            return Err(Diag::error(
                                name.loc,
                                format!(
                                    "'{name}' is {}, not a constant",
                                    def.kind.describe_with_article()
                                ),
                            ));
                        };
                        let value = constant.value.clone();
                        self.value_of_constant(value, kind).ok_or_else(|| {
                            Diag::error(
                                name.loc,
                                format!(
                                    "constant '{name}' has a different type: it cannot be used in a constant of type '{}'",
                                    self.describe_kind(kind)
                                ),
                            )
                            .note_at(self.defs[id.index()].loc, format!("'{name}' is declared here"))
                        })
                    }
                    Target::Enumerator(enum_def, index) => match kind {
                        ConstKind::Enum(wanted) if wanted == enum_def => {
                            Ok(Val::Enum(enum_def, index))
                        }
                        _ => Err(Diag::error(
                            name.loc,
                            format!(
                                "enumerator '{name}' of enum '{}' cannot be used in a constant of type '{}'",
                                self.defs[enum_def.index()].name,
                                self.describe_kind(kind)
                            ),
                        )),
                    },
                    Target::Builtin(_) | Target::Member => Err(Diag::error(
                        name.loc,
                        format!("'{name}' is not a constant"),
                    )),
                }
            }
            Expr::Unary { op, operand, loc } => {
                let value = self.eval(operand, kind, scope, depth + 1)?;
                self.unary(*op, value, kind, *loc)
            }
            Expr::Binary { op, lhs, rhs, loc } => {
                let left = self.eval(lhs, kind, scope, depth + 1)?;
                let right = self.eval(rhs, kind, scope, depth + 1)?;
                self.binary(*op, left, right, kind, *loc)
            }
        }
    }

    fn literal(&self, literal: &Literal, kind: ConstKind, loc: Loc) -> Result<Val, Diag> {
        let mismatch = |what: &str| {
            Diag::error(
                loc,
                format!(
                    "cannot use {what} in a constant of type '{}'",
                    self.describe_kind(kind)
                ),
            )
        };
        match (literal, kind) {
            (Literal::Int(value), ConstKind::Integer(_)) => Ok(Val::Int(i128::from(*value))),
            (Literal::Int(_), _) => Err(mismatch("an integer literal")),
            (Literal::Float(text), ConstKind::Float(_)) => match text.parse::<f64>() {
                Ok(value) if value.is_finite() => Ok(Val::Float(value)),
                _ => Err(Diag::error(
                    loc,
                    format!("floating-point literal '{text}' is out of range"),
                )),
            },
            (Literal::Float(_), _) => Err(mismatch("a floating-point literal")),
            (Literal::Fixed(text), ConstKind::Fixed(_)) => {
                parse_fixed(text).map(Val::Fixed).ok_or_else(|| {
                    Diag::error(
                        loc,
                        format!(
                            "fixed-point literal '{text}d' has more than 31 significant digits"
                        ),
                    )
                })
            }
            (Literal::Fixed(_), _) => Err(mismatch("a fixed-point literal")),
            (Literal::Char(value), ConstKind::Char) => Ok(Val::Char(*value)),
            (Literal::Char(_), _) => Err(mismatch("a character literal")),
            (Literal::WChar(value), ConstKind::WChar) => Ok(Val::WChar(*value)),
            (Literal::WChar(_), _) => Err(mismatch("a wide character literal")),
            (Literal::Str(text), ConstKind::String { .. }) => Ok(Val::Str(text.clone())),
            (Literal::Str(_), _) => Err(mismatch("a string literal")),
            (Literal::WStr(text), ConstKind::WString { .. }) => Ok(Val::WStr(text.clone())),
            (Literal::WStr(_), _) => Err(mismatch("a wide string literal")),
            (Literal::Bool(value), ConstKind::Boolean) => Ok(Val::Bool(*value)),
            (Literal::Bool(_), _) => Err(mismatch("a boolean literal")),
        }
    }

    /// The value of another constant, if it is of a compatible kind.
    fn value_of_constant(&self, value: ConstValue, kind: ConstKind) -> Option<Val> {
        let integer = value.as_integer();
        Some(match (value, kind) {
            (_, ConstKind::Integer(_)) => Val::Int(integer?),
            (ConstValue::Float(v), ConstKind::Float(_)) => Val::Float(f64::from(v)),
            (ConstValue::Double(v) | ConstValue::LongDouble(v), ConstKind::Float(_)) => {
                Val::Float(v)
            }
            (ConstValue::Char(v), ConstKind::Char) => Val::Char(v),
            (ConstValue::WChar(v), ConstKind::WChar) => Val::WChar(v),
            (ConstValue::Boolean(v), ConstKind::Boolean) => Val::Bool(v),
            (ConstValue::String(v), ConstKind::String { .. }) => Val::Str(v),
            (ConstValue::WString(v), ConstKind::WString { .. }) => Val::WStr(v),
            (ConstValue::Fixed(v), ConstKind::Fixed(_)) => Val::Fixed(v),
            (ConstValue::Enumerator { enum_def, index }, ConstKind::Enum(wanted))
                if enum_def == wanted =>
            {
                Val::Enum(enum_def, index)
            }
            _ => return None,
        })
    }

    fn unary(&self, op: UnaryOp, value: Val, kind: ConstKind, loc: Loc) -> Result<Val, Diag> {
        let symbol = match op {
            UnaryOp::Neg => "-",
            UnaryOp::Plus => "+",
            UnaryOp::Not => "~",
        };
        match (op, value) {
            (UnaryOp::Plus, value @ (Val::Int(_) | Val::Float(_) | Val::Fixed(_))) => Ok(value),
            (UnaryOp::Neg, Val::Int(v)) => check_int(-v, loc).map(Val::Int),
            (UnaryOp::Neg, Val::Float(v)) => Ok(Val::Float(-v)),
            (UnaryOp::Neg, Val::Fixed(v)) => Ok(Val::Fixed(FixedValue {
                value: -v.value,
                scale: v.scale,
            })),
            (UnaryOp::Not, Val::Int(v)) => {
                let ConstKind::Integer(p) = kind else {
                    return Err(self.bad_operator(symbol, kind, loc));
                };
                let (min, max) = p.integer_range().unwrap_or((0, 0));
                if min < 0 {
                    check_int(-(v + 1), loc).map(Val::Int)
                } else if v < 0 || v > max {
                    Err(Diag::error(
                        loc,
                        format!(
                            "operand of '~' is out of range for type '{}': {v}",
                            p.idl_name()
                        ),
                    ))
                } else {
                    Ok(Val::Int(max - v))
                }
            }
            _ => Err(self.bad_operator(symbol, kind, loc)),
        }
    }

    fn bad_operator(&self, symbol: &str, kind: ConstKind, loc: Loc) -> Diag {
        Diag::error(
            loc,
            format!(
                "operator '{symbol}' cannot be used in a constant of type '{}'",
                self.describe_kind(kind)
            ),
        )
    }

    fn binary(
        &self,
        op: BinaryOp,
        left: Val,
        right: Val,
        kind: ConstKind,
        loc: Loc,
    ) -> Result<Val, Diag> {
        let division_by_zero = || Diag::error(loc, "division by zero in constant expression");
        match (left, right) {
            (Val::Int(a), Val::Int(b)) => {
                let value = match op {
                    BinaryOp::Or => a | b,
                    BinaryOp::Xor => a ^ b,
                    BinaryOp::And => a & b,
                    BinaryOp::Shl | BinaryOp::Shr => {
                        if !(0..64).contains(&b) {
                            return Err(Diag::error(
                                loc,
                                format!("shift count {b} is out of range (0 to 63)"),
                            ));
                        }
                        if op == BinaryOp::Shr {
                            a >> b
                        } else {
                            a.checked_mul(1i128 << b).ok_or_else(|| overflow(loc))?
                        }
                    }
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a.checked_mul(b).ok_or_else(|| overflow(loc))?,
                    BinaryOp::Div => a.checked_div(b).ok_or_else(division_by_zero)?,
                    BinaryOp::Mod => a.checked_rem(b).ok_or_else(division_by_zero)?,
                };
                check_int(value, loc).map(Val::Int)
            }
            (Val::Float(a), Val::Float(b)) => {
                let value = match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Div if b == 0.0 => return Err(division_by_zero()),
                    BinaryOp::Div => a / b,
                    _ => return Err(self.bad_operator(op.symbol(), kind, loc)),
                };
                if !value.is_finite() {
                    return Err(Diag::error(
                        loc,
                        "floating-point constant expression overflows",
                    ));
                }
                Ok(Val::Float(value))
            }
            (Val::Fixed(a), Val::Fixed(b)) => {
                let value = match op {
                    BinaryOp::Add => fixed_add(a, b),
                    BinaryOp::Sub => fixed_add(
                        a,
                        FixedValue {
                            value: -b.value,
                            scale: b.scale,
                        },
                    ),
                    BinaryOp::Mul => fixed_mul(a, b),
                    BinaryOp::Div if b.value == 0 => return Err(division_by_zero()),
                    BinaryOp::Div => fixed_div(a, b),
                    _ => return Err(self.bad_operator(op.symbol(), kind, loc)),
                };
                value.map(Val::Fixed).ok_or_else(|| {
                    Diag::error(loc, "fixed-point constant expression exceeds 31 digits")
                })
            }
            _ => Err(self.bad_operator(op.symbol(), kind, loc)),
        }
    }

    /// Checks a value against the constant's type and turns it into a
    /// [`ConstValue`].
    fn convert(&self, value: Val, kind: ConstKind, loc: Loc) -> Result<ConstValue, Diag> {
        let out_of_range = |shown: String| {
            Diag::error(
                loc,
                format!(
                    "value {shown} is out of range for type '{}'",
                    self.describe_kind(kind)
                ),
            )
        };
        Ok(match (value, kind) {
            (Val::Int(v), ConstKind::Integer(p)) => {
                let range = |r: Result<ConstValue, _>| r.map_err(|_| out_of_range(v.to_string()));
                match p {
                    Primitive::Short => range(i16::try_from(v).map(ConstValue::Short))?,
                    Primitive::Long => range(i32::try_from(v).map(ConstValue::Long))?,
                    Primitive::LongLong => range(i64::try_from(v).map(ConstValue::LongLong))?,
                    Primitive::UShort => range(u16::try_from(v).map(ConstValue::UShort))?,
                    Primitive::ULong => range(u32::try_from(v).map(ConstValue::ULong))?,
                    Primitive::ULongLong => range(u64::try_from(v).map(ConstValue::ULongLong))?,
                    _ => range(u8::try_from(v).map(ConstValue::Octet))?,
                }
            }
            (Val::Float(v), ConstKind::Float(p)) => match p {
                Primitive::Float => {
                    if v.abs() > f64::from(f32::MAX) {
                        return Err(out_of_range(format!("{v:?}")));
                    }
                    ConstValue::Float(v as f32)
                }
                Primitive::Double => ConstValue::Double(v),
                _ => ConstValue::LongDouble(v),
            },
            (Val::Char(v), ConstKind::Char) => ConstValue::Char(v),
            (Val::WChar(v), ConstKind::WChar) => ConstValue::WChar(v),
            (Val::Bool(v), ConstKind::Boolean) => ConstValue::Boolean(v),
            (Val::Str(v), ConstKind::String { bound }) => {
                check_length(v.chars().count(), bound, loc)?;
                ConstValue::String(v)
            }
            (Val::WStr(v), ConstKind::WString { bound }) => {
                check_length(v.chars().count(), bound, loc)?;
                ConstValue::WString(v)
            }
            (Val::Fixed(v), ConstKind::Fixed(None)) => ConstValue::Fixed(v),
            (Val::Fixed(v), ConstKind::Fixed(Some((digits, scale)))) => {
                let fitted = if v.scale <= scale {
                    10i128
                        .checked_pow(u32::from(scale - v.scale))
                        .and_then(|factor| v.value.checked_mul(factor))
                        .map(|value| FixedValue { value, scale })
                } else {
                    None
                };
                match fitted {
                    Some(fitted) if fitted.digits() <= digits => ConstValue::Fixed(fitted),
                    _ => return Err(out_of_range(format!("{v}d"))),
                }
            }
            (Val::Enum(enum_def, index), ConstKind::Enum(_)) => {
                ConstValue::Enumerator { enum_def, index }
            }
            (_, kind) => {
                return Err(Diag::error(
                    loc,
                    format!(
                        "expression does not have type '{}'",
                        self.describe_kind(kind)
                    ),
                ))
            }
        })
    }
}

fn overflow(loc: Loc) -> Diag {
    Diag::error(loc, "integer constant expression overflows 64 bits")
}

/// Intermediate integer values must fit in 64 bits, signed or unsigned.
fn check_int(value: i128, loc: Loc) -> Result<i128, Diag> {
    if value < i128::from(i64::MIN) || value > i128::from(u64::MAX) {
        Err(overflow(loc))
    } else {
        Ok(value)
    }
}

fn check_length(length: usize, bound: Option<u32>, loc: Loc) -> Result<(), Diag> {
    match bound {
        Some(bound) if length > bound as usize => Err(Diag::error(
            loc,
            format!("string of length {length} exceeds the bound {bound} of the constant's type"),
        )),
        _ => Ok(()),
    }
}

/// Parses the digits of a fixed-point literal (`12.50` of `12.50d`).
pub(super) fn parse_fixed(text: &str) -> Option<FixedValue> {
    let (int_part, frac_part) = text.split_once('.').unwrap_or((text, ""));
    let digits = format!("{int_part}{frac_part}");
    let significant = digits.trim_start_matches('0');
    if significant.len() > 38 {
        return None;
    }
    let value: i128 = if significant.is_empty() {
        0
    } else {
        significant.parse().ok()?
    };
    normalize(FixedValue {
        value,
        scale: u8::try_from(frac_part.len()).ok()?,
    })
}

/// Drops fractional trailing zeros and fractional digits beyond 31
/// significant ones; `None` if the integer part alone is too long.
fn normalize(mut fixed: FixedValue) -> Option<FixedValue> {
    while fixed.scale > 0 && fixed.value % 10 == 0 {
        fixed.value /= 10;
        fixed.scale -= 1;
    }
    while fixed.digits() > MAX_FIXED_DIGITS && fixed.scale > 0 {
        fixed.value /= 10;
        fixed.scale -= 1;
    }
    (fixed.digits() <= MAX_FIXED_DIGITS).then_some(fixed)
}

fn rescale(fixed: FixedValue, scale: u8) -> Option<i128> {
    let factor = 10i128.checked_pow(u32::from(scale.checked_sub(fixed.scale)?))?;
    fixed.value.checked_mul(factor)
}

fn fixed_add(a: FixedValue, b: FixedValue) -> Option<FixedValue> {
    let scale = a.scale.max(b.scale);
    let value = rescale(a, scale)?.checked_add(rescale(b, scale)?)?;
    normalize(FixedValue { value, scale })
}

fn fixed_mul(a: FixedValue, b: FixedValue) -> Option<FixedValue> {
    let mut value = a.value.checked_mul(b.value)?;
    let mut scale = u32::from(a.scale) + u32::from(b.scale);
    while scale > u32::from(u8::MAX) {
        value /= 10;
        scale -= 1;
    }
    normalize(FixedValue {
        value,
        scale: u8::try_from(scale).ok()?,
    })
}

fn fixed_div(a: FixedValue, b: FixedValue) -> Option<FixedValue> {
    // Aim for 31 fractional digits and give up precision until the scaled
    // dividend fits in 128 bits; normalisation then trims to 31 digits.
    for result_scale in (0..=MAX_FIXED_DIGITS).rev() {
        let exponent = i32::from(result_scale) - i32::from(a.scale) + i32::from(b.scale);
        let quotient = if exponent >= 0 {
            let Some(dividend) = 10i128
                .checked_pow(exponent.unsigned_abs())
                .and_then(|factor| a.value.checked_mul(factor))
            else {
                continue;
            };
            dividend / b.value
        } else {
            let divisor = 10i128
                .checked_pow(exponent.unsigned_abs())
                .and_then(|factor| b.value.checked_mul(factor))?;
            a.value / divisor
        };
        return normalize(FixedValue {
            value: quotient,
            scale: result_scale,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(text: &str) -> FixedValue {
        parse_fixed(text).unwrap()
    }

    #[test]
    fn fixed_literals_drop_insignificant_zeros() {
        assert_eq!(
            fixed("012.50"),
            FixedValue {
                value: 125,
                scale: 1
            }
        );
        assert_eq!(fixed("0.0"), FixedValue { value: 0, scale: 0 });
        assert!(parse_fixed("12345678901234567890123456789012").is_none());
    }

    #[test]
    fn fixed_arithmetic() {
        assert_eq!(
            fixed_add(fixed("1.5"), fixed("2.25")).unwrap().to_string(),
            "3.75"
        );
        assert_eq!(
            fixed_mul(fixed("1.5"), fixed("2.25")).unwrap().to_string(),
            "3.375"
        );
        assert_eq!(
            fixed_div(fixed("10"), fixed("3")).unwrap().to_string(),
            "3.333333333333333333333333333333"
        );
        assert_eq!(
            fixed_div(fixed("1"), fixed("8")).unwrap().to_string(),
            "0.125"
        );
    }
}
