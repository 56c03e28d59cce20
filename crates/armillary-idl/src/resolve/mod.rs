//! Semantic analysis: the parse trees of the translation units in, the
//! resolved [`crate::ir::Spec`] out.
//!
//! One pass in source order declares each definition and resolves each
//! name it uses, so "use before declaration" is simply a name that is not
//! found. The pass enforces the OMG rules (redefinition and case
//! collision, introduced names, incomplete types, union labels, oneway
//! operations, raises clauses, inheritance clashes, constant types and
//! ranges) and records what repository ids need; ids are computed at the
//! end, once every `#pragma ID`, `#pragma version`, `typeid` and
//! `typeprefix` has been seen.
//!
//! This file holds the resolver's state, its entry points and the walk
//! over the items (modules included); the rest is by concern: `scope`
//! (scopes and name lookup), `types` (types as written), `consts`
//! (constant expressions), `constructed` (constants, typedefs, structs,
//! unions, enums, exceptions), `interfaces`, `operations` (operations and
//! attributes), `values` (valuetypes and value boxes) and `repo_id`
//! (pragmas and repository ids).

mod constructed;
mod consts;
mod interfaces;
mod operations;
mod repo_id;
mod scope;
mod types;
mod values;

use std::collections::HashMap;

use crate::ast::{self, Item};
use crate::diagnostic::Diag;
use crate::ir::*;
use crate::source::{FileId, Loc, SourceMap};
use repo_id::{IdInfo, PrefixState};
use scope::{ScopeId, Target, GLOBAL};

/// The resolver's view of a definition beyond the IR.
#[derive(Debug, Clone, Default)]
struct DefState {
    /// A struct, union, interface or valuetype whose body has been fully
    /// read.
    complete: bool,
    /// Where a forward declaration of it is (the first one).
    forward_loc: Option<Loc>,
}

/// Resolves translation units into one [`Spec`].
pub(crate) struct Resolver<'s> {
    sources: &'s SourceMap,
    defs: Vec<Definition>,
    state: Vec<DefState>,
    ids: Vec<IdInfo>,
    roots: Vec<DefId>,
    scopes: Vec<scope::Scope>,
    def_scopes: HashMap<DefId, ScopeId>,
    diags: Vec<Diag>,
    /// Definitions already made, by place, with the translation unit that
    /// made them: a file included by two main files is read twice but its
    /// definitions are made once.
    seen: HashMap<(FileId, u32, u32, String), usize>,
    unit: usize,
    prefix: PrefixState,
    file_prefixes: Vec<PrefixState>,
    /// The scoped name of the current scope.
    path: Vec<String>,
    /// The definition whose scope is current (`None` at the top level).
    container: Option<DefId>,
    corba_module: DefId,
    /// Accept anonymous sequences as parameter, result and attribute
    /// types with a warning instead of an error.
    lenient: bool,
}

impl<'s> Resolver<'s> {
    pub(crate) fn new(sources: &'s SourceMap, lenient: bool) -> Self {
        let mut resolver = Resolver {
            sources,
            defs: Vec::new(),
            state: Vec::new(),
            ids: Vec::new(),
            roots: Vec::new(),
            scopes: Vec::new(),
            def_scopes: HashMap::new(),
            diags: Vec::new(),
            seen: HashMap::new(),
            unit: 0,
            prefix: PrefixState::default(),
            file_prefixes: Vec::new(),
            path: Vec::new(),
            container: None,
            corba_module: DefId(0),
            lenient,
        };
        resolver.new_scope(None, None);
        resolver.declare_builtins();
        resolver
    }

    /// The `CORBA` module exists before any file is read, holding the
    /// pseudo-types `TypeCode` and `Principal`, as in omniidl.
    fn declare_builtins(&mut self) {
        let loc = Loc {
            file: FileId(0),
            line: 0,
            col: 0,
        };
        let name = ast::Ident {
            name: "CORBA".into(),
            loc,
        };
        let corba = self.new_def(&name, None, DefKind::Module(Module::default()));
        self.defs[corba.index()].from_main_file = false;
        self.ids[corba.index()].explicit = Some(("IDL:omg.org/CORBA:1.0".into(), loc));
        self.declare(GLOBAL, &name, Target::Def(corba));
        let scope = self.new_scope(Some(GLOBAL), Some("CORBA".into()));
        self.def_scopes.insert(corba, scope);
        for (builtin, ty) in [("TypeCode", Type::TypeCode), ("Principal", Type::Principal)] {
            let ident = ast::Ident {
                name: builtin.into(),
                loc,
            };
            self.declare(scope, &ident, Target::Builtin(ty));
        }
        self.corba_module = corba;
    }

    /// Resolves one translation unit's items into the specification.
    pub(crate) fn add_unit(&mut self, items: &[Item]) {
        self.unit += 1;
        self.prefix = PrefixState::default();
        self.file_prefixes.clear();
        self.path.clear();
        self.container = None;
        let contents = self.items(items, GLOBAL);
        for id in contents {
            if !self.roots.contains(&id) {
                self.roots.push(id);
            }
        }
    }

    /// Finishes: checks forward declarations, computes repository ids.
    pub(crate) fn finish(mut self) -> (Spec, Vec<Diag>) {
        for index in 0..self.defs.len() {
            let state = &self.state[index];
            let Some(forward_loc) = state.forward_loc else {
                continue;
            };
            if state.complete {
                continue;
            }
            let def = &self.defs[index];
            let kind = def.kind.describe();
            let message = format!(
                "forward-declared {kind} '{}' is never defined",
                def.scoped_name.join("::")
            );
            match def.kind {
                DefKind::Struct(_) | DefKind::Union(_) => {
                    self.diags.push(Diag::error(forward_loc, message));
                }
                _ => self.diags.push(Diag::warning(forward_loc, message)),
            }
        }
        self.compute_repository_ids();
        let spec = Spec {
            definitions: self.defs,
            roots: self.roots,
            files: self.sources.files().to_vec(),
            warnings: Vec::new(),
        };
        (spec, self.diags)
    }

    // ---- definitions ----------------------------------------------------

    fn new_def(&mut self, name: &ast::Ident, doc: Option<String>, kind: DefKind) -> DefId {
        let id = DefId(u32::try_from(self.defs.len()).unwrap_or(u32::MAX));
        let mut scoped_name = self.path.clone();
        scoped_name.push(name.name.clone());
        let from_main_file = self
            .sources
            .get(name.loc.file)
            .is_some_and(|file| file.is_main);
        self.defs.push(Definition {
            name: name.name.clone(),
            scoped_name,
            repository_id: String::new(),
            parent: self.container,
            loc: name.loc,
            doc,
            from_main_file,
            kind,
        });
        self.state.push(DefState::default());
        self.ids.push(IdInfo::new(&self.prefix, &name.name));
        id
    }

    /// Whether this is the first time the definition at `ident` is seen
    /// (false when an earlier translation unit already made it).
    fn first_time(&mut self, ident: &ast::Ident) -> bool {
        let key = (
            ident.loc.file,
            ident.loc.line,
            ident.loc.col,
            ident.name.clone(),
        );
        match self.seen.get(&key) {
            Some(&unit) => unit == self.unit,
            None => {
                self.seen.insert(key, self.unit);
                true
            }
        }
    }

    /// Enters the scope of `id` (named `name`); returns what to restore.
    fn enter(&mut self, id: DefId, name: &str) -> (PrefixState, Option<DefId>) {
        let saved = (self.prefix.clone(), self.container);
        self.prefix.base.push(name.to_owned());
        self.path.push(name.to_owned());
        self.container = Some(id);
        saved
    }

    fn leave(&mut self, saved: (PrefixState, Option<DefId>)) {
        self.prefix = saved.0;
        self.container = saved.1;
        self.path.pop();
    }

    fn error(&mut self, loc: Loc, message: impl Into<String>) {
        self.diags.push(Diag::error(loc, message));
    }

    fn push(&mut self, diag: Diag) {
        self.diags.push(diag);
    }

    /// Resolves a list of items in `scope`; returns the definitions made
    /// (for the container's contents).
    fn items(&mut self, items: &[Item], scope: ScopeId) -> Vec<DefId> {
        let mut contents = Vec::new();
        for item in items {
            self.item(item, scope, &mut contents);
        }
        contents
    }

    fn item(&mut self, item: &Item, scope: ScopeId, contents: &mut Vec<DefId>) {
        match item {
            Item::Module(module) => self.module(module, scope, contents),
            Item::Interface(interface) => self.interface(interface, scope, contents),
            Item::InterfaceForward(forward) => self.interface_forward(forward, scope, contents),
            Item::Value(value) => self.value(value, scope, contents),
            Item::ValueForward(forward) => self.value_forward(forward, scope, contents),
            Item::ValueBox(value_box) => self.value_box(value_box, scope, contents),
            Item::Const(constant) => self.constant(constant, scope, contents),
            Item::Typedef(typedef) => self.typedef(typedef, scope, contents),
            Item::Struct(def) => {
                if let Some(id) = self.struct_def(def, scope, contents) {
                    contents.push(id);
                }
            }
            Item::Union(def) => {
                if let Some(id) = self.union_def(def, scope, contents) {
                    contents.push(id);
                }
            }
            Item::StructForward(forward) => self.struct_forward(forward, scope, contents, true),
            Item::UnionForward(forward) => self.struct_forward(forward, scope, contents, false),
            Item::Enum(def) => {
                if let Some(id) = self.enum_def(def, scope) {
                    contents.push(id);
                }
            }
            Item::Native(native) => {
                if self.first_time(&native.name) {
                    let id = self.new_def(&native.name, native.doc.clone(), DefKind::Native);
                    if self.declare(scope, &native.name, Target::Def(id)) {
                        contents.push(id);
                    }
                }
            }
            Item::Exception(exception) => self.exception(exception, scope, contents),
            Item::Operation(operation) => self.operation(operation, scope, contents),
            Item::Attribute(attribute) => self.attribute(attribute, scope, contents),
            Item::StateMember(_) | Item::Factory(_) => {
                // Read by `value`, which owns the valuetype's IR.
            }
            Item::TypeId(type_id) => self.type_id(type_id, scope),
            Item::TypePrefix(type_prefix) => self.type_prefix(type_prefix, scope),
            Item::Import(import) => self.diags.push(Diag::warning(
                import.loc,
                format!(
                    "'import {}' is ignored: this compiler reads declarations through #include",
                    import.what
                ),
            )),
            Item::Pragma(pragma, loc) => self.pragma(pragma, *loc, scope),
            Item::FileEnter => {
                self.file_prefixes.push(self.prefix.clone());
                self.prefix = PrefixState {
                    prefix: String::new(),
                    base: self.path.clone(),
                };
            }
            Item::FileExit => {
                if let Some(saved) = self.file_prefixes.pop() {
                    self.prefix = saved;
                }
            }
        }
    }

    fn module(&mut self, module: &ast::Module, scope: ScopeId, contents: &mut Vec<DefId>) {
        let name = &module.name;
        let existing = self.local_entry(scope, &name.name).cloned();
        let id = match existing {
            Some(entry) if entry.name == name.name => match entry.target {
                Target::Def(id) if matches!(self.defs[id.index()].kind, DefKind::Module(_)) => {
                    // Reopened. Introduced-name clashes still apply.
                    if let Some((used, use_loc)) = self.scopes[scope.0]
                        .introduced
                        .get(&name.name.to_ascii_lowercase())
                        .cloned()
                    {
                        self.push(
                            Diag::error(
                                name.loc,
                                format!(
                                    "declaration of '{}' clashes with the use of '{used}' earlier in this scope",
                                    name.name
                                ),
                            )
                            .note_at(use_loc, format!("'{used}' is used here")),
                        );
                        return;
                    }
                    id
                }
                _ => {
                    self.declare(scope, name, Target::Member);
                    return;
                }
            },
            _ => {
                let id = self.new_def(name, module.doc.clone(), DefKind::Module(Module::default()));
                if !self.declare(scope, name, Target::Def(id)) {
                    return;
                }
                let inner = self.new_scope(Some(scope), Some(name.name.clone()));
                self.def_scopes.insert(id, inner);
                id
            }
        };
        let is_main = self
            .sources
            .get(name.loc.file)
            .is_some_and(|file| file.is_main);
        if id == self.corba_module && self.defs[id.index()].loc.line == 0 {
            // The built-in CORBA module takes the place of its first opening.
            let def = &mut self.defs[id.index()];
            def.loc = name.loc;
            def.doc = module.doc.clone();
        }
        {
            let def = &mut self.defs[id.index()];
            def.from_main_file |= is_main;
            if def.doc.is_none() {
                def.doc = module.doc.clone();
            }
        }
        let Some(&inner) = self.def_scopes.get(&id) else {
            return;
        };
        let saved = self.enter(id, &name.name);
        let inner_contents = self.items(&module.items, inner);
        self.leave(saved);
        if let DefKind::Module(def) = &mut self.defs[id.index()].kind {
            def.contents.extend(inner_contents);
        }
        if !contents.contains(&id) {
            contents.push(id);
        }
    }

    /// Finds a forward declaration of the same kind to complete, or
    /// declares a new definition. Returns the id and whether it is new.
    fn declare_or_complete(
        &mut self,
        scope: ScopeId,
        name: &ast::Ident,
        doc: Option<String>,
        kind: DefKind,
        matches_forward: impl Fn(&DefKind) -> bool,
    ) -> Option<(DefId, bool)> {
        if let Some(entry) = self.local_entry(scope, &name.name).cloned() {
            if let Target::Def(id) = entry.target {
                let index = id.index();
                if entry.name == name.name
                    && matches_forward(&self.defs[index].kind)
                    && !self.state[index].complete
                    && self.state[index].forward_loc.is_some()
                {
                    let def = &mut self.defs[index];
                    def.loc = name.loc;
                    if doc.is_some() {
                        def.doc = doc;
                    }
                    def.kind = kind;
                    def.from_main_file = self
                        .sources
                        .get(name.loc.file)
                        .is_some_and(|file| file.is_main);
                    // The definition's prefix is the one that counts.
                    self.ids[index] = IdInfo::new(&self.prefix, &name.name);
                    return Some((id, false));
                }
            }
        }
        let id = self.new_def(name, doc, kind);
        if self.declare(scope, name, Target::Def(id)) {
            Some((id, true))
        } else {
            None
        }
    }
}
