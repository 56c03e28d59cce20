//! The recursive-descent parser for CORBA 3 core IDL: tokens to the parse
//! tree in [`crate::ast`].
//!
//! The parser stops at the first syntax error of a translation unit (one
//! clear message beats a cascade). Pragma and file-boundary tokens may sit
//! anywhere in the stream; the parser moves them, in order, into the
//! definition list it is reading, so the resolver sees them between the
//! definitions they came between. Nesting is bounded, so no input can
//! overflow the stack.

use crate::ast::*;
use crate::diagnostic::Diag;
use crate::lexer::{Keyword, Punct, Token, TokenKind, CONTEXTUAL_KEYWORDS};
use crate::source::Loc;

/// How deeply definitions, types and expressions may nest.
const MAX_DEPTH: usize = 200;

type PResult<T> = Result<T, Diag>;

/// What kind of body a definition list is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    /// The top level or a module.
    Module,
    /// An interface.
    Interface,
    /// A valuetype (also allows state members and factories).
    Value,
}

/// How a body is named in messages.
fn body_name(body: Body) -> &'static str {
    match body {
        Body::Value => "a valuetype",
        _ => "an interface",
    }
}

/// Parses a translation unit. Returns the top-level items (or the first
/// syntax error) and the warnings found on the way.
pub(crate) fn parse(tokens: Vec<Token>) -> (PResult<Vec<Item>>, Vec<Diag>) {
    let mut parser = Parser {
        tokens,
        pos: 0,
        deferred: Vec::new(),
        depth: 0,
        no_shr: false,
        warnings: Vec::new(),
    };
    let result = parser.definitions(Body::Module, None);
    (result, parser.warnings)
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    /// Pragmas and file boundaries stepped over, waiting for the enclosing
    /// definition list.
    deferred: Vec<Item>,
    depth: usize,
    /// Inside `<...>` of a template type, where `>>` closes two brackets.
    no_shr: bool,
    warnings: Vec<Diag>,
}

impl Parser {
    // ---- token cursor ---------------------------------------------------

    fn skip_markers(&mut self) {
        while let Some(token) = self.tokens.get(self.pos) {
            let item = match &token.kind {
                TokenKind::Pragma(pragma) => Item::Pragma(pragma.clone(), token.loc),
                TokenKind::FileEnter(_) => Item::FileEnter,
                TokenKind::FileExit => Item::FileExit,
                _ => return,
            };
            self.deferred.push(item);
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> &Token {
        self.skip_markers();
        self.token_at(self.pos)
    }

    fn token_at(&self, index: usize) -> &Token {
        // The stream always ends with an end-of-file token that is never
        // consumed, so `last()` exists; an empty stream cannot reach here
        // because `parse` receives the preprocessor's output.
        match self.tokens.get(index).or_else(|| self.tokens.last()) {
            Some(token) => token,
            None => &EOF_TOKEN,
        }
    }

    /// The `n`th significant token after the current one.
    fn peek_nth(&mut self, n: usize) -> &Token {
        self.skip_markers();
        let mut index = self.pos;
        let mut remaining = n;
        while remaining > 0 && index < self.tokens.len() {
            index += 1;
            while matches!(
                self.tokens.get(index).map(|t| &t.kind),
                Some(TokenKind::Pragma(_) | TokenKind::FileEnter(_) | TokenKind::FileExit)
            ) {
                index += 1;
            }
            remaining -= 1;
        }
        self.token_at(index)
    }

    fn peek_kind(&mut self) -> TokenKind {
        self.peek().kind.clone()
    }

    fn loc(&mut self) -> Loc {
        self.peek().loc
    }

    fn bump(&mut self) -> Token {
        let token = self.peek().clone();
        if token.kind != TokenKind::Eof {
            self.pos += 1;
        }
        token
    }

    fn at_punct(&mut self, punct: Punct) -> bool {
        self.peek().kind == TokenKind::Punct(punct)
    }

    fn at_keyword(&mut self, keyword: Keyword) -> bool {
        self.peek().kind == TokenKind::Keyword(keyword)
    }

    fn at_word(&mut self, word: &str) -> bool {
        matches!(&self.peek().kind, TokenKind::Ident(name) if name == word)
    }

    fn eat_punct(&mut self, punct: Punct) -> bool {
        if self.at_punct(punct) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn eat_keyword(&mut self, keyword: Keyword) -> bool {
        if self.at_keyword(keyword) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn unexpected(&mut self, expected: &str) -> Diag {
        let token = self.peek().clone();
        match token.kind {
            TokenKind::Eof => {
                Diag::error(token.loc, format!("expected {expected}, found end of file"))
            }
            kind => Diag::error(token.loc, format!("expected {expected}, found {kind}")),
        }
    }

    fn expect_punct(&mut self, punct: Punct) -> PResult<Loc> {
        if self.at_punct(punct) {
            Ok(self.bump().loc)
        } else {
            Err(self.unexpected(&format!("'{}'", punct.as_str())))
        }
    }

    fn expect_keyword(&mut self, keyword: Keyword) -> PResult<Loc> {
        if self.at_keyword(keyword) {
            Ok(self.bump().loc)
        } else {
            Err(self.unexpected(&format!("'{}'", keyword.as_str())))
        }
    }

    /// `>`, splitting a `>>` that closes two template brackets.
    fn expect_gt(&mut self) -> PResult<()> {
        self.skip_markers();
        match self.tokens.get(self.pos).map(|t| t.kind.clone()) {
            Some(TokenKind::Punct(Punct::Gt)) => {
                self.pos += 1;
                Ok(())
            }
            Some(TokenKind::Punct(Punct::Shr)) => {
                if let Some(token) = self.tokens.get_mut(self.pos) {
                    token.kind = TokenKind::Punct(Punct::Gt);
                    token.loc.col += 1;
                }
                Ok(())
            }
            _ => Err(self.unexpected("'>'")),
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let loc = self.loc();
            return Err(Diag::error(
                loc,
                "definitions or expressions nest too deeply",
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---- names ----------------------------------------------------------

    /// An identifier being used (part of a scoped name).
    fn ident(&mut self) -> PResult<Ident> {
        let token = self.peek().clone();
        match &token.kind {
            TokenKind::Ident(raw) => {
                self.bump();
                let name = raw.strip_prefix('_').unwrap_or(raw).to_owned();
                if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
                    return Err(Diag::error(
                        token.loc,
                        format!("invalid identifier '{raw}': identifiers start with a letter (one leading '_' escapes a keyword)"),
                    ));
                }
                Ok(Ident {
                    name,
                    loc: token.loc,
                })
            }
            TokenKind::Keyword(keyword) => Err(Diag::error(
                token.loc,
                format!(
                    "expected an identifier, found keyword '{}'",
                    keyword.as_str()
                ),
            )),
            _ => Err(self.unexpected("an identifier")),
        }
    }

    /// An identifier being declared: an error when it collides with a
    /// keyword (ignoring case), a warning when it is a CORBA 3 keyword.
    /// (Uses are not checked: `_Factory` declares `Factory`, which may
    /// then be used as written.)
    fn declared_ident(&mut self) -> PResult<Ident> {
        let escaped = matches!(&self.peek().kind, TokenKind::Ident(raw) if raw.starts_with('_'));
        let ident = self.ident()?;
        if !escaped {
            if let Some(keyword) = Keyword::ignoring_case(&ident.name) {
                return Err(Diag::error(
                    ident.loc,
                    format!(
                        "identifier '{}' collides with keyword '{}' (escape it as '_{}')",
                        ident.name,
                        keyword.as_str(),
                        ident.name
                    ),
                ));
            }
            let lower = ident.name.to_ascii_lowercase();
            if let Some(keyword) = CONTEXTUAL_KEYWORDS.iter().find(|k| **k == lower) {
                self.warnings.push(Diag::warning(
                    ident.loc,
                    format!(
                        "identifier '{}' clashes with CORBA 3 keyword '{keyword}'",
                        ident.name
                    ),
                ));
            }
        }
        Ok(ident)
    }

    fn scoped_name(&mut self) -> PResult<ScopedName> {
        let loc = self.loc();
        let absolute = self.eat_punct(Punct::ColonColon);
        let mut parts = vec![self.ident()?];
        while self.eat_punct(Punct::ColonColon) {
            parts.push(self.ident()?);
        }
        Ok(ScopedName {
            absolute,
            parts,
            loc,
        })
    }

    fn scoped_name_list(&mut self) -> PResult<Vec<ScopedName>> {
        let mut names = vec![self.scoped_name()?];
        while self.eat_punct(Punct::Comma) {
            names.push(self.scoped_name()?);
        }
        Ok(names)
    }

    fn string_literal(&mut self, what: &str) -> PResult<String> {
        match self.peek_kind() {
            TokenKind::Str(text) => {
                self.bump();
                Ok(text)
            }
            _ => Err(self.unexpected(what)),
        }
    }

    // ---- definitions ----------------------------------------------------

    /// Reads definitions up to `}` (when `close` is given, the location of
    /// the `{` for messages) or to the end of file.
    fn definitions(&mut self, body: Body, open: Option<Loc>) -> PResult<Vec<Item>> {
        let mut items = Vec::new();
        loop {
            self.skip_markers();
            items.append(&mut self.deferred);
            let token = self.peek().clone();
            match token.kind {
                TokenKind::Punct(Punct::RBrace) if open.is_some() => return Ok(items),
                TokenKind::Eof if open.is_none() => return Ok(items),
                TokenKind::Eof => {
                    let mut diag = Diag::error(token.loc, "expected '}', found end of file");
                    if let Some(open) = open {
                        diag = diag.note_at(open, "the unclosed '{' is here");
                    }
                    return Err(diag);
                }
                _ => {}
            }
            self.enter()?;
            let item = self.definition(body)?;
            items.push(item);
            self.leave();
        }
    }

    /// One definition. This only dispatches: each kind of definition is
    /// read by its own function, which keeps this frame small (it is on
    /// the stack once per level of nesting).
    fn definition(&mut self, body: Body) -> PResult<Item> {
        let token = self.peek().clone();
        let doc = token.doc.clone();
        let in_interface = body != Body::Module;
        match &token.kind {
            TokenKind::Keyword(Keyword::Module) => {
                if in_interface {
                    return Err(Diag::error(
                        token.loc,
                        format!("a module cannot be declared inside {}", body_name(body)),
                    ));
                }
                self.module(doc)
            }
            TokenKind::Keyword(
                Keyword::Interface
                | Keyword::Local
                | Keyword::Abstract
                | Keyword::Valuetype
                | Keyword::Custom,
            ) => {
                if in_interface {
                    return Err(Diag::error(
                        token.loc,
                        format!(
                            "interfaces and valuetypes cannot be declared inside {}",
                            body_name(body)
                        ),
                    ));
                }
                let is_value = match token.kind {
                    TokenKind::Keyword(Keyword::Valuetype | Keyword::Custom) => true,
                    TokenKind::Keyword(Keyword::Abstract) => {
                        self.peek_nth(1).kind == TokenKind::Keyword(Keyword::Valuetype)
                    }
                    _ => false,
                };
                if is_value {
                    self.value(doc)
                } else {
                    self.interface(doc)
                }
            }
            TokenKind::Keyword(Keyword::Typedef) => self.typedef(doc),
            TokenKind::Keyword(Keyword::Struct | Keyword::Union) => self.struct_or_union(doc),
            TokenKind::Keyword(Keyword::Enum) => {
                let def = self.enum_type()?;
                self.expect_punct(Punct::Semi)?;
                Ok(Item::Enum(def))
            }
            TokenKind::Keyword(Keyword::Native) => {
                self.bump();
                let name = self.declared_ident()?;
                self.expect_punct(Punct::Semi)?;
                Ok(Item::Native(Native { name, doc }))
            }
            TokenKind::Keyword(Keyword::Const) => self.constant(doc),
            TokenKind::Keyword(Keyword::Exception) => self.exception(doc),
            TokenKind::Ident(word)
                if (word == "typeid" || word == "typeprefix") && self.next_starts_name() =>
            {
                self.type_id_or_prefix(word == "typeid", token.loc)
            }
            TokenKind::Ident(word)
                if word == "import"
                    && (self.next_starts_name()
                        || matches!(self.peek_nth(1).kind, TokenKind::Str(_))) =>
            {
                if in_interface {
                    return Err(Diag::error(
                        token.loc,
                        "'import' is only allowed at the top level",
                    ));
                }
                self.import(token.loc)
            }
            TokenKind::Ident(word)
                if matches!(
                    word.as_str(),
                    "component" | "home" | "eventtype" | "porttype" | "connector"
                ) && matches!(self.peek_nth(1).kind, TokenKind::Ident(_)) =>
            {
                Err(Diag::error(
                    token.loc,
                    format!("'{word}' declarations (CORBA Component Model) are not supported"),
                ))
            }
            TokenKind::Keyword(Keyword::Readonly | Keyword::Attribute) if in_interface => {
                self.attribute(doc)
            }
            TokenKind::Keyword(Keyword::Public | Keyword::Private) if body == Body::Value => {
                self.state_member(doc)
            }
            TokenKind::Keyword(Keyword::Factory) if body == Body::Value => self.factory(doc),
            _ if in_interface
                && (self.starts_type()
                    || self.at_keyword(Keyword::Oneway)
                    || self.at_keyword(Keyword::Void)) =>
            {
                self.operation(doc)
            }
            _ => {
                let expected = if in_interface {
                    "a declaration (type, constant, exception, attribute or operation)"
                } else {
                    "a definition"
                };
                Err(self.unexpected(expected))
            }
        }
    }

    fn module(&mut self, doc: Option<String>) -> PResult<Item> {
        self.bump();
        let name = self.declared_ident()?;
        let open = self.expect_punct(Punct::LBrace)?;
        let items = self.definitions(Body::Module, Some(open))?;
        self.expect_punct(Punct::RBrace)?;
        self.expect_punct(Punct::Semi)?;
        let empty = items
            .iter()
            .all(|item| matches!(item, Item::Pragma(..) | Item::FileEnter | Item::FileExit));
        if empty {
            self.warnings.push(Diag::warning(
                name.loc,
                format!(
                    "module '{}' is empty (IDL requires at least one definition in a module)",
                    name.name
                ),
            ));
        }
        Ok(Item::Module(Module { name, doc, items }))
    }

    fn typedef(&mut self, doc: Option<String>) -> PResult<Item> {
        self.bump();
        let ty = self.type_spec(true)?;
        let declarators = self.declarators()?;
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Typedef(Typedef {
            doc,
            ty,
            declarators,
        }))
    }

    fn struct_or_union(&mut self, doc: Option<String>) -> PResult<Item> {
        let is_struct = self.at_keyword(Keyword::Struct);
        let item = if self.peek_nth(2).kind == TokenKind::Punct(Punct::Semi) {
            self.bump();
            let name = self.declared_ident()?;
            let forward = Forward { name, doc };
            if is_struct {
                Item::StructForward(forward)
            } else {
                Item::UnionForward(forward)
            }
        } else if is_struct {
            Item::Struct(self.struct_type()?)
        } else {
            Item::Union(self.union_type()?)
        };
        self.expect_punct(Punct::Semi)?;
        Ok(item)
    }

    fn constant(&mut self, doc: Option<String>) -> PResult<Item> {
        self.bump();
        let ty = self.simple_type_spec()?;
        let name = self.declared_ident()?;
        self.expect_punct(Punct::Eq)?;
        let value = self.const_expr()?;
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Const(Const {
            name,
            doc,
            ty,
            value,
        }))
    }

    fn exception(&mut self, doc: Option<String>) -> PResult<Item> {
        self.bump();
        let name = self.declared_ident()?;
        let open = self.expect_punct(Punct::LBrace)?;
        let members = self.members(open, true)?;
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Exception(Exception { name, doc, members }))
    }

    fn type_id_or_prefix(&mut self, is_id: bool, loc: Loc) -> PResult<Item> {
        self.bump();
        let name = self.scoped_name()?;
        let what = if is_id {
            "a repository id string"
        } else {
            "a prefix string"
        };
        let text = self.string_literal(what)?;
        self.expect_punct(Punct::Semi)?;
        Ok(if is_id {
            Item::TypeId(TypeId {
                name,
                id: text,
                loc,
            })
        } else {
            Item::TypePrefix(TypePrefix { name, prefix: text })
        })
    }

    fn import(&mut self, loc: Loc) -> PResult<Item> {
        self.bump();
        let what = match self.peek_kind() {
            TokenKind::Str(text) => {
                self.bump();
                format!("\"{text}\"")
            }
            _ => self.scoped_name()?.to_string(),
        };
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Import(Import { what, loc }))
    }

    fn state_member(&mut self, doc: Option<String>) -> PResult<Item> {
        let public = self.at_keyword(Keyword::Public);
        self.bump();
        let ty = self.type_spec(true)?;
        let declarators = self.declarators()?;
        self.expect_punct(Punct::Semi)?;
        Ok(Item::StateMember(StateMember {
            doc,
            public,
            ty,
            declarators,
        }))
    }

    fn factory(&mut self, doc: Option<String>) -> PResult<Item> {
        self.bump();
        let name = self.declared_ident()?;
        let params = self.params()?;
        let raises = if self.eat_keyword(Keyword::Raises) {
            self.raises_list()?
        } else {
            Vec::new()
        };
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Factory(Factory {
            name,
            doc,
            params,
            raises,
        }))
    }

    /// Whether the token after the current one starts a scoped name.
    fn next_starts_name(&mut self) -> bool {
        matches!(
            self.peek_nth(1).kind,
            TokenKind::Ident(_) | TokenKind::Punct(Punct::ColonColon)
        )
    }

    fn interface(&mut self, doc: Option<String>) -> PResult<Item> {
        let kind = if self.eat_keyword(Keyword::Abstract) {
            InterfaceKind::Abstract
        } else if self.eat_keyword(Keyword::Local) {
            InterfaceKind::Local
        } else {
            InterfaceKind::Unconstrained
        };
        self.expect_keyword(Keyword::Interface)?;
        let name = self.declared_ident()?;
        if self.eat_punct(Punct::Semi) {
            return Ok(Item::InterfaceForward(InterfaceForward { name, doc, kind }));
        }
        let bases = if self.eat_punct(Punct::Colon) {
            self.scoped_name_list()?
        } else {
            Vec::new()
        };
        let open = self.expect_punct(Punct::LBrace)?;
        let items = self.definitions(Body::Interface, Some(open))?;
        self.expect_punct(Punct::RBrace)?;
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Interface(Interface {
            name,
            doc,
            kind,
            bases,
            items,
        }))
    }

    fn value(&mut self, doc: Option<String>) -> PResult<Item> {
        let kind = if self.eat_keyword(Keyword::Abstract) {
            ValueKind::Abstract
        } else if self.eat_keyword(Keyword::Custom) {
            ValueKind::Custom
        } else {
            ValueKind::Concrete
        };
        self.expect_keyword(Keyword::Valuetype)?;
        let name = self.declared_ident()?;
        if self.at_punct(Punct::Semi) {
            if kind == ValueKind::Custom {
                return Err(Diag::error(
                    name.loc,
                    "a forward declaration of a valuetype cannot be 'custom'",
                ));
            }
            self.bump();
            return Ok(Item::ValueForward(ValueForward {
                name,
                doc,
                is_abstract: kind == ValueKind::Abstract,
            }));
        }
        let starts_body = self.at_punct(Punct::Colon)
            || self.at_punct(Punct::LBrace)
            || self.at_keyword(Keyword::Supports);
        if !starts_body {
            if kind != ValueKind::Concrete || !self.starts_type() {
                return Err(self.unexpected("':', 'supports' or '{'"));
            }
            let ty = self.type_spec(true)?;
            self.expect_punct(Punct::Semi)?;
            return Ok(Item::ValueBox(ValueBox { name, doc, ty }));
        }
        let mut truncatable = None;
        let mut bases = Vec::new();
        if self.eat_punct(Punct::Colon) {
            if self.at_keyword(Keyword::Truncatable) {
                truncatable = Some(self.bump().loc);
            }
            bases = self.scoped_name_list()?;
        }
        let supports = if self.eat_keyword(Keyword::Supports) {
            self.scoped_name_list()?
        } else {
            Vec::new()
        };
        let open = self.expect_punct(Punct::LBrace)?;
        let items = self.definitions(Body::Value, Some(open))?;
        self.expect_punct(Punct::RBrace)?;
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Value(Value {
            name,
            doc,
            kind,
            truncatable,
            bases,
            supports,
            items,
        }))
    }

    fn operation(&mut self, doc: Option<String>) -> PResult<Item> {
        let oneway = if self.at_keyword(Keyword::Oneway) {
            Some(self.bump().loc)
        } else {
            None
        };
        let return_type = if self.eat_keyword(Keyword::Void) {
            None
        } else {
            Some(self.type_spec(false)?)
        };
        let name = self.declared_ident()?;
        let params = self.params()?;
        let mut raises = Vec::new();
        let mut raises_loc = None;
        if self.at_keyword(Keyword::Raises) {
            raises_loc = Some(self.bump().loc);
            raises = self.raises_list()?;
        }
        let mut context = Vec::new();
        if self.eat_keyword(Keyword::Context) {
            self.expect_punct(Punct::LParen)?;
            loop {
                let loc = self.loc();
                let text = self.string_literal("a context string")?;
                context.push((text, loc));
                if !self.eat_punct(Punct::Comma) {
                    break;
                }
            }
            self.expect_punct(Punct::RParen)?;
        }
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Operation(Operation {
            name,
            doc,
            oneway,
            return_type,
            params,
            raises,
            raises_loc,
            context,
        }))
    }

    fn params(&mut self) -> PResult<Vec<Param>> {
        self.expect_punct(Punct::LParen)?;
        let mut params = Vec::new();
        if self.eat_punct(Punct::RParen) {
            return Ok(params);
        }
        loop {
            let direction = match self.peek_kind() {
                TokenKind::Keyword(Keyword::In) => Direction::In,
                TokenKind::Keyword(Keyword::Out) => Direction::Out,
                TokenKind::Keyword(Keyword::Inout) => Direction::InOut,
                _ => return Err(self.unexpected("'in', 'out' or 'inout'")),
            };
            self.bump();
            let ty = self.type_spec(false)?;
            let name = self.declared_ident()?;
            params.push(Param {
                direction,
                ty,
                name,
            });
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RParen)?;
        Ok(params)
    }

    fn raises_list(&mut self) -> PResult<Vec<ScopedName>> {
        self.expect_punct(Punct::LParen)?;
        if self.at_punct(Punct::RParen) {
            self.bump();
            return Ok(Vec::new());
        }
        let names = self.scoped_name_list()?;
        self.expect_punct(Punct::RParen)?;
        Ok(names)
    }

    fn attribute(&mut self, doc: Option<String>) -> PResult<Item> {
        let readonly = self.eat_keyword(Keyword::Readonly);
        self.expect_keyword(Keyword::Attribute)?;
        let ty = self.type_spec(false)?;
        let mut names = vec![self.declared_ident()?];
        let mut get_raises = Vec::new();
        let mut set_raises = Vec::new();
        if readonly && self.at_keyword(Keyword::Raises) {
            self.bump();
            get_raises = self.raises_list()?;
        } else if self.at_keyword(Keyword::Raises) {
            let loc = self.loc();
            return Err(Diag::error(
                loc,
                "a writable attribute declares its exceptions with 'getraises' and 'setraises', not 'raises'",
            ));
        } else if self.at_word("getraises") || self.at_word("setraises") {
            if readonly {
                let loc = self.loc();
                return Err(Diag::error(
                    loc,
                    "a readonly attribute declares its exceptions with 'raises'",
                ));
            }
            if self.at_word("getraises") {
                self.bump();
                get_raises = self.raises_list()?;
            }
            if self.at_word("setraises") {
                self.bump();
                set_raises = self.raises_list()?;
            }
        } else {
            while self.eat_punct(Punct::Comma) {
                names.push(self.declared_ident()?);
            }
        }
        self.expect_punct(Punct::Semi)?;
        Ok(Item::Attribute(Attribute {
            doc,
            readonly,
            ty,
            names,
            get_raises,
            set_raises,
        }))
    }

    // ---- constructed types ----------------------------------------------

    fn struct_type(&mut self) -> PResult<Struct> {
        let doc = self.peek().doc.clone();
        self.expect_keyword(Keyword::Struct)?;
        let name = self.declared_ident()?;
        let open = self.expect_punct(Punct::LBrace)?;
        let members = self.members(open, false)?;
        Ok(Struct { name, doc, members })
    }

    /// Members up to and including `}`.
    fn members(&mut self, open: Loc, allow_empty: bool) -> PResult<Vec<Member>> {
        let mut members = Vec::new();
        loop {
            if self.at_punct(Punct::RBrace) {
                let loc = self.bump().loc;
                if members.is_empty() && !allow_empty {
                    return Err(Diag::error(loc, "a struct must have at least one member"));
                }
                return Ok(members);
            }
            if self.peek().kind == TokenKind::Eof {
                return Err(self
                    .unexpected("a member or '}'")
                    .note_at(open, "the unclosed '{' is here"));
            }
            self.enter()?;
            let doc = self.peek().doc.clone();
            let ty = self.type_spec(true)?;
            let declarators = self.declarators()?;
            self.expect_punct(Punct::Semi)?;
            members.push(Member {
                doc,
                ty,
                declarators,
            });
            self.leave();
        }
    }

    fn union_type(&mut self) -> PResult<Union> {
        let doc = self.peek().doc.clone();
        self.expect_keyword(Keyword::Union)?;
        let name = self.declared_ident()?;
        self.expect_keyword(Keyword::Switch)?;
        self.expect_punct(Punct::LParen)?;
        let discriminator = self.type_spec(true)?;
        self.expect_punct(Punct::RParen)?;
        let open = self.expect_punct(Punct::LBrace)?;
        let mut cases = Vec::new();
        loop {
            if self.at_punct(Punct::RBrace) {
                let loc = self.bump().loc;
                if cases.is_empty() {
                    return Err(Diag::error(loc, "a union must have at least one case"));
                }
                break;
            }
            if !self.at_keyword(Keyword::Case) && !self.at_keyword(Keyword::Default) {
                let diag = self.unexpected("'case', 'default' or '}'");
                return Err(if self.peek().kind == TokenKind::Eof {
                    diag.note_at(open, "the unclosed '{' is here")
                } else {
                    diag
                });
            }
            self.enter()?;
            let case_doc = self.peek().doc.clone();
            let mut labels = Vec::new();
            loop {
                if self.at_keyword(Keyword::Case) {
                    self.bump();
                    labels.push(CaseLabel::Value(self.const_expr()?));
                    self.expect_punct(Punct::Colon)?;
                } else if self.at_keyword(Keyword::Default) {
                    let loc = self.bump().loc;
                    labels.push(CaseLabel::Default(loc));
                    self.expect_punct(Punct::Colon)?;
                } else {
                    break;
                }
            }
            let ty = self.type_spec(true)?;
            let declarator = self.declarator()?;
            self.expect_punct(Punct::Semi)?;
            cases.push(Case {
                doc: case_doc,
                labels,
                ty,
                declarator,
            });
            self.leave();
        }
        Ok(Union {
            name,
            doc,
            discriminator,
            cases,
        })
    }

    fn enum_type(&mut self) -> PResult<Enum> {
        let doc = self.peek().doc.clone();
        self.expect_keyword(Keyword::Enum)?;
        let name = self.declared_ident()?;
        self.expect_punct(Punct::LBrace)?;
        let mut enumerators = Vec::new();
        loop {
            let doc = self.peek().doc.clone();
            let name = self.declared_ident()?;
            enumerators.push(Enumerator { name, doc });
            if !self.eat_punct(Punct::Comma) {
                break;
            }
        }
        self.expect_punct(Punct::RBrace)?;
        Ok(Enum {
            name,
            doc,
            enumerators,
        })
    }

    fn declarators(&mut self) -> PResult<Vec<Declarator>> {
        let mut declarators = vec![self.declarator()?];
        while self.eat_punct(Punct::Comma) {
            declarators.push(self.declarator()?);
        }
        Ok(declarators)
    }

    fn declarator(&mut self) -> PResult<Declarator> {
        let name = self.declared_ident()?;
        let mut dims = Vec::new();
        while self.eat_punct(Punct::LBracket) {
            dims.push(self.const_expr()?);
            self.expect_punct(Punct::RBracket)?;
        }
        Ok(Declarator { name, dims })
    }

    // ---- type specifications --------------------------------------------

    fn starts_type(&mut self) -> bool {
        matches!(
            self.peek().kind,
            TokenKind::Ident(_)
                | TokenKind::Punct(Punct::ColonColon)
                | TokenKind::Keyword(
                    Keyword::Short
                        | Keyword::Long
                        | Keyword::Unsigned
                        | Keyword::Float
                        | Keyword::Double
                        | Keyword::Char
                        | Keyword::Wchar
                        | Keyword::Boolean
                        | Keyword::Octet
                        | Keyword::Any
                        | Keyword::Object
                        | Keyword::ValueBase
                        | Keyword::String
                        | Keyword::Wstring
                        | Keyword::Sequence
                        | Keyword::Fixed
                        | Keyword::Struct
                        | Keyword::Union
                        | Keyword::Enum
                )
        )
    }

    /// A type; `constructed` allows an inline struct, union or enum.
    fn type_spec(&mut self, constructed: bool) -> PResult<TypeSpec> {
        match self.peek_kind() {
            TokenKind::Keyword(Keyword::Struct) if constructed => {
                Ok(TypeSpec::Struct(Box::new(self.struct_type()?)))
            }
            TokenKind::Keyword(Keyword::Union) if constructed => {
                Ok(TypeSpec::Union(Box::new(self.union_type()?)))
            }
            TokenKind::Keyword(Keyword::Enum) if constructed => {
                Ok(TypeSpec::Enum(Box::new(self.enum_type()?)))
            }
            TokenKind::Keyword(Keyword::Struct | Keyword::Union | Keyword::Enum) => {
                let loc = self.loc();
                Err(Diag::error(
                    loc,
                    "a struct, union or enum cannot be declared here; declare it first and use its name",
                ))
            }
            _ => self.simple_type_spec(),
        }
    }

    fn simple_type_spec(&mut self) -> PResult<TypeSpec> {
        self.enter()?;
        let result = self.simple_type_spec_inner();
        self.leave();
        result
    }

    fn simple_type_spec_inner(&mut self) -> PResult<TypeSpec> {
        let token = self.peek().clone();
        let loc = token.loc;
        let base = |base: BaseType| Ok(TypeSpec::Base(base, loc));
        let TokenKind::Keyword(keyword) = token.kind else {
            if matches!(
                token.kind,
                TokenKind::Ident(_) | TokenKind::Punct(Punct::ColonColon)
            ) {
                return Ok(TypeSpec::Named(self.scoped_name()?));
            }
            return Err(self.unexpected("a type"));
        };
        self.bump();
        match keyword {
            Keyword::Short => base(BaseType::Short),
            Keyword::Long => {
                if self.eat_keyword(Keyword::Long) {
                    base(BaseType::LongLong)
                } else if self.eat_keyword(Keyword::Double) {
                    base(BaseType::LongDouble)
                } else {
                    base(BaseType::Long)
                }
            }
            Keyword::Unsigned => {
                if self.eat_keyword(Keyword::Short) {
                    base(BaseType::UShort)
                } else if self.eat_keyword(Keyword::Long) {
                    if self.eat_keyword(Keyword::Long) {
                        base(BaseType::ULongLong)
                    } else {
                        base(BaseType::ULong)
                    }
                } else {
                    Err(self.unexpected("'short' or 'long' after 'unsigned'"))
                }
            }
            Keyword::Float => base(BaseType::Float),
            Keyword::Double => base(BaseType::Double),
            Keyword::Char => base(BaseType::Char),
            Keyword::Wchar => base(BaseType::WChar),
            Keyword::Boolean => base(BaseType::Boolean),
            Keyword::Octet => base(BaseType::Octet),
            Keyword::Any => base(BaseType::Any),
            Keyword::Object => base(BaseType::Object),
            Keyword::ValueBase => base(BaseType::ValueBase),
            Keyword::String | Keyword::Wstring => {
                let bound = if self.eat_punct(Punct::Lt) {
                    let bound = self.template_expr()?;
                    self.expect_gt()?;
                    Some(Box::new(bound))
                } else {
                    None
                };
                Ok(TypeSpec::String {
                    wide: keyword == Keyword::Wstring,
                    bound,
                    loc,
                })
            }
            Keyword::Sequence => {
                self.expect_punct(Punct::Lt)?;
                let element = self.simple_type_spec()?;
                let bound = if self.eat_punct(Punct::Comma) {
                    Some(Box::new(self.template_expr()?))
                } else {
                    None
                };
                self.expect_gt()?;
                Ok(TypeSpec::Sequence {
                    element: Box::new(element),
                    bound,
                    loc,
                })
            }
            Keyword::Fixed => {
                let digits_scale = if self.eat_punct(Punct::Lt) {
                    let digits = self.template_expr()?;
                    self.expect_punct(Punct::Comma)?;
                    let scale = self.template_expr()?;
                    self.expect_gt()?;
                    Some((Box::new(digits), Box::new(scale)))
                } else {
                    None
                };
                Ok(TypeSpec::Fixed { digits_scale, loc })
            }
            other => Err(Diag::error(
                loc,
                format!("expected a type, found keyword '{}'", other.as_str()),
            )),
        }
    }

    // ---- constant expressions -------------------------------------------

    /// An expression inside `<...>`, where `>>` is not a shift.
    fn template_expr(&mut self) -> PResult<Expr> {
        let saved = std::mem::replace(&mut self.no_shr, true);
        let result = self.const_expr();
        self.no_shr = saved;
        result
    }

    fn const_expr(&mut self) -> PResult<Expr> {
        self.enter()?;
        let result = self.binary_expr(0);
        self.leave();
        result
    }

    fn binary_op(&mut self) -> Option<(BinaryOp, u8)> {
        let TokenKind::Punct(punct) = self.peek().kind else {
            return None;
        };
        Some(match punct {
            Punct::Pipe => (BinaryOp::Or, 1),
            Punct::Caret => (BinaryOp::Xor, 2),
            Punct::Amp => (BinaryOp::And, 3),
            Punct::Shl => (BinaryOp::Shl, 4),
            Punct::Shr if !self.no_shr => (BinaryOp::Shr, 4),
            Punct::Plus => (BinaryOp::Add, 5),
            Punct::Minus => (BinaryOp::Sub, 5),
            Punct::Star => (BinaryOp::Mul, 6),
            Punct::Slash => (BinaryOp::Div, 6),
            Punct::Percent => (BinaryOp::Mod, 6),
            _ => return None,
        })
    }

    fn binary_expr(&mut self, min_precedence: u8) -> PResult<Expr> {
        let mut lhs = self.unary_expr()?;
        // Each operator deepens the tree on the left; count those levels
        // against the nesting limit too, so that neither evaluation nor
        // dropping the tree can overflow the stack.
        let mut levels = 0;
        while let Some((op, precedence)) = self.binary_op() {
            if precedence <= min_precedence {
                break;
            }
            let loc = self.bump().loc;
            self.enter()?;
            levels += 1;
            let rhs = self.binary_expr(precedence)?;
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                loc,
            };
        }
        for _ in 0..levels {
            self.leave();
        }
        Ok(lhs)
    }

    fn unary_expr(&mut self) -> PResult<Expr> {
        let op = match self.peek().kind {
            TokenKind::Punct(Punct::Minus) => Some(UnaryOp::Neg),
            TokenKind::Punct(Punct::Plus) => Some(UnaryOp::Plus),
            TokenKind::Punct(Punct::Tilde) => Some(UnaryOp::Not),
            _ => None,
        };
        let Some(op) = op else {
            return self.primary_expr();
        };
        // The grammar applies one unary operator to a primary expression:
        // `--x` is not IDL (write `-(-x)`).
        let loc = self.bump().loc;
        let operand = self.primary_expr()?;
        Ok(Expr::Unary {
            op,
            operand: Box::new(operand),
            loc,
        })
    }

    fn primary_expr(&mut self) -> PResult<Expr> {
        let token = self.peek().clone();
        let loc = token.loc;
        let literal = match token.kind {
            TokenKind::Ident(_) | TokenKind::Punct(Punct::ColonColon) => {
                return Ok(Expr::Name(self.scoped_name()?));
            }
            TokenKind::Punct(Punct::LParen) => {
                self.bump();
                let saved = std::mem::replace(&mut self.no_shr, false);
                let inner = self.const_expr();
                self.no_shr = saved;
                let inner = inner?;
                self.expect_punct(Punct::RParen)?;
                return Ok(inner);
            }
            TokenKind::Int(value) => Literal::Int(value),
            TokenKind::Float(text) => Literal::Float(text),
            TokenKind::Fixed(text) => Literal::Fixed(text),
            TokenKind::Char(value) => Literal::Char(value),
            TokenKind::WChar(value) => Literal::WChar(value),
            TokenKind::Keyword(Keyword::True) => Literal::Bool(true),
            TokenKind::Keyword(Keyword::False) => Literal::Bool(false),
            TokenKind::Str(_) | TokenKind::WStr(_) => return self.string_concatenation(),
            _ => return Err(self.unexpected("a constant expression")),
        };
        self.bump();
        Ok(Expr::Literal(literal, loc))
    }

    /// Adjacent string literals are one string.
    fn string_concatenation(&mut self) -> PResult<Expr> {
        let first = self.bump();
        let wide = matches!(first.kind, TokenKind::WStr(_));
        let mut text = match first.kind {
            TokenKind::Str(text) | TokenKind::WStr(text) => text,
            _ => String::new(),
        };
        loop {
            match self.peek_kind() {
                TokenKind::Str(more) if !wide => text.push_str(&more),
                TokenKind::WStr(more) if wide => text.push_str(&more),
                TokenKind::Str(_) | TokenKind::WStr(_) => {
                    let loc = self.loc();
                    return Err(Diag::error(
                        loc,
                        "a wide string literal cannot be concatenated with a narrow one",
                    ));
                }
                _ => break,
            }
            self.bump();
        }
        let literal = if wide {
            Literal::WStr(text)
        } else {
            Literal::Str(text)
        };
        Ok(Expr::Literal(literal, first.loc))
    }
}

/// Returned by [`Parser::token_at`] for an empty stream.
static EOF_TOKEN: Token = Token {
    kind: TokenKind::Eof,
    loc: Loc {
        file: crate::source::FileId(0),
        line: 0,
        col: 0,
    },
    doc: None,
};
