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

mod consts;
mod repo_id;
mod scope;

use std::collections::{HashMap, HashSet};

use crate::ast::{self, Item};
use crate::diagnostic::Diag;
use crate::ir::*;
use crate::lexer::Pragma;
use crate::source::{FileId, Loc, SourceMap};
use consts::ConstKind;
use repo_id::{IdInfo, PrefixState};
use scope::{ScopeId, Target, GLOBAL};

/// Where a type is used, for the incomplete-type rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Usage {
    /// The element type of a sequence: may be an incomplete struct or
    /// union (that is how recursive types are written).
    SequenceElement,
    /// Anywhere else: the type must be complete.
    Complete,
}

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

    fn interface_forward(
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

    fn interface(&mut self, interface: &ast::Interface, scope: ScopeId, contents: &mut Vec<DefId>) {
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
    fn resolve_interface(
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
    fn inherit_operations(&mut self, id: DefId, inner: ScopeId, bases: &[DefId], loc: Loc) {
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
    fn declare_operation_name(&mut self, scope: ScopeId, name: &ast::Ident, id: DefId) -> bool {
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

    fn value_forward(
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

    fn value(&mut self, value: &ast::Value, scope: ScopeId, contents: &mut Vec<DefId>) {
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

    fn value_box(&mut self, value_box: &ast::ValueBox, scope: ScopeId, contents: &mut Vec<DefId>) {
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

    fn constant(&mut self, constant: &ast::Const, scope: ScopeId, contents: &mut Vec<DefId>) {
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

    fn typedef(&mut self, typedef: &ast::Typedef, scope: ScopeId, contents: &mut Vec<DefId>) {
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
    fn apply_dims(
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

    fn struct_forward(
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
    fn struct_def(
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

    fn exception(&mut self, exception: &ast::Exception, scope: ScopeId, contents: &mut Vec<DefId>) {
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

    fn union_def(
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

    fn enum_def(&mut self, def: &ast::Enum, scope: ScopeId) -> Option<DefId> {
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

    fn operation(&mut self, operation: &ast::Operation, scope: ScopeId, contents: &mut Vec<DefId>) {
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

    fn param(
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
    fn raises(&mut self, names: &[ast::ScopedName], scope: ScopeId) -> Vec<DefId> {
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

    fn attribute(&mut self, attribute: &ast::Attribute, scope: ScopeId, contents: &mut Vec<DefId>) {
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

    fn type_id(&mut self, type_id: &ast::TypeId, scope: ScopeId) {
        let Some(id) = self.pragma_target(&type_id.name, scope, "typeid") else {
            return;
        };
        self.set_explicit_id(id, type_id.id.clone(), type_id.loc);
    }

    fn type_prefix(&mut self, type_prefix: &ast::TypePrefix, scope: ScopeId) {
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

    fn pragma(&mut self, pragma: &Pragma, loc: Loc, scope: ScopeId) {
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

    // ---- types ----------------------------------------------------------

    /// Resolves a type as written; inline struct, union and enum
    /// definitions are made and their ids pushed to `nested`.
    fn resolve_type(
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
    fn unalias(&self, ty: &Type) -> Type {
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
    fn describe_type(&self, ty: &Type) -> String {
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
    fn describe_value(&self, value: &ConstValue) -> String {
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

/// A context name: letters, digits, `_` and `.`, optionally ending in `*`.
fn valid_context(text: &str) -> bool {
    let body = text.strip_suffix('*').unwrap_or(text);
    !text.is_empty()
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && body.chars().next().is_none_or(|c| c.is_ascii_alphabetic())
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
