//! Types as written, resolved to IR types with the incomplete-type rules;
//! and types and values shown as IDL text for messages.

use super::scope::{ScopeId, Target};
use super::Resolver;
use crate::ast;
use crate::diagnostic::Diag;
use crate::ir::{ConstValue, DefId, DefKind, Primitive, Type};

/// Where a type is used, for the incomplete-type rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Usage {
    /// The element type of a sequence: may be an incomplete struct or
    /// union (that is how recursive types are written).
    SequenceElement,
    /// Anywhere else: the type must be complete.
    Complete,
}

impl Resolver<'_> {
    /// Resolves a type as written; inline struct, union and enum
    /// definitions are made and their ids pushed to `nested`.
    pub(super) fn resolve_type(
        &mut self,
        spec: &ast::TypeSpec,
        scope: ScopeId,
        nested: &mut Vec<DefId>,
        usage: Usage,
    ) -> Option<Type> {
        match spec {
            ast::TypeSpec::Base(base, _) => Some(match base {
                ast::BaseType::Short => Type::Primitive(Primitive::Short),
                ast::BaseType::Long => Type::Primitive(Primitive::Long),
                ast::BaseType::LongLong => Type::Primitive(Primitive::LongLong),
                ast::BaseType::UShort => Type::Primitive(Primitive::UShort),
                ast::BaseType::ULong => Type::Primitive(Primitive::ULong),
                ast::BaseType::ULongLong => Type::Primitive(Primitive::ULongLong),
                ast::BaseType::Float => Type::Primitive(Primitive::Float),
                ast::BaseType::Double => Type::Primitive(Primitive::Double),
                ast::BaseType::LongDouble => Type::Primitive(Primitive::LongDouble),
                ast::BaseType::Char => Type::Primitive(Primitive::Char),
                ast::BaseType::WChar => Type::Primitive(Primitive::WChar),
                ast::BaseType::Boolean => Type::Primitive(Primitive::Boolean),
                ast::BaseType::Octet => Type::Primitive(Primitive::Octet),
                ast::BaseType::Any => Type::Any,
                ast::BaseType::Object => Type::Object,
                ast::BaseType::ValueBase => Type::ValueBase,
            }),
            ast::TypeSpec::String { wide, bound, .. } => {
                let bound = match bound {
                    Some(expr) => {
                        match self.evaluate_positive(expr, scope, "string bound", false) {
                            Ok(bound) => Some(bound),
                            Err(diag) => {
                                self.push(diag);
                                return None;
                            }
                        }
                    }
                    None => None,
                };
                Some(if *wide {
                    Type::WString { bound }
                } else {
                    Type::String { bound }
                })
            }
            ast::TypeSpec::Sequence { element, bound, .. } => {
                let element = self.resolve_type(element, scope, nested, Usage::SequenceElement)?;
                let bound = match bound {
                    Some(expr) => {
                        match self.evaluate_positive(expr, scope, "sequence bound", false) {
                            Ok(bound) => Some(bound),
                            Err(diag) => {
                                self.push(diag);
                                return None;
                            }
                        }
                    }
                    None => None,
                };
                Some(Type::Sequence {
                    element: Box::new(element),
                    bound,
                })
            }
            ast::TypeSpec::Fixed { digits_scale, loc } => {
                let Some((digits, scale)) = digits_scale else {
                    self.error(*loc, "'fixed' without digits and scale is only allowed in a constant declaration");
                    return None;
                };
                let digits_value =
                    match self.evaluate_positive(digits, scope, "fixed-point digit count", false) {
                        Ok(value) => value,
                        Err(diag) => {
                            self.push(diag);
                            return None;
                        }
                    };
                let scale_value =
                    match self.evaluate_positive(scale, scope, "fixed-point scale", true) {
                        Ok(value) => value,
                        Err(diag) => {
                            self.push(diag);
                            return None;
                        }
                    };
                if digits_value > 31 {
                    self.error(
                        digits.start(),
                        format!("fixed-point types have at most 31 digits, not {digits_value}"),
                    );
                    return None;
                }
                if scale_value > digits_value {
                    self.error(scale.start(), format!("the scale of a fixed-point type ({scale_value}) cannot exceed its digits ({digits_value})"));
                    return None;
                }
                Some(Type::Fixed {
                    digits: digits_value as u8,
                    scale: scale_value as u8,
                })
            }
            ast::TypeSpec::Named(name) => self.resolve_named_type(name, scope, usage),
            ast::TypeSpec::Struct(def) => {
                let id = self.struct_def(def, scope, nested)?;
                nested.push(id);
                Some(Type::Named(id))
            }
            ast::TypeSpec::Union(def) => {
                let id = self.union_def(def, scope, nested)?;
                nested.push(id);
                Some(Type::Named(id))
            }
            ast::TypeSpec::Enum(def) => {
                let id = self.enum_def(def, scope)?;
                nested.push(id);
                Some(Type::Named(id))
            }
        }
    }

    fn resolve_named_type(
        &mut self,
        name: &ast::ScopedName,
        scope: ScopeId,
        usage: Usage,
    ) -> Option<Type> {
        let target = match self.lookup(scope, name, true) {
            Ok(target) => target,
            Err(diag) => {
                self.push(diag);
                return None;
            }
        };
        let id = match target {
            Target::Def(id) => id,
            Target::Builtin(ty) => return Some(ty),
            Target::Enumerator(..) => {
                self.error(name.loc, format!("'{name}' is an enumerator, not a type"));
                return None;
            }
            Target::Member => {
                self.error(name.loc, format!("'{name}' is a member, not a type"));
                return None;
            }
        };
        let def = &self.defs[id.index()];
        match &def.kind {
            DefKind::Typedef(_)
            | DefKind::Enum(_)
            | DefKind::Interface(_)
            | DefKind::ValueType(_)
            | DefKind::ValueBox(_)
            | DefKind::Native => Some(Type::Named(id)),
            DefKind::Struct(_) | DefKind::Union(_) => {
                if usage == Usage::Complete && !self.state[id.index()].complete {
                    let kind = def.kind.describe();
                    let (message, note) = if self.state[id.index()].forward_loc.is_some()
                        && !self.path.contains(&def.name)
                    {
                        (
                            format!("{kind} '{name}' is incomplete here (only forward-declared): it can only be used as a sequence element until it is defined"),
                            "the forward declaration is here",
                        )
                    } else {
                        (
                            format!("recursive {kind} '{name}' used inside its own definition: a {kind} can only contain itself through a sequence"),
                            "the definition starts here",
                        )
                    };
                    let loc = self.state[id.index()].forward_loc.unwrap_or(def.loc);
                    self.push(Diag::error(name.loc, message).note_at(loc, note));
                    return None;
                }
                Some(Type::Named(id))
            }
            other => {
                let message = format!("'{name}' is {}, not a type", other.describe_with_article());
                self.error(name.loc, message);
                None
            }
        }
    }

    /// Follows typedefs.
    pub(super) fn unalias(&self, ty: &Type) -> Type {
        let mut current = ty.clone();
        for _ in 0..=self.defs.len() {
            match &current {
                Type::Named(id) => match &self.defs[id.index()].kind {
                    DefKind::Typedef(typedef) => current = typedef.ty.clone(),
                    _ => return current,
                },
                _ => return current,
            }
        }
        current
    }

    /// IDL text for a type, for messages.
    pub(super) fn describe_type(&self, ty: &Type) -> String {
        match ty {
            Type::Primitive(p) => p.idl_name().to_owned(),
            Type::String { bound: None } => "string".into(),
            Type::String { bound: Some(b) } => format!("string<{b}>"),
            Type::WString { bound: None } => "wstring".into(),
            Type::WString { bound: Some(b) } => format!("wstring<{b}>"),
            Type::Sequence { element, bound } => match bound {
                Some(b) => format!("sequence<{}, {b}>", self.describe_type(element)),
                None => format!("sequence<{}>", self.describe_type(element)),
            },
            Type::Array {
                element,
                dimensions,
            } => {
                let dims: String = dimensions.iter().map(|d| format!("[{d}]")).collect();
                format!("{}{dims}", self.describe_type(element))
            }
            Type::Fixed { digits, scale } => format!("fixed<{digits},{scale}>"),
            Type::Any => "any".into(),
            Type::Object => "Object".into(),
            Type::ValueBase => "ValueBase".into(),
            Type::TypeCode => "CORBA::TypeCode".into(),
            Type::Principal => "CORBA::Principal".into(),
            Type::Named(id) => self.defs[id.index()].scoped_name.join("::"),
        }
    }

    /// IDL text for a label value, for messages.
    pub(super) fn describe_value(&self, value: &ConstValue) -> String {
        match value {
            ConstValue::Enumerator { enum_def, index } => match &self.defs[enum_def.index()].kind {
                DefKind::Enum(e) => e
                    .enumerators
                    .get(*index as usize)
                    .map_or_else(|| value.to_string(), |en| format!("'{}'", en.name)),
                _ => value.to_string(),
            },
            other => other.to_string(),
        }
    }
}
