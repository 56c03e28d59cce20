//! `armillary naming`: runs a naming service (`serve`), and drives any
//! CosNaming service, Armillary's or omniORB's `omniNames`, from a shell
//! (`list`, `bind`, `rebind`, `resolve`, `unbind`, `mkctx`, `rmctx`).
//!
//! `serve` keeps its bindings in an SQLite store (`--store FILE`, by
//! default `$XDG_DATA_HOME/armillary/names.db`) or in memory (`--memory`),
//! listens on `--endpoint` (by default `iiop://127.0.0.1:2809`, the
//! naming service's customary port), prints its
//! `corbaloc:iiop:HOST:PORT/NameService` URL on standard output, and
//! serves until SIGINT or SIGTERM.
//!
//! The other commands find the service with `--ns URL` (`corbaloc:`,
//! `corbaname:` or `IOR:`), else through the ORB's `NameService` initial
//! reference, which `-ORBInitRef NameService=URL` (or
//! `-ORBDefaultInitRef`) given after `--` sets. Names are in the
//! stringified syntax (`a.kind/b`). A failure is one line on standard
//! error and exit code 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::{ObjectRef, Orb, OrbError, ReferenceError, SystemException, WaitForCompletion};
use armillary_naming::cos_naming::naming_context::{
    BindContextError, BindError, BindNewContextError, CannotProceed, DestroyError, NotFound,
    NotFoundReason, RebindContextError, RebindError, ResolveError, UnbindError,
};
use armillary_naming::cos_naming::{Binding, BindingType, Name, NamingContext};
use clap::{Args, Subcommand};

/// `armillary naming …`
#[derive(Debug, Args)]
pub struct NamingArgs {
    #[command(subcommand)]
    command: NamingCommand,
}

#[derive(Debug, Subcommand)]
enum NamingCommand {
    /// Run a naming service until SIGINT or SIGTERM; prints its
    /// corbaloc URL.
    Serve {
        /// Where to listen, as iiop://HOST:PORT (the references it hands
        /// out name it: restart on the same one to keep them valid).
        #[arg(long, default_value = "iiop://127.0.0.1:2809")]
        endpoint: String,
        /// The SQLite database of the bindings (default:
        /// $XDG_DATA_HOME/armillary/names.db).
        #[arg(long, value_name = "FILE")]
        store: Option<PathBuf>,
        /// Keep the bindings in memory only: they go with the process.
        #[arg(long, conflicts_with = "store")]
        memory: bool,
        /// -ORB… options, after `--`.
        #[arg(last = true, value_name = "ORB_OPTIONS")]
        orb_options: Vec<String>,
    },
    /// List the bindings of a context (the root by default); contexts
    /// end with `/`.
    List {
        /// The context to list.
        name: Option<String>,
        /// Also list the contexts inside, as paths.
        #[arg(short, long)]
        recursive: bool,
        #[command(flatten)]
        service: Service,
    },
    /// Bind a name to an object (a context with --context).
    Bind {
        /// The name, e.g. apps.ctx/quoter.
        name: String,
        /// IOR:…, corbaloc:… or corbaname:… URL, or @FILE holding one.
        reference: String,
        /// Bind it as a naming context (bind_context).
        #[arg(long)]
        context: bool,
        #[command(flatten)]
        service: Service,
    },
    /// Bind a name, replacing what it was bound to.
    Rebind {
        /// The name, e.g. apps.ctx/quoter.
        name: String,
        /// IOR:…, corbaloc:… or corbaname:… URL, or @FILE holding one.
        reference: String,
        /// Bind it as a naming context (rebind_context).
        #[arg(long)]
        context: bool,
        #[command(flatten)]
        service: Service,
    },
    /// Print the IOR a name is bound to.
    Resolve {
        /// The name.
        name: String,
        #[command(flatten)]
        service: Service,
    },
    /// Remove a binding.
    Unbind {
        /// The name.
        name: String,
        #[command(flatten)]
        service: Service,
    },
    /// Make a new context bound to a name; prints its IOR.
    Mkctx {
        /// The name.
        name: String,
        #[command(flatten)]
        service: Service,
    },
    /// Destroy an empty context and remove its binding.
    Rmctx {
        /// The name.
        name: String,
        #[command(flatten)]
        service: Service,
    },
}

/// Where the naming service is.
#[derive(Debug, Args)]
struct Service {
    /// The naming service's URL (corbaloc:, corbaname: or IOR:); default:
    /// the ORB's NameService initial reference.
    #[arg(long, value_name = "URL")]
    ns: Option<String>,
    /// -ORB… options, after `--` (e.g. -ORBInitRef NameService=URL).
    #[arg(last = true, value_name = "ORB_OPTIONS")]
    orb_options: Vec<String>,
}

/// Why a naming command failed: one line for the user each.
#[derive(Debug, thiserror::Error)]
enum NamingCmdError {
    #[error(transparent)]
    Orb(#[from] OrbError),
    #[error("{0:?} is not an ORB option (they start with -ORB)")]
    NotAnOrbOption(String),
    #[error("no naming service: give --ns URL, or -ORBInitRef NameService=URL after --")]
    NoNameService,
    #[error("bad naming service URL {url:?}: {source}")]
    BadServiceUrl { url: String, source: ReferenceError },
    #[error("bad object reference {text:?}: {source}")]
    BadReference {
        text: String,
        source: ReferenceError,
    },
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid name: {0:?}")]
    InvalidName(String),
    #[error("name not found: {name}{detail}")]
    NotFound { name: String, detail: String },
    #[error("name already bound: {0}")]
    AlreadyBound(String),
    #[error("cannot proceed with {name}: the context at {at} cannot be asked")]
    CannotProceed { name: String, at: String },
    #[error("context not empty: {0}")]
    NotEmpty(String),
    #[error("not a naming context: {0}")]
    NotAContext(String),
    #[error("cannot reach the naming service: {0}")]
    Unreachable(SystemException),
    #[error("the naming service failed: {0}")]
    System(SystemException),
    #[error("no store given and no data directory: give --store FILE or --memory")]
    NoStoreDirectory,
    #[error("cannot start the naming service: {}", with_sources(.0))]
    StartMemory(armillary_naming::StartError),
    #[error("cannot start the naming service: {}", with_sources(.0))]
    StartPersistent(armillary_naming::PersistentStartError),
    #[error("cannot watch for signals: {0}")]
    Signals(std::io::Error),
}

/// An error and its sources, `: `-separated.
fn with_sources(error: &dyn std::error::Error) -> String {
    let mut text = vec![error.to_string()];
    let mut source = error.source();
    while let Some(e) = source {
        text.push(e.to_string());
        source = e.source();
    }
    text.join(": ")
}

/// What a naming operation failed with, whatever the operation.
enum Failure {
    NotFound(NotFound),
    CannotProceed(CannotProceed),
    InvalidName,
    AlreadyBound,
    NotEmpty,
    System(SystemException),
}

/// `From` each operation's error enum for [`Failure`].
macro_rules! failure_from {
    ($($error:ident),*) => {$(
        impl From<$error> for Failure {
            #[allow(unreachable_patterns)]
            fn from(e: $error) -> Failure {
                match e {
                    $error::NotFound(e) => Failure::NotFound(e),
                    $error::CannotProceed(e) => Failure::CannotProceed(e),
                    $error::InvalidName(_) => Failure::InvalidName,
                    $error::System(e) => Failure::System(e),
                    _ => Failure::AlreadyBound,
                }
            }
        }
    )*};
}

failure_from!(
    BindError,
    BindContextError,
    BindNewContextError,
    RebindError,
    RebindContextError,
    ResolveError,
    UnbindError
);

impl From<DestroyError> for Failure {
    fn from(e: DestroyError) -> Failure {
        match e {
            DestroyError::NotEmpty(_) => Failure::NotEmpty,
            DestroyError::System(e) => Failure::System(e),
        }
    }
}

impl From<SystemException> for Failure {
    fn from(e: SystemException) -> Failure {
        Failure::System(e)
    }
}

/// The stringified form of `name` (or of its first `len` components).
fn show(name: &Name, len: usize) -> String {
    armillary_naming::name::to_string(&name[..len.min(name.len())])
        .unwrap_or_else(|_| format!("{name:?}"))
}

impl Failure {
    /// The user's message for this failure of an operation on `name`.
    fn explain(self, text: &str, name: &Name) -> NamingCmdError {
        match self {
            Failure::NotFound(NotFound { why, rest_of_name }) => {
                // The component the service stopped at, as a prefix of `name`.
                let at = name.len().saturating_sub(rest_of_name.len()) + 1;
                let prefix = show(name, at);
                let detail = match why {
                    NotFoundReason::MissingNode if at < name.len() => {
                        format!(" ({prefix} is not bound)")
                    }
                    NotFoundReason::MissingNode => String::new(),
                    NotFoundReason::NotContext => format!(" ({prefix} is not a context)"),
                    NotFoundReason::NotObject => format!(" ({prefix} is a context)"),
                };
                NamingCmdError::NotFound {
                    name: text.to_owned(),
                    detail,
                }
            }
            Failure::CannotProceed(CannotProceed { rest_of_name, .. }) => {
                let at = name.len().saturating_sub(rest_of_name.len());
                NamingCmdError::CannotProceed {
                    name: text.to_owned(),
                    at: show(name, at),
                }
            }
            Failure::InvalidName => NamingCmdError::InvalidName(text.to_owned()),
            Failure::AlreadyBound => NamingCmdError::AlreadyBound(text.to_owned()),
            Failure::NotEmpty => NamingCmdError::NotEmpty(text.to_owned()),
            Failure::System(e) => system(e),
        }
    }
}

/// A system exception from the service, or from getting to it.
fn system(e: SystemException) -> NamingCmdError {
    match e.kind() {
        SystemExceptionKind::Transient | SystemExceptionKind::CommFailure => {
            NamingCmdError::Unreachable(e)
        }
        _ => NamingCmdError::System(e),
    }
}

/// Writes `lines` to standard output and flushes it; stops quietly when
/// it is closed (`armillary naming list -r | head`).
fn print_lines(lines: impl IntoIterator<Item = String>) {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in lines {
        if writeln!(out, "{line}").is_err() {
            return;
        }
    }
    let _ = out.flush();
}

/// Runs `armillary naming`.
pub fn run(args: NamingArgs) -> ExitCode {
    match execute(args.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn execute(command: NamingCommand) -> Result<(), NamingCmdError> {
    match command {
        NamingCommand::Serve {
            endpoint,
            store,
            memory,
            orb_options,
        } => serve(&endpoint, store, memory, orb_options),
        NamingCommand::List {
            name,
            recursive,
            service,
        } => with_service(service, |_, root| list(root, name.as_deref(), recursive)),
        NamingCommand::Bind {
            name,
            reference,
            context,
            service,
        } => with_service(service, |orb, root| {
            bind(orb, root, &name, &reference, context, false)
        }),
        NamingCommand::Rebind {
            name,
            reference,
            context,
            service,
        } => with_service(service, |orb, root| {
            bind(orb, root, &name, &reference, context, true)
        }),
        NamingCommand::Resolve { name, service } => with_service(service, |orb, root| {
            let object = resolve(root, &name)?;
            print_lines([orb.object_to_string(&object)]);
            Ok(())
        }),
        NamingCommand::Unbind { name, service } => with_service(service, |_, root| {
            let parsed = parse_name(&name)?;
            root.unbind(&parsed)
                .map_err(|e| Failure::from(e).explain(&name, &parsed))
        }),
        NamingCommand::Mkctx { name, service } => with_service(service, |orb, root| {
            let parsed = parse_name(&name)?;
            let context = root
                .bind_new_context(&parsed)
                .map_err(|e| Failure::from(e).explain(&name, &parsed))?;
            print_lines([orb.object_to_string(context.as_object())]);
            Ok(())
        }),
        NamingCommand::Rmctx { name, service } => with_service(service, |_, root| {
            let parsed = parse_name(&name)?;
            let context = NamingContext::from_object(resolve(root, &name)?);
            // Destroyed first: a context that is not empty keeps its name.
            context
                .destroy()
                .map_err(|e| Failure::from(e).explain(&name, &parsed))?;
            root.unbind(&parsed)
                .map_err(|e| Failure::from(e).explain(&name, &parsed))
        }),
    }
}

/// An ORB configured with `options` (all of them `-ORB…`).
fn orb_with(mut config: OrbConfig, options: Vec<String>) -> Result<Orb, NamingCmdError> {
    let rest = config
        .apply_args(options)
        .map_err(|e| NamingCmdError::Orb(e.into()))?;
    if let Some(other) = rest.into_iter().next() {
        return Err(NamingCmdError::NotAnOrbOption(other));
    }
    Ok(Orb::with_config(config)?)
}

/// Runs `operation` on the root context of the service `service` names,
/// with a client ORB shut down afterwards.
fn with_service(
    service: Service,
    operation: impl FnOnce(&Orb, &NamingContext) -> Result<(), NamingCmdError>,
) -> Result<(), NamingCmdError> {
    let orb = orb_with(OrbConfig::default(), service.orb_options)?;
    let root = match &service.ns {
        Some(url) => {
            orb.try_string_to_object(url)
                .map_err(|source| NamingCmdError::BadServiceUrl {
                    url: url.clone(),
                    source,
                })?
        }
        None => orb
            .resolve_initial_references(armillary_naming::NAME_SERVICE)
            .map_err(|_| NamingCmdError::NoNameService)?,
    };
    let outcome = operation(&orb, &NamingContext::from_object(root));
    // Nothing is left to wait for: the calls have all returned.
    let _ = orb.shutdown(WaitForCompletion::Yes);
    outcome
}

fn parse_name(text: &str) -> Result<Name, NamingCmdError> {
    armillary_naming::name::to_name(text).map_err(|_| NamingCmdError::InvalidName(text.to_owned()))
}

fn resolve(root: &NamingContext, text: &str) -> Result<ObjectRef, NamingCmdError> {
    let name = parse_name(text)?;
    root.resolve(&name)
        .map_err(|e| Failure::from(e).explain(text, &name))
}

/// The reference `text` gives: a URL or IOR, or `@FILE` holding one.
fn reference(orb: &Orb, text: &str) -> Result<ObjectRef, NamingCmdError> {
    let content = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).map_err(|source| NamingCmdError::ReadFile {
            path: PathBuf::from(path),
            source,
        })?,
        None => text.to_owned(),
    };
    let content = content.trim();
    orb.try_string_to_object(content)
        .map_err(|source| NamingCmdError::BadReference {
            text: content.to_owned(),
            source,
        })
}

fn bind(
    orb: &Orb,
    root: &NamingContext,
    text: &str,
    object: &str,
    as_context: bool,
    rebind: bool,
) -> Result<(), NamingCmdError> {
    let name = parse_name(text)?;
    let object = reference(orb, object)?;
    let outcome: Result<(), Failure> = match (as_context, rebind) {
        (false, false) => root.bind(&name, &object).map_err(Failure::from),
        (false, true) => root.rebind(&name, &object).map_err(Failure::from),
        (true, false) => root
            .bind_context(&name, &NamingContext::from_object(object))
            .map_err(Failure::from),
        (true, true) => root
            .rebind_context(&name, &NamingContext::from_object(object))
            .map_err(Failure::from),
    };
    outcome.map_err(|e| e.explain(text, &name))
}

/// How deep `list -r` goes: contexts may be bound in cycles, which it
/// also cuts where it recognizes a context it has listed.
const MAX_DEPTH: usize = 32;

fn list(root: &NamingContext, name: Option<&str>, recursive: bool) -> Result<(), NamingCmdError> {
    let context = match name {
        Some(text) if !text.is_empty() => NamingContext::from_object(resolve(root, text)?),
        _ => root.clone(),
    };
    let mut seen = vec![context.as_object().clone()];
    let mut out = Vec::new();
    list_into(&context, "", recursive, 0, &mut seen, &mut out)?;
    print_lines(out);
    Ok(())
}

/// The bindings of `context`, sorted by name, fetched through its
/// binding iterator when there are many.
fn bindings(context: &NamingContext) -> Result<Vec<Binding>, SystemException> {
    const CHUNK: u32 = 256;
    let (mut all, iterator) = context.list(CHUNK)?;
    if !iterator.is_nil() {
        loop {
            let (more, chunk) = iterator.next_n(CHUNK)?;
            all.extend(chunk);
            if !more {
                break;
            }
        }
        // The service forgets it anyway in time.
        let _ = iterator.destroy();
    }
    all.sort_by_key(|b| armillary_naming::name::to_string(&b.binding_name).unwrap_or_default());
    Ok(all)
}

fn list_into(
    context: &NamingContext,
    prefix: &str,
    recursive: bool,
    depth: usize,
    seen: &mut Vec<ObjectRef>,
    out: &mut Vec<String>,
) -> Result<(), NamingCmdError> {
    let failed = |e: SystemException| {
        if prefix.is_empty() {
            system(e)
        } else {
            NamingCmdError::NotAContext(format!("{}: {e}", prefix.trim_end_matches('/')))
        }
    };
    for binding in bindings(context).map_err(failed)? {
        let name = armillary_naming::name::to_string(&binding.binding_name)
            .unwrap_or_else(|_| format!("{:?}", binding.binding_name));
        if binding.binding_type == BindingType::Nobject {
            out.push(format!("{prefix}{name}"));
            continue;
        }
        let path = format!("{prefix}{name}/");
        if !recursive {
            out.push(path);
            continue;
        }
        let inner = NamingContext::from_object(
            context
                .resolve(&binding.binding_name)
                .map_err(|e| Failure::from(e).explain(&path, &binding.binding_name))?,
        );
        if depth + 1 >= MAX_DEPTH || seen.iter().any(|s| s.is_equivalent(inner.as_object())) {
            out.push(format!("{path} (listed above)"));
            continue;
        }
        out.push(path.clone());
        seen.push(inner.as_object().clone());
        list_into(&inner, &path, recursive, depth + 1, seen, out)?;
    }
    Ok(())
}

/// The default store: `$XDG_DATA_HOME/armillary/names.db`, else
/// `$HOME/.local/share/armillary/names.db`.
fn default_store() -> Option<PathBuf> {
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| Path::new(&h).join(".local/share"))
        })?;
    Some(data.join("armillary").join("names.db"))
}

/// The URL other ORBs reach the service with.
fn corbaloc(orb: &Orb) -> Option<String> {
    let endpoint = orb.endpoints().into_iter().find(|e| !e.is_tls())?;
    let host = endpoint.host();
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    Some(format!(
        "corbaloc:iiop:{host}:{}/{}",
        endpoint.port(),
        armillary_naming::NAME_SERVICE
    ))
}

fn serve(
    endpoint: &str,
    store: Option<PathBuf>,
    memory: bool,
    orb_options: Vec<String>,
) -> Result<(), NamingCmdError> {
    // Requests are served in parallel (the store serializes the writes);
    // -ORBConcurrency in the options still wins.
    let config = OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(4));
    let mut options = vec!["-ORBListenEndpoints".to_owned(), endpoint.to_owned()];
    options.extend(orb_options);
    let orb = orb_with(config, options)?;
    let _root = if memory {
        eprintln!("naming service: bindings in memory");
        armillary_naming::start(&orb).map_err(NamingCmdError::StartMemory)?
    } else {
        let path = match store {
            Some(path) => path,
            None => default_store().ok_or(NamingCmdError::NoStoreDirectory)?,
        };
        eprintln!("naming service: bindings in {}", path.display());
        armillary_naming::start_persistent(&orb, &path).map_err(NamingCmdError::StartPersistent)?
    };
    let signals =
        armillary_quoter::ShutdownOnSignals::install(&orb).map_err(NamingCmdError::Signals)?;
    // Standard output may be a pipe a supervisor waits on: flushed.
    print_lines(corbaloc(&orb));
    let outcome = orb.run().map_err(NamingCmdError::System);
    drop(signals);
    outcome
}
