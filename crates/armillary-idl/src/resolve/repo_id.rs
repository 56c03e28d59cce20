//! Repository ids: `IDL:prefix/Scope/Name:major.minor`, from the prefix in
//! force where a definition is declared (`#pragma prefix`, scoped to the
//! file and to the enclosing module or interface), `#pragma version`,
//! `typeprefix`, and explicit ids from `#pragma ID` and `typeid`.
//!
//! A `#pragma prefix` restarts the id path: definitions after it are named
//! relative to the scope the pragma is in, as in the CORBA specification's
//! example (`#pragma prefix "P2"` inside `M2::M3` gives `IDL:P2/T3:1.0`).

use super::Resolver;
use crate::ir::DefId;
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
