//! Scopes and name lookup, with the OMG rules: identifiers are looked up
//! case-insensitively but must be spelled as declared; two identifiers in
//! one scope that differ only in case collide; a relative name is searched
//! in the current scope, then in the scopes an interface or valuetype
//! inherits, then outward; a name used in a scope is "introduced" there
//! and may not be declared there afterwards.

use std::collections::HashMap;

use super::Resolver;
use crate::ast::{Ident, ScopedName};
use crate::diagnostic::Diag;
use crate::ir::{DefId, Type};
use crate::source::Loc;

/// Identifies a scope of the resolver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ScopeId(pub(super) usize);

/// The global scope is always the first.
pub(super) const GLOBAL: ScopeId = ScopeId(0);

/// What a name in a scope stands for.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Target {
    /// A definition of the IR.
    Def(DefId),
    /// An enumerator: its enum and index.
    Enumerator(DefId, u32),
    /// A built-in type of the `CORBA` module (`TypeCode`, `Principal`).
    Builtin(Type),
    /// A member, parameter or case name: only there to collide.
    Member,
}

/// A name declared in a scope.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// The name as declared.
    pub(super) name: String,
    /// Where it was declared.
    pub(super) loc: Loc,
    pub(super) target: Target,
}

/// One scope: a module, interface, valuetype, struct, union, exception,
/// operation, or the global scope.
#[derive(Debug, Default)]
pub(super) struct Scope {
    pub(super) parent: Option<ScopeId>,
    /// The name of the definition that forms the scope, which may not be
    /// declared again directly inside it (`None` for the global scope and
    /// operations).
    pub(super) name: Option<String>,
    /// Declared names, keyed by lower-case spelling.
    pub(super) entries: HashMap<String, Entry>,
    /// Names used in this scope but declared outside it, keyed by
    /// lower-case spelling, with the spelling and place of first use.
    pub(super) introduced: HashMap<String, (String, Loc)>,
    /// Interfaces and valuetypes whose scopes this one inherits.
    pub(super) bases: Vec<DefId>,
    /// Operations and attributes inherited from `bases`, by lower-case
    /// name.
    pub(super) inherited_operations: HashMap<String, DefId>,
}

impl Resolver<'_> {
    pub(super) fn new_scope(&mut self, parent: Option<ScopeId>, name: Option<String>) -> ScopeId {
        self.scopes.push(Scope {
            parent,
            name,
            ..Scope::default()
        });
        ScopeId(self.scopes.len() - 1)
    }

    /// Declares `ident` in `scope`; reports a redefinition, a case
    /// collision, a clash with an introduced name or with the scope's own
    /// name, and returns whether the declaration was made.
    pub(super) fn declare(&mut self, scope: ScopeId, ident: &Ident, target: Target) -> bool {
        let lower = ident.name.to_ascii_lowercase();
        let current = &self.scopes[scope.0];
        if let Some(existing) = current.entries.get(&lower) {
            let diag = if existing.name == ident.name {
                Diag::error(ident.loc, format!("redefinition of '{}'", ident.name)).note_at(
                    existing.loc,
                    format!("previous definition of '{}' is here", existing.name),
                )
            } else {
                Diag::error(
                    ident.loc,
                    format!(
                        "'{}' collides with '{}': identifiers that differ only in case collide",
                        ident.name, existing.name
                    ),
                )
                .note_at(
                    existing.loc,
                    format!("'{}' is declared here", existing.name),
                )
            };
            self.diags.push(diag);
            return false;
        }
        if let Some((used, use_loc)) = current.introduced.get(&lower) {
            self.diags.push(
                Diag::error(
                    ident.loc,
                    format!(
                        "declaration of '{}' clashes with the use of '{used}' earlier in this scope",
                        ident.name
                    ),
                )
                .note_at(*use_loc, format!("'{used}' is used here")),
            );
            return false;
        }
        if let Some(scope_name) = &current.name {
            if scope_name.eq_ignore_ascii_case(&ident.name) {
                self.diags.push(Diag::error(
                    ident.loc,
                    format!(
                        "'{}' clashes with the name of its enclosing scope '{scope_name}'",
                        ident.name
                    ),
                ));
                return false;
            }
        }
        self.scopes[scope.0].entries.insert(
            lower,
            Entry {
                name: ident.name.clone(),
                loc: ident.loc,
                target,
            },
        );
        true
    }

    /// The entry spelled `name` (any case) declared directly in `scope`.
    pub(super) fn local_entry(&self, scope: ScopeId, name: &str) -> Option<&Entry> {
        self.scopes[scope.0].entries.get(&name.to_ascii_lowercase())
    }

    /// Resolves a scoped name used in `scope`. With `introduce`, the first
    /// identifier of a relative name found outside `scope` is recorded as
    /// introduced into it.
    pub(super) fn lookup(
        &mut self,
        scope: ScopeId,
        name: &ScopedName,
        introduce: bool,
    ) -> Result<Target, Diag> {
        let Some(first) = name.parts.first() else {
            return Err(Diag::error(name.loc, "empty name"));
        };
        let (mut target, found_in) = if name.absolute {
            match self.find_in(GLOBAL, first)? {
                Some(target) => (target, GLOBAL),
                None => {
                    return Err(Diag::error(
                        first.loc,
                        format!("cannot find '::{}' in the global scope", first.name),
                    ))
                }
            }
        } else {
            let mut current = Some(scope);
            loop {
                let Some(search) = current else {
                    return Err(Diag::error(
                        first.loc,
                        format!("cannot find '{}' in this scope", first.name),
                    ));
                };
                if let Some(target) = self.find_in(search, first)? {
                    break (target, search);
                }
                current = self.scopes[search.0].parent;
            }
        };
        if introduce && !name.absolute && found_in != scope {
            self.scopes[scope.0]
                .introduced
                .entry(first.name.to_ascii_lowercase())
                .or_insert_with(|| (first.name.clone(), first.loc));
        }
        let mut written = if name.absolute {
            format!("::{}", first.name)
        } else {
            first.name.clone()
        };
        for part in &name.parts[1..] {
            let inner = match &target {
                Target::Def(id) => match self.def_scopes.get(id) {
                    Some(&inner) => inner,
                    None => {
                        return Err(Diag::error(
                            part.loc,
                            format!(
                                "'{written}' is {}, not a scope that contains names",
                                self.defs[id.index()].kind.describe_with_article()
                            ),
                        ))
                    }
                },
                _ => {
                    return Err(Diag::error(
                        part.loc,
                        format!("'{written}' is not a scope that contains names"),
                    ))
                }
            };
            target = match self.find_in(inner, part)? {
                Some(target) => target,
                None => {
                    return Err(Diag::error(
                        part.loc,
                        format!("cannot find '{}' in '{written}'", part.name),
                    ))
                }
            };
            written.push_str("::");
            written.push_str(&part.name);
        }
        Ok(target)
    }

    /// Looks `ident` up in `scope` and the scopes it inherits (not in
    /// enclosing scopes).
    fn find_in(&self, scope: ScopeId, ident: &Ident) -> Result<Option<Target>, Diag> {
        let lower = ident.name.to_ascii_lowercase();
        let found = match self.find_entry(scope, &lower, 0) {
            Ok(found) => found,
            Err(candidates) => {
                let mut diag = Diag::error(
                    ident.loc,
                    format!(
                        "ambiguous name '{}': it is inherited from more than one base",
                        ident.name
                    ),
                );
                for (base, entry) in &candidates {
                    diag = diag.note_at(
                        entry.loc,
                        format!(
                            "one candidate is inherited from '{}'",
                            self.defs[base.index()].name
                        ),
                    );
                }
                return Err(diag);
            }
        };
        match found {
            None => Ok(None),
            Some(entry) if entry.name != ident.name => Err(Diag::error(
                ident.loc,
                format!(
                    "'{}' differs only in case from '{}'",
                    ident.name, entry.name
                ),
            )
            .note_at(entry.loc, format!("'{}' is declared here", entry.name))),
            Some(entry) => Ok(Some(entry.target)),
        }
    }

    /// The entry for `lower` in `scope` or, failing that, in the scopes it
    /// inherits; `Err` with the candidates when inherited ones disagree.
    fn find_entry(
        &self,
        scope: ScopeId,
        lower: &str,
        depth: usize,
    ) -> Result<Option<Entry>, Vec<(DefId, Entry)>> {
        let current = &self.scopes[scope.0];
        if let Some(entry) = current.entries.get(lower) {
            return Ok(Some(entry.clone()));
        }
        if depth > 256 {
            return Ok(None);
        }
        let mut found: Vec<(DefId, Entry)> = Vec::new();
        for base in &current.bases {
            let Some(&base_scope) = self.def_scopes.get(base) else {
                continue;
            };
            if let Some(entry) = self.find_entry(base_scope, lower, depth + 1)? {
                if !found.iter().any(|(_, e)| e.target == entry.target) {
                    found.push((*base, entry));
                }
            }
        }
        if found.len() > 1 {
            return Err(found);
        }
        Ok(found.pop().map(|(_, entry)| entry))
    }
}
