//! What the back end can map, and which types are recursive.
//!
//! A definition is left out when the Rust mapping does not cover it yet
//! (valuetypes, value boxes, `ValueBase`), or when it uses a type that is
//! left out or that cannot travel in a remote call (a native type or a
//! local interface outside a local interface's operations). Leaving out is
//! transitive, so it is computed to a fixed point.

use std::collections::HashSet;

use super::Generator;
use crate::ir::{DefId, DefKind, InterfaceKind, Type};

impl Generator<'_> {
    pub(super) fn find_left_out(&mut self) {
        let ids: Vec<DefId> = self.spec.definitions().map(|(id, _)| id).collect();
        // Valuetypes and value boxes, with everything declared inside them.
        for &id in &ids {
            let mut reason = None;
            let mut at = Some(id);
            while let Some(current) = at {
                let def = &self.spec[current];
                match &def.kind {
                    DefKind::ValueType(_) => {
                        reason = Some(if current == id {
                            "valuetypes are not supported by the Rust back end yet".to_owned()
                        } else {
                            format!("it is declared in the valuetype {}", def.absolute_name())
                        });
                    }
                    DefKind::ValueBox(_) => {
                        reason = Some(
                            "value boxes are not supported by the Rust back end yet".to_owned(),
                        );
                    }
                    _ => {}
                }
                at = def.parent;
            }
            if let Some(reason) = reason {
                self.left_out.insert(id, reason);
            }
        }
        loop {
            let mut changed = false;
            for &id in &ids {
                if self.left_out.contains_key(&id) {
                    continue;
                }
                if let Some(reason) = self.unsupported_definition(id) {
                    self.left_out.insert(id, reason);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
    }

    fn unsupported_definition(&self, id: DefId) -> Option<String> {
        let def = &self.spec[id];
        let in_local = def
            .parent
            .is_some_and(|parent| self.is_local_interface(parent));
        match &def.kind {
            DefKind::Struct(s) => s
                .members
                .iter()
                .find_map(|m| self.unsupported_type(&m.ty, false)),
            DefKind::Exception(e) => e
                .members
                .iter()
                .find_map(|m| self.unsupported_type(&m.ty, false)),
            DefKind::Union(u) => self.unsupported_type(&u.discriminator, false).or_else(|| {
                u.cases
                    .iter()
                    .find_map(|c| self.unsupported_type(&c.member.ty, false))
            }),
            DefKind::Typedef(t) => self.unsupported_type(&t.ty, true),
            DefKind::Operation(op) => op
                .return_type
                .iter()
                .chain(op.params.iter().map(|p| &p.ty))
                .find_map(|ty| self.unsupported_type(ty, in_local))
                .or_else(|| self.left_out_exception(&op.raises)),
            DefKind::Attribute(attribute) => self
                .unsupported_type(&attribute.ty, in_local)
                .or_else(|| self.left_out_exception(&attribute.get_raises))
                .or_else(|| self.left_out_exception(&attribute.set_raises)),
            _ => None,
        }
    }

    fn left_out_exception(&self, raises: &[DefId]) -> Option<String> {
        raises.iter().find_map(|id| {
            self.left_out.contains_key(id).then(|| {
                format!(
                    "it raises {}, which is left out",
                    self.spec[*id].absolute_name()
                )
            })
        })
    }

    pub(super) fn is_local_interface(&self, id: DefId) -> bool {
        matches!(&self.spec[id].kind, DefKind::Interface(i) if i.kind == InterfaceKind::Local)
    }

    /// Why `ty` cannot be used here, if it cannot. `local` is true in the
    /// operations of local interfaces (and in typedefs, which are checked
    /// again where they are used).
    fn unsupported_type(&self, ty: &Type, local: bool) -> Option<String> {
        match ty {
            Type::ValueBase => {
                Some("ValueBase is not supported by the Rust back end yet".to_owned())
            }
            Type::Sequence { element, .. } | Type::Array { element, .. } => {
                self.unsupported_type(element, local)
            }
            Type::Named(id) => {
                let def = &self.spec[*id];
                if self.left_out.contains_key(id) {
                    return Some(format!(
                        "it uses {}, which is left out",
                        def.absolute_name()
                    ));
                }
                match &def.kind {
                    DefKind::Typedef(t) => self.unsupported_type(&t.ty, local),
                    DefKind::Native if !local => Some(format!(
                        "the native type {} cannot be marshalled",
                        def.absolute_name()
                    )),
                    DefKind::Interface(i) if i.kind == InterfaceKind::Local && !local => {
                        Some(format!(
                            "the local interface {} cannot be marshalled",
                            def.absolute_name()
                        ))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Finds the structs, unions, exceptions and typedefs that can reach
    /// themselves through member types (only possible through sequences).
    pub(super) fn find_recursive(&mut self) {
        let ids: Vec<DefId> = self
            .spec
            .definitions()
            .filter(|(_, def)| {
                matches!(
                    def.kind,
                    DefKind::Struct(_)
                        | DefKind::Union(_)
                        | DefKind::Exception(_)
                        | DefKind::Typedef(_)
                )
            })
            .map(|(id, _)| id)
            .collect();
        for id in ids {
            let mut seen = HashSet::new();
            let mut stack: Vec<DefId> = self.type_children(id);
            while let Some(next) = stack.pop() {
                if next == id {
                    self.recursive.insert(id);
                    break;
                }
                if seen.insert(next) {
                    stack.extend(self.type_children(next));
                }
            }
        }
    }

    /// The named types a struct, union, exception or typedef mentions.
    fn type_children(&self, id: DefId) -> Vec<DefId> {
        fn walk(ty: &Type, out: &mut Vec<DefId>) {
            match ty {
                Type::Named(id) => out.push(*id),
                Type::Sequence { element, .. } | Type::Array { element, .. } => walk(element, out),
                _ => {}
            }
        }
        let mut out = Vec::new();
        match &self.spec[id].kind {
            DefKind::Struct(s) => s.members.iter().for_each(|m| walk(&m.ty, &mut out)),
            DefKind::Exception(e) => e.members.iter().for_each(|m| walk(&m.ty, &mut out)),
            DefKind::Union(u) => {
                walk(&u.discriminator, &mut out);
                u.cases.iter().for_each(|c| walk(&c.member.ty, &mut out));
            }
            DefKind::Typedef(t) => walk(&t.ty, &mut out),
            _ => {}
        }
        out
    }
}
