//! The IDL lexer: characters to tokens, with positions and doc comments.
//!
//! The lexer never fails: malformed input becomes an [`TokenKind::Error`]
//! token and lexing goes on, so the preprocessor can ignore errors inside
//! groups that `#if` skips. A line whose first token is `#` becomes one
//! [`TokenKind::Directive`] token holding the rest of the line (with
//! backslash continuations and comments); the preprocessor lexes its body
//! again with [`Lexer::directive`].
//!
//! Comments are not tokens. A run of comments that ends on the line just
//! above a token (or on its own line, before it) becomes that token's
//! `doc`; a comment that trails the previous token on its line does not.

use std::fmt;

use crate::source::{FileId, Loc};

macro_rules! keywords {
    ($($variant:ident = $text:literal,)*) => {
        /// The reserved words of IDL (CORBA 3 core; the component model's
        /// words are contextual, see [`CONTEXTUAL_KEYWORDS`]).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Keyword { $($variant,)* }

        impl Keyword {
            const ALL: &'static [Keyword] = &[$(Keyword::$variant,)*];

            /// The keyword as written in IDL.
            pub(crate) fn as_str(self) -> &'static str {
                match self { $(Keyword::$variant => $text,)* }
            }
        }
    };
}

keywords! {
    Abstract = "abstract",
    Any = "any",
    Attribute = "attribute",
    Boolean = "boolean",
    Case = "case",
    Char = "char",
    Const = "const",
    Context = "context",
    Custom = "custom",
    Default = "default",
    Double = "double",
    Enum = "enum",
    Exception = "exception",
    Factory = "factory",
    False = "FALSE",
    Fixed = "fixed",
    Float = "float",
    In = "in",
    Inout = "inout",
    Interface = "interface",
    Local = "local",
    Long = "long",
    Module = "module",
    Native = "native",
    Object = "Object",
    Octet = "octet",
    Oneway = "oneway",
    Out = "out",
    Private = "private",
    Public = "public",
    Raises = "raises",
    Readonly = "readonly",
    Sequence = "sequence",
    Short = "short",
    String = "string",
    Struct = "struct",
    Supports = "supports",
    Switch = "switch",
    True = "TRUE",
    Truncatable = "truncatable",
    Typedef = "typedef",
    Unsigned = "unsigned",
    Union = "union",
    ValueBase = "ValueBase",
    Valuetype = "valuetype",
    Void = "void",
    Wchar = "wchar",
    Wstring = "wstring",
}

impl Keyword {
    /// The keyword spelled exactly `text`.
    pub(crate) fn exact(text: &str) -> Option<Keyword> {
        Keyword::ALL.iter().copied().find(|k| k.as_str() == text)
    }

    /// The keyword that `text` equals when case is ignored.
    pub(crate) fn ignoring_case(text: &str) -> Option<Keyword> {
        Keyword::ALL
            .iter()
            .copied()
            .find(|k| k.as_str().eq_ignore_ascii_case(text))
    }
}

/// Words that CORBA 3 reserves but this front end treats as identifiers
/// except where its grammar needs them (`typeid`, `typeprefix`, `import`,
/// `getraises`, `setraises`) or where they start a component-model
/// declaration, which is reported as unsupported. Declaring one of them as
/// an identifier is a warning, as in omniidl.
pub(crate) const CONTEXTUAL_KEYWORDS: &[&str] = &[
    "component",
    "consumes",
    "emits",
    "eventtype",
    "finder",
    "getraises",
    "home",
    "import",
    "multiple",
    "primarykey",
    "provides",
    "publishes",
    "setraises",
    "typeid",
    "typeprefix",
    "uses",
];

/// Punctuation, including the operators only `#if` uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Punct {
    Semi,
    LBrace,
    RBrace,
    Colon,
    ColonColon,
    Comma,
    Eq,
    Plus,
    Minus,
    LParen,
    RParen,
    Lt,
    Gt,
    Shl,
    Shr,
    LBracket,
    RBracket,
    Star,
    Slash,
    Percent,
    Tilde,
    Pipe,
    Caret,
    Amp,
    Hash,
    HashHash,
    EqEq,
    NotEq,
    Le,
    Ge,
    AndAnd,
    OrOr,
    Bang,
    Question,
    Dot,
}

impl Punct {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Punct::Semi => ";",
            Punct::LBrace => "{",
            Punct::RBrace => "}",
            Punct::Colon => ":",
            Punct::ColonColon => "::",
            Punct::Comma => ",",
            Punct::Eq => "=",
            Punct::Plus => "+",
            Punct::Minus => "-",
            Punct::LParen => "(",
            Punct::RParen => ")",
            Punct::Lt => "<",
            Punct::Gt => ">",
            Punct::Shl => "<<",
            Punct::Shr => ">>",
            Punct::LBracket => "[",
            Punct::RBracket => "]",
            Punct::Star => "*",
            Punct::Slash => "/",
            Punct::Percent => "%",
            Punct::Tilde => "~",
            Punct::Pipe => "|",
            Punct::Caret => "^",
            Punct::Amp => "&",
            Punct::Hash => "#",
            Punct::HashHash => "##",
            Punct::EqEq => "==",
            Punct::NotEq => "!=",
            Punct::Le => "<=",
            Punct::Ge => ">=",
            Punct::AndAnd => "&&",
            Punct::OrOr => "||",
            Punct::Bang => "!",
            Punct::Question => "?",
            Punct::Dot => ".",
        }
    }
}

/// A pragma the preprocessor understood, passed to the parser in the token
/// stream so that it applies at the right place among the definitions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Pragma {
    /// `#pragma prefix "text"`.
    Prefix(String),
    /// `#pragma ID name "id"`.
    Id { name: PragmaName, id: String },
    /// `#pragma version name major.minor`.
    Version {
        name: PragmaName,
        major: u16,
        minor: u16,
    },
}

/// The scoped name a `#pragma ID` or `#pragma version` is about.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PragmaName {
    /// Written with a leading `::`.
    pub(crate) absolute: bool,
    /// The identifiers as written (escapes included) and where they are.
    pub(crate) parts: Vec<(String, Loc)>,
    /// Where the name starts.
    pub(crate) loc: Loc,
}

/// What a token is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TokenKind {
    /// An identifier as written, including a leading escape underscore.
    Ident(String),
    Keyword(Keyword),
    /// An integer literal's value.
    Int(u64),
    /// A floating-point literal as written.
    Float(String),
    /// A fixed-point literal as written, without its `d`.
    Fixed(String),
    Char(u8),
    WChar(char),
    Str(String),
    WStr(String),
    Punct(Punct),
    /// A preprocessor line: the text after `#`, and where that text starts.
    Directive(String, Loc),
    /// Malformed input, with the reason.
    Error(String),
    /// A pragma, inserted by the preprocessor.
    Pragma(Pragma),
    /// The preprocessor enters an included file.
    FileEnter(FileId),
    /// The preprocessor leaves an included file.
    FileExit,
    Eof,
}

impl fmt::Display for TokenKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenKind::Ident(name) => write!(f, "identifier '{name}'"),
            TokenKind::Keyword(keyword) => write!(f, "keyword '{}'", keyword.as_str()),
            TokenKind::Int(value) => write!(f, "integer literal '{value}'"),
            TokenKind::Float(text) => write!(f, "floating-point literal '{text}'"),
            TokenKind::Fixed(text) => write!(f, "fixed-point literal '{text}d'"),
            TokenKind::Char(_) => f.write_str("character literal"),
            TokenKind::WChar(_) => f.write_str("wide character literal"),
            TokenKind::Str(_) => f.write_str("string literal"),
            TokenKind::WStr(_) => f.write_str("wide string literal"),
            TokenKind::Punct(punct) => write!(f, "'{}'", punct.as_str()),
            TokenKind::Directive(..) => f.write_str("preprocessor directive"),
            TokenKind::Error(message) => f.write_str(message),
            TokenKind::Pragma(_) => f.write_str("#pragma"),
            TokenKind::FileEnter(_) | TokenKind::FileExit => f.write_str("#include"),
            TokenKind::Eof => f.write_str("end of file"),
        }
    }
}

/// A token, where it starts, and the comment written just above it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub(crate) kind: TokenKind,
    pub(crate) loc: Loc,
    pub(crate) doc: Option<String>,
}

impl Token {
    pub(crate) fn new(kind: TokenKind, loc: Loc) -> Token {
        Token {
            kind,
            loc,
            doc: None,
        }
    }
}

/// A comment seen since the previous token.
#[derive(Debug)]
struct Comment {
    text: String,
    start_line: u32,
    end_line: u32,
}

/// Turns the text of one file (or one directive line) into tokens.
pub(crate) struct Lexer {
    chars: Vec<char>,
    pos: usize,
    file: FileId,
    line: u32,
    col: u32,
    /// Lexing the body of a directive: `#` is punctuation, no docs.
    in_directive: bool,
    /// No token has started on the current line yet.
    line_is_empty: bool,
    /// The line on which the previous token ended (0 before the first).
    previous_token_line: u32,
    comments: Vec<Comment>,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_continue(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Lexer {
    /// A lexer over a whole file.
    pub(crate) fn new(text: &str, file: FileId) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            pos: 0,
            file,
            line: 1,
            col: 1,
            in_directive: false,
            line_is_empty: true,
            previous_token_line: 0,
            comments: Vec::new(),
        }
    }

    /// A lexer over the body of a directive that starts at `loc`.
    pub(crate) fn directive(text: &str, loc: Loc) -> Lexer {
        Lexer {
            chars: text.chars().collect(),
            pos: 0,
            file: loc.file,
            line: loc.line,
            col: loc.col,
            in_directive: true,
            line_is_empty: false,
            previous_token_line: 0,
            comments: Vec::new(),
        }
    }

    /// Lexes the whole input of a directive lexer into tokens (without the
    /// final end-of-file token).
    pub(crate) fn directive_tokens(text: &str, loc: Loc) -> Vec<Token> {
        let mut lexer = Lexer::directive(text, loc);
        let mut tokens = Vec::new();
        loop {
            let token = lexer.next_token();
            if token.kind == TokenKind::Eof {
                return tokens;
            }
            tokens.push(token);
        }
    }

    fn loc(&self) -> Loc {
        Loc {
            file: self.file,
            line: self.line,
            col: self.col,
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, offset: usize) -> Option<char> {
        self.chars.get(self.pos + offset).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
            self.line_is_empty = true;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    /// Skips whitespace, line continuations and comments. Returns an error
    /// token for an unterminated block comment.
    fn skip_trivia(&mut self) -> Option<Token> {
        loop {
            match self.peek() {
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('\\') if self.continuation_len() > 0 => {
                    for _ in 0..self.continuation_len() {
                        self.bump();
                    }
                    // A continued line is not a new line for directives.
                    self.line_is_empty = false;
                }
                Some('/') if self.peek_at(1) == Some('/') => {
                    let start_line = self.line;
                    let start = self.pos;
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                    let text: String = self.chars[start..self.pos].iter().collect();
                    self.push_comment(text, start_line, start_line);
                }
                Some('/') if self.peek_at(1) == Some('*') => {
                    let start_loc = self.loc();
                    let start = self.pos;
                    let line_was_empty = self.line_is_empty;
                    self.bump();
                    self.bump();
                    let mut closed = false;
                    while let Some(c) = self.bump() {
                        if c == '*' && self.peek() == Some('/') {
                            self.bump();
                            closed = true;
                            break;
                        }
                    }
                    if !closed {
                        return Some(Token::new(
                            TokenKind::Error("unterminated comment".into()),
                            start_loc,
                        ));
                    }
                    // A comment does not make a line non-empty for `#`.
                    if self.line == start_loc.line {
                        self.line_is_empty = line_was_empty;
                    }
                    let text: String = self.chars[start..self.pos].iter().collect();
                    self.push_comment(text, start_loc.line, self.line);
                }
                _ => return None,
            }
        }
    }

    /// The length of a backslash-newline at the cursor (0 if none).
    fn continuation_len(&self) -> usize {
        match (self.peek_at(1), self.peek_at(2)) {
            (Some('\n'), _) => 2,
            (Some('\r'), Some('\n')) => 3,
            _ => 0,
        }
    }

    fn push_comment(&mut self, text: String, start_line: u32, end_line: u32) {
        if self.in_directive {
            return;
        }
        // A comment that trails the previous token on its line is about
        // that token, not the next one.
        if self.previous_token_line != 0 && start_line == self.previous_token_line {
            return;
        }
        self.comments.push(Comment {
            text,
            start_line,
            end_line,
        });
    }

    /// The doc text for a token starting on `line`: the run of comments
    /// that ends on `line` or the line above it.
    fn take_doc(&mut self, line: u32) -> Option<String> {
        let comments = std::mem::take(&mut self.comments);
        let last = comments.last()?;
        if last.end_line + 1 < line {
            return None;
        }
        let mut first = comments.len() - 1;
        while first > 0 && comments[first].start_line <= comments[first - 1].end_line + 1 {
            first -= 1;
        }
        let text = comments[first..]
            .iter()
            .map(|comment| clean_comment(&comment.text))
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n");
        (!text.is_empty()).then_some(text)
    }

    /// The next token; [`TokenKind::Eof`] forever at the end.
    pub(crate) fn next_token(&mut self) -> Token {
        if let Some(error) = self.skip_trivia() {
            return error;
        }
        let loc = self.loc();
        let Some(c) = self.peek() else {
            return Token::new(TokenKind::Eof, loc);
        };
        let at_line_start = self.line_is_empty;
        self.line_is_empty = false;
        let kind = if c == '#' && at_line_start && !self.in_directive {
            self.bump();
            let body_loc = self.loc();
            let text = self.directive_text();
            TokenKind::Directive(text, body_loc)
        } else {
            self.token_kind(c)
        };
        let doc = if self.in_directive {
            None
        } else {
            self.take_doc(loc.line)
        };
        self.previous_token_line = self.line;
        Token { kind, loc, doc }
    }

    /// Reads the rest of a directive line, keeping comments and
    /// continuations (the directive lexer skips them).
    fn directive_text(&mut self) -> String {
        let start = self.pos;
        let mut in_string = false;
        while let Some(c) = self.peek() {
            match c {
                '\n' => break,
                '\\' if self.continuation_len() > 0 => {
                    for _ in 0..self.continuation_len() {
                        self.bump();
                    }
                    continue;
                }
                '\\' if in_string => {
                    self.bump();
                    if self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                    continue;
                }
                '"' => in_string = !in_string,
                '/' if !in_string && self.peek_at(1) == Some('/') => {
                    while self.peek().is_some_and(|c| c != '\n') {
                        self.bump();
                    }
                    break;
                }
                '/' if !in_string && self.peek_at(1) == Some('*') => {
                    self.bump();
                    self.bump();
                    while let Some(c) = self.bump() {
                        if c == '*' && self.peek() == Some('/') {
                            self.bump();
                            break;
                        }
                    }
                    continue;
                }
                _ => {}
            }
            self.bump();
        }
        self.chars[start..self.pos].iter().collect()
    }

    fn token_kind(&mut self, c: char) -> TokenKind {
        if c == 'L' && matches!(self.peek_at(1), Some('\'') | Some('"')) {
            self.bump();
            return if self.peek() == Some('\'') {
                self.char_literal(true)
            } else {
                self.string_literal(true)
            };
        }
        if is_ident_start(c) {
            let start = self.pos;
            while self.peek().is_some_and(is_ident_continue) {
                self.bump();
            }
            let text: String = self.chars[start..self.pos].iter().collect();
            return match Keyword::exact(&text) {
                Some(keyword) => TokenKind::Keyword(keyword),
                None => TokenKind::Ident(text),
            };
        }
        if c.is_ascii_digit() || (c == '.' && self.peek_at(1).is_some_and(|d| d.is_ascii_digit())) {
            return self.number();
        }
        match c {
            '\'' => return self.char_literal(false),
            '"' => return self.string_literal(false),
            _ => {}
        }
        self.bump();
        let two = |lexer: &mut Lexer, next: char, long: Punct, short: Punct| {
            if lexer.peek() == Some(next) {
                lexer.bump();
                long
            } else {
                short
            }
        };
        let punct = match c {
            ';' => Punct::Semi,
            '{' => Punct::LBrace,
            '}' => Punct::RBrace,
            ':' => two(self, ':', Punct::ColonColon, Punct::Colon),
            ',' => Punct::Comma,
            '=' => two(self, '=', Punct::EqEq, Punct::Eq),
            '+' => Punct::Plus,
            '-' => Punct::Minus,
            '(' => Punct::LParen,
            ')' => Punct::RParen,
            '<' => match self.peek() {
                Some('<') => {
                    self.bump();
                    Punct::Shl
                }
                Some('=') => {
                    self.bump();
                    Punct::Le
                }
                _ => Punct::Lt,
            },
            '>' => match self.peek() {
                Some('>') => {
                    self.bump();
                    Punct::Shr
                }
                Some('=') => {
                    self.bump();
                    Punct::Ge
                }
                _ => Punct::Gt,
            },
            '[' => Punct::LBracket,
            ']' => Punct::RBracket,
            '*' => Punct::Star,
            '/' => Punct::Slash,
            '%' => Punct::Percent,
            '~' => Punct::Tilde,
            '|' => two(self, '|', Punct::OrOr, Punct::Pipe),
            '^' => Punct::Caret,
            '&' => two(self, '&', Punct::AndAnd, Punct::Amp),
            '#' => two(self, '#', Punct::HashHash, Punct::Hash),
            '!' => two(self, '=', Punct::NotEq, Punct::Bang),
            '?' => Punct::Question,
            '.' => Punct::Dot,
            other => {
                let shown = if other.is_control() {
                    format!("\\u{{{:x}}}", other as u32)
                } else {
                    other.to_string()
                };
                return TokenKind::Error(format!("unexpected character '{shown}'"));
            }
        };
        TokenKind::Punct(punct)
    }

    fn number(&mut self) -> TokenKind {
        let start = self.pos;
        let kind = self.number_body(start);
        // A number runs into a following identifier: `12abc`.
        if self.peek().is_some_and(is_ident_continue) {
            while self.peek().is_some_and(is_ident_continue) {
                self.bump();
            }
            let text: String = self.chars[start..self.pos].iter().collect();
            return TokenKind::Error(format!("invalid number '{text}'"));
        }
        kind
    }

    fn number_body(&mut self, start: usize) -> TokenKind {
        if self.peek() == Some('0') && matches!(self.peek_at(1), Some('x') | Some('X')) {
            self.bump();
            self.bump();
            let digits_start = self.pos;
            while self.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.bump();
            }
            let digits: String = self.chars[digits_start..self.pos].iter().collect();
            if digits.is_empty() {
                return TokenKind::Error("hexadecimal literal has no digits".into());
            }
            return parse_integer(&digits, 16);
        }
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.bump();
        }
        let mut is_float = false;
        if self.peek() == Some('.') {
            is_float = true;
            self.bump();
            while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.bump();
            }
        }
        let mantissa_end = self.pos;
        if matches!(self.peek(), Some('d') | Some('D')) {
            self.bump();
            let text: String = self.chars[start..mantissa_end].iter().collect();
            return TokenKind::Fixed(text);
        }
        if matches!(self.peek(), Some('e') | Some('E')) {
            let digit_at = match self.peek_at(1) {
                Some('+') | Some('-') => 2,
                _ => 1,
            };
            if self.peek_at(digit_at).is_some_and(|c| c.is_ascii_digit()) {
                is_float = true;
                for _ in 0..digit_at {
                    self.bump();
                }
                while self.peek().is_some_and(|c| c.is_ascii_digit()) {
                    self.bump();
                }
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        if is_float {
            return TokenKind::Float(text);
        }
        if text.len() > 1 && text.starts_with('0') {
            if text.chars().any(|c| !('0'..='7').contains(&c)) {
                return TokenKind::Error(format!("invalid digit in octal literal '{text}'"));
            }
            return parse_integer(&text[1..], 8);
        }
        parse_integer(&text, 10)
    }

    /// Reads one character of a literal, decoding an escape sequence.
    /// Returns `Err` with a message for a malformed escape.
    fn literal_char(&mut self, wide: bool) -> Result<u32, String> {
        let Some(c) = self.bump() else {
            return Err("unexpected end of file in literal".into());
        };
        if c != '\\' {
            return Ok(c as u32);
        }
        let Some(escape) = self.bump() else {
            return Err("unexpected end of file in literal".into());
        };
        let simple = match escape {
            'n' => Some(0x0a),
            't' => Some(0x09),
            'v' => Some(0x0b),
            'b' => Some(0x08),
            'r' => Some(0x0d),
            'f' => Some(0x0c),
            'a' => Some(0x07),
            '\\' => Some(u32::from('\\')),
            '?' => Some(u32::from('?')),
            '\'' => Some(u32::from('\'')),
            '"' => Some(u32::from('"')),
            _ => None,
        };
        if let Some(value) = simple {
            return Ok(value);
        }
        let (radix, max_digits, first) = match escape {
            '0'..='7' => (8, 3, Some(escape)),
            'x' => (16, 2, None),
            'u' if wide => (16, 4, None),
            'u' => {
                return Err("'\\u' escapes are only allowed in wide literals".into());
            }
            other => return Err(format!("unknown escape sequence '\\{other}'")),
        };
        let mut value = 0u32;
        let mut count = 0;
        if let Some(first) = first {
            value = first.to_digit(8).unwrap_or(0);
            count = 1;
        }
        while count < max_digits {
            match self.peek().and_then(|c| c.to_digit(radix)) {
                Some(digit) => {
                    value = value * radix + digit;
                    count += 1;
                    self.bump();
                }
                None => break,
            }
        }
        if count == 0 {
            return Err(format!("escape '\\{escape}' has no digits"));
        }
        Ok(value)
    }

    fn char_literal(&mut self, wide: bool) -> TokenKind {
        self.bump(); // the opening quote
        if matches!(self.peek(), Some('\'') | Some('\n') | None) {
            self.skip_to_line_end_or('\'');
            return TokenKind::Error("empty or unterminated character literal".into());
        }
        let value = match self.literal_char(wide) {
            Ok(value) => value,
            Err(message) => {
                self.skip_to_line_end_or('\'');
                return TokenKind::Error(message);
            }
        };
        if self.peek() != Some('\'') {
            self.skip_to_line_end_or('\'');
            return TokenKind::Error(
                "unterminated character literal (or more than one character)".into(),
            );
        }
        self.bump();
        if wide {
            match char::from_u32(value) {
                Some(c) => TokenKind::WChar(c),
                None => TokenKind::Error(format!(
                    "wide character literal U+{value:04X} is not a Unicode scalar value"
                )),
            }
        } else {
            match u8::try_from(value) {
                Ok(byte) => TokenKind::Char(byte),
                Err(_) => TokenKind::Error(
                    "character literal is outside ISO Latin-1; use a wide character literal L'...'"
                        .into(),
                ),
            }
        }
    }

    fn string_literal(&mut self, wide: bool) -> TokenKind {
        self.bump(); // the opening quote
        let mut text = String::new();
        loop {
            match self.peek() {
                None | Some('\n') => {
                    return TokenKind::Error("unterminated string literal".into());
                }
                Some('"') => {
                    self.bump();
                    break;
                }
                Some(_) => match self.literal_char(wide) {
                    Ok(0) => {
                        self.skip_to_line_end_or('"');
                        return TokenKind::Error("string literal contains a NUL character".into());
                    }
                    Ok(value) => match char::from_u32(value) {
                        Some(c) if wide || value <= 0xff || value == c as u32 => text.push(c),
                        _ => {
                            self.skip_to_line_end_or('"');
                            return TokenKind::Error(format!(
                                "escape value {value:#x} is not a valid character"
                            ));
                        }
                    },
                    Err(message) => {
                        self.skip_to_line_end_or('"');
                        return TokenKind::Error(message);
                    }
                },
            }
        }
        if wide {
            TokenKind::WStr(text)
        } else {
            TokenKind::Str(text)
        }
    }

    /// Error recovery inside a literal: skip to (and past) `quote`, or to
    /// the end of the line.
    fn skip_to_line_end_or(&mut self, quote: char) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                return;
            }
            self.bump();
            if c == quote {
                return;
            }
        }
    }
}

fn parse_integer(digits: &str, radix: u32) -> TokenKind {
    if digits.is_empty() {
        return TokenKind::Int(0);
    }
    match u64::from_str_radix(digits, radix) {
        Ok(value) => TokenKind::Int(value),
        Err(_) => TokenKind::Error("integer literal is too large (more than 64 bits)".into()),
    }
}

/// The text of a comment without its markers and the leading `*` of each
/// line of a block comment.
fn clean_comment(text: &str) -> String {
    if let Some(body) = text.strip_prefix("/*") {
        let body = body.strip_suffix("*/").unwrap_or(body);
        let body = body.strip_prefix('*').unwrap_or(body);
        let lines: Vec<&str> = body
            .lines()
            .map(|line| {
                let trimmed = line.trim_start();
                trimmed
                    .strip_prefix("* ")
                    .or_else(|| trimmed.strip_prefix('*'))
                    .unwrap_or(trimmed)
                    .trim_end()
            })
            .collect();
        let start = lines.iter().position(|line| !line.is_empty());
        let end = lines.iter().rposition(|line| !line.is_empty());
        match (start, end) {
            (Some(start), Some(end)) => lines[start..=end].join("\n"),
            _ => String::new(),
        }
    } else {
        let body = text.trim_start_matches('/').trim_start_matches('!');
        let body = body.strip_prefix(' ').unwrap_or(body);
        body.trim_end().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(text: &str) -> String {
        let mut lexer = Lexer::new(text, FileId(0));
        let mut out = Vec::new();
        loop {
            let token = lexer.next_token();
            if token.kind == TokenKind::Eof {
                break;
            }
            let mut line = format!("{}:{} {:?}", token.loc.line, token.loc.col, token.kind);
            if let Some(doc) = token.doc {
                line.push_str(&format!(" doc={doc:?}"));
            }
            out.push(line);
        }
        out.join("\n")
    }

    fn check(text: &str, expected: &str) {
        let actual = lex(text);
        assert_eq!(actual.trim(), expected.trim(), "input: {text:?}");
    }

    #[test]
    fn identifiers_and_keywords() {
        check(
            "module _M Object objec",
            r#"1:1 Keyword(Module)
1:8 Ident("_M")
1:11 Keyword(Object)
1:18 Ident("objec")"#,
        );
    }

    #[test]
    fn integer_literals() {
        check(
            "10 0x1F 017 0 18446744073709551615",
            "1:1 Int(10)\n1:4 Int(31)\n1:9 Int(15)\n1:13 Int(0)\n1:15 Int(18446744073709551615)",
        );
        check(
            "18446744073709551616",
            r#"1:1 Error("integer literal is too large (more than 64 bits)")"#,
        );
        check("09", r#"1:1 Error("invalid digit in octal literal '09'")"#);
        check("12ab", r#"1:1 Error("invalid number '12ab'")"#);
    }

    #[test]
    fn floating_and_fixed_literals() {
        check(
            "1.5 .5 1e10 2.5E-3 12.34d 7D 1.",
            r#"1:1 Float("1.5")
1:5 Float(".5")
1:8 Float("1e10")
1:13 Float("2.5E-3")
1:20 Fixed("12.34")
1:27 Fixed("7")
1:30 Float("1.")"#,
        );
    }

    #[test]
    fn character_and_string_literals() {
        check(
            r#"'a' '\n' '\x41' '\101' L'\u20AC' "a\tb" L"x" 'ab'"#,
            r#"1:1 Char(97)
1:5 Char(10)
1:10 Char(65)
1:17 Char(65)
1:24 WChar('€')
1:34 Str("a\tb")
1:41 WStr("x")
1:46 Error("unterminated character literal (or more than one character)")"#,
        );
        check(r#""abc"#, r#"1:1 Error("unterminated string literal")"#);
        check(
            r#""a\0b""#,
            r#"1:1 Error("string literal contains a NUL character")"#,
        );
        check(r#"'\q'"#, r#"1:1 Error("unknown escape sequence '\\q'")"#);
    }

    #[test]
    fn punctuation() {
        check(
            ":: : << >> < > ; $",
            r#"1:1 Punct(ColonColon)
1:4 Punct(Colon)
1:6 Punct(Shl)
1:9 Punct(Shr)
1:12 Punct(Lt)
1:14 Punct(Gt)
1:16 Punct(Semi)
1:18 Error("unexpected character '$'")"#,
        );
    }

    #[test]
    fn comments_and_unterminated_comment() {
        check(
            "a /* x */ b // y\nc",
            "1:1 Ident(\"a\")\n1:11 Ident(\"b\")\n2:1 Ident(\"c\")",
        );
        check(
            "a /* x",
            "1:1 Ident(\"a\")\n1:3 Error(\"unterminated comment\")",
        );
    }

    #[test]
    fn directives_take_the_rest_of_the_line() {
        check(
            "  #include <a.idl> // c\n#define X \\\n 1\nY /* */ # z",
            r#"1:3 Directive("include <a.idl> // c", Loc { file: FileId(0), line: 1, col: 4 })
2:1 Directive("define X \\\n 1", Loc { file: FileId(0), line: 2, col: 2 })
4:1 Ident("Y")
4:9 Punct(Hash)
4:11 Ident("z")"#,
        );
        check(
            "/* c */ #if 1\n",
            r#"1:9 Directive("if 1", Loc { file: FileId(0), line: 1, col: 10 }) doc="c""#,
        );
    }

    #[test]
    fn doc_comments_attach_to_the_next_token() {
        check(
            "/** Doc for A.\n * Second line.\n */\nA\nB // trailing\nC\n\n// far\n\nD\n/// one\n/// two\nE",
            r#"4:1 Ident("A") doc="Doc for A.\nSecond line."
5:1 Ident("B")
6:1 Ident("C")
10:1 Ident("D")
13:1 Ident("E") doc="one\ntwo""#,
        );
    }

    #[test]
    fn directive_lexer_tracks_positions() {
        let loc = Loc {
            file: FileId(0),
            line: 3,
            col: 2,
        };
        let tokens = Lexer::directive_tokens("define X(a) a + 1", loc);
        let cols: Vec<u32> = tokens.iter().map(|t| t.loc.col).collect();
        assert_eq!(cols, vec![2, 9, 10, 11, 12, 14, 16, 18]);
    }

    #[test]
    fn keyword_lookup() {
        assert_eq!(Keyword::exact("Object"), Some(Keyword::Object));
        assert_eq!(Keyword::exact("object"), None);
        assert_eq!(
            Keyword::ignoring_case("INTERFACE"),
            Some(Keyword::Interface)
        );
    }
}
