//! Interfaces: forward declarations, definitions and inheritance, with the
//! OMG rules on which interfaces may inherit from which and on operations
//! and attributes inherited twice under one name.

use std::collections::{HashMap, HashSet};

use super::scope::{ScopeId, Target};
use super::Resolver;
use crate::ast;
use crate::diagnostic::Diag;
use crate::ir::{DefId, DefKind, Interface, InterfaceKind};
use crate::source::Loc;

impl Resolver<'_> {
    pub(super) fn interface_forward(
        &mut self,
        forward: &ast::InterfaceForward,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        if !self.first_time(&forward.name) {
            return;
        }
        let kind = interface_kind(forward.kind);
        if let Some(entry) = self.local_entry(scope, &forward.name.name).cloned() {
            if let Target::Def(id) = entry.target {
                if let DefKind::Interface(existing) = &self.defs[id.index()].kind {
                    if entry.name == forward.name.name {
                        if existing.kind != kind {
                            self.push(
                                Diag::error(
                                    forward.name.loc,
                                    format!(
                                        "'{}' is declared as {} here but as {} before",
                                        forward.name.name,
                                        describe_interface_kind(kind),
                                        describe_interface_kind(existing.kind)
                                    ),
                                )
                                .note_at(entry.loc, "the earlier declaration is here"),
                            );
                        }
                        return;
                    }
                }
            }
        }
        let id = self.new_def(
            &forward.name,
            forward.doc.clone(),
            DefKind::Interface(Interface {
                kind,
                bases: Vec::new(),
                contents: Vec::new(),
                defined: false,
            }),
        );
        if self.declare(scope, &forward.name, Target::Def(id)) {
            self.state[id.index()].forward_loc = Some(forward.name.loc);
            contents.push(id);
        }
    }

    pub(super) fn interface(
        &mut self,
        interface: &ast::Interface,
        scope: ScopeId,
        contents: &mut Vec<DefId>,
    ) {
        let name = &interface.name;
        if !self.first_time(name) {
            return;
        }
        let kind = interface_kind(interface.kind);
        if let Some(entry) = self.local_entry(scope, &name.name).cloned() {
            if let Target::Def(id) = entry.target {
                if let DefKind::Interface(existing) = &self.defs[id.index()].kind {
                    if entry.name == name.name && !existing.defined && existing.kind != kind {
                        self.push(
                            Diag::error(
                                name.loc,
                                format!(
                                    "'{}' is defined as {} but was forward-declared as {}",
                                    name.name,
                                    describe_interface_kind(kind),
                                    describe_interface_kind(existing.kind)
                                ),
                            )
                            .note_at(entry.loc, "the forward declaration is here"),
                        );
                        return;
                    }
                }
            }
        }
        let bases = self.interface_bases(interface, kind, scope);
        let new_kind = DefKind::Interface(Interface {
            kind,
            bases: bases.clone(),
            contents: Vec::new(),
            defined: false,
        });
        let Some((id, is_new)) =
            self.declare_or_complete(scope, name, interface.doc.clone(), new_kind, |k| {
                matches!(k, DefKind::Interface(_))
            })
        else {
            return;
        };
        let inner = self.new_scope(Some(scope), Some(name.name.clone()));
        self.def_scopes.insert(id, inner);
        self.scopes[inner.0].bases = bases.clone();
        self.inherit_operations(id, inner, &bases, name.loc);
        let saved = self.enter(id, &name.name);
        let inner_contents = self.items(&interface.items, inner);
        self.leave(saved);
        if let DefKind::Interface(def) = &mut self.defs[id.index()].kind {
            def.contents = inner_contents;
            def.defined = true;
        }
        self.state[id.index()].complete = true;
        if is_new {
            contents.push(id);
        }
    }

    /// Resolves and checks the bases of an interface.
    fn interface_bases(
        &mut self,
        interface: &ast::Interface,
        kind: InterfaceKind,
        scope: ScopeId,
    ) -> Vec<DefId> {
        let mut bases = Vec::new();
        for base_name in &interface.bases {
            let Some(base) = self.resolve_interface(base_name, scope, "inherit from") else {
                continue;
            };
            if bases.contains(&base) {
                self.error(
                    base_name.loc,
                    format!("'{base_name}' is listed more than once as a base"),
                );
                continue;
            }
            let DefKind::Interface(base_def) = &self.defs[base.index()].kind else {
                continue;
            };
            let problem = match (kind, base_def.kind) {
                (InterfaceKind::Abstract, InterfaceKind::Unconstrained | InterfaceKind::Local) => {
                    Some("an abstract interface can only inherit from abstract interfaces")
                }
                (InterfaceKind::Unconstrained, InterfaceKind::Local) => {
                    Some("only a local interface can inherit from a local interface")
                }
                _ => None,
            };
            if let Some(problem) = problem {
                self.error(
                    base_name.loc,
                    format!("cannot inherit from '{base_name}': {problem}"),
                );
                continue;
            }
            bases.push(base);
        }
        bases
    }

    /// Resolves a name that must be a defined interface.
    pub(super) fn resolve_interface(
        &mut self,
        name: &ast::ScopedName,
        scope: ScopeId,
        action: &str,
    ) -> Option<DefId> {
        let target = match self.lookup(scope, name, true) {
            Ok(target) => target,
            Err(diag) => {
                self.push(diag);
                return None;
            }
        };
        let id = match target {
            Target::Def(id) => id,
            _ => {
                self.error(
                    name.loc,
                    format!("cannot {action} '{name}': it is not an interface"),
                );
                return None;
            }
        };
        let def = &self.defs[id.index()];
        match &def.kind {
            DefKind::Interface(_) if self.state[id.index()].complete => Some(id),
            DefKind::Interface(_) => {
                let diag = Diag::error(
                    name.loc,
                    format!(
                        "cannot {action} '{name}': it is only forward-declared so far (define it first)"
                    ),
                )
                .note_at(def.loc, "the forward declaration is here");
                self.push(diag);
                None
            }
            other => {
                let message = format!(
                    "cannot {action} '{name}': it is {}, not an interface",
                    other.describe_with_article()
                );
                self.error(name.loc, message);
                None
            }
        }
    }

    /// Collects the operations and attributes `id` inherits and reports
    /// two different ones with the same name.
    pub(super) fn inherit_operations(
        &mut self,
        id: DefId,
        inner: ScopeId,
        bases: &[DefId],
        loc: Loc,
    ) {
        let mut inherited: HashMap<String, DefId> = HashMap::new();
        let mut owners: Vec<DefId> = Vec::new();
        let mut queue: Vec<DefId> = bases.to_vec();
        while let Some(base) = queue.pop() {
            if base == id || owners.contains(&base) {
                continue;
            }
            owners.push(base);
            if let Some(&base_scope) = self.def_scopes.get(&base) {
                queue.extend(self.scopes[base_scope.0].bases.iter().copied());
            }
        }
        owners.sort();
        let mut reported: HashSet<String> = HashSet::new();
        for owner in owners {
            let Some(&owner_scope) = self.def_scopes.get(&owner) else {
                continue;
            };
            let mut entries: Vec<(String, DefId)> = self.scopes[owner_scope.0]
                .entries
                .iter()
                .filter_map(|(lower, entry)| match entry.target {
                    Target::Def(member)
                        if matches!(
                            self.defs[member.index()].kind,
                            DefKind::Operation(_) | DefKind::Attribute(_)
                        ) =>
                    {
                        Some((lower.clone(), member))
                    }
                    _ => None,
                })
                .collect();
            entries.sort();
            for (lower, member) in entries {
                match inherited.get(&lower) {
                    Some(&other) if other != member => {
                        if reported.insert(lower.clone()) {
                            let first = &self.defs[other.index()];
                            let second = &self.defs[member.index()];
                            let diag = Diag::error(
                                loc,
                                format!(
                                    "'{}' inherits two {}s named '{}': '{}' and '{}'",
                                    self.defs[id.index()].name,
                                    second.kind.describe(),
                                    second.name,
                                    first.scoped_name.join("::"),
                                    second.scoped_name.join("::")
                                ),
                            )
                            .note_at(
                                first.loc,
                                format!("'{}' is declared here", first.scoped_name.join("::")),
                            )
                            .note_at(
                                second.loc,
                                format!("'{}' is declared here", second.scoped_name.join("::")),
                            );
                            self.push(diag);
                        }
                    }
                    Some(_) => {}
                    None => {
                        inherited.insert(lower, member);
                    }
                }
            }
        }
        self.scopes[inner.0].inherited_operations = inherited;
    }

    /// Declares an operation or attribute name, checking it against the
    /// inherited ones.
    pub(super) fn declare_operation_name(
        &mut self,
        scope: ScopeId,
        name: &ast::Ident,
        id: DefId,
    ) -> bool {
        let lower = name.name.to_ascii_lowercase();
        if let Some(&inherited) = self.scopes[scope.0].inherited_operations.get(&lower) {
            let other = &self.defs[inherited.index()];
            let diag = Diag::error(
                name.loc,
                format!(
                    "'{}' clashes with inherited {} '{}'",
                    name.name,
                    other.kind.describe(),
                    other.scoped_name.join("::")
                ),
            )
            .note_at(
                other.loc,
                format!("'{}' is declared here", other.scoped_name.join("::")),
            );
            self.push(diag);
            return false;
        }
        self.declare(scope, name, Target::Def(id))
    }
}

fn interface_kind(kind: ast::InterfaceKind) -> InterfaceKind {
    match kind {
        ast::InterfaceKind::Unconstrained => InterfaceKind::Unconstrained,
        ast::InterfaceKind::Abstract => InterfaceKind::Abstract,
        ast::InterfaceKind::Local => InterfaceKind::Local,
    }
}

fn describe_interface_kind(kind: InterfaceKind) -> &'static str {
    match kind {
        InterfaceKind::Unconstrained => "an unconstrained interface",
        InterfaceKind::Abstract => "an abstract interface",
        InterfaceKind::Local => "a local interface",
    }
}
