//! Operations and attributes: parameters, raises and context clauses, the
//! oneway rules, and the checks on the types they pass (no anonymous
//! sequences, no local types in an unconstrained interface).

use std::collections::HashSet;

use super::scope::{ScopeId, Target};
use super::types::Usage;
use super::Resolver;
use crate::ast;
use crate::diagnostic::Diag;
use crate::ir::{Attribute, DefId, DefKind, Direction, InterfaceKind, Operation, Param, Type};
use crate::source::Loc;

impl Resolver<'_> {
    pub(super) fn operation(
        &mut self,
        operation: &ast::Operation,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        if !self.first_time(&operation.name) {
            return;
        }
        if let Some(spec) = &operation.return_type {
            let what = format!("the result of operation '{}'", operation.name.name);
            self.check_named_type(spec, &what);
        }
        let return_type = match &operation.return_type {
            Some(spec) => match self.resolve_type(spec, scope, contents, Usage::Complete) {
                Some(ty) => Some(ty),
                None => return,
            },
            None => None,
        };
        let id = self.new_def(
            &operation.name,
            operation.doc.clone(),
            DefKind::Operation(Operation {
                oneway: operation.oneway.is_some(),
                return_type: None,
                params: Vec::new(),
                raises: Vec::new(),
                context: Vec::new(),
            }),
        );
        if !self.declare_operation_name(scope, &operation.name, id) {
            return;
        }
        let op_scope = self.new_scope(Some(scope), None);
        let mut params = Vec::new();
        for param in &operation.params {
            if let Some(param) = self.param(param, op_scope, contents) {
                params.push(param);
            }
        }
        let raises = self.raises(&operation.raises, op_scope);
        let mut context = Vec::new();
        for (text, loc) in &operation.context {
            if !valid_context(text) {
                self.error(
                    *loc,
                    format!("invalid context name \"{text}\": use letters, digits, '_' and '.', with an optional final '*'"),
                );
            }
            context.push(text.clone());
        }
        if let Some(oneway_loc) = operation.oneway {
            if return_type.is_some() {
                let loc = operation
                    .return_type
                    .as_ref()
                    .map_or(oneway_loc, |t| t.loc());
                self.error(
                    loc,
                    format!(
                        "oneway operation '{}' must return void",
                        operation.name.name
                    ),
                );
            }
            for param in &operation.params {
                if param.direction != ast::Direction::In {
                    self.error(
                        param.name.loc,
                        format!(
                            "oneway operation '{}' can only have 'in' parameters; '{}' is not",
                            operation.name.name, param.name.name
                        ),
                    );
                }
            }
            if let Some(loc) = operation.raises_loc {
                self.error(
                    loc,
                    format!(
                        "oneway operation '{}' cannot raise exceptions",
                        operation.name.name
                    ),
                );
            }
        }
        self.check_local_types(&operation.name, return_type.as_ref(), &params);
        if let DefKind::Operation(def) = &mut self.defs[id.index()].kind {
            def.return_type = return_type;
            def.params = params;
            def.raises = raises;
            def.context = context;
        }
        contents.push(id);
    }

    pub(super) fn param(
        &mut self,
        param: &ast::Param,
        op_scope: ScopeId,
        nested: &mut Vec<DefId>,
    ) -> Option<Param> {
        self.check_named_type(&param.ty, &format!("parameter '{}'", param.name.name));
        let ty = self.resolve_type(&param.ty, op_scope, nested, Usage::Complete)?;
        if !self.declare(op_scope, &param.name, Target::Member) {
            return None;
        }
        Some(Param {
            name: param.name.name.clone(),
            direction: match param.direction {
                ast::Direction::In => Direction::In,
                ast::Direction::Out => Direction::Out,
                ast::Direction::InOut => Direction::InOut,
            },
            ty,
            loc: param.name.loc,
        })
    }

    /// Resolves a raises list: every name must be an exception.
    pub(super) fn raises(&mut self, names: &[ast::ScopedName], scope: ScopeId) -> Vec<DefId> {
        let mut out = Vec::new();
        for name in names {
            let target = match self.lookup(scope, name, true) {
                Ok(target) => target,
                Err(diag) => {
                    self.push(diag);
                    continue;
                }
            };
            match target {
                Target::Def(id) if matches!(self.defs[id.index()].kind, DefKind::Exception(_)) => {
                    if out.contains(&id) {
                        self.error(name.loc, format!("exception '{name}' is listed twice"));
                    } else {
                        out.push(id);
                    }
                }
                Target::Def(id) => {
                    let message = format!(
                        "'{name}' is {}, not an exception: only exceptions can be raised",
                        self.defs[id.index()].kind.describe_with_article()
                    );
                    self.error(name.loc, message);
                }
                _ => self.error(
                    name.loc,
                    format!("'{name}' is not an exception: only exceptions can be raised"),
                ),
            }
        }
        out
    }

    pub(super) fn attribute(
        &mut self,
        attribute: &ast::Attribute,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        let Some(first) = attribute.names.first() else {
            return;
        };
        if !self.first_time(first) {
            return;
        }
        self.check_named_type(&attribute.ty, &format!("attribute '{}'", first.name));
        let Some(ty) = self.resolve_type(&attribute.ty, scope, contents, Usage::Complete) else {
            return;
        };
        let get_raises = self.raises(&attribute.get_raises, scope);
        let set_raises = self.raises(&attribute.set_raises, scope);
        for name in &attribute.names {
            let id = self.new_def(
                name,
                attribute.doc.clone(),
                DefKind::Attribute(Attribute {
                    readonly: attribute.readonly,
                    ty: ty.clone(),
                    get_raises: get_raises.clone(),
                    set_raises: set_raises.clone(),
                }),
            );
            if self.declare_operation_name(scope, name, id) {
                self.check_local_types(name, Some(&ty), &[]);
                contents.push(id);
            }
        }
    }

    /// CORBA IDL's `<param_type_spec>` (parameters, results, attributes)
    /// is a base type, a string or a scoped name: an anonymous
    /// `sequence<...>` there is an error (omniidl and JacORB reject it
    /// too), or a warning when the front end is lenient.
    fn check_named_type(&mut self, spec: &ast::TypeSpec, what: &str) {
        let ast::TypeSpec::Sequence { loc, .. } = spec else {
            return;
        };
        let message = format!(
            "{what} has an anonymous sequence type; CORBA IDL allows only a named type here"
        );
        let help = "declare a typedef (`typedef sequence<...> NameSeq;`) and use its name";
        let diag = if self.lenient {
            Diag::warning(*loc, message)
                .note(help)
                .note("accepted because the front end is lenient; other IDL compilers reject it")
        } else {
            Diag::error(*loc, message)
                .note(help)
                .note("`armillary idl --lenient` (Builder::lenient) accepts it with a warning")
        };
        self.diags.push(diag);
    }

    /// An unconstrained interface cannot pass local types.
    fn check_local_types(&mut self, name: &ast::Ident, result: Option<&Type>, params: &[Param]) {
        let Some(container) = self.container else {
            return;
        };
        let DefKind::Interface(interface) = &self.defs[container.index()].kind else {
            return;
        };
        if interface.kind == InterfaceKind::Local {
            return;
        }
        let interface_name = self.defs[container.index()].name.clone();
        let mut offenders: Vec<(Loc, String, DefId)> = Vec::new();
        if let Some(ty) = result {
            if let Some(local) = self.local_type_in(ty, &mut HashSet::new()) {
                offenders.push((name.loc, format!("'{}' uses", name.name), local));
            }
        }
        for param in params {
            if let Some(local) = self.local_type_in(&param.ty, &mut HashSet::new()) {
                offenders.push((
                    param.loc,
                    format!("parameter '{}' of '{}' has", param.name, name.name),
                    local,
                ));
            }
        }
        for (loc, what, local) in offenders {
            let local_def = &self.defs[local.index()];
            let diag = Diag::error(
                loc,
                format!(
                    "in unconstrained interface '{interface_name}', {what} local type '{}'",
                    local_def.name
                ),
            )
            .note_at(
                local_def.loc,
                format!("'{}' is declared here", local_def.name),
            );
            self.push(diag);
        }
    }

    /// The local interface a type contains, if any.
    fn local_type_in(&self, ty: &Type, visited: &mut HashSet<DefId>) -> Option<DefId> {
        match ty {
            Type::Sequence { element, .. } | Type::Array { element, .. } => {
                self.local_type_in(element, visited)
            }
            Type::Named(id) => {
                if !visited.insert(*id) {
                    return None;
                }
                match &self.defs[id.index()].kind {
                    DefKind::Interface(interface) if interface.kind == InterfaceKind::Local => {
                        Some(*id)
                    }
                    DefKind::Typedef(typedef) => self.local_type_in(&typedef.ty, visited),
                    DefKind::Struct(s) => s
                        .members
                        .iter()
                        .find_map(|m| self.local_type_in(&m.ty, visited)),
                    DefKind::Exception(e) => e
                        .members
                        .iter()
                        .find_map(|m| self.local_type_in(&m.ty, visited)),
                    DefKind::Union(u) => u
                        .cases
                        .iter()
                        .find_map(|c| self.local_type_in(&c.member.ty, visited)),
                    DefKind::ValueBox(b) => self.local_type_in(&b.ty, visited),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// A context name: letters, digits, `_` and `.`, optionally ending in `*`.
fn valid_context(text: &str) -> bool {
    let body = text.strip_suffix('*').unwrap_or(text);
    !text.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && body.chars().next().is_none_or(|c| c.is_ascii_alphabetic())
}
