//! The names an interface's stub and its reply handler's stub give the
//! operations and attributes it inherits.
//!
//! Each operation's code lives in the interface that declares it, under
//! the names that interface's [`Namer`] gave it there; a derived stub
//! delegates to it. Two bases can each have a method of the same Rust
//! name (the operation `my_factory` of one and the attribute `MyFactory`
//! of another, both `my_factory`; or the AMI forms of the operation
//! `getValue` and of the attribute `value`, both `sendc_get_value`), which
//! would be two methods of one name on the derived stub. The rule:
//!
//! - an interface's stub names each inherited member as its direct bases'
//!   stubs do, taking the bases in the order the IDL lists them (a member
//!   reached through two bases, as in a diamond, is named by the first);
//! - when two different members would have the same name, the later one
//!   takes the first free numeric suffix (`my_factory_2`): synchronous
//!   methods are named first, then the AMI methods, then (in their own
//!   namespace) the reply handler's methods;
//! - the interface's own members are named after every inherited name,
//!   as before.
//!
//! So the same IDL always gives the same names; a base's own stub and
//! trait keep theirs (they cannot know their derived interfaces); an
//! interface derived along one line of bases names inherited methods as
//! its bases do; and IDL whose inherited names never meet is named as it
//! always was.
//!
//! Servant traits are not renamed: the derived trait has the bases'
//! traits as supertraits, each with its own methods. A servant implements
//! each base's trait in its own `impl` block, where `my_factory` means
//! that base's; code that holds the servant calls them by trait
//! (`KeeperServant::my_factory(&servant)`), since `servant.my_factory()`
//! would be ambiguous. The derived servant trait's documentation lists the
//! methods its supertraits share.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::names::Namer;
use super::{AmiNames, Generator, RESERVED_METHODS};
use crate::ir::{DefId, DefKind};

/// The names one interface's stubs give one operation or attribute.
#[derive(Debug, Clone, Default)]
pub(super) struct MemberNames {
    /// The stub method (an attribute's getter).
    pub(super) method: String,
    /// An attribute's setter.
    pub(super) setter: Option<String>,
    /// The AMI methods of each two-way call (the operation, or the
    /// getter then the setter), when AMI is on.
    pub(super) ami: Vec<AmiNames>,
    /// The reply handler stub's methods (per two-way call, the reply's
    /// then the exception's), when AMI is on.
    pub(super) handler: Vec<String>,
}

/// The names one interface's stubs give every member, inherited ones
/// first.
#[derive(Debug, Default)]
pub(super) struct InterfaceNames {
    order: Vec<DefId>,
    by_member: HashMap<DefId, MemberNames>,
}

impl InterfaceNames {
    /// The names of `member` here, if the interface has it.
    pub(super) fn get(&self, member: DefId) -> Option<&MemberNames> {
        self.by_member.get(&member)
    }

    /// Adds `member`'s names after those already in.
    fn push(&mut self, member: DefId, names: MemberNames) {
        self.order.push(member);
        self.by_member.insert(member, names);
    }
}

impl Generator<'_> {
    /// The names `interface`'s stub and reply handler stub give each of
    /// its operations and attributes, inherited ones included. Names the
    /// interface's own members too (`op_names`, `handler_methods`).
    pub(super) fn interface_names(&mut self, interface: DefId) -> Arc<InterfaceNames> {
        if let Some(names) = self.interface_names.get(&interface) {
            return Arc::clone(names);
        }
        let (mut names, methods, handler_methods) = self.inherited_names(interface);
        self.assign_op_names(interface, methods);
        if self.options.ami && self.is_remote_interface(interface) {
            self.assign_handler_method_names(interface, handler_methods);
        }
        let spec = self.spec;
        for &member in spec.contents(interface) {
            if !matches!(
                spec[member].kind,
                DefKind::Operation(_) | DefKind::Attribute(_)
            ) {
                continue;
            }
            let own = self.op_names.get(&member).cloned().unwrap_or_default();
            names.push(
                member,
                MemberNames {
                    method: own.method,
                    setter: own.setter,
                    ami: own.ami,
                    handler: self
                        .handler_methods
                        .get(&member)
                        .cloned()
                        .unwrap_or_default(),
                },
            );
        }
        let names = Arc::new(names);
        self.interface_names.insert(interface, Arc::clone(&names));
        names
    }

    /// The names of the members `interface` inherits (see the module
    /// docs), and the namers of its stub's and its handler stub's methods
    /// with those names taken.
    fn inherited_names(&mut self, interface: DefId) -> (InterfaceNames, Namer, Namer) {
        let mut inherited: Vec<(DefId, MemberNames)> = Vec::new();
        let mut seen = HashSet::new();
        for base in self.spec.direct_bases(interface) {
            let names = self.interface_names(base);
            for &member in &names.order {
                if let Some(member_names) = names.get(member).filter(|_| seen.insert(member)) {
                    inherited.push((member, member_names.clone()));
                }
            }
        }
        let mut methods = Namer::with_reserved(RESERVED_METHODS);
        let mut handler_methods = Namer::with_reserved(RESERVED_METHODS);
        for (_, names) in &mut inherited {
            names.method = methods.claim(&names.method);
            if let Some(setter) = &mut names.setter {
                *setter = methods.claim(setter);
            }
        }
        for (_, names) in &mut inherited {
            for ami in &mut names.ami {
                ami.sendc = methods.claim(&ami.sendc);
                ami.sendp = methods.claim(&ami.sendp);
                ami.future = methods.claim(&ami.future);
            }
            for handler in &mut names.handler {
                *handler = handler_methods.claim(handler);
            }
        }
        let mut out = InterfaceNames::default();
        for (member, names) in inherited {
            out.push(member, names);
        }
        (out, methods, handler_methods)
    }
}
