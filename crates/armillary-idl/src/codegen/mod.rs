//! The Rust back end: turns a resolved [`Spec`] into one Rust source file.
//!
//! The mapping, in short (ARCHITECTURE.md has the whole table):
//! - a module is a `pub mod` (snake case); an interface, struct, union or
//!   exception that contains definitions gets a module of its own for them;
//! - structs and exceptions are structs, enums are enums, unions are enums
//!   with one variant per case; each has CDR encode/decode and a
//!   `TC_<NAME>` TypeCode static; nominal types implement
//!   `armillary::IdlType`;
//! - an interface `I` is a typed reference `I` (the client stub), a trait
//!   `IServant` (what a server implements) and `ISkeleton<T>` (the
//!   `armillary::Servant` that demultiplexes requests to the trait by binary
//!   search over the sorted operation names); an operation that raises
//!   user exceptions returns `Result<T, i::OpError>`, one without returns
//!   `Result<T, SystemException>`; a derived stub names inherited methods
//!   as its bases do, and gives a suffix to the later of two bases' methods
//!   that share a Rust name (`my_factory_2`; the rule is in `inherited`);
//! - a stub's synchronous methods go through `ObjectRef::invoke_typed` (or
//!   `invoke_oneway_typed`), which can run the call in this process as a
//!   closure on the servant trait, and `ISkeleton<T>` answers
//!   `Servant::local_interface` with views of its servant as `I`'s and its
//!   ancestors' traits (`collocated`);
//! - with AMI on, `I`'s stub has `sendc_<x>`, `sendp_<x>` and `<x>_async`
//!   for each two-way operation `x`, and for each attribute `a` with `x`
//!   `get_<a>` and (unless readonly) `set_<a>`; and there is the implied
//!   reply handler `AmiIHandler` (`ami`), whose servant trait's methods
//!   have default bodies;
//! - valuetypes and value boxes are not mapped yet: they, and whatever
//!   uses them, are left out with a warning.
//!
//! Generated code names what it needs from the runtime only through
//! `::armillary::runtime::…` and everything else through the `armillary`
//! crate root (and `::armillary::poa`). Each top-level item carries the
//! `#[allow]`s for the clippy lints that what the IDL says can trigger
//! (its comments are not Markdown, its names and sizes are its own), since
//! a file brought in with `include!` cannot carry inner attributes; the
//! rest is written to pass `clippy::pedantic`.
//!
//! Generation never fails on a spec the front end accepted: what cannot be
//! mapped is left out and reported.

mod amh;
mod ami;
mod collocated;
mod inherited;
mod interface;
mod items;
mod names;
mod reach;
mod support;
mod traits;
mod types;

use std::collections::{HashMap, HashSet};

use proc_macro2::TokenStream;
use quote::quote;

use crate::diagnostic::{Diagnostic, Severity};
use crate::ir::{DefId, DefKind, InterfaceKind, Loc, Spec};
use names::{camel, ident, shouty, snake, Namer};

/// Options of the Rust back end: attributes to add to generated types
/// and their members ([`Options::type_attribute`],
/// [`Options::field_attribute`]), in the manner of `prost-build`.
///
/// ```
/// let options = armillary_idl::codegen::Options::default()
///     .type_attribute("Stock::Quote", "#[derive(PartialOrd)]")
///     .field_attribute("Stock::Quote::price", "#[doc = \"In cents.\"]");
/// assert!(options.invalid_attribute().is_none());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// (path, attribute) pairs for types.
    type_attributes: Vec<(String, String)>,
    /// (path, attribute) pairs for members.
    field_attributes: Vec<(String, String)>,
    /// Whether to generate the AMI forms and reply handlers (on by default).
    ami: bool,
    /// The IDL paths whose interfaces and operations get asynchronous
    /// method handling (see [`Options::amh`]).
    amh: Vec<String>,
    /// Whether `sequence<octet>` is `armillary::Bytes` (see
    /// [`Options::octet_sequences_as_bytes`]).
    octets_as_bytes: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            type_attributes: Vec::new(),
            field_attributes: Vec::new(),
            ami: true,
            amh: Vec::new(),
            octets_as_bytes: false,
        }
    }
}

impl Options {
    /// Whether to generate asynchronous method invocation (on by default):
    /// for every non-local interface `I`, the implied reply-handler
    /// interface `AMI_IHandler` (stub `AmiIHandler`, servant trait and
    /// skeleton) and, on `I`'s stub, the callback (`sendc_*`), polling
    /// (`sendp_*`) and future (`*_async`) forms of every two-way operation
    /// and attribute.
    #[must_use]
    pub fn ami(mut self, ami: bool) -> Self {
        self.ami = ami;
        self
    }

    /// Selects interfaces, or single operations and attributes, for
    /// asynchronous method handling (AMH, `amh`): `"Stock::Quoter"` (or
    /// `"Stock"`, every interface in the module, or `"."`, every interface)
    /// gives the selected interfaces an AMH servant trait, an async servant
    /// trait, an AMH skeleton and a responder per call, every call
    /// answered through its responder; `"Stock::Quoter::get_quote"` does
    /// the same with only that operation (or attribute) asynchronous, the
    /// interface's other calls keeping their synchronous form. Call it
    /// once per path.
    ///
    /// ```
    /// let options = armillary_idl::codegen::Options::default().amh("Stock::Quoter");
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn amh(mut self, path: impl Into<String>) -> Self {
        self.amh.push(path.into());
        self
    }

    /// Whether every `sequence<octet>` (bounded or not, named by a typedef
    /// or not) maps to `armillary::Bytes` instead of `Vec<u8>` (off by
    /// default), as `prost-build`'s `bytes` option does for protobuf's
    /// `bytes`. A received sequence of 1 KiB or more is then a slice of
    /// the message it came in, not a copy: a server that echoes or
    /// forwards bulk data, or a client that keeps it, saves a copy of
    /// every octet. Stubs still take `&[u8]` for an `in` parameter.
    #[must_use]
    pub fn octet_sequences_as_bytes(mut self, on: bool) -> Self {
        self.octets_as_bytes = on;
        self
    }
}

/// The generated Rust source and what the back end had to say.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The Rust source, formatted by prettyplease.
    pub code: String,
    /// Warnings: definitions left out because the back end cannot map
    /// them yet (only those declared in main files are reported).
    pub warnings: Vec<Diagnostic>,
}

/// Generates Rust for the definitions of `spec`'s main files and for what
/// they use from included files (so that the output compiles on its own).
///
/// The work is split into units (each top-level definition, or each
/// definition directly inside a top-level module) that are generated and
/// formatted on as many threads as the machine has; the output is the
/// same whatever the number of threads.
pub fn generate(spec: &Spec, options: &Options) -> Generated {
    let base = Generator::new(spec, options);
    let mut units = Vec::new();
    let mut layout = Vec::new();
    for &root in &spec.roots {
        if !base.needed.contains(&root) {
            continue;
        }
        if matches!(spec[root].kind, DefKind::Module(_)) {
            let inner = base.names(root).inner.clone();
            let first = units.len();
            for &child in spec.contents(root) {
                units.push((inner.clone(), child));
            }
            layout.push(Layout::Module(root, first..units.len()));
        } else {
            layout.push(Layout::Item(units.len()));
            units.push((Vec::new(), root));
        }
    }
    let top_level: Vec<bool> = {
        let mut top = vec![false; units.len()];
        for part in &layout {
            if let Layout::Item(i) = part {
                top[*i] = true;
            }
        }
        top
    };
    let outputs = generate_units(&base, &units, &top_level);
    let mut code = String::from(
        "// @generated by armillary-idl. Do not edit: edit the IDL and regenerate.\n\n",
    );
    let mut warnings = base.amh_path_warnings();
    for part in layout {
        match part {
            Layout::Item(i) => {
                code.push_str(&outputs[i].0);
                warnings.extend(outputs[i].1.iter().cloned());
            }
            Layout::Module(id, range) => {
                let mut body = String::new();
                for (text, unit_warnings) in &outputs[range] {
                    body.push_str(text);
                    warnings.extend(unit_warnings.iter().cloned());
                }
                code.push_str(&base.module_text(id, &body));
            }
        }
    }
    Generated { code, warnings }
}

/// Where a unit's output goes: at the top level, or inside a top-level
/// module (whose units are the given range).
enum Layout {
    Item(usize),
    Module(DefId, std::ops::Range<usize>),
}

/// Generates and formats `units` (module path, definition) on worker
/// threads; the outputs come back in the units' order.
fn generate_units(
    base: &Generator<'_>,
    units: &[(Vec<String>, DefId)],
    top_level: &[bool],
) -> Vec<(String, Vec<Diagnostic>)> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(units.len())
        .max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let run = |generator: &mut Generator<'_>| {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some((module, id)) = units.get(i) else {
                return done;
            };
            let tokens = generator.items(module, &[*id]);
            let text = if tokens.is_empty() {
                String::new()
            } else if top_level.get(i).copied().unwrap_or(false) {
                format_allowing(tokens)
            } else {
                format(tokens)
            };
            done.push((i, text, std::mem::take(&mut generator.warnings)));
        }
    };
    let mut outputs: Vec<(String, Vec<Diagnostic>)> =
        vec![(String::new(), Vec::new()); units.len()];
    let results: Vec<Vec<(usize, String, Vec<Diagnostic>)>> = if threads == 1 {
        vec![run(&mut base.clone())]
    } else {
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let mut generator = base.clone();
                    let run = &run;
                    scope.spawn(move || run(&mut generator))
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    for (i, text, warnings) in results.into_iter().flatten() {
        outputs[i] = (text, warnings);
    }
    outputs
}

/// Indents every non-empty line of `text` by four spaces.
fn indent(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for line in text.lines() {
        if !line.is_empty() {
            out.push_str("    ");
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The clippy lints that generated code can meet because of what its IDL
/// says, allowed on each top-level item: IDL comments are not Markdown;
/// dispatchers and decoders grow with the IDL; names (of fields,
/// parameters, modules), the number of `boolean` members or parameters
/// and constant values are the IDL's own. One is about the runtime:
/// `|r| r.read_wstring()` cannot be the method path clippy suggests, which
/// is not generic over the reader's lifetime as the callee requires.
fn idl_lints() -> TokenStream {
    quote! {
        #[allow(
            clippy::doc_markdown,
            clippy::too_many_lines,
            clippy::struct_excessive_bools,
            clippy::fn_params_excessive_bools,
            clippy::similar_names,
            clippy::many_single_char_names,
            clippy::struct_field_names,
            clippy::module_name_repetitions,
            clippy::unreadable_literal,
            clippy::redundant_closure_for_method_calls
        )]
    }
}

/// Like [`format`], with [`idl_lints`] on each item.
fn format_allowing(tokens: TokenStream) -> String {
    let Ok(mut file) = syn::parse2::<syn::File>(tokens.clone()) else {
        return format(tokens);
    };
    for item in &mut file.items {
        let target = match item {
            syn::Item::Const(i) => &mut i.attrs,
            syn::Item::Enum(i) => &mut i.attrs,
            syn::Item::Fn(i) => &mut i.attrs,
            syn::Item::Impl(i) => &mut i.attrs,
            syn::Item::Mod(i) => &mut i.attrs,
            syn::Item::Static(i) => &mut i.attrs,
            syn::Item::Struct(i) => &mut i.attrs,
            syn::Item::Trait(i) => &mut i.attrs,
            syn::Item::Type(i) => &mut i.attrs,
            _ => continue,
        };
        // The attribute always parses (it is built above).
        if let Ok(attrs) = syn::parse::Parser::parse2(syn::Attribute::parse_outer, idl_lints()) {
            target.splice(0..0, attrs);
        }
    }
    prettyplease::unparse(&file)
}

/// Pretty-prints generated items. The tokens always parse (they are
/// built from identifiers and literals this module makes); should they not,
/// the output is a `compile_error!` saying so, for rustc to report.
fn format(tokens: TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens) {
        Ok(file) => prettyplease::unparse(&file),
        Err(e) => {
            let message = format!("armillary-idl generated Rust that does not parse: {e}");
            format!("compile_error!({message:?});\n")
        }
    }
}

/// The names of one definition's Rust items.
#[derive(Debug, Clone, Default)]
struct DefNames {
    /// The item's own name (a type, module, or constant name).
    base: String,
    /// The Rust module the item lives in (names of nested modules, from
    /// the root of the generated file).
    module: Vec<String>,
    /// The module that holds what the definition contains (for modules,
    /// interfaces, structs, unions and exceptions).
    inner: Vec<String>,
    /// The name of the TypeCode static, for types.
    tc: Option<String>,
}

/// Names of an operation's or attribute's Rust items.
#[derive(Debug, Clone, Default)]
struct OpNames {
    /// The stub and trait method (an attribute's getter).
    method: String,
    /// An attribute's setter.
    setter: Option<String>,
    /// The error enum of the operation (or getter), when it raises user
    /// exceptions.
    error: Option<String>,
    /// The error enum of an attribute's setter, when it raises.
    set_error: Option<String>,
    /// Parameter names, in order.
    params: Vec<String>,
    /// The stub's AMI methods of each two-way call (the operation, or the
    /// attribute's getter then setter), when AMI is on.
    ami: Vec<AmiNames>,
}

/// The names of one call's AMI methods on the stub.
#[derive(Debug, Clone, Default)]
struct AmiNames {
    /// The callback form (`sendc_get_quote`).
    sendc: String,
    /// The polling form (`sendp_get_quote`).
    sendp: String,
    /// The future form (`get_quote_async`).
    future: String,
}

/// Method names a stub or servant trait already uses.
const RESERVED_METHODS: &[&str] = &[
    "narrow",
    "from_object",
    "as_object",
    "into_object",
    "is_nil",
    "nil",
    "type_code",
    "to_any",
    "from_any",
    "encode",
    "decode",
    "clone",
    "eq",
    "ne",
    "fmt",
    "hash",
    "new",
    "into_servant",
    "servant",
];

/// Local names the generated stub and skeleton bodies use, which
/// parameters must not shadow.
const RESERVED_PARAMS: &[&str] = &[
    "self",
    "w",
    "r",
    "reply",
    "request",
    "result",
    "servant",
    "ami_handler",
    "responder",
];

#[derive(Clone)]
pub(crate) struct Generator<'s> {
    spec: &'s Spec,
    options: &'s Options,
    names: Vec<Option<DefNames>>,
    op_names: HashMap<DefId, OpNames>,
    /// Why a definition is left out, for those that are.
    left_out: HashMap<DefId, String>,
    /// Structs, unions, exceptions and typedefs that reach themselves
    /// through their members.
    recursive: HashSet<DefId>,
    /// What the main files declare and use (see `reach`).
    needed: HashSet<DefId>,
    /// The reply handler's stub name of each non-local interface, when
    /// AMI is on.
    handlers: HashMap<DefId, String>,
    /// The poller aliases of each two-way operation or attribute (getter,
    /// then setter), when AMI is on.
    pollers: HashMap<DefId, Vec<String>>,
    /// The reply handler's method names for each operation or attribute
    /// (in the order of its handler calls), computed in the context of the
    /// declaring interface's handler.
    handler_methods: HashMap<DefId, Vec<String>>,
    /// What each interface's stubs call its members, inherited ones
    /// included (see `inherited`).
    interface_names: HashMap<DefId, std::sync::Arc<inherited::InterfaceNames>>,
    /// The AMH items' names of each interface `Options::amh` selects.
    amh: HashMap<DefId, amh::AmhNames>,
    warnings: Vec<Diagnostic>,
}

impl<'s> Generator<'s> {
    fn new(spec: &'s Spec, options: &'s Options) -> Self {
        let mut generator = Generator {
            spec,
            options,
            names: vec![None; spec.definitions().count()],
            op_names: HashMap::new(),
            left_out: HashMap::new(),
            recursive: HashSet::new(),
            needed: reach::needed(spec),
            handlers: HashMap::new(),
            pollers: HashMap::new(),
            handler_methods: HashMap::new(),
            interface_names: HashMap::new(),
            amh: HashMap::new(),
            warnings: Vec::new(),
        };
        generator.assign_names(None, Vec::new(), &spec.roots);
        generator.find_left_out();
        generator.find_recursive();
        generator
    }

    // ---- names ------------------------------------------------------------

    /// Assigns names to the definitions of one Rust module, then to what
    /// they contain.
    fn assign_names(&mut self, _scope: Option<DefId>, module: Vec<String>, contents: &[DefId]) {
        let mut types = Namer::default();
        let mut values = Namer::default();
        let mut nested: Vec<(DefId, Vec<String>)> = Vec::new();
        for &id in contents {
            let def = &self.spec[id];
            let (base, tc, inner) = match &def.kind {
                DefKind::Module(_) => {
                    let base = types.claim(&snake(&def.name));
                    (base.clone(), None, Some(base))
                }
                DefKind::Interface(_)
                | DefKind::Struct(_)
                | DefKind::Union(_)
                | DefKind::Exception(_)
                | DefKind::Enum(_)
                | DefKind::Typedef(_)
                | DefKind::Native
                | DefKind::ValueType(_)
                | DefKind::ValueBox(_) => {
                    let is_interface = matches!(def.kind, DefKind::Interface(_));
                    let base = types.first_free(&camel(&def.name), |candidate| {
                        let derived_free = !is_interface
                            || (types.is_free(&format!("{candidate}Servant"))
                                && types.is_free(&format!("{candidate}Skeleton")));
                        derived_free
                            && types.is_free(&snake(candidate))
                            && values.is_free(&format!("TC_{}", shouty(candidate)))
                    });
                    types.insert(base.clone());
                    if is_interface {
                        types.insert(format!("{base}Servant"));
                        types.insert(format!("{base}Skeleton"));
                    }
                    let inner = snake(&base);
                    types.insert(inner.clone());
                    let tc = format!("TC_{}", shouty(&base));
                    values.insert(tc.clone());
                    if self.options.ami && self.is_remote_interface(id) {
                        self.assign_ami_names(id, &base, &mut types);
                    }
                    if self.is_amh_interface(id) {
                        self.assign_amh_names(id, &base, &mut types);
                    }
                    (base, Some(tc), Some(inner))
                }
                DefKind::Const(_) => (values.claim(&shouty(&def.name)), None, None),
                DefKind::Operation(_) | DefKind::Attribute(_) => continue,
            };
            let inner_path = inner.map(|inner| {
                let mut path = module.clone();
                path.push(inner);
                path
            });
            if let Some(path) = &inner_path {
                nested.push((id, path.clone()));
            }
            self.names[id.index()] = Some(DefNames {
                base,
                module: module.clone(),
                inner: inner_path.unwrap_or_default(),
                tc,
            });
        }
        for (id, path) in nested {
            let contents: Vec<DefId> = self.spec.contents(id).to_vec();
            self.assign_names(Some(id), path, &contents);
        }
    }

    /// Names the AMI items of interface `id` (whose stub is `base`) in the
    /// module whose types `types` names: its reply handler's stub, servant
    /// trait and skeleton (`Ami<I>Handler…`), and a poller alias per
    /// two-way call it declares (`<I><Op>Poller`, `<I>Get<Attr>Poller`,
    /// `<I>Set<Attr>Poller`).
    fn assign_ami_names(&mut self, id: DefId, base: &str, types: &mut Namer) {
        let spec = self.spec;
        let handler = types.first_free(&format!("Ami{base}Handler"), |candidate| {
            types.is_free(&format!("{candidate}Servant"))
                && types.is_free(&format!("{candidate}Skeleton"))
                && types.is_free(&snake(candidate))
        });
        types.insert(format!("{handler}Servant"));
        types.insert(format!("{handler}Skeleton"));
        types.insert(snake(&handler));
        types.insert(handler.clone());
        self.handlers.insert(id, handler);
        for &member in spec.contents(id) {
            let def = &spec[member];
            let pollers = match &def.kind {
                DefKind::Operation(op) if !op.oneway => {
                    vec![types.claim(&format!("{base}{}Poller", camel(&def.name)))]
                }
                DefKind::Attribute(attribute) => {
                    let mut pollers =
                        vec![types.claim(&format!("{base}Get{}Poller", camel(&def.name)))];
                    if !attribute.readonly {
                        pollers.push(types.claim(&format!("{base}Set{}Poller", camel(&def.name))));
                    }
                    pollers
                }
                _ => continue,
            };
            self.pollers.insert(member, pollers);
        }
    }

    /// True for an interface that is not local (it has a stub).
    fn is_remote_interface(&self, id: DefId) -> bool {
        matches!(&self.spec[id].kind, DefKind::Interface(i) if i.kind != InterfaceKind::Local)
    }

    fn names(&self, id: DefId) -> &DefNames {
        static NONE: DefNames = DefNames {
            base: String::new(),
            module: Vec::new(),
            inner: Vec::new(),
            tc: None,
        };
        self.names
            .get(id.index())
            .and_then(Option::as_ref)
            .unwrap_or(&NONE)
    }

    /// The path to definition `id`'s item from module `from`.
    fn path_to(&self, from: &[String], id: DefId) -> TokenStream {
        let names = self.names(id);
        let item = ident(&names.base);
        let prefix = relative_module(from, &names.module);
        quote!(#prefix #item)
    }

    /// The path to definition `id`'s TypeCode static from module `from`.
    fn tc_path(&self, from: &[String], id: DefId) -> TokenStream {
        let names = self.names(id);
        let item = ident(names.tc.as_deref().unwrap_or("TC_MISSING"));
        let prefix = relative_module(from, &names.module);
        quote!(#prefix #item)
    }

    /// The path to an item named `name` in the inner module of `id`.
    fn inner_path(&self, from: &[String], id: DefId, name: &str) -> TokenStream {
        let names = self.names(id);
        let prefix = relative_module(from, &names.inner);
        let item = ident(name);
        quote!(#prefix #item)
    }

    /// Names of an operation or attribute, computed in the context of the
    /// interface that declares it.
    fn op_names(&mut self, op: DefId) -> OpNames {
        if let Some(names) = self.op_names.get(&op) {
            return names.clone();
        }
        let Some(owner) = self.spec[op].parent else {
            return OpNames::default();
        };
        self.interface_names(owner);
        self.op_names.get(&op).cloned().unwrap_or_default()
    }

    /// Names the operations and attributes `interface` declares, with
    /// `methods` holding the names of those it inherits (see `inherited`):
    /// those keep their names, its own take what is left.
    fn assign_op_names(&mut self, interface: DefId, mut methods: Namer) {
        // Error enums live in the interface's own module, after its nested
        // definitions.
        let mut types = Namer::default();
        for &member in self.spec.contents(interface) {
            if let Some(names) = self.names.get(member.index()).and_then(Option::as_ref) {
                types.insert(names.base.clone());
                types.insert(snake(&names.base));
            }
        }
        let members: Vec<DefId> = self.spec.contents(interface).to_vec();
        for member in members {
            let def = &self.spec[member];
            let names = match &def.kind {
                DefKind::Operation(op) => {
                    let method = methods.claim(&snake(&def.name));
                    let error = (!op.raises.is_empty())
                        .then(|| types.claim(&format!("{}Error", camel(&def.name))));
                    let mut params = Namer::with_reserved(RESERVED_PARAMS);
                    OpNames {
                        method,
                        setter: None,
                        error,
                        set_error: None,
                        params: op
                            .params
                            .iter()
                            .map(|p| params.claim(&snake(&p.name)))
                            .collect(),
                        ami: Vec::new(),
                    }
                }
                DefKind::Attribute(attribute) => {
                    let method = methods.claim(&snake(&def.name));
                    let setter = (!attribute.readonly)
                        .then(|| methods.claim(&format!("set_{}", snake(&def.name))));
                    let error = (!attribute.get_raises.is_empty())
                        .then(|| types.claim(&format!("{}Error", camel(&def.name))));
                    let set_error = (!attribute.readonly && !attribute.set_raises.is_empty())
                        .then(|| types.claim(&format!("Set{}Error", camel(&def.name))));
                    OpNames {
                        method,
                        setter,
                        error,
                        set_error,
                        params: vec!["value".into()],
                        ami: Vec::new(),
                    }
                }
                _ => continue,
            };
            self.op_names.insert(member, names);
        }
        if self.options.ami && self.is_remote_interface(interface) {
            self.assign_ami_method_names(interface, &mut methods);
        }
    }

    /// Names the stub's AMI methods for the calls `interface` declares,
    /// after every synchronous method has its name (so that turning AMI on
    /// or off never renames a synchronous method).
    fn assign_ami_method_names(&mut self, interface: DefId, methods: &mut Namer) {
        let spec = self.spec;
        for &member in spec.contents(interface) {
            let def = &spec[member];
            let stems: Vec<String> = match &def.kind {
                DefKind::Operation(op) if !op.oneway => vec![snake(&def.name)],
                DefKind::Attribute(attribute) => {
                    let mut calls = vec![format!("get_{}", snake(&def.name))];
                    if !attribute.readonly {
                        calls.push(format!("set_{}", snake(&def.name)));
                    }
                    calls
                }
                _ => continue,
            };
            let Some(names) = self.op_names.get_mut(&member) else {
                continue;
            };
            // One stem for the three forms: the operation, `get_<a>`,
            // `set_<a>` (the AMI mapping's names).
            names.ami = stems
                .iter()
                .map(|stem| AmiNames {
                    sendc: methods.claim(&format!("sendc_{stem}")),
                    sendp: methods.claim(&format!("sendp_{stem}")),
                    future: methods.claim(&format!("{stem}_async")),
                })
                .collect();
        }
    }

    // ---- output -----------------------------------------------------------

    /// A top-level module holding `body` (formatted items): what
    /// [`module`](Self::module) makes, assembled from separately
    /// formatted parts.
    fn module_text(&self, id: DefId, body: &str) -> String {
        let name = ident(&self.names(id).base);
        let doc = self.doc(id);
        let allow = idl_lints();
        let shell = format(quote! { #doc #allow pub mod #name {} });
        if body.is_empty() {
            return shell;
        }
        let head = shell.trim_end().trim_end_matches("{}");
        format!("{head}{{\n{}}}\n", indent(body))
    }

    /// The items of the definitions `contents`, which live in `module`.
    fn items(&mut self, module: &[String], contents: &[DefId]) -> TokenStream {
        let mut out = TokenStream::new();
        for &id in contents {
            if !self.needed.contains(&id) {
                continue;
            }
            if let Some(reason) = self.left_out.get(&id) {
                let reason = reason.clone();
                self.warn(id, reason);
                continue;
            }
            let def = &self.spec[id];
            let tokens = match &def.kind {
                DefKind::Module(_) => self.module(id),
                DefKind::Interface(i) if i.kind == InterfaceKind::Local => {
                    self.local_interface(module, id)
                }
                DefKind::Interface(_) => self.interface(module, id),
                DefKind::Struct(_) => self.struct_item(module, id),
                DefKind::Exception(_) => self.exception_item(module, id),
                DefKind::Enum(_) => self.enum_item(id),
                DefKind::Union(_) => self.union_item(module, id),
                DefKind::Typedef(_) => self.typedef_item(module, id),
                DefKind::Const(_) => self.const_item(module, id),
                DefKind::Native => self.native_item(id),
                DefKind::ValueType(_) | DefKind::ValueBox(_) => TokenStream::new(),
                DefKind::Operation(_) | DefKind::Attribute(_) => TokenStream::new(),
            };
            out.extend(tokens);
        }
        out
    }

    fn module(&mut self, id: DefId) -> TokenStream {
        let names = self.names(id).clone();
        let name = ident(&names.base);
        let contents: Vec<DefId> = self.spec.contents(id).to_vec();
        let body = self.items(&names.inner, &contents);
        let doc = self.doc(id);
        quote! {
            #doc
            pub mod #name {
                #body
            }
        }
    }

    /// A `pub mod` holding what a struct, union or exception declares
    /// inline, or nothing when it declares nothing.
    fn nested_module(&mut self, id: DefId, extra: TokenStream) -> TokenStream {
        let contents: Vec<DefId> = self.spec.contents(id).to_vec();
        let inner = self.names(id).inner.clone();
        let body = self.items(&inner, &contents);
        if body.is_empty() && extra.is_empty() {
            return TokenStream::new();
        }
        let name = ident(inner.last().map(String::as_str).unwrap_or("nested"));
        let what = format!(
            " Definitions nested in `{}`.",
            self.spec[id].absolute_name()
        );
        quote! {
            #[doc = #what]
            pub mod #name {
                #body
                #extra
            }
        }
    }

    /// Doc attributes: the IDL comment, then where the definition is.
    fn doc(&self, id: DefId) -> TokenStream {
        let def = &self.spec[id];
        let mut lines: Vec<String> = Vec::new();
        if let Some(doc) = &def.doc {
            lines.extend(comment_doc_lines(doc));
            lines.push(String::new());
        }
        lines.push(format!(
            " IDL: `{} {}` ({}).",
            def.kind.describe(),
            def.absolute_name(),
            self.location(def.loc)
        ));
        quote! { #(#[doc = #lines])* }
    }

    /// `file.idl:line`, with the file's name only (the output must not
    /// depend on where the IDL was).
    fn location(&self, loc: Loc) -> String {
        let file = self
            .spec
            .file(loc.file)
            .and_then(|f| f.path.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        format!("{file}:{}", loc.line)
    }

    /// A warning for each `Options::amh` path that selects nothing (about
    /// the first main file, the one the output is named after).
    fn amh_path_warnings(&self) -> Vec<Diagnostic> {
        let file = self
            .spec
            .roots
            .first()
            .and_then(|&root| self.spec.file(self.spec[root].loc.file))
            .map(|f| f.path.clone())
            .unwrap_or_default();
        self.unused_amh_paths()
            .into_iter()
            .map(|path| Diagnostic {
                severity: Severity::Warning,
                message: format!(
                    "the AMH path `{path}` selects no interface, operation or attribute \
                     (a oneway operation or a local interface has no AMH form)"
                ),
                file: file.clone(),
                line: 0,
                col: 0,
                source_line: None,
                notes: Vec::new(),
            })
            .collect()
    }

    /// Reports that `id` is left out, once, if it is from a main file.
    fn warn(&mut self, id: DefId, reason: String) {
        let def = &self.spec[id];
        if !def.from_main_file {
            return;
        }
        let file = self.spec.file(def.loc.file);
        self.warnings.push(Diagnostic {
            severity: Severity::Warning,
            message: format!(
                "{} is left out of the Rust code: {reason}",
                def.absolute_name()
            ),
            file: file.map(|f| f.path.clone()).unwrap_or_default(),
            line: def.loc.line,
            col: def.loc.col,
            source_line: file
                .and_then(|f| f.line_text(def.loc.line))
                .map(str::to_owned),
            notes: Vec::new(),
        });
    }
}

/// `super::super::a::b::` to go from module `from` to module `to`.
fn relative_module(from: &[String], to: &[String]) -> TokenStream {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    let ups = from.len() - common;
    let mut out = TokenStream::new();
    for _ in 0..ups {
        out.extend(quote!(super::));
    }
    for part in &to[common..] {
        let part = ident(part);
        out.extend(quote!(#part::));
    }
    out
}

/// A skeleton's dispatch: a `match` on the operation name's length and
/// the name, each of `operations` (wire name, the expression that serves
/// it) an arm, anything else BAD_OPERATION (everything, for an interface
/// without operations). The compiler switches on the length first and
/// compares only the names of that length, inline: no call to `memcmp`,
/// as a search of a sorted table of names makes.
fn operation_dispatch(operations: &[(&str, TokenStream)]) -> TokenStream {
    let unknown = quote! {
        ::core::result::Result::Err(::armillary::SystemException::bad_operation(
            ::armillary::minor::UNKNOWN_OPERATION,
            ::armillary::CompletionStatus::No,
        ))
    };
    if operations.is_empty() {
        return quote! {
            let _ = (&self.servant, request);
            #unknown
        };
    }
    let arms = operations.iter().map(|(wire, serve)| {
        let len = proc_macro2::Literal::usize_unsuffixed(wire.len());
        quote!((#len, #wire) => #serve,)
    });
    quote! {
        let operation = request.operation();
        match (operation.len(), operation) {
            #(#arms)*
            _ => #unknown,
        }
    }
}

/// An IDL comment as the lines of a doc attribute: a `text` block, shown
/// as written. Read as Markdown, an IDL comment's indented lines would be
/// a doctest (compiled as Rust by `cargo test`), a name in brackets a link
/// that leads nowhere, and `<name>` an HTML tag. The fence is longer than
/// any run of backticks in the comment.
pub(crate) fn comment_doc_lines(comment: &str) -> Vec<String> {
    let longest = comment.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let mut lines = vec![format!(" {fence}text")];
    lines.extend(comment.lines().map(|line| format!(" {}", line.trim_end())));
    lines.push(format!(" {fence}"));
    lines
}

#[cfg(test)]
mod tests {
    use super::comment_doc_lines;

    #[test]
    fn an_idl_comment_is_a_text_block_fenced_past_its_backticks() {
        assert_eq!(
            comment_doc_lines("Adds [a] to <b>.\n\n    indented  "),
            [
                " ```text",
                " Adds [a] to <b>.",
                " ",
                "     indented",
                " ```"
            ]
        );
        let lines = comment_doc_lines("a ```` fence");
        assert_eq!(lines.first().map(String::as_str), Some(" `````text"));
        assert_eq!(lines.last().map(String::as_str), Some(" `````"));
    }
}
