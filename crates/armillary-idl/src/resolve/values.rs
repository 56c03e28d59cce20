//! Valuetypes and value boxes: forward declarations, state members and
//! factories, and the rules on concrete and abstract bases, `truncatable`
//! and supported interfaces.

use super::scope::{ScopeId, Target};
use super::types::Usage;
use super::Resolver;
use crate::ast::{self, Item};
use crate::ir::{
    DefId, DefKind, Factory, InterfaceKind, Member, StateMember, Type, ValueBox, ValueKind,
    ValueType,
};

impl Resolver<'_> {
    pub(super) fn value_forward(
        &mut self,
        forward: &ast::ValueForward,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        if !self.first_time(&forward.name) {
            return;
        }
        let kind = if forward.is_abstract {
            ValueKind::Abstract
        } else {
            ValueKind::Concrete
        };
        if let Some(entry) = self.local_entry(scope, &forward.name.name).cloned() {
            if let Target::Def(id) = entry.target {
                if matches!(self.defs[id.index()].kind, DefKind::ValueType(_))
                    && entry.name == forward.name.name
                {
                    return;
                }
            }
        }
        let id = self.new_def(
            &forward.name,
            forward.doc.clone(),
            DefKind::ValueType(ValueType {
                kind,
                truncatable: false,
                bases: Vec::new(),
                supports: Vec::new(),
                contents: Vec::new(),
                state_members: Vec::new(),
                factories: Vec::new(),
                defined: false,
            }),
        );
        if self.declare(scope, &forward.name, Target::Def(id)) {
            self.state[id.index()].forward_loc = Some(forward.name.loc);
            contents.push(id);
        }
    }

    pub(super) fn value(&mut self, value: &ast::Value, scope: ScopeId, contents: &mut Vec<DefId>) {
        let name = &value.name;
        if !self.first_time(name) {
            return;
        }
        let kind = match value.kind {
            ast::ValueKind::Concrete => ValueKind::Concrete,
            ast::ValueKind::Abstract => ValueKind::Abstract,
            ast::ValueKind::Custom => ValueKind::Custom,
        };
        let (bases, supports, truncatable) = self.value_inheritance(value, kind, scope);
        let new_kind = DefKind::ValueType(ValueType {
            kind,
            truncatable,
            bases: bases.clone(),
            supports: supports.clone(),
            contents: Vec::new(),
            state_members: Vec::new(),
            factories: Vec::new(),
            defined: false,
        });
        let Some((id, is_new)) =
            self.declare_or_complete(scope, name, value.doc.clone(), new_kind, |k| {
                matches!(k, DefKind::ValueType(_))
            })
        else {
            return;
        };
        let inner = self.new_scope(Some(scope), Some(name.name.clone()));
        self.def_scopes.insert(id, inner);
        let all_bases: Vec<DefId> = bases.iter().chain(&supports).copied().collect();
        self.scopes[inner.0].bases = all_bases.clone();
        self.inherit_operations(id, inner, &all_bases, name.loc);
        let saved = self.enter(id, &name.name);
        let mut inner_contents = Vec::new();
        let mut state_members = Vec::new();
        let mut factories = Vec::new();
        for item in &value.items {
            match item {
                Item::StateMember(member) => {
                    if kind == ValueKind::Abstract {
                        let loc = member.ty.loc();
                        self.error(loc, "an abstract valuetype cannot have state members");
                        continue;
                    }
                    let Some(ty) =
                        self.resolve_type(&member.ty, inner, &mut inner_contents, Usage::Complete)
                    else {
                        continue;
                    };
                    for declarator in &member.declarators {
                        let Some(member_ty) = self.apply_dims(&ty, declarator, inner) else {
                            continue;
                        };
                        if self.declare(inner, &declarator.name, Target::Member) {
                            state_members.push(StateMember {
                                public: member.public,
                                member: Member {
                                    name: declarator.name.name.clone(),
                                    ty: member_ty,
                                    doc: member.doc.clone(),
                                    loc: declarator.name.loc,
                                },
                            });
                        }
                    }
                }
                Item::Factory(factory) => {
                    if kind == ValueKind::Abstract {
                        self.error(
                            factory.name.loc,
                            "an abstract valuetype cannot have factories",
                        );
                        continue;
                    }
                    if !self.declare(inner, &factory.name, Target::Member) {
                        continue;
                    }
                    let op_scope = self.new_scope(Some(inner), None);
                    let mut params = Vec::new();
                    for param in &factory.params {
                        if param.direction != ast::Direction::In {
                            self.error(
                                param.name.loc,
                                format!(
                                    "factory parameter '{}' must be an 'in' parameter",
                                    param.name.name
                                ),
                            );
                            continue;
                        }
                        if let Some(param) = self.param(param, op_scope, &mut inner_contents) {
                            params.push(param);
                        }
                    }
                    let raises = self.raises(&factory.raises, op_scope);
                    factories.push(Factory {
                        name: factory.name.name.clone(),
                        params,
                        raises,
                        doc: factory.doc.clone(),
                        loc: factory.name.loc,
                    });
                }
                other => self.item(other, inner, &mut inner_contents),
            }
        }
        self.leave(saved);
        if let DefKind::ValueType(def) = &mut self.defs[id.index()].kind {
            def.contents = inner_contents;
            def.state_members = state_members;
            def.factories = factories;
            def.defined = true;
        }
        self.state[id.index()].complete = true;
        if is_new {
            contents.push(id);
        }
    }

    /// Resolves and checks the bases and supported interfaces of a
    /// valuetype.
    fn value_inheritance(
        &mut self,
        value: &ast::Value,
        kind: ValueKind,
        scope: ScopeId,
    ) -> (Vec<DefId>, Vec<DefId>, bool) {
        let mut bases = Vec::new();
        let mut truncatable = value.truncatable.is_some();
        if let Some(loc) = value.truncatable {
            if kind != ValueKind::Concrete {
                self.error(
                    loc,
                    "'truncatable' is only allowed in a concrete, non-custom valuetype",
                );
                truncatable = false;
            }
        }
        for (position, base_name) in value.bases.iter().enumerate() {
            let target = match self.lookup(scope, base_name, true) {
                Ok(target) => target,
                Err(diag) => {
                    self.push(diag);
                    continue;
                }
            };
            let Target::Def(base) = target else {
                self.error(base_name.loc, format!("'{base_name}' is not a valuetype"));
                continue;
            };
            let base_kind = match &self.defs[base.index()].kind {
                DefKind::ValueType(base_def) => base_def.kind,
                other => {
                    let message = format!(
                        "a valuetype can only inherit from valuetypes; '{base_name}' is {}",
                        other.describe_with_article()
                    );
                    self.error(base_name.loc, message);
                    continue;
                }
            };
            if !self.state[base.index()].complete {
                self.error(
                    base_name.loc,
                    format!(
                        "cannot inherit from '{base_name}': it is only forward-declared so far"
                    ),
                );
                continue;
            }
            if bases.contains(&base) {
                self.error(
                    base_name.loc,
                    format!("'{base_name}' is listed more than once as a base"),
                );
                continue;
            }
            if base_kind != ValueKind::Abstract {
                if kind == ValueKind::Abstract {
                    self.error(
                        base_name.loc,
                        format!("an abstract valuetype can only inherit from abstract valuetypes; '{base_name}' is concrete"),
                    );
                    continue;
                }
                if position != 0 {
                    self.error(
                        base_name.loc,
                        format!("'{base_name}' is a concrete valuetype: only the first base may be concrete"),
                    );
                    continue;
                }
            } else if position == 0 && truncatable {
                self.error(
                    base_name.loc,
                    "'truncatable' applies to a concrete base, not an abstract one",
                );
                truncatable = false;
            }
            bases.push(base);
        }
        let mut supports = Vec::new();
        let mut concrete_supported: Option<DefId> = None;
        for name in &value.supports {
            let Some(interface) = self.resolve_interface(name, scope, "support") else {
                continue;
            };
            if let DefKind::Interface(def) = &self.defs[interface.index()].kind {
                if def.kind != InterfaceKind::Abstract {
                    if let Some(previous) = concrete_supported {
                        let previous_name: &str = &self.defs[previous.index()].name;
                        let message = format!(
                            "a valuetype can support at most one non-abstract interface; it already supports '{previous_name}'"
                        );
                        self.error(name.loc, message);
                        continue;
                    }
                    concrete_supported = Some(interface);
                }
            }
            supports.push(interface);
        }
        (bases, supports, truncatable)
    }

    pub(super) fn value_box(
        &mut self,
        value_box: &ast::ValueBox,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        if !self.first_time(&value_box.name) {
            return;
        }
        let Some(ty) = self.resolve_type(&value_box.ty, scope, contents, Usage::Complete) else {
            return;
        };
        if let Type::Named(inner) = self.unalias(&ty) {
            if matches!(
                self.defs[inner.index()].kind,
                DefKind::ValueType(_) | DefKind::ValueBox(_)
            ) {
                self.error(
                    value_box.ty.loc(),
                    "a value box cannot box a valuetype or another value box",
                );
                return;
            }
        }
        let id = self.new_def(
            &value_box.name,
            value_box.doc.clone(),
            DefKind::ValueBox(ValueBox { ty }),
        );
        if self.declare(scope, &value_box.name, Target::Def(id)) {
            contents.push(id);
        }
    }
}
