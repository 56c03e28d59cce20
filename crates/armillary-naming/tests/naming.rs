//! The in-memory naming service through a real ORB over IIOP: every
//! operation of `NamingContextExt` and `BindingIterator` called with the
//! generated stubs on references that went through a string (as a remote
//! client's would), each exception checked with its fields.

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::poa::PoaError;
use armillary::WaitForCompletion;
use armillary::{ObjectRef, Orb};
use armillary_naming::cos_naming::naming_context::{
    AlreadyBound, BindContextError, BindError, BindNewContextError, CannotProceed, DestroyError,
    InvalidName, NotFound, NotFoundReason, RebindContextError, RebindError, ResolveError,
    UnbindError,
};
use armillary_naming::cos_naming::naming_context_ext::{
    ResolveStrError, ToNameError, ToStringError, ToUrlError,
};
use armillary_naming::cos_naming::{
    Binding, BindingIterator, BindingType, Name, NameComponent, NamingContext, NamingContextExt,
};
use armillary_naming::{minor, StartError};

/// An ORB serving a naming service, and its root as a remote client sees
/// it.
struct Service {
    orb: Orb,
    root: NamingContextExt,
}

impl Drop for Service {
    fn drop(&mut self) {
        self.orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
}

fn service() -> Service {
    let config = OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(2));
    let orb = Orb::with_config(config).unwrap();
    let root = armillary_naming::start(&orb).unwrap();
    let root = remote(&orb, root.as_object());
    Service { orb, root }
}

/// `object` through its stringified IOR.
fn remote(orb: &Orb, object: &ObjectRef) -> NamingContextExt {
    let object = orb.string_to_object(&orb.object_to_string(object)).unwrap();
    NamingContextExt::narrow(&object)
        .unwrap()
        .expect("a NamingContextExt")
}

/// The name `sn` in the stringified syntax.
fn n(sn: &str) -> Name {
    armillary_naming::name::to_name(sn).unwrap()
}

fn component(id: &str, kind: &str) -> NameComponent {
    NameComponent {
        id: id.into(),
        kind: kind.into(),
    }
}

fn not_found(why: NotFoundReason, rest: &str) -> NotFound {
    NotFound {
        why,
        rest_of_name: n(rest),
    }
}

/// A reference to an object that is never called.
fn object(orb: &Orb, key: &str) -> ObjectRef {
    orb.string_to_object(&format!("corbaloc::127.0.0.1:1/{key}"))
        .unwrap()
}

#[test]
fn binds_resolves_rebinds_and_unbinds() {
    let s = service();
    let a = object(&s.orb, "a");
    let b = object(&s.orb, "b");
    s.root.bind(&n("a.obj"), &a).unwrap();
    assert_eq!(s.root.resolve(&n("a.obj")).unwrap(), a);
    // id and kind both count: "a" is another name.
    assert_eq!(
        s.root.resolve(&n("a")),
        Err(ResolveError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "a"
        )))
    );
    assert_eq!(
        s.root.bind(&n("a.obj"), &b),
        Err(BindError::AlreadyBound(AlreadyBound {}))
    );
    s.root.rebind(&n("a.obj"), &b).unwrap();
    assert_eq!(s.root.resolve(&n("a.obj")).unwrap(), b);
    // rebind of a new name binds it.
    s.root.rebind(&n("c"), &a).unwrap();
    assert_eq!(s.root.resolve_str("c").unwrap(), a);
    s.root.unbind(&n("a.obj")).unwrap();
    assert_eq!(
        s.root.unbind(&n("a.obj")),
        Err(UnbindError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "a.obj"
        )))
    );
    assert_eq!(
        s.root.resolve(&n("a.obj")),
        Err(ResolveError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "a.obj"
        )))
    );
}

#[test]
fn resolves_compound_names_through_contexts() {
    let s = service();
    let x = object(&s.orb, "x");
    let a = s.root.bind_new_context(&n("a")).unwrap();
    let b = a.bind_new_context(&n("b.dir")).unwrap();
    s.root.bind(&n("a/b.dir/x.obj"), &x).unwrap();
    assert_eq!(s.root.resolve(&n("a/b.dir/x.obj")).unwrap(), x);
    assert_eq!(b.resolve(&n("x.obj")).unwrap(), x);
    assert_eq!(
        s.root.resolve(&n("a/b.dir")).unwrap(),
        b.clone().into_object()
    );
    let b_ext = NamingContextExt::narrow(&s.root.resolve_str("a/b.dir").unwrap())
        .unwrap()
        .expect("new contexts are NamingContextExt");
    assert_eq!(b_ext.resolve_str("x.obj").unwrap(), x);

    // Every name operation goes through the compound name.
    let y = object(&s.orb, "y");
    s.root.rebind(&n("a/b.dir/x.obj"), &y).unwrap();
    assert_eq!(b.resolve(&n("x.obj")).unwrap(), y);
    let c = s.root.new_context().unwrap();
    s.root.bind_context(&n("a/b.dir/c"), &c).unwrap();
    assert_eq!(b.resolve(&n("c")).unwrap(), c.clone().into_object());
    s.root.rebind_context(&n("a/b.dir/c"), &b).unwrap();
    s.root.bind(&n("a/b.dir/c/loop"), &x).unwrap();
    assert_eq!(s.root.resolve_str("a/b.dir/c/c/c/loop").unwrap(), x);
    s.root.unbind(&n("a/b.dir/x.obj")).unwrap();
    assert!(b.resolve(&n("x.obj")).is_err());

    // A missing node in the middle: rest_of_name starts at it.
    assert_eq!(
        s.root.resolve(&n("a/nope/x")),
        Err(ResolveError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "nope/x"
        )))
    );
    assert_eq!(
        s.root.bind(&n("a/nope/x"), &x),
        Err(BindError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "nope/x"
        )))
    );
    // An object (even a context bound with bind) in the middle: not_context.
    s.root.bind(&n("a/obj"), &x).unwrap();
    s.root
        .bind(&n("a/ctx_as_object"), &c.clone().into_object())
        .unwrap();
    for name in ["a/obj/x.y/z", "a/ctx_as_object/x.y/z"] {
        let rest = &name[2..];
        assert_eq!(
            s.root.resolve(&n(name)),
            Err(ResolveError::NotFound(not_found(
                NotFoundReason::NotContext,
                rest
            ))),
            "{name}"
        );
        assert_eq!(
            s.root.unbind(&n(name)),
            Err(UnbindError::NotFound(not_found(
                NotFoundReason::NotContext,
                rest
            ))),
            "{name}"
        );
    }
}

#[test]
fn raises_invalid_name() {
    let s = service();
    let x = object(&s.orb, "x");
    let invalid = InvalidName {};
    assert_eq!(
        s.root.bind(&[], &x),
        Err(BindError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.resolve(&[]),
        Err(ResolveError::InvalidName(invalid.clone()))
    );
    let empty_component = [component("a", ""), component("", "")];
    s.root.bind_new_context(&n("a")).unwrap();
    assert_eq!(
        s.root.bind(&empty_component, &x),
        Err(BindError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.rebind(&empty_component, &x),
        Err(RebindError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.unbind(&[]),
        Err(UnbindError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.bind_new_context(&[]),
        Err(BindNewContextError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.bind_context(&[], &s.root.clone().into()),
        Err(BindContextError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.resolve_str("a//b"),
        Err(ResolveStrError::InvalidName(invalid.clone()))
    );
    assert_eq!(
        s.root.resolve_str("."),
        Err(ResolveStrError::InvalidName(invalid.clone()))
    );
    // An empty id with a kind is a valid name.
    s.root.bind(&n(".k"), &x).unwrap();
    assert_eq!(s.root.resolve(&[component("", "k")]).unwrap(), x);
}

#[test]
fn rebind_keeps_the_binding_type() {
    let s = service();
    let x = object(&s.orb, "x");
    let ctx = s.root.bind_new_context(&n("ctx")).unwrap();
    s.root.bind(&n("obj"), &x).unwrap();
    // rebind over a context binding: not_object.
    assert_eq!(
        s.root.rebind(&n("ctx"), &x),
        Err(RebindError::NotFound(not_found(
            NotFoundReason::NotObject,
            "ctx"
        )))
    );
    // rebind_context over an object binding: not_context.
    assert_eq!(
        s.root.rebind_context(&n("obj"), &ctx),
        Err(RebindContextError::NotFound(not_found(
            NotFoundReason::NotContext,
            "obj"
        )))
    );
    assert_eq!(
        s.root.bind_context(&n("ctx"), &ctx),
        Err(BindContextError::AlreadyBound(AlreadyBound {}))
    );
    assert_eq!(
        s.root.bind_new_context(&n("obj")),
        Err(BindNewContextError::AlreadyBound(AlreadyBound {}))
    );
    // Nothing changed.
    assert_eq!(s.root.resolve_str("obj").unwrap(), x);
    assert_eq!(s.root.resolve_str("ctx").unwrap(), ctx.into_object());
    // A nil reference cannot be bound.
    match s.root.bind(&n("nil"), &ObjectRef::nil()) {
        Err(BindError::System(e)) => {
            assert_eq!(e.kind(), SystemExceptionKind::BadParam);
            assert_eq!(e.minor(), minor::NIL_REFERENCE);
        }
        other => panic!("{other:?}"),
    }
    match s
        .root
        .bind_context(&n("nil"), &NamingContext::from_object(ObjectRef::nil()))
    {
        Err(BindContextError::System(e)) => {
            assert_eq!(e.kind(), SystemExceptionKind::BadParam);
            assert_eq!(e.minor(), minor::NIL_REFERENCE);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cannot_proceed_past_unreachable_contexts() {
    let s = service();
    // A context of this service, destroyed while still bound.
    let dead = s.root.bind_new_context(&n("dead")).unwrap();
    dead.destroy().unwrap();
    assert_eq!(
        s.root.resolve(&n("dead/x.y/z")),
        Err(ResolveError::CannotProceed(CannotProceed {
            cxt: dead.clone(),
            rest_of_name: n("x.y/z"),
        }))
    );
    // The binding itself is still there.
    assert_eq!(
        s.root.resolve_str("dead").unwrap(),
        dead.clone().into_object()
    );
    // A context of another server that does not answer.
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let away = NamingContext::from_object(
        s.orb
            .string_to_object(&format!("corbaloc::127.0.0.1:{closed_port}/NameService"))
            .unwrap(),
    );
    s.root.bind_context(&n("away"), &away).unwrap();
    let expected = CannotProceed {
        cxt: away.clone(),
        rest_of_name: n("x"),
    };
    assert_eq!(
        s.root.resolve(&n("away/x")),
        Err(ResolveError::CannotProceed(expected.clone()))
    );
    assert_eq!(
        s.root.bind(&n("away/x"), &dead.clone().into_object()),
        Err(BindError::CannotProceed(expected.clone()))
    );
    assert_eq!(
        s.root.bind_new_context(&n("away/x")),
        Err(BindNewContextError::CannotProceed(expected.clone()))
    );
    assert_eq!(
        s.root.resolve_str("away/x"),
        Err(ResolveStrError::CannotProceed(expected))
    );
}

#[test]
fn hands_names_to_contexts_of_other_servers() {
    let here = service();
    let there = service();
    let x = object(&here.orb, "x");
    // `there`'s root, as `here`'s ORB sees it.
    let there_root = remote(&here.orb, there.root.as_object());
    here.root
        .bind_context(&n("there"), &there_root.clone().into())
        .unwrap();
    let sub = here.root.bind_new_context(&n("there/sub")).unwrap();
    here.root.bind(&n("there/sub/x.obj"), &x).unwrap();
    assert_eq!(there.root.resolve_str("sub/x.obj").unwrap(), x);
    assert_eq!(here.root.resolve_str("there/sub/x.obj").unwrap(), x);
    here.root
        .rebind(&n("there/sub/x.obj"), &sub.clone().into_object())
        .unwrap();
    here.root.rebind_context(&n("there/sub2"), &sub).unwrap();
    here.root.bind_context(&n("there/sub3"), &sub).unwrap();
    assert_eq!(
        here.root.resolve(&n("there/sub/x.obj")).unwrap(),
        sub.clone().into_object()
    );
    // The other server's exceptions come back as it raised them, with its
    // rest_of_name.
    assert_eq!(
        here.root.resolve(&n("there/sub/none/y")),
        Err(ResolveError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "none/y"
        )))
    );
    assert_eq!(
        here.root.bind_new_context(&n("there/sub")),
        Err(BindNewContextError::AlreadyBound(AlreadyBound {}))
    );
    here.root.unbind(&n("there/sub/x.obj")).unwrap();
    assert!(there.root.resolve_str("sub/x.obj").is_err());
}

#[test]
fn lists_with_an_iterator() {
    let s = service();
    let ctx = s.root.bind_new_context(&n("list")).unwrap();
    let x = object(&s.orb, "x");
    for name in ["e", "d.k", "c", "b", "a"] {
        ctx.bind(&n(name), &x).unwrap();
    }
    ctx.bind_new_context(&n("sub")).unwrap();
    let binding = |sn: &str, binding_type| Binding {
        binding_name: n(sn),
        binding_type,
    };
    let all: Vec<Binding> = ["a", "b", "c", "d.k", "e"]
        .iter()
        .map(|sn| binding(sn, BindingType::Nobject))
        .chain([binding("sub", BindingType::Ncontext)])
        .collect();

    // Everything fits: no iterator.
    let (list, iterator) = ctx.list(100).unwrap();
    assert_eq!(list, all);
    assert!(iterator.is_nil());

    let (list, iterator) = ctx.list(2).unwrap();
    assert_eq!(list, all[..2]);
    assert_eq!(iterator.next_one().unwrap(), (true, all[2].clone()));
    assert_eq!(iterator.next_n(2).unwrap(), (true, all[3..5].to_vec()));
    assert_eq!(iterator.next_n(10).unwrap(), (true, all[5..].to_vec()));
    assert_eq!(iterator.next_n(10).unwrap(), (false, vec![]));
    assert!(!iterator.next_one().unwrap().0);
    let e = iterator.next_n(0).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadParam);
    assert_eq!(e.minor(), minor::ZERO_BINDINGS_ASKED);
    iterator.destroy().unwrap();
    let e = iterator.next_one().unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);

    // list(0): everything through the iterator, which is a snapshot.
    let (list, iterator) = ctx.list(0).unwrap();
    assert!(list.is_empty());
    ctx.unbind(&n("a")).unwrap();
    assert_eq!(iterator.next_n(100).unwrap(), (true, all.clone()));
    iterator.destroy().unwrap();
    ctx.bind(&n("a"), &x).unwrap();

    // The oldest iterators go when there are too many.
    let first = ctx.list(1).unwrap().1;
    let mut last = None;
    for _ in 0..armillary_naming::MAX_ITERATORS {
        last = Some(ctx.list(1).unwrap().1);
    }
    let e = first.next_one().unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);
    let last: BindingIterator = last.unwrap();
    assert_eq!(last.next_one().unwrap(), (true, all[1].clone()));
}

/// A reference the service hands out from a collocated call belongs to
/// the ORB serving it, as one in a remote reply does: not to whichever
/// ORB of the process started last, which may shut down first (the
/// reference's calls then failed with BAD_INV_ORDER; seen when tests ran
/// side by side, each with its own ORB).
#[test]
fn a_reference_from_a_collocated_call_belongs_to_the_serving_orb() {
    let s = service();
    s.root.bind_new_context(&n("ctx")).unwrap();
    // Started after the service's: the ORB an unbound reference would
    // bind to.
    let later = Orb::with_config(OrbConfig::new()).unwrap();
    let ctx = NamingContext::from_object(s.root.resolve(&n("ctx")).unwrap());
    ctx.bind_new_context(&n("inner")).unwrap();
    later.shutdown(WaitForCompletion::Yes).unwrap();
    drop(later);
    assert_eq!(ctx.list(10).unwrap().0.len(), 1);
}

#[test]
fn destroys_only_empty_contexts() {
    let s = service();
    let ctx = s.root.bind_new_context(&n("ctx")).unwrap();
    ctx.bind_new_context(&n("inner")).unwrap();
    assert_eq!(
        ctx.destroy(),
        Err(DestroyError::NotEmpty(
            armillary_naming::cos_naming::naming_context::NotEmpty {}
        ))
    );
    let inner = NamingContext::from_object(ctx.resolve(&n("inner")).unwrap());
    ctx.unbind(&n("inner")).unwrap();
    inner.destroy().unwrap();
    ctx.destroy().unwrap();
    let e = ctx.list(1).unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist);
    match inner.resolve(&n("x")) {
        Err(ResolveError::System(e)) => assert_eq!(e.kind(), SystemExceptionKind::ObjectNotExist),
        other => panic!("{other:?}"),
    }
    // An unbound new context, destroyed.
    let lone = s.root.new_context().unwrap();
    assert!(lone.list(10).unwrap().0.is_empty());
    lone.destroy().unwrap();
    // The root stays.
    match s.root.destroy() {
        Err(DestroyError::System(e)) => {
            assert_eq!(e.kind(), SystemExceptionKind::NoPermission);
            assert_eq!(e.minor(), minor::ROOT_NOT_DESTROYABLE);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn converts_string_names_and_urls() {
    let s = service();
    let round_trip = |sn: &str, components: &[NameComponent]| {
        assert_eq!(s.root.to_name(sn).unwrap(), components, "to_name({sn:?})");
        assert_eq!(s.root.to_string(components).unwrap(), sn, "to_string");
    };
    round_trip("a", &[component("a", "")]);
    round_trip("a.b/c.d", &[component("a", "b"), component("c", "d")]);
    round_trip(r"a\/b\.c.d\\e", &[component("a/b.c", r"d\e")]);
    round_trip(".k/.", &[component("", "k"), component("", "")]);
    round_trip("ünï.cödé", &[component("ünï", "cödé")]);
    for bad in ["", "a//b", "a.b.c", "a.", r"a\x", "/a", "a/"] {
        assert_eq!(
            s.root.to_name(bad),
            Err(ToNameError::InvalidName(InvalidName {})),
            "{bad:?}"
        );
    }
    assert_eq!(
        s.root.to_string(&[]),
        Err(ToStringError::InvalidName(InvalidName {}))
    );
    assert_eq!(
        s.root.to_url(":myhost:2809", r"a b/c\.d").unwrap(),
        "corbaname::myhost:2809#a%20b/c%5C.d"
    );
    assert_eq!(
        s.root.to_url("myhost", "a"),
        Err(ToUrlError::InvalidAddress(
            armillary_naming::cos_naming::naming_context_ext::InvalidAddress {}
        ))
    );
    assert_eq!(
        s.root.to_url(":myhost", "a//b"),
        Err(ToUrlError::InvalidName(InvalidName {}))
    );

    // resolve_str with escapes.
    let x = object(&s.orb, "x");
    let dir = [component("a/b", "dir")];
    s.root.bind_new_context(&dir).unwrap();
    s.root
        .bind(&[dir[0].clone(), component("x.y", "")], &x)
        .unwrap();
    assert_eq!(s.root.resolve_str(r"a\/b.dir/x\.y").unwrap(), x);
    assert_eq!(
        s.root.resolve_str(r"a\/b.dir/x.y"),
        Err(ResolveStrError::NotFound(not_found(
            NotFoundReason::MissingNode,
            "x.y"
        )))
    );
}

#[test]
fn is_reached_by_corbaloc_and_initial_reference() {
    let s = service();
    let x = object(&s.orb, "x");
    s.root.bind(&n("x"), &x).unwrap();
    let port = s.orb.endpoints()[0].port();
    for url in [
        format!("corbaloc:iiop:127.0.0.1:{port}/NameService"),
        format!("corbaloc::127.0.0.1:{port}/NameService"),
    ] {
        let object = s.orb.string_to_object(&url).unwrap();
        let root = NamingContextExt::narrow(&object)
            .unwrap()
            .expect("a NamingContextExt");
        assert_eq!(root.resolve_str("x").unwrap(), x, "{url}");
    }
    let initial = s.orb.resolve_initial_references("NameService").unwrap();
    let root = NamingContextExt::narrow(&initial).unwrap().unwrap();
    assert_eq!(root.resolve_str("x").unwrap(), x);
    // One naming service per ORB; the POA's refusal is the error's source.
    let e = armillary_naming::start(&s.orb).expect_err("a second naming service");
    assert!(matches!(
        e,
        StartError::CreatePoa(PoaError::AdapterAlreadyExists)
    ));
    assert_eq!(e.to_string(), "cannot create the NameService POA");
    let source = std::error::Error::source(&e).expect("the POA error is the source");
    assert_eq!(
        source.downcast_ref::<PoaError>(),
        Some(&PoaError::AdapterAlreadyExists)
    );
}

#[test]
fn serves_concurrent_clients() {
    let s = service();
    let x = object(&s.orb, "x");
    let ior = s.orb.object_to_string(s.root.as_object());
    std::thread::scope(|scope| {
        for t in 0..4 {
            let ior = &ior;
            let orb = &s.orb;
            let x = &x;
            scope.spawn(move || {
                let root = NamingContextExt::from_object(orb.string_to_object(ior).unwrap());
                let dir = root.bind_new_context(&n(&format!("t{t}"))).unwrap();
                for i in 0..25 {
                    dir.bind(&n(&format!("o{i}")), x).unwrap();
                    root.rebind(&n("shared"), x).unwrap();
                }
            });
        }
    });
    for t in 0..4 {
        let (list, iterator) = s
            .root
            .resolve_str(&format!("t{t}"))
            .map(|o| NamingContext::from_object(o).list(1000).unwrap())
            .unwrap();
        assert_eq!(list.len(), 25);
        assert!(iterator.is_nil());
    }
    assert_eq!(s.root.list(1000).unwrap().0.len(), 5);
}

/// `Orb::string_to_object` with `corbaname:` URLs, which the ORB resolves
/// through the naming context's `resolve_str`.
#[test]
fn corbaname_urls_resolve_through_the_service() {
    let s = service();
    let x = object(&s.orb, "x");
    s.root.bind_new_context(&n("dir.ectory")).unwrap();
    s.root.bind(&n("dir.ectory/x.obj"), &x).unwrap();
    let port = s.orb.endpoints()[0].port();
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    let url = format!("corbaname::127.0.0.1:{port}#dir.ectory/x.obj");
    assert_eq!(client.string_to_object(&url).unwrap(), x);
    // Escapes in the URL's name, an explicit key, and no name at all (the
    // context itself).
    let url = format!("corbaname:iiop:1.2@127.0.0.1:{port}/NameService#dir%2eectory/x.obj");
    assert_eq!(client.string_to_object(&url).unwrap(), x);
    let context = client
        .string_to_object(&format!("corbaname::127.0.0.1:{port}"))
        .unwrap();
    assert!(context
        .is_a("IDL:omg.org/CosNaming/NamingContextExt:1.0")
        .unwrap());
    // `rir:` goes through the initial reference.
    let url = "corbaname:rir:#dir.ectory/x.obj";
    assert_eq!(s.orb.string_to_object(url).unwrap(), x);
    // A name the service does not have.
    let e = client
        .string_to_object(&format!("corbaname::127.0.0.1:{port}#missing"))
        .unwrap_err();
    assert_eq!(e.kind(), SystemExceptionKind::BadParam);
    assert_eq!(
        e.minor(),
        armillary::giop::system_exception::minor::CORBANAME_UNRESOLVED
    );
    client.shutdown(WaitForCompletion::Yes).unwrap();
}
