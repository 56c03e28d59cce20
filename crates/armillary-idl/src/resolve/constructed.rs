//! Constants, typedefs and the constructed types (struct, union, enum,
//! exception): members, array dimensions, union discriminators and labels.

use super::consts::ConstKind;
use super::scope::{ScopeId, Target};
use super::types::Usage;
use super::Resolver;
use crate::ast;
use crate::diagnostic::Diag;
use crate::ir::{
    Const, ConstValue, DefId, DefKind, Enum, Enumerator, Exception, Member, Primitive, Struct,
    Type, Typedef, Union, UnionCase, UnionLabel,
};
use crate::source::Loc;

impl Resolver<'_> {
    pub(super) fn constant(
        &mut self,
        constant: &ast::Const,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        if !self.first_time(&constant.name) {
            return;
        }
        let (ty, kind) = match &constant.ty {
            ast::TypeSpec::Fixed {
                digits_scale: None, ..
            } => (None, ConstKind::Fixed(None)),
            spec => {
                let Some(ty) = self.resolve_type(spec, scope, contents, Usage::Complete) else {
                    return;
                };
                let Some(kind) = self.const_kind(&ty) else {
                    let shown = self.describe_type(&ty);
                    self.error(
                        spec.loc(),
                        format!("'{shown}' is not a valid constant type"),
                    );
                    return;
                };
                (Some(ty), kind)
            }
        };
        let value = match self.evaluate(&constant.value, kind, scope) {
            Ok(value) => value,
            Err(diag) => {
                self.push(diag);
                return;
            }
        };
        let ty = match (ty, &value) {
            (Some(ty), _) => ty,
            (None, ConstValue::Fixed(fixed)) => Type::Fixed {
                digits: fixed.digits(),
                scale: fixed.scale,
            },
            (None, _) => return,
        };
        let id = self.new_def(
            &constant.name,
            constant.doc.clone(),
            DefKind::Const(Const { ty, value }),
        );
        if self.declare(scope, &constant.name, Target::Def(id)) {
            contents.push(id);
        }
    }

    pub(super) fn typedef(
        &mut self,
        typedef: &ast::Typedef,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        let Some(first) = typedef.declarators.first() else {
            return;
        };
        if !self.first_time(&first.name) {
            return;
        }
        let Some(ty) = self.resolve_type(&typedef.ty, scope, contents, Usage::Complete) else {
            return;
        };
        for declarator in &typedef.declarators {
            let Some(declared) = self.apply_dims(&ty, declarator, scope) else {
                continue;
            };
            let id = self.new_def(
                &declarator.name,
                typedef.doc.clone(),
                DefKind::Typedef(Typedef { ty: declared }),
            );
            if self.declare(scope, &declarator.name, Target::Def(id)) {
                contents.push(id);
            }
        }
    }

    /// The type of a declarator: `ty` with its array dimensions.
    pub(super) fn apply_dims(
        &mut self,
        ty: &Type,
        declarator: &ast::Declarator,
        scope: ScopeId,
    ) -> Option<Type> {
        if declarator.dims.is_empty() {
            return Some(ty.clone());
        }
        let mut dimensions = Vec::new();
        for dim in &declarator.dims {
            match self.evaluate_positive(dim, scope, "array dimension", false) {
                Ok(value) => dimensions.push(value),
                Err(diag) => {
                    self.push(diag);
                    return None;
                }
            }
        }
        Some(Type::Array {
            element: Box::new(ty.clone()),
            dimensions,
        })
    }

    pub(super) fn struct_forward(
        &mut self,
        forward: &ast::Forward,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
        is_struct: bool,
    ) {
        if !self.first_time(&forward.name) {
            return;
        }
        if let Some(entry) = self.local_entry(scope, &forward.name.name).cloned() {
            if let Target::Def(id) = entry.target {
                let same_kind = match self.defs[id.index()].kind {
                    DefKind::Struct(_) => is_struct,
                    DefKind::Union(_) => !is_struct,
                    _ => false,
                };
                if same_kind && entry.name == forward.name.name {
                    return;
                }
            }
        }
        let kind = if is_struct {
            DefKind::Struct(Struct {
                members: Vec::new(),
                nested: Vec::new(),
            })
        } else {
            DefKind::Union(Union {
                discriminator: Type::Primitive(Primitive::Long),
                cases: Vec::new(),
                default_case: None,
                implicit_default: None,
                nested: Vec::new(),
            })
        };
        let id = self.new_def(&forward.name, forward.doc.clone(), kind);
        if self.declare(scope, &forward.name, Target::Def(id)) {
            self.state[id.index()].forward_loc = Some(forward.name.loc);
            contents.push(id);
        }
    }

    /// A struct definition; returns its id when it is new (not the
    /// completion of a forward declaration already listed).
    pub(super) fn struct_def(
        &mut self,
        def: &ast::Struct,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) -> Option<DefId> {
        let _ = contents;
        if !self.first_time(&def.name) {
            return None;
        }
        let (id, is_new) = self.declare_or_complete(
            scope,
            &def.name,
            def.doc.clone(),
            DefKind::Struct(Struct {
                members: Vec::new(),
                nested: Vec::new(),
            }),
            |k| matches!(k, DefKind::Struct(_)),
        )?;
        let inner = self.new_scope(Some(scope), Some(def.name.name.clone()));
        self.def_scopes.insert(id, inner);
        let saved = self.enter(id, &def.name.name);
        let mut nested = Vec::new();
        let members = self.members(&def.members, inner, &mut nested);
        self.leave(saved);
        self.defs[id.index()].kind = DefKind::Struct(Struct { members, nested });
        self.state[id.index()].complete = true;
        is_new.then_some(id)
    }

    /// Members of a struct or exception.
    fn members(
        &mut self,
        members: &[ast::Member],
        scope: ScopeId,
        nested: &mut Vec<DefId>,
    ) -> Vec<Member> {
        let mut out = Vec::new();
        for member in members {
            let Some(ty) = self.resolve_type(&member.ty, scope, nested, Usage::Complete) else {
                continue;
            };
            for declarator in &member.declarators {
                let Some(member_ty) = self.apply_dims(&ty, declarator, scope) else {
                    continue;
                };
                if self.declare(scope, &declarator.name, Target::Member) {
                    out.push(Member {
                        name: declarator.name.name.clone(),
                        ty: member_ty,
                        doc: member.doc.clone(),
                        loc: declarator.name.loc,
                    });
                }
            }
        }
        out
    }

    pub(super) fn exception(
        &mut self,
        exception: &ast::Exception,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        if !self.first_time(&exception.name) {
            return;
        }
        let id = self.new_def(
            &exception.name,
            exception.doc.clone(),
            DefKind::Exception(Exception {
                members: Vec::new(),
                nested: Vec::new(),
            }),
        );
        if !self.declare(scope, &exception.name, Target::Def(id)) {
            return;
        }
        let inner = self.new_scope(Some(scope), Some(exception.name.name.clone()));
        self.def_scopes.insert(id, inner);
        let saved = self.enter(id, &exception.name.name);
        let mut nested = Vec::new();
        let members = self.members(&exception.members, inner, &mut nested);
        self.leave(saved);
        self.defs[id.index()].kind = DefKind::Exception(Exception { members, nested });
        self.state[id.index()].complete = true;
        contents.push(id);
    }

    pub(super) fn union_def(
        &mut self,
        def: &ast::Union,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) -> Option<DefId> {
        let _ = contents;
        if !self.first_time(&def.name) {
            return None;
        }
        let placeholder = DefKind::Union(Union {
            discriminator: Type::Primitive(Primitive::Long),
            cases: Vec::new(),
            default_case: None,
            implicit_default: None,
            nested: Vec::new(),
        });
        let (id, is_new) =
            self.declare_or_complete(scope, &def.name, def.doc.clone(), placeholder, |k| {
                matches!(k, DefKind::Union(_))
            })?;
        let inner = self.new_scope(Some(scope), Some(def.name.name.clone()));
        self.def_scopes.insert(id, inner);
        let saved = self.enter(id, &def.name.name);
        let mut nested = Vec::new();
        let union = self.union_body(def, inner, &mut nested);
        self.leave(saved);
        if let Some(mut union) = union {
            union.nested = nested;
            self.defs[id.index()].kind = DefKind::Union(union);
        }
        self.state[id.index()].complete = true;
        is_new.then_some(id)
    }

    fn union_body(
        &mut self,
        def: &ast::Union,
        scope: ScopeId,
        nested: &mut Vec<DefId>,
    ) -> Option<Union> {
        if matches!(
            def.discriminator,
            ast::TypeSpec::Struct(_) | ast::TypeSpec::Union(_)
        ) {
            self.error(
                def.discriminator.loc(),
                "a union discriminator must be an integer, char, wchar, boolean or enum type",
            );
            return None;
        }
        let discriminator =
            self.resolve_type(&def.discriminator, scope, nested, Usage::Complete)?;
        let Some(kind) = self.discriminator_kind(&discriminator) else {
            let shown = self.describe_type(&discriminator);
            self.error(
                def.discriminator.loc(),
                format!("'{shown}' cannot be a union discriminator: it must be an integer, char, wchar, boolean or enum type"),
            );
            return None;
        };
        let mut cases = Vec::new();
        let mut default_case: Option<(usize, Loc)> = None;
        let mut seen_labels: Vec<(ConstValue, Loc)> = Vec::new();
        for case in &def.cases {
            let mut labels = Vec::new();
            for label in &case.labels {
                match label {
                    ast::CaseLabel::Default(loc) => {
                        if let Some((_, first)) = default_case {
                            self.push(
                                Diag::error(*loc, "a union can have only one 'default' label")
                                    .note_at(first, "the first 'default' label is here"),
                            );
                            continue;
                        }
                        default_case = Some((cases.len(), *loc));
                        labels.push(UnionLabel::Default);
                    }
                    ast::CaseLabel::Value(expr) => {
                        let value = match self.evaluate(expr, kind, scope) {
                            Ok(value) => value,
                            Err(diag) => {
                                self.push(diag);
                                continue;
                            }
                        };
                        if let Some((_, first)) = seen_labels.iter().find(|(v, _)| *v == value) {
                            let shown = self.describe_value(&value);
                            self.push(
                                Diag::error(expr.start(), format!("duplicate case label {shown}"))
                                    .note_at(*first, "the label is first used here"),
                            );
                            continue;
                        }
                        seen_labels.push((value.clone(), expr.start()));
                        labels.push(UnionLabel::Value(value));
                    }
                }
            }
            let Some(ty) = self.resolve_type(&case.ty, scope, nested, Usage::Complete) else {
                continue;
            };
            let Some(member_ty) = self.apply_dims(&ty, &case.declarator, scope) else {
                continue;
            };
            if !self.declare(scope, &case.declarator.name, Target::Member) {
                continue;
            }
            cases.push(UnionCase {
                labels,
                member: Member {
                    name: case.declarator.name.name.clone(),
                    ty: member_ty,
                    doc: case.doc.clone(),
                    loc: case.declarator.name.loc,
                },
            });
        }
        let used: Vec<ConstValue> = seen_labels.into_iter().map(|(v, _)| v).collect();
        let unused = self.unused_label(kind, &used);
        if let Some((_, loc)) = default_case {
            if unused.is_none() {
                self.error(
                    loc,
                    format!(
                        "union '{}' cannot have a 'default' label: its cases already cover every discriminator value",
                        def.name.name
                    ),
                );
            }
        }
        Some(Union {
            discriminator,
            cases,
            default_case: default_case.map(|(index, _)| index),
            implicit_default: if default_case.is_none() { unused } else { None },
            nested: Vec::new(),
        })
    }

    /// A discriminator value no label uses, if there is one.
    fn unused_label(&self, kind: ConstKind, used: &[ConstValue]) -> Option<ConstValue> {
        let candidates: Box<dyn Iterator<Item = ConstValue>> = match kind {
            ConstKind::Boolean => Box::new([false, true].into_iter().map(ConstValue::Boolean)),
            ConstKind::Char => Box::new((0..=u8::MAX).map(ConstValue::Char)),
            ConstKind::WChar => Box::new(
                (0..=0xffffu32)
                    .filter_map(char::from_u32)
                    .map(ConstValue::WChar),
            ),
            ConstKind::Enum(enum_def) => {
                let count = match &self.defs[enum_def.index()].kind {
                    DefKind::Enum(e) => e.enumerators.len() as u32,
                    _ => 0,
                };
                Box::new((0..count).map(move |index| ConstValue::Enumerator { enum_def, index }))
            }
            ConstKind::Integer(p) => {
                // Small non-negative values first; far more values exist
                // than labels, so one is found within `used.len() + 1`.
                let limit = used.len() as i128 + 1;
                Box::new((0..=limit).filter_map(move |v| integer_value(p, v)))
            }
            _ => Box::new(std::iter::empty()),
        };
        candidates
            .into_iter()
            .find(|candidate| !used.contains(candidate))
    }

    pub(super) fn enum_def(&mut self, def: &ast::Enum, scope: ScopeId) -> Option<DefId> {
        if !self.first_time(&def.name) {
            return None;
        }
        let mut enumerators = Vec::new();
        let id = self.new_def(
            &def.name,
            def.doc.clone(),
            DefKind::Enum(Enum {
                enumerators: Vec::new(),
            }),
        );
        if !self.declare(scope, &def.name, Target::Def(id)) {
            return None;
        }
        for (index, enumerator) in def.enumerators.iter().enumerate() {
            let Ok(index) = u32::try_from(index) else {
                self.error(enumerator.name.loc, "too many enumerators");
                break;
            };
            if self.declare(scope, &enumerator.name, Target::Enumerator(id, index)) {
                enumerators.push(Enumerator {
                    name: enumerator.name.name.clone(),
                    doc: enumerator.doc.clone(),
                    loc: enumerator.name.loc,
                });
            }
        }
        self.defs[id.index()].kind = DefKind::Enum(Enum { enumerators });
        self.state[id.index()].complete = true;
        Some(id)
    }
}

/// The value `v` as a constant of integer type `p`, if it fits.
fn integer_value(p: Primitive, v: i128) -> Option<ConstValue> {
    Some(match p {
        Primitive::Short => ConstValue::Short(i16::try_from(v).ok()?),
        Primitive::Long => ConstValue::Long(i32::try_from(v).ok()?),
        Primitive::LongLong => ConstValue::LongLong(i64::try_from(v).ok()?),
        Primitive::UShort => ConstValue::UShort(u16::try_from(v).ok()?),
        Primitive::ULong => ConstValue::ULong(u32::try_from(v).ok()?),
        Primitive::ULongLong => ConstValue::ULongLong(u64::try_from(v).ok()?),
        Primitive::Octet => ConstValue::Octet(u8::try_from(v).ok()?),
        _ => return None,
    })
}
