//! Which definitions the Rust code needs: everything the main files
//! declare, and what those use from included files, transitively (with
//! the scopes that hold them). An included file's definitions that nothing
//! uses are not generated: a file that includes `orb.idl` for one typedef
//! does not carry the whole Interface Repository.

use std::collections::HashSet;

use crate::ir::{DefId, DefKind, Spec, Type};

/// The definitions to generate.
pub(super) fn needed(spec: &Spec) -> HashSet<DefId> {
    let mut stack: Vec<DefId> = spec
        .definitions()
        .filter(|(_, def)| def.from_main_file)
        .map(|(id, _)| id)
        .collect();
    let mut needed = HashSet::new();
    while let Some(id) = stack.pop() {
        if !needed.insert(id) {
            continue;
        }
        let def = &spec[id];
        stack.extend(def.parent);
        let mut types: Vec<&Type> = Vec::new();
        match &def.kind {
            DefKind::Module(_) | DefKind::Enum(_) | DefKind::Native => {}
            DefKind::Interface(i) => {
                stack.extend(&i.bases);
                stack.extend(&i.contents);
            }
            DefKind::ValueType(v) => {
                stack.extend(&v.bases);
                stack.extend(&v.supports);
                stack.extend(&v.contents);
                types.extend(v.state_members.iter().map(|s| &s.member.ty));
            }
            DefKind::Struct(s) => {
                stack.extend(&s.nested);
                types.extend(s.members.iter().map(|m| &m.ty));
            }
            DefKind::Exception(e) => {
                stack.extend(&e.nested);
                types.extend(e.members.iter().map(|m| &m.ty));
            }
            DefKind::Union(u) => {
                stack.extend(&u.nested);
                types.push(&u.discriminator);
                types.extend(u.cases.iter().map(|c| &c.member.ty));
            }
            DefKind::Typedef(t) => types.push(&t.ty),
            DefKind::Const(c) => types.push(&c.ty),
            DefKind::ValueBox(b) => types.push(&b.ty),
            DefKind::Operation(op) => {
                stack.extend(&op.raises);
                types.extend(&op.return_type);
                types.extend(op.params.iter().map(|p| &p.ty));
            }
            DefKind::Attribute(a) => {
                stack.extend(&a.get_raises);
                stack.extend(&a.set_raises);
                types.push(&a.ty);
            }
        }
        while let Some(ty) = types.pop() {
            match ty {
                Type::Named(named) => stack.push(*named),
                Type::Sequence { element, .. } | Type::Array { element, .. } => types.push(element),
                _ => {}
            }
        }
    }
    needed
}
