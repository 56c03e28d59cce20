//! Rust names for IDL names: case conversion, keyword escaping, and a
//! [`Namer`] that keeps the names of one scope distinct.
//!
//! IDL forbids names in one scope that differ only in case, but two IDL
//! names can still meet in Rust after conversion (`getName` and
//! `get_name`), and generated items add names of their own (`FooServant`).
//! A [`Namer`] hands out names in declaration order; the later of two
//! clashing names gets a numeric suffix, so the output never depends on
//! anything but the IDL. (What a derived stub calls the methods it
//! inherits, when two bases have one name, is decided in `inherited`.)

use std::collections::HashSet;

use heck::{ToShoutySnakeCase, ToSnakeCase, ToUpperCamelCase};
use proc_macro2::{Ident, Span};

/// Rust keywords that a raw identifier (`r#type`) can escape.
const RAW_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield", "union",
];

/// Names that cannot be raw identifiers; they get a trailing underscore.
const UNRAWABLE: &[&str] = &["self", "Self", "super", "crate", "_"];

/// `UpperCamelCase` for types, traits and variants.
pub(crate) fn camel(name: &str) -> String {
    let converted = name.to_upper_camel_case();
    if converted.is_empty() {
        format!("X{name}")
    } else {
        converted
    }
}

/// `snake_case` for modules, functions, fields and parameters.
pub(crate) fn snake(name: &str) -> String {
    let converted = name.to_snake_case();
    if converted.is_empty() {
        format!("x{name}")
    } else {
        converted
    }
}

/// `SCREAMING_SNAKE_CASE` for constants and statics.
pub(crate) fn shouty(name: &str) -> String {
    let converted = name.to_shouty_snake_case();
    if converted.is_empty() {
        format!("X{name}")
    } else {
        converted
    }
}

/// An identifier token for a name already converted, escaping keywords.
pub(crate) fn ident(name: &str) -> Ident {
    if UNRAWABLE.contains(&name) {
        Ident::new(&format!("{name}_"), Span::call_site())
    } else if RAW_KEYWORDS.contains(&name) {
        Ident::new_raw(name, Span::call_site())
    } else {
        Ident::new(name, Span::call_site())
    }
}

/// Hands out distinct names within one Rust namespace.
#[derive(Debug, Default, Clone)]
pub(crate) struct Namer {
    used: HashSet<String>,
}

impl Namer {
    /// A namer in which `reserved` are already taken.
    pub(crate) fn with_reserved(reserved: &[&str]) -> Self {
        Namer {
            used: reserved.iter().map(|name| (*name).to_owned()).collect(),
        }
    }

    /// True if `name` is free.
    pub(crate) fn is_free(&self, name: &str) -> bool {
        !self.used.contains(name)
    }

    /// Takes `name`, or `name` with the first numeric suffix that is free
    /// (`name2`, or `name_2` for snake case names).
    pub(crate) fn claim(&mut self, name: &str) -> String {
        let chosen = self.first_free(name, |_| true);
        self.used.insert(chosen.clone());
        chosen
    }

    /// The first of `name`, `name2`, `name3`... for which `free` holds and
    /// which is free here.
    pub(crate) fn first_free(&self, name: &str, free: impl Fn(&str) -> bool) -> String {
        let separator = if name.contains('_') || name.chars().all(|c| !c.is_uppercase()) {
            "_"
        } else {
            ""
        };
        let mut candidate = name.to_owned();
        let mut n = 2;
        while !self.is_free(&candidate) || !free(&candidate) {
            candidate = format!("{name}{separator}{n}");
            n += 1;
        }
        candidate
    }

    /// Marks `name` as taken.
    pub(crate) fn insert(&mut self, name: String) {
        self.used.insert(name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions() {
        assert_eq!(camel("Invalid_Stock_Symbol"), "InvalidStockSymbol");
        assert_eq!(camel("RED"), "Red");
        assert_eq!(snake("getQuote"), "get_quote");
        assert_eq!(snake("IRObject"), "ir_object");
        assert_eq!(shouty("maxLength"), "MAX_LENGTH");
    }

    #[test]
    fn keywords_are_escaped() {
        assert_eq!(ident("type").to_string(), "r#type");
        assert_eq!(ident("self").to_string(), "self_");
        assert_eq!(ident("Self").to_string(), "Self_");
        assert_eq!(ident("point").to_string(), "point");
    }

    #[test]
    fn clashes_get_suffixes() {
        let mut namer = Namer::with_reserved(&["narrow"]);
        assert_eq!(namer.claim("narrow"), "narrow_2");
        assert_eq!(namer.claim("get_name"), "get_name");
        assert_eq!(namer.claim("get_name"), "get_name_2");
        assert_eq!(namer.claim("Point"), "Point");
        assert_eq!(namer.claim("Point"), "Point2");
    }
}
