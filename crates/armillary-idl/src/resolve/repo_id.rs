//! Repository ids: `IDL:prefix/Scope/Name:major.minor`, from the prefix in
//! force where a definition is declared (`#pragma prefix`, scoped to the
//! file and to the enclosing module or interface), `#pragma version`,
//! `typeprefix`, and explicit ids from `#pragma ID` and `typeid`.
//!
//! A `#pragma prefix` restarts the id path: definitions after it are named
//! relative to the scope the pragma is in, as in the CORBA specification's
//! example (`#pragma prefix "P2"` inside `M2::M3` gives `IDL:P2/T3:1.0`).
//!
//! The pragmas, `typeid` and `typeprefix` are read here as they are met;
//! the ids are computed at the end.

use super::scope::{ScopeId, Target};
use super::Resolver;
use crate::ast;
use crate::diagnostic::Diag;
use crate::ir::{DefId, DefKind};
use crate::lexer::Pragma;
use crate::source::Loc;

/// The prefix in force and the scope names written after it.
#[derive(Debug, Clone, Default)]
pub(super) struct PrefixState {
    pub(super) prefix: String,
    pub(super) base: Vec<String>,
}

/// What the repository id of one definition is made from.
#[derive(Debug, Clone)]
pub(super) struct IdInfo {
    prefix: String,
    path: Vec<String>,
    pub(super) version: Option<((u16, u16), Loc)>,
    pub(super) explicit: Option<(String, Loc)>,
    pub(super) type_prefix: Option<String>,
}

impl IdInfo {
    pub(super) fn new(state: &PrefixState, name: &str) -> Self {
        let mut path = state.base.clone();
        path.push(name.to_owned());
        IdInfo {
            prefix: state.prefix.clone(),
            path,
            version: None,
            explicit: None,
            type_prefix: None,
        }
    }
}

impl Resolver<'_> {
    pub(super) fn type_id(&mut self, type_id: &ast::TypeId, scope: ScopeId) {
        let Some(id) = self.pragma_target(&type_id.name, scope, "typeid") else {
            return;
        };
        self.set_explicit_id(id, type_id.id.clone(), type_id.loc);
    }

    pub(super) fn type_prefix(&mut self, type_prefix: &ast::TypePrefix, scope: ScopeId) {
        let Some(id) = self.pragma_target(&type_prefix.name, scope, "typeprefix") else {
            return;
        };
        if !matches!(
            self.defs[id.index()].kind,
            DefKind::Module(_) | DefKind::Interface(_) | DefKind::ValueType(_)
        ) {
            self.error(
                type_prefix.name.loc,
                format!(
                    "typeprefix applies to a module, interface or valuetype; '{}' is {}",
                    type_prefix.name,
                    self.defs[id.index()].kind.describe_with_article()
                ),
            );
            return;
        }
        self.ids[id.index()].type_prefix = Some(type_prefix.prefix.clone());
    }

    pub(super) fn pragma(&mut self, pragma: &Pragma, loc: Loc, scope: ScopeId) {
        match pragma {
            Pragma::Prefix(prefix) => {
                self.prefix.prefix = prefix.clone();
                self.prefix.base.clear();
            }
            Pragma::Id { name, id } => {
                let name = pragma_name(name);
                if let Some(target) = self.pragma_target(&name, scope, "#pragma ID") {
                    self.set_explicit_id(target, id.clone(), loc);
                }
            }
            Pragma::Version { name, major, minor } => {
                let name = pragma_name(name);
                let Some(target) = self.pragma_target(&name, scope, "#pragma version") else {
                    return;
                };
                let info = &mut self.ids[target.index()];
                if let Some((explicit, explicit_loc)) = &info.explicit {
                    let diag = Diag::error(
                        loc,
                        format!("cannot set the version of '{name}': its repository id was set explicitly to \"{explicit}\""),
                    )
                    .note_at(*explicit_loc, "the id is set here");
                    self.push(diag);
                    return;
                }
                if let Some((old, old_loc)) = info.version {
                    if old != (*major, *minor) {
                        let diag = Diag::error(
                            loc,
                            format!(
                                "the version of '{name}' is already set to {}.{}",
                                old.0, old.1
                            ),
                        )
                        .note_at(old_loc, "it is set here");
                        self.push(diag);
                        return;
                    }
                }
                info.version = Some(((*major, *minor), loc));
            }
        }
    }

    /// The definition a pragma, `typeid` or `typeprefix` names.
    fn pragma_target(
        &mut self,
        name: &ast::ScopedName,
        scope: ScopeId,
        what: &str,
    ) -> Option<DefId> {
        match self.lookup(scope, name, false) {
            Ok(Target::Def(id)) if id != self.corba_module || what == "typeprefix" => Some(id),
            Ok(_) => {
                self.error(
                    name.loc,
                    format!("{what} needs a definition with a repository id; '{name}' is not one"),
                );
                None
            }
            Err(diag) => {
                self.push(diag);
                None
            }
        }
    }

    fn set_explicit_id(&mut self, id: DefId, repository_id: String, loc: Loc) {
        let name = self.defs[id.index()].scoped_name.join("::");
        let info = &mut self.ids[id.index()];
        if let Some((old, old_loc)) = &info.explicit {
            if *old != repository_id {
                let diag = Diag::error(
                    loc,
                    format!("the repository id of '{name}' is already set to \"{old}\""),
                )
                .note_at(*old_loc, "it is set here");
                self.push(diag);
            }
            return;
        }
        if let Some((_, version_loc)) = info.version {
            let diag = Diag::error(
                loc,
                format!("cannot set the repository id of '{name}': its version was already set"),
            )
            .note_at(version_loc, "the version is set here");
            self.push(diag);
            return;
        }
        info.explicit = Some((repository_id, loc));
    }

    pub(super) fn compute_repository_ids(&mut self) {
        for index in 0..self.defs.len() {
            let info = &self.ids[index];
            if let Some((id, _)) = &info.explicit {
                self.defs[index].repository_id = id.clone();
                continue;
            }
            let (major, minor) = info.version.map_or((1, 0), |(version, _)| version);
            // The nearest enclosing (or own) typeprefix wins over pragmas.
            let mut chain: Vec<DefId> = Vec::new();
            let mut current = Some(DefId(index as u32));
            let mut type_prefix = None;
            while let Some(id) = current {
                chain.push(id);
                if let Some(prefix) = &self.ids[id.index()].type_prefix {
                    type_prefix = Some(prefix.clone());
                    break;
                }
                current = self.defs[id.index()].parent;
                if chain.len() > self.defs.len() {
                    break;
                }
            }
            let mut parts: Vec<String> = Vec::new();
            match type_prefix {
                Some(prefix) => {
                    if !prefix.is_empty() {
                        parts.push(prefix);
                    }
                    parts.extend(
                        chain
                            .iter()
                            .rev()
                            .map(|id| self.defs[id.index()].name.clone()),
                    );
                }
                None => {
                    if !info.prefix.is_empty() {
                        parts.push(info.prefix.clone());
                    }
                    parts.extend(info.path.iter().cloned());
                }
            }
            self.defs[index].repository_id = format!("IDL:{}:{major}.{minor}", parts.join("/"));
        }
    }
}

/// The scoped name of a pragma as an AST name.
fn pragma_name(name: &crate::lexer::PragmaName) -> ast::ScopedName {
    ast::ScopedName {
        absolute: name.absolute,
        parts: name
            .parts
            .iter()
            .map(|(text, loc)| ast::Ident {
                name: text.strip_prefix('_').unwrap_or(text).to_owned(),
                loc: *loc,
            })
            .collect(),
        loc: name.loc,
    }
}
