//! The stringified-name syntax of `CosNaming::NamingContextExt` and its
//! URLs: `to_string`, `to_name` and `to_url`, as plain functions that
//! clients can use without asking a naming service.
//!
//! A stringified name is its components joined by `/`; a component is its
//! `id`, then `.` and its `kind` when the kind is not empty; a component
//! whose id and kind are both empty is a lone `.`. A `\` escapes `/`, `.`
//! and `\` inside an id or a kind:
//!
//! ```
//! use armillary_naming::cos_naming::NameComponent;
//! use armillary_naming::name;
//!
//! let n = name::to_name(r"dir.ctx/a\/b.txt").unwrap();
//! assert_eq!(n[1], NameComponent { id: "a/b".into(), kind: "txt".into() });
//! assert_eq!(name::to_string(&n).unwrap(), r"dir.ctx/a\/b.txt");
//! assert_eq!(
//!     name::to_url(":host:2809", "a b/c").unwrap(),
//!     "corbaname::host:2809#a%20b/c"
//! );
//! ```

use armillary::giop::ior::{escape, ObjectUrl};

use crate::cos_naming::{Name, NameComponent};

/// Why a name or a stringified name is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// The name has no component (or the string is empty).
    #[error("a name needs at least one component")]
    Empty,
    /// The string has an empty component: `a//b`, or a leading or
    /// trailing `/`. (The component with an empty id and kind is `.`.)
    #[error("component {index} is empty (write `.` for an empty id and kind)")]
    EmptyComponent {
        /// The component's index, from 0.
        index: usize,
    },
    /// Component `index` has more than one unescaped `.`.
    #[error("component {index} has more than one unescaped `.`")]
    TwoDots {
        /// The component's index, from 0.
        index: usize,
    },
    /// Component `index` ends with an unescaped `.` (`id.`: an empty kind
    /// is written by leaving out the `.`).
    #[error("component {index} ends with an unescaped `.`")]
    TrailingDot {
        /// The component's index, from 0.
        index: usize,
    },
    /// A `\` at byte `offset` is not followed by `/`, `.` or `\`.
    #[error("bad escape at byte {offset}: `\\` escapes only `/`, `.` and `\\`")]
    BadEscape {
        /// The byte offset of the `\`.
        offset: usize,
    },
}

/// Why `to_url` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// The address is not a corbaloc address list (such as `:host:2809`
    /// or `iiop:1.2@host:2809,:other`), optionally followed by `/key`.
    #[error("not a corbaloc address: {0:?}")]
    InvalidAddress(String),
    /// The stringified name is not valid.
    #[error(transparent)]
    InvalidName(#[from] NameError),
}

/// The stringified form of `name` (`NamingContextExt::to_string`).
///
/// ```
/// use armillary_naming::cos_naming::NameComponent;
/// let c = |id: &str, kind: &str| NameComponent { id: id.into(), kind: kind.into() };
/// let s = armillary_naming::name::to_string(&[c("a.b", ""), c("", "k"), c("", "")]);
/// assert_eq!(s.unwrap(), r"a\.b/.k/.");
/// ```
pub fn to_string(name: &[NameComponent]) -> Result<String, NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    let mut out = String::new();
    for (index, component) in name.iter().enumerate() {
        if index > 0 {
            out.push('/');
        }
        if component.id.is_empty() && component.kind.is_empty() {
            out.push('.');
            continue;
        }
        escape_into(&component.id, &mut out);
        if !component.kind.is_empty() {
            out.push('.');
            escape_into(&component.kind, &mut out);
        }
    }
    Ok(out)
}

fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        if matches!(c, '/' | '.' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
}

/// The name a stringified name stands for (`NamingContextExt::to_name`).
///
/// ```
/// use armillary_naming::name::{to_name, NameError};
/// assert_eq!(to_name("a.b/c").unwrap().len(), 2);
/// assert_eq!(to_name("a//c"), Err(NameError::EmptyComponent { index: 1 }));
/// ```
pub fn to_name(sn: &str) -> Result<Name, NameError> {
    if sn.is_empty() {
        return Err(NameError::Empty);
    }
    let mut name = Vec::new();
    let mut part = Part::default();
    let mut chars = sn.char_indices();
    while let Some((offset, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped @ ('/' | '.' | '\\'))) => part.push(escaped),
                _ => return Err(NameError::BadEscape { offset }),
            },
            '/' => {
                let index = name.len();
                name.push(std::mem::take(&mut part).finish(index)?);
            }
            '.' => {
                if part.in_kind {
                    return Err(NameError::TwoDots { index: name.len() });
                }
                part.in_kind = true;
                part.written += 1;
            }
            other => part.push(other),
        }
    }
    let index = name.len();
    name.push(part.finish(index)?);
    Ok(name)
}

/// One component being read by [`to_name`].
#[derive(Default)]
struct Part {
    id: String,
    kind: String,
    in_kind: bool,
    /// Characters (escapes counting once) written for this component.
    written: usize,
}

impl Part {
    fn push(&mut self, c: char) {
        self.written += 1;
        if self.in_kind {
            self.kind.push(c);
        } else {
            self.id.push(c);
        }
    }

    fn finish(self, index: usize) -> Result<NameComponent, NameError> {
        if self.written == 0 {
            return Err(NameError::EmptyComponent { index });
        }
        // `id.` (but not the lone `.`, which is the empty component).
        if self.in_kind && self.kind.is_empty() && !self.id.is_empty() {
            return Err(NameError::TrailingDot { index });
        }
        Ok(NameComponent {
            id: self.id,
            kind: self.kind,
        })
    }
}

/// A `corbaname:` URL for the name `sn` in the naming service at `addr`
/// (`NamingContextExt::to_url`): `corbaname:<addr>#<sn>`, with the
/// characters of `sn` that a URL may not hold written as `%XX`.
///
/// `addr` is a corbaloc address list with an optional `/key` (`:host`,
/// `iiop:1.2@host:2809`, `rir:`).
pub fn to_url(addr: &str, sn: &str) -> Result<String, UrlError> {
    let invalid = || UrlError::InvalidAddress(addr.to_owned());
    if addr.is_empty() || addr.contains('#') {
        return Err(invalid());
    }
    match format!("corbaname:{addr}").parse::<ObjectUrl>() {
        Ok(ObjectUrl::Corbaname { .. }) => {}
        _ => return Err(invalid()),
    }
    to_name(sn)?;
    Ok(format!("corbaname:{addr}#{}", escape(sn.as_bytes())))
}

/// Checks a name given to an operation of a context: it has a component,
/// and no component has both an empty id and an empty kind (a restriction
/// of this implementation, which the specification allows).
pub(crate) fn check(name: &[NameComponent]) -> Result<(), NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    match name
        .iter()
        .position(|c| c.id.is_empty() && c.kind.is_empty())
    {
        Some(index) => Err(NameError::EmptyComponent { index }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `sn` and prints the components as `id|kind`, joined by
    /// spaces, or the error; then checks that printing the name back
    /// gives `sn` again (when `sn` is in canonical form).
    fn check_parse(sn: &str, expect: &str) {
        let got = match to_name(sn) {
            Ok(name) => {
                let shown: Vec<String> = name
                    .iter()
                    .map(|c| format!("{}|{}", c.id, c.kind))
                    .collect();
                let back = to_string(&name).expect("a parsed name prints");
                assert_eq!(to_name(&back).as_ref(), Ok(&name), "{sn} -> {back}");
                shown.join(" ")
            }
            Err(e) => format!("error: {e:?}"),
        };
        assert_eq!(got, expect, "to_name({sn:?})");
    }

    #[test]
    fn parses_the_string_name_syntax() {
        check_parse("a", "a|");
        check_parse("a.b", "a|b");
        check_parse("a.b/c.d/e", "a|b c|d e|");
        check_parse(".k", "|k");
        check_parse(".", "|");
        check_parse("./.", "| |");
        check_parse(r"a\/b", "a/b|");
        check_parse(r"a\.b.c\.d", "a.b|c.d");
        check_parse(r"a\\.b\\", r"a\|b\");
        check_parse(r"\.", ".|");
        check_parse("", "error: Empty");
        check_parse("/", "error: EmptyComponent { index: 0 }");
        check_parse("a/", "error: EmptyComponent { index: 1 }");
        check_parse("/a", "error: EmptyComponent { index: 0 }");
        check_parse("a//b", "error: EmptyComponent { index: 1 }");
        check_parse("a.b.c", "error: TwoDots { index: 0 }");
        check_parse("x/..", "error: TwoDots { index: 1 }");
        check_parse("a.", "error: TrailingDot { index: 0 }");
        check_parse(r"a\", "error: BadEscape { offset: 1 }");
        check_parse(r"ab\c", "error: BadEscape { offset: 2 }");
        check_parse("é.ü", "é|ü");
    }

    fn component(id: &str, kind: &str) -> NameComponent {
        NameComponent {
            id: id.into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn prints_names_with_escapes() {
        let check = |name: &[NameComponent], expect: &str| {
            assert_eq!(to_string(name).as_deref(), Ok(expect));
        };
        check(&[component("a", "")], "a");
        check(&[component("a", "b"), component("c", "")], "a.b/c");
        check(&[component("", "k")], ".k");
        check(&[component("", "")], ".");
        check(&[component("a/b.c", r"d\e")], r"a\/b\.c.d\\e");
        assert_eq!(to_string(&[]), Err(NameError::Empty));
    }

    #[test]
    fn makes_urls() {
        let check = |addr: &str, sn: &str, expect: &str| {
            let got = match to_url(addr, sn) {
                Ok(url) => url,
                Err(e) => format!("error: {e:?}"),
            };
            assert_eq!(got, expect, "to_url({addr:?}, {sn:?})");
        };
        check(":host:2809", "a/b.c", "corbaname::host:2809#a/b.c");
        check(
            "iiop:1.2@host:2809,:other/NameService",
            "x",
            "corbaname:iiop:1.2@host:2809,:other/NameService#x",
        );
        check("rir:", "a", "corbaname:rir:#a");
        check(":h", r"a b\/c%", "corbaname::h#a%20b%5C/c%25");
        check(":h", "é", "corbaname::h#%C3%A9");
        check(":h", "a<>\"#", "corbaname::h#a%3C%3E%22%23");
        check("", "a", r#"error: InvalidAddress("")"#);
        check("host", "a", r#"error: InvalidAddress("host")"#);
        check(":h#x", "a", "error: InvalidAddress(\":h#x\")");
        check(
            ":h",
            "a//b",
            "error: InvalidName(EmptyComponent { index: 1 })",
        );
        check(":h", "", "error: InvalidName(Empty)");
    }

    proptest::proptest! {
        /// Every name prints, and reads back as itself.
        #[test]
        fn names_round_trip(
            parts in proptest::collection::vec(("[a./\\\\é]{0,4}", "[b./\\\\]{0,3}"), 1..5)
        ) {
            let name: Name = parts
                .into_iter()
                .map(|(id, kind)| NameComponent { id, kind })
                .collect();
            let sn = to_string(&name).unwrap();
            proptest::prop_assert_eq!(to_name(&sn), Ok(name));
        }
    }

    #[test]
    fn checks_names_given_to_contexts() {
        assert_eq!(check(&[]), Err(NameError::Empty));
        assert_eq!(
            check(&[component("a", ""), component("", "")]),
            Err(NameError::EmptyComponent { index: 1 })
        );
        assert_eq!(check(&[component("", "k")]), Ok(()));
    }
}
