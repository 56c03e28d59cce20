//! The IDL preprocessor: `#include`, macros, conditional groups and
//! pragmas, over tokens.
//!
//! Unlike a C preprocessor this one does not produce text: it produces the
//! token stream of one translation unit, where every token keeps the
//! position it has in the file it was written in (tokens that come from a
//! macro take the position of the macro's use). That is what lets every
//! later diagnostic point at the original file, line and column.
//!
//! Pragmas the front end understands (`prefix`, `ID`, `version`) become
//! [`TokenKind::Pragma`] tokens at their place in the stream, and entering
//! and leaving an included file become [`TokenKind::FileEnter`] and
//! [`TokenKind::FileExit`], because repository-id prefixes are scoped to
//! files. `#pragma once` and include guards stop repeated inclusion;
//! other pragmas are ignored.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::diagnostic::Diag;
use crate::lexer::{Keyword, Lexer, Pragma, PragmaName, Punct, Token, TokenKind};
use crate::source::{FileId, FileLoader, Loc, SourceMap};

/// How deep `#include` may nest before it is taken for runaway recursion.
const MAX_INCLUDE_DEPTH: usize = 200;
/// How deep macro expansion may nest.
const MAX_EXPANSION_DEPTH: usize = 256;
/// How many tokens macro bodies may contribute to one run of text between
/// directives (macros that double at each level could otherwise exhaust
/// memory).
const MAX_EXPANDED_TOKENS: usize = 1 << 20;
/// How deeply an `#if` expression may nest.
const MAX_CONDITION_DEPTH: usize = 256;

/// A `#define`d macro.
#[derive(Debug, Clone)]
struct Macro {
    /// `None` for an object-like macro; the parameter names otherwise.
    params: Option<Vec<String>>,
    body: Vec<Token>,
}

/// One open `#if` group.
#[derive(Debug)]
struct Conditional {
    /// Where the `#if` is, for "unterminated" diagnostics.
    loc: Loc,
    /// Tokens of the current branch are kept.
    active: bool,
    /// Some branch of this group has been (or is being) kept.
    taken: bool,
    /// The enclosing group is active.
    parent_active: bool,
    /// `#else` has been seen.
    seen_else: bool,
}

/// What a file looks like with respect to an include guard.
#[derive(Debug, Default)]
struct GuardScan {
    /// `#ifndef X` then `#define X` opened the file.
    candidate: Option<String>,
    /// Directives and tokens seen so far (to recognise the opening).
    seen: usize,
    /// The guard group was closed; anything after it voids the guard.
    closed: bool,
    /// The file turned out not to be wholly guarded.
    void: bool,
}

/// The output of preprocessing one main file.
#[derive(Debug)]
pub(crate) struct TranslationUnit {
    /// The tokens, ending with [`TokenKind::Eof`].
    pub(crate) tokens: Vec<Token>,
}

/// Preprocesses main files one at a time; file contents are shared through
/// the [`SourceMap`], macros are not (each main file starts afresh).
pub(crate) struct Preprocessor<'a> {
    loader: &'a dyn FileLoader,
    sources: &'a mut SourceMap,
    include_dirs: &'a [PathBuf],
    /// The command-line definitions, as `(name, body)`.
    predefined: Vec<(String, Macro)>,
    macros: HashMap<String, Macro>,
    once: HashSet<FileId>,
    guards: HashMap<FileId, String>,
    /// Guard macros of files whose opening `#ifndef X / #define X` has been
    /// seen (used while the file is still being read).
    guard_candidates: HashMap<FileId, String>,
    stack: Vec<FileId>,
    diags: &'a mut Vec<Diag>,
    out: Vec<Token>,
    /// Tokens macro bodies have contributed to the current run of text.
    expanded: Cell<usize>,
}

impl<'a> Preprocessor<'a> {
    /// A preprocessor with `-I` directories and `-D` definitions
    /// (`(name, None)` defines `name` as `1`).
    pub(crate) fn new(
        loader: &'a dyn FileLoader,
        sources: &'a mut SourceMap,
        include_dirs: &'a [PathBuf],
        defines: &[(String, Option<String>)],
        diags: &'a mut Vec<Diag>,
    ) -> Self {
        let command_line = sources.add(
            PathBuf::from("<command line>"),
            PathBuf::from("\0<command line>"),
            String::new(),
        );
        let loc = Loc::file_start(command_line);
        let mut predefined = vec![(
            "__ARMILLARY_IDL__".to_owned(),
            Macro {
                params: None,
                body: vec![Token::new(TokenKind::Int(1), loc)],
            },
        )];
        for (name, value) in defines {
            let body = match value {
                Some(value) => Lexer::directive_tokens(value, loc),
                None => vec![Token::new(TokenKind::Int(1), loc)],
            };
            predefined.push((name.clone(), Macro { params: None, body }));
        }
        Preprocessor {
            loader,
            sources,
            include_dirs,
            predefined,
            macros: HashMap::new(),
            once: HashSet::new(),
            guards: HashMap::new(),
            guard_candidates: HashMap::new(),
            stack: Vec::new(),
            diags,
            out: Vec::new(),
            expanded: Cell::new(0),
        }
    }

    /// Reads the main file at `path` and everything it includes.
    /// Returns `None` when the main file cannot be read.
    pub(crate) fn run(&mut self, path: &Path) -> Option<TranslationUnit> {
        self.macros = self.predefined.iter().cloned().collect();
        self.once.clear();
        self.guards.clear();
        self.guard_candidates.clear();
        self.out.clear();
        let Some(identity) = self.loader.identity(path) else {
            let file = self
                .sources
                .add(path.to_owned(), path.to_owned(), String::new());
            self.diags.push(Diag::error(
                Loc {
                    file,
                    line: 0,
                    col: 0,
                },
                format!("cannot find IDL file '{}'", path.display()),
            ));
            return None;
        };
        let file = self.load(path, identity, None)?;
        self.sources.set_main(file);
        let end = self.process_file(file);
        self.out.push(Token::new(TokenKind::Eof, end));
        Some(TranslationUnit {
            tokens: std::mem::take(&mut self.out),
        })
    }

    /// Loads a file into the file table (or finds it there).
    fn load(&mut self, path: &Path, identity: PathBuf, included_at: Option<Loc>) -> Option<FileId> {
        if let Some(file) = self.sources.lookup(&identity) {
            return Some(file);
        }
        match self.loader.read(path) {
            Ok(text) => Some(self.sources.add(path.to_owned(), identity, text)),
            Err(err) => {
                let loc = match included_at {
                    Some(loc) => loc,
                    None => Loc {
                        file: self.sources.add(path.to_owned(), identity, String::new()),
                        line: 0,
                        col: 0,
                    },
                };
                self.diags.push(Diag::error(
                    loc,
                    format!("cannot read '{}': {err}", path.display()),
                ));
                None
            }
        }
    }

    /// Preprocesses one file into the output; returns where it ends.
    fn process_file(&mut self, file: FileId) -> Loc {
        self.stack.push(file);
        let text = self.sources.text(file).to_owned();
        let mut lexer = Lexer::new(&text, file);
        let mut conditionals: Vec<Conditional> = Vec::new();
        let mut pending: Vec<Token> = Vec::new();
        let mut guard = GuardScan::default();
        let end = loop {
            let token = lexer.next_token();
            let active = conditionals.last().is_none_or(|c| c.active);
            match token.kind {
                TokenKind::Eof => break token.loc,
                TokenKind::Directive(text, body_loc) => {
                    self.flush(&mut pending);
                    let body = Lexer::directive_tokens(&text, body_loc);
                    self.scan_guard(&mut guard, file, &body, &conditionals);
                    self.directive(&text, &body, token.loc, &mut conditionals);
                    if guard.candidate.is_some() && conditionals.is_empty() && guard.seen > 2 {
                        guard.closed = true;
                    }
                }
                TokenKind::Error(message) => {
                    if guard.closed || conditionals.is_empty() {
                        guard.void = true;
                    }
                    guard.seen += 1;
                    if active || message == "unterminated comment" {
                        self.diags.push(Diag::error(token.loc, message));
                    }
                }
                _ => {
                    if guard.closed || conditionals.is_empty() {
                        guard.void = true;
                    }
                    guard.seen += 1;
                    if active {
                        pending.push(token);
                    }
                }
            }
        };
        self.flush(&mut pending);
        for conditional in conditionals.iter().rev() {
            self.diags.push(Diag::error(
                conditional.loc,
                "unterminated conditional directive: '#if' without '#endif'",
            ));
        }
        if let Some(name) = guard.candidate {
            if guard.closed && !guard.void {
                self.guards.insert(file, name);
            }
        }
        self.guard_candidates.remove(&file);
        self.stack.pop();
        end
    }

    /// Follows the classic include guard: the file opens with
    /// `#ifndef X` and `#define X` and its group ends at the end of file.
    fn scan_guard(
        &mut self,
        guard: &mut GuardScan,
        file: FileId,
        body: &[Token],
        conditionals: &[Conditional],
    ) {
        let word = body.first().map(directive_word);
        let name = body.get(1).and_then(|t| match &t.kind {
            TokenKind::Ident(name) => Some(name.clone()),
            _ => None,
        });
        match guard.seen {
            0 if word.as_deref() == Some("ifndef") => guard.candidate = name,
            1 if guard.candidate.is_some() => {
                if word.as_deref() == Some("define") && name == guard.candidate {
                    if let Some(candidate) = &guard.candidate {
                        self.guard_candidates.insert(file, candidate.clone());
                    }
                } else {
                    guard.void = true;
                }
            }
            _ => {
                if guard.closed
                    || (conditionals.len() == 1
                        && matches!(word.as_deref(), Some("else") | Some("elif")))
                {
                    guard.void = true;
                }
            }
        }
        guard.seen += 1;
    }

    /// Macro-expands the tokens collected so far and appends them to the
    /// output.
    fn flush(&mut self, pending: &mut Vec<Token>) {
        if pending.is_empty() {
            return;
        }
        let input = std::mem::take(pending);
        self.expanded.set(0);
        let mut errors = Vec::new();
        let mut expanded = Vec::with_capacity(input.len());
        self.expand(input, &mut expanded, &mut Vec::new(), 0, &mut errors);
        self.out.extend(expanded);
        self.diags.extend(errors);
    }

    fn expand(
        &self,
        input: Vec<Token>,
        out: &mut Vec<Token>,
        expanding: &mut Vec<String>,
        depth: usize,
        errors: &mut Vec<Diag>,
    ) {
        let mut index = 0;
        while index < input.len() {
            let token = &input[index];
            if self.expanded.get() > MAX_EXPANDED_TOKENS {
                if errors.is_empty() {
                    errors.push(Diag::error(
                        token.loc,
                        "macro expansion produces too many tokens",
                    ));
                }
                return;
            }
            let macro_def = match &token.kind {
                TokenKind::Ident(name) if !expanding.contains(name) => {
                    self.macros.get(name).map(|m| (name, m))
                }
                _ => None,
            };
            let Some((name, macro_def)) = macro_def else {
                out.push(token.clone());
                index += 1;
                continue;
            };
            if depth >= MAX_EXPANSION_DEPTH {
                errors.push(Diag::error(
                    token.loc,
                    format!("macro '{name}' expands too deeply"),
                ));
                return;
            }
            self.expanded
                .set(self.expanded.get().saturating_add(macro_def.body.len()));
            let Some(params) = &macro_def.params else {
                let body = relocate(&macro_def.body, token);
                expanding.push(name.clone());
                self.expand(body, out, expanding, depth + 1, errors);
                expanding.pop();
                index += 1;
                continue;
            };
            let opens_call = input
                .get(index + 1)
                .is_some_and(|t| t.kind == TokenKind::Punct(Punct::LParen));
            if !opens_call {
                out.push(token.clone());
                index += 1;
                continue;
            }
            let Some((mut args, end)) = collect_arguments(&input, index + 2) else {
                errors.push(Diag::error(
                    token.loc,
                    format!("unterminated argument list invoking macro '{name}'"),
                ));
                return;
            };
            if params.is_empty() && args.len() == 1 && args[0].is_empty() {
                args.clear();
            }
            if args.len() != params.len() {
                errors.push(Diag::error(
                    token.loc,
                    format!(
                        "macro '{name}' takes {} argument(s) but {} were given",
                        params.len(),
                        args.len()
                    ),
                ));
                index = end;
                continue;
            }
            let mut substituted = Vec::new();
            for body_token in &macro_def.body {
                let param = match &body_token.kind {
                    TokenKind::Ident(ident) => params.iter().position(|p| p == ident),
                    _ => None,
                };
                match param {
                    Some(position) => {
                        let mut expanded_arg = Vec::new();
                        self.expand(
                            args[position].clone(),
                            &mut expanded_arg,
                            expanding,
                            depth + 1,
                            errors,
                        );
                        substituted.extend(relocate(&expanded_arg, token));
                    }
                    None => substituted.extend(relocate(std::slice::from_ref(body_token), token)),
                }
            }
            if let Some(first) = substituted.first_mut() {
                first.doc = token.doc.clone();
            }
            expanding.push(name.clone());
            self.expand(substituted, out, expanding, depth + 1, errors);
            expanding.pop();
            index = end;
        }
    }

    fn directive(
        &mut self,
        text: &str,
        body: &[Token],
        hash_loc: Loc,
        conditionals: &mut Vec<Conditional>,
    ) {
        let Some(first) = body.first() else {
            return; // The null directive.
        };
        let word = directive_word(first);
        let active = conditionals.last().is_none_or(|c| c.active);
        let args = &body[1..];
        match word.as_str() {
            "if" | "ifdef" | "ifndef" => {
                let value = if active {
                    match word.as_str() {
                        "if" => self.condition(args, first.loc),
                        _ => match args.first().map(|t| &t.kind) {
                            Some(TokenKind::Ident(name)) => {
                                let defined = self.macros.contains_key(name);
                                defined == (word == "ifdef")
                            }
                            _ => {
                                self.diags.push(Diag::error(
                                    first.loc,
                                    format!("'#{word}' expects a macro name"),
                                ));
                                false
                            }
                        },
                    }
                } else {
                    false
                };
                conditionals.push(Conditional {
                    loc: hash_loc,
                    active: active && value,
                    taken: !active || value,
                    parent_active: active,
                    seen_else: false,
                });
            }
            "elif" => {
                let Some(top) = conditionals.last() else {
                    self.diags
                        .push(Diag::error(hash_loc, "'#elif' without '#if'"));
                    return;
                };
                if top.seen_else {
                    self.diags
                        .push(Diag::error(hash_loc, "'#elif' after '#else'"));
                    return;
                }
                let (taken, parent_active) = (top.taken, top.parent_active);
                let value = !taken && parent_active && self.condition(args, first.loc);
                if let Some(top) = conditionals.last_mut() {
                    top.active = value;
                    top.taken |= value;
                }
            }
            "else" => match conditionals.last_mut() {
                None => self
                    .diags
                    .push(Diag::error(hash_loc, "'#else' without '#if'")),
                Some(top) if top.seen_else => self
                    .diags
                    .push(Diag::error(hash_loc, "'#else' after '#else'")),
                Some(top) => {
                    top.seen_else = true;
                    top.active = top.parent_active && !top.taken;
                    top.taken = true;
                }
            },
            "endif" => {
                if conditionals.pop().is_none() {
                    self.diags
                        .push(Diag::error(hash_loc, "'#endif' without '#if'"));
                }
            }
            _ if !active => {}
            "include" => self.include(text, args, hash_loc),
            "define" => self.define(args, first.loc),
            "undef" => match args.first().map(|t| &t.kind) {
                Some(TokenKind::Ident(name)) => {
                    self.macros.remove(name);
                }
                _ => self
                    .diags
                    .push(Diag::error(first.loc, "'#undef' expects a macro name")),
            },
            "pragma" => self.pragma(args, hash_loc, first.loc),
            "error" => self.diags.push(Diag::error(
                hash_loc,
                format!("#error {}", directive_rest(text, &word)),
            )),
            "warning" => self.diags.push(Diag::warning(
                hash_loc,
                format!("#warning {}", directive_rest(text, &word)),
            )),
            "line" => self.diags.push(Diag::warning(
                hash_loc,
                "'#line' is ignored: diagnostics keep pointing at the original lines",
            )),
            "ident" | "sccs" => {}
            _ => self.diags.push(Diag::error(
                first.loc,
                format!("unknown preprocessor directive '#{word}'"),
            )),
        }
    }

    fn include(&mut self, text: &str, args: &[Token], hash_loc: Loc) {
        let Some(name_token) = args.first() else {
            self.diags.push(Diag::error(
                hash_loc,
                "'#include' expects \"FILE\" or <FILE>",
            ));
            return;
        };
        let rest = directive_rest(text, "include");
        let (name, quoted) = if let TokenKind::Str(name) = &name_token.kind {
            (name.clone(), true)
        } else if let Some(inner) = rest.strip_prefix('<') {
            match inner.find('>') {
                Some(end) => (inner[..end].to_owned(), false),
                None => {
                    self.diags.push(Diag::error(
                        name_token.loc,
                        "missing '>' after the name in '#include <FILE>'",
                    ));
                    return;
                }
            }
        } else {
            self.diags.push(Diag::error(
                name_token.loc,
                "'#include' expects \"FILE\" or <FILE>",
            ));
            return;
        };
        let Some(&includer) = self.stack.last() else {
            return;
        };
        let Some((path, identity)) = self.find_include(&name, quoted, includer) else {
            let mut diag =
                Diag::error(name_token.loc, format!("cannot find include file '{name}'"));
            let mut searched: Vec<String> = Vec::new();
            if quoted {
                searched.push("the including file's directory".to_owned());
            }
            searched.extend(self.include_dirs.iter().map(|d| d.display().to_string()));
            diag = if searched.is_empty() {
                diag.note("no include directories were given (use -I DIR)")
            } else {
                diag.note(format!("searched: {}", searched.join(", ")))
            };
            self.diags.push(diag);
            return;
        };
        let existing = self.sources.lookup(&identity);
        if let Some(file) = existing {
            if self.once.contains(&file) {
                return;
            }
            if let Some(guard) = self.guards.get(&file) {
                if self.macros.contains_key(guard) {
                    return;
                }
            }
            if self.stack.contains(&file) {
                if let Some(guard) = self.guard_candidates.get(&file) {
                    if self.macros.contains_key(guard) {
                        return;
                    }
                }
                let chain: Vec<String> = self
                    .stack
                    .iter()
                    .skip_while(|&&f| f != file)
                    .chain(std::iter::once(&file))
                    .map(|&f| self.display_name(f))
                    .collect();
                self.diags.push(Diag::error(
                    name_token.loc,
                    format!("#include cycle: {}", chain.join(" -> ")),
                ));
                return;
            }
        }
        if self.stack.len() >= MAX_INCLUDE_DEPTH {
            self.diags
                .push(Diag::error(name_token.loc, "#include nested too deeply"));
            return;
        }
        let Some(file) = self.load(&path, identity, Some(name_token.loc)) else {
            return;
        };
        self.sources.set_included_at(file, hash_loc);
        self.out
            .push(Token::new(TokenKind::FileEnter(file), hash_loc));
        self.process_file(file);
        self.out.push(Token::new(TokenKind::FileExit, hash_loc));
    }

    fn display_name(&self, file: FileId) -> String {
        self.sources
            .get(file)
            .and_then(|f| f.path.file_name())
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    fn find_include(
        &self,
        name: &str,
        quoted: bool,
        includer: FileId,
    ) -> Option<(PathBuf, PathBuf)> {
        let mut candidates = Vec::new();
        if quoted {
            let dir = self
                .sources
                .get(includer)
                .and_then(|f| f.path.parent().map(Path::to_path_buf))
                .unwrap_or_default();
            candidates.push(dir.join(name));
        }
        candidates.extend(self.include_dirs.iter().map(|dir| dir.join(name)));
        candidates.into_iter().find_map(|path| {
            let identity = self.loader.identity(&path)?;
            Some((path, identity))
        })
    }

    fn define(&mut self, args: &[Token], loc: Loc) {
        let Some(name_token) = args.first() else {
            self.diags
                .push(Diag::error(loc, "'#define' expects a macro name"));
            return;
        };
        let TokenKind::Ident(name) = &name_token.kind else {
            self.diags.push(Diag::error(
                name_token.loc,
                "macro name must be an identifier",
            ));
            return;
        };
        if name == "defined" {
            self.diags.push(Diag::error(
                name_token.loc,
                "'defined' cannot be used as a macro name",
            ));
            return;
        }
        let mut rest = &args[1..];
        let mut params = None;
        let adjacent_paren = rest.first().is_some_and(|t| {
            t.kind == TokenKind::Punct(Punct::LParen)
                && t.loc.line == name_token.loc.line
                && t.loc.col as usize == name_token.loc.col as usize + name.chars().count()
        });
        if adjacent_paren {
            let mut names = Vec::new();
            let mut index = 1;
            let mut expect_name = true;
            loop {
                match rest.get(index).map(|t| &t.kind) {
                    Some(TokenKind::Punct(Punct::RParen)) if !expect_name || names.is_empty() => {
                        index += 1;
                        break;
                    }
                    Some(TokenKind::Ident(param)) if expect_name => {
                        names.push(param.clone());
                        expect_name = false;
                    }
                    Some(TokenKind::Punct(Punct::Comma)) if !expect_name => expect_name = true,
                    _ => {
                        let at = rest.get(index).map_or(name_token.loc, |t| t.loc);
                        self.diags.push(Diag::error(
                            at,
                            format!("malformed parameter list for macro '{name}'"),
                        ));
                        return;
                    }
                }
                index += 1;
            }
            rest = &rest[index..];
            params = Some(names);
        }
        if let Some(op) = rest.iter().find(|t| {
            matches!(
                t.kind,
                TokenKind::Punct(Punct::Hash) | TokenKind::Punct(Punct::HashHash)
            )
        }) {
            self.diags.push(Diag::error(
                op.loc,
                "the '#' and '##' macro operators are not supported",
            ));
            return;
        }
        let new_macro = Macro {
            params,
            body: rest.to_vec(),
        };
        if let Some(old) = self.macros.get(name) {
            let same = old.params == new_macro.params
                && old.body.len() == new_macro.body.len()
                && old
                    .body
                    .iter()
                    .zip(&new_macro.body)
                    .all(|(a, b)| a.kind == b.kind);
            if !same {
                self.diags.push(Diag::warning(
                    name_token.loc,
                    format!("macro '{name}' redefined"),
                ));
            }
        }
        self.macros.insert(name.clone(), new_macro);
    }

    fn pragma(&mut self, args: &[Token], hash_loc: Loc, word_loc: Loc) {
        let Some(kind) = args.first() else {
            return; // `#pragma` alone says nothing.
        };
        let word = directive_word(kind);
        match word.as_str() {
            "prefix" => match args.get(1).map(|t| &t.kind) {
                Some(TokenKind::Str(prefix)) if args.len() == 2 => {
                    self.out.push(Token::new(
                        TokenKind::Pragma(Pragma::Prefix(prefix.clone())),
                        hash_loc,
                    ));
                }
                _ => {
                    let at = args.get(1).map_or(kind.loc, |t| t.loc);
                    self.diags.push(Diag::error(
                        at,
                        "malformed '#pragma prefix': expected one string literal",
                    ));
                }
            },
            "ID" => {
                let Some((name, next)) = self.pragma_name(args, 1, &word, word_loc) else {
                    return;
                };
                match args.get(next).map(|t| &t.kind) {
                    Some(TokenKind::Str(id)) if args.len() == next + 1 => {
                        if !id.contains(':') {
                            self.diags.push(Diag::error(
                                args[next].loc,
                                format!("malformed repository id '{id}': expected 'FORMAT:...', such as 'IDL:name:1.0'"),
                            ));
                            return;
                        }
                        self.out.push(Token::new(
                            TokenKind::Pragma(Pragma::Id {
                                name,
                                id: id.clone(),
                            }),
                            hash_loc,
                        ));
                    }
                    _ => {
                        let at = args.get(next).map_or(kind.loc, |t| t.loc);
                        self.diags.push(Diag::error(
                            at,
                            "malformed '#pragma ID': expected a scoped name and a string literal",
                        ));
                    }
                }
            }
            "version" => {
                let Some((name, next)) = self.pragma_name(args, 1, &word, word_loc) else {
                    return;
                };
                let version = match args.get(next).map(|t| &t.kind) {
                    Some(TokenKind::Float(text)) if args.len() == next + 1 => parse_version(text),
                    _ => None,
                };
                match version {
                    Some((major, minor)) => self.out.push(Token::new(
                        TokenKind::Pragma(Pragma::Version { name, major, minor }),
                        hash_loc,
                    )),
                    None => {
                        let at = args.get(next).map_or(kind.loc, |t| t.loc);
                        self.diags.push(Diag::error(
                            at,
                            "malformed '#pragma version': expected a scoped name and MAJOR.MINOR",
                        ));
                    }
                }
            }
            "once" => {
                if let Some(&file) = self.stack.last() {
                    self.once.insert(file);
                }
            }
            _ => {}
        }
    }

    /// Parses the scoped name of `#pragma ID` / `#pragma version` starting
    /// at `args[start]`; returns it and the index after it.
    fn pragma_name(
        &mut self,
        args: &[Token],
        start: usize,
        word: &str,
        word_loc: Loc,
    ) -> Option<(PragmaName, usize)> {
        let mut index = start;
        let loc = args.get(index).map_or(word_loc, |t| t.loc);
        let mut absolute = false;
        if args.get(index).map(|t| &t.kind) == Some(&TokenKind::Punct(Punct::ColonColon)) {
            absolute = true;
            index += 1;
        }
        let mut parts = Vec::new();
        loop {
            match args.get(index).map(|t| &t.kind) {
                Some(TokenKind::Ident(name)) => parts.push((name.clone(), args[index].loc)),
                _ => {
                    let at = args.get(index).map_or(word_loc, |t| t.loc);
                    self.diags.push(Diag::error(
                        at,
                        format!("malformed '#pragma {word}': expected a scoped name"),
                    ));
                    return None;
                }
            }
            index += 1;
            if args.get(index).map(|t| &t.kind) == Some(&TokenKind::Punct(Punct::ColonColon)) {
                index += 1;
            } else {
                break;
            }
        }
        Some((
            PragmaName {
                absolute,
                parts,
                loc,
            },
            index,
        ))
    }

    /// Evaluates the expression of `#if` / `#elif`; an error counts as
    /// false.
    fn condition(&mut self, tokens: &[Token], loc: Loc) -> bool {
        let mut replaced = Vec::with_capacity(tokens.len());
        let mut index = 0;
        while index < tokens.len() {
            let token = &tokens[index];
            if token.kind == TokenKind::Ident("defined".into()) {
                let (name, next) = match tokens.get(index + 1).map(|t| &t.kind) {
                    Some(TokenKind::Ident(name)) => (Some(name.clone()), index + 2),
                    Some(TokenKind::Punct(Punct::LParen)) => {
                        match (
                            tokens.get(index + 2).map(|t| &t.kind),
                            tokens.get(index + 3).map(|t| &t.kind),
                        ) {
                            (
                                Some(TokenKind::Ident(name)),
                                Some(TokenKind::Punct(Punct::RParen)),
                            ) => (Some(name.clone()), index + 4),
                            _ => (None, index + 1),
                        }
                    }
                    _ => (None, index + 1),
                };
                let Some(name) = name else {
                    self.diags
                        .push(Diag::error(token.loc, "'defined' expects a macro name"));
                    return false;
                };
                let value = u64::from(self.macros.contains_key(&name));
                replaced.push(Token::new(TokenKind::Int(value), token.loc));
                index = next;
            } else {
                replaced.push(token.clone());
                index += 1;
            }
        }
        let mut expanded = Vec::new();
        let mut errors = Vec::new();
        self.expanded.set(0);
        self.expand(replaced, &mut expanded, &mut Vec::new(), 0, &mut errors);
        if !errors.is_empty() {
            self.diags.extend(errors);
            return false;
        }
        let mut parser = ConditionParser {
            tokens: &expanded,
            pos: 0,
            end_loc: loc,
            depth: 0,
        };
        let result = parser
            .expression()
            .and_then(|value| match parser.tokens.get(parser.pos) {
                Some(extra) => Err(Diag::error(
                    extra.loc,
                    format!("unexpected {} in '#if' expression", extra.kind),
                )),
                None => Ok(value),
            });
        match result {
            Ok(value) => value != 0,
            Err(diag) => {
                self.diags.push(diag);
                false
            }
        }
    }
}

/// The name of a directive or pragma: an identifier or keyword's text.
fn directive_word(token: &Token) -> String {
    match &token.kind {
        TokenKind::Ident(name) => name.clone(),
        TokenKind::Keyword(keyword) => keyword.as_str().to_owned(),
        other => other.to_string(),
    }
}

/// The text of a directive after its name, trimmed.
fn directive_rest<'t>(text: &'t str, word: &str) -> &'t str {
    let trimmed = text.trim_start();
    trimmed.strip_prefix(word).unwrap_or(trimmed).trim()
}

/// `1.2` as `(1, 2)`.
fn parse_version(text: &str) -> Option<(u16, u16)> {
    let (major, minor) = text.split_once('.')?;
    if major.is_empty() || minor.is_empty() {
        return None;
    }
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Copies macro body tokens to the place of the macro's use.
fn relocate(tokens: &[Token], site: &Token) -> Vec<Token> {
    let mut out: Vec<Token> = tokens
        .iter()
        .map(|t| Token {
            kind: t.kind.clone(),
            loc: site.loc,
            doc: None,
        })
        .collect();
    if let Some(first) = out.first_mut() {
        first.doc = site.doc.clone();
    }
    out
}

/// Splits the arguments of a function-like macro call that starts after
/// its `(` at `start`; returns them and the index after the `)`.
fn collect_arguments(tokens: &[Token], start: usize) -> Option<(Vec<Vec<Token>>, usize)> {
    let mut args = vec![Vec::new()];
    let mut depth = 0usize;
    let mut index = start;
    while let Some(token) = tokens.get(index) {
        match token.kind {
            TokenKind::Punct(Punct::LParen) => depth += 1,
            TokenKind::Punct(Punct::RParen) if depth == 0 => return Some((args, index + 1)),
            TokenKind::Punct(Punct::RParen) => depth -= 1,
            TokenKind::Punct(Punct::Comma) if depth == 0 => {
                args.push(Vec::new());
                index += 1;
                continue;
            }
            _ => {}
        }
        if let Some(last) = args.last_mut() {
            last.push(token.clone());
        }
        index += 1;
    }
    None
}

/// Evaluates `#if` expressions with C's operators and precedence, in
/// 64-bit signed arithmetic (wrapping).
struct ConditionParser<'t> {
    tokens: &'t [Token],
    pos: usize,
    end_loc: Loc,
    depth: usize,
}

impl ConditionParser<'_> {
    fn peek_punct(&self) -> Option<Punct> {
        match self.tokens.get(self.pos).map(|t| &t.kind) {
            Some(TokenKind::Punct(punct)) => Some(*punct),
            _ => None,
        }
    }

    fn here(&self) -> Loc {
        self.tokens.get(self.pos).map_or(self.end_loc, |t| t.loc)
    }

    fn expression(&mut self) -> Result<i64, Diag> {
        self.depth += 1;
        if self.depth > MAX_CONDITION_DEPTH {
            return Err(Diag::error(
                self.here(),
                "'#if' expression nests too deeply",
            ));
        }
        let result = self.conditional();
        self.depth -= 1;
        result
    }

    fn conditional(&mut self) -> Result<i64, Diag> {
        let condition = self.binary(0)?;
        if self.peek_punct() == Some(Punct::Question) {
            self.pos += 1;
            let then = self.expression()?;
            if self.peek_punct() != Some(Punct::Colon) {
                return Err(Diag::error(self.here(), "expected ':' in '#if' expression"));
            }
            self.pos += 1;
            let otherwise = self.expression()?;
            return Ok(if condition != 0 { then } else { otherwise });
        }
        Ok(condition)
    }

    fn binary(&mut self, min_precedence: u8) -> Result<i64, Diag> {
        let mut left = self.unary()?;
        loop {
            let Some(op) = self.peek_punct() else {
                return Ok(left);
            };
            let precedence = match op {
                Punct::OrOr => 1,
                Punct::AndAnd => 2,
                Punct::Pipe => 3,
                Punct::Caret => 4,
                Punct::Amp => 5,
                Punct::EqEq | Punct::NotEq => 6,
                Punct::Lt | Punct::Gt | Punct::Le | Punct::Ge => 7,
                Punct::Shl | Punct::Shr => 8,
                Punct::Plus | Punct::Minus => 9,
                Punct::Star | Punct::Slash | Punct::Percent => 10,
                _ => return Ok(left),
            };
            if precedence <= min_precedence {
                return Ok(left);
            }
            let op_loc = self.here();
            self.pos += 1;
            self.depth += 1;
            if self.depth > MAX_CONDITION_DEPTH {
                return Err(Diag::error(op_loc, "'#if' expression nests too deeply"));
            }
            let right = self.binary(precedence)?;
            self.depth -= 1;
            left = match op {
                Punct::OrOr => i64::from(left != 0 || right != 0),
                Punct::AndAnd => i64::from(left != 0 && right != 0),
                Punct::Pipe => left | right,
                Punct::Caret => left ^ right,
                Punct::Amp => left & right,
                Punct::EqEq => i64::from(left == right),
                Punct::NotEq => i64::from(left != right),
                Punct::Lt => i64::from(left < right),
                Punct::Gt => i64::from(left > right),
                Punct::Le => i64::from(left <= right),
                Punct::Ge => i64::from(left >= right),
                Punct::Shl => left.wrapping_shl((right & 63) as u32),
                Punct::Shr => left.wrapping_shr((right & 63) as u32),
                Punct::Plus => left.wrapping_add(right),
                Punct::Minus => left.wrapping_sub(right),
                Punct::Star => left.wrapping_mul(right),
                Punct::Slash | Punct::Percent => {
                    if right == 0 {
                        return Err(Diag::error(op_loc, "division by zero in '#if' expression"));
                    }
                    if op == Punct::Slash {
                        left.wrapping_div(right)
                    } else {
                        left.wrapping_rem(right)
                    }
                }
                _ => left,
            };
        }
    }

    fn unary(&mut self) -> Result<i64, Diag> {
        let Some(token) = self.tokens.get(self.pos) else {
            return Err(Diag::error(self.end_loc, "missing expression in '#if'"));
        };
        self.pos += 1;
        self.depth += 1;
        if self.depth > MAX_CONDITION_DEPTH {
            return Err(Diag::error(token.loc, "'#if' expression nests too deeply"));
        }
        let result = self.unary_operand(token);
        self.depth -= 1;
        result
    }

    fn unary_operand(&mut self, token: &Token) -> Result<i64, Diag> {
        match &token.kind {
            TokenKind::Int(value) => Ok(*value as i64),
            TokenKind::Char(value) => Ok(i64::from(*value)),
            // Identifiers that are not macros are 0, as in C.
            TokenKind::Ident(_) | TokenKind::Keyword(Keyword::False) => Ok(0),
            TokenKind::Keyword(Keyword::True) => Ok(1),
            TokenKind::Keyword(_) => Ok(0),
            TokenKind::Punct(Punct::Minus) => Ok(self.unary()?.wrapping_neg()),
            TokenKind::Punct(Punct::Plus) => self.unary(),
            TokenKind::Punct(Punct::Tilde) => Ok(!self.unary()?),
            TokenKind::Punct(Punct::Bang) => Ok(i64::from(self.unary()? == 0)),
            TokenKind::Punct(Punct::LParen) => {
                let value = self.expression()?;
                if self.peek_punct() != Some(Punct::RParen) {
                    return Err(Diag::error(self.here(), "expected ')' in '#if' expression"));
                }
                self.pos += 1;
                Ok(value)
            }
            other => Err(Diag::error(
                token.loc,
                format!("unexpected {other} in '#if' expression"),
            )),
        }
    }
}
