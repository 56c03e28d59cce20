//! The naming service against omniORB, both ways: omniORB's `nameclt`
//! driving Armillary's naming service, and an Armillary client with the
//! generated stubs binding, resolving and listing in omniORB's `omniNames`
//! (which also resolves through a context that Armillary serves).
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip. Every wait is bounded: a child
//! process that does not finish in time is killed and the test fails.

use armillary::WaitForCompletion;
use std::process::Command;

use armillary::config::{ConcurrencyModel, OrbConfig};
use armillary::Orb;
use armillary_naming::cos_naming::naming_context::{
    AlreadyBound, BindError, DestroyError, NotEmpty, NotFound, NotFoundReason, ResolveError,
};
use armillary_naming::cos_naming::{Name, NameComponent, NamingContext, NamingContextExt};
use armillary_testkit::{run_to_end, Finished, OmniNames};

fn orb() -> Orb {
    Orb::with_config(OrbConfig::new().concurrency(ConcurrencyModel::ThreadPool(2))).unwrap()
}

fn n(sn: &str) -> Name {
    armillary_naming::name::to_name(sn).unwrap()
}

fn component(id: &str, kind: &str) -> NameComponent {
    NameComponent {
        id: id.into(),
        kind: kind.into(),
    }
}

/// `nameclt` with the naming service at `port` as its NameService.
fn nameclt(port: u16, args: &[&str]) -> Finished {
    let output = run_to_end(
        Command::new("nameclt")
            .arg("-ORBInitRef")
            .arg(format!(
                "NameService=corbaloc:iiop:127.0.0.1:{port}/NameService"
            ))
            .args(args),
    );
    eprintln!(
        "nameclt {args:?}: {}\n{}{}",
        output.success(),
        output.stdout,
        output.stderr
    );
    output
}

#[test]
fn nameclt_drives_armillary_naming() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let orb = orb();
    let root = armillary_naming::start(&orb).unwrap();
    let port = orb.endpoints()[0].port();
    let x = orb
        .string_to_object("corbaloc::127.0.0.1:1/some/object")
        .unwrap();
    let x_ior = orb.object_to_string(&x);

    let out = nameclt(port, &["bind_new_context", "apps.ctx"]);
    assert!(out.success());
    let apps = orb.string_to_object(out.stdout.trim()).unwrap();
    assert_eq!(root.resolve_str("apps.ctx").unwrap(), apps);

    assert!(nameclt(port, &["bind", "apps.ctx/x.obj", &x_ior]).success());
    assert_eq!(root.resolve_str("apps.ctx/x.obj").unwrap(), x);
    for i in 0..12 {
        root.bind(&n(&format!("apps.ctx/o{i:02}")), &x).unwrap();
    }
    let out = nameclt(port, &["resolve", "apps.ctx/x.obj"]);
    assert!(out.success());
    assert_eq!(orb.string_to_object(out.stdout.trim()).unwrap(), x);

    // nameclt lists through the binding iterator.
    let out = nameclt(port, &["list", "apps.ctx"]);
    assert!(out.success());
    for name in ["x.obj", "o00", "o11"] {
        assert!(out.stdout.contains(name), "{name} in {}", out.stdout);
    }
    let out = nameclt(port, &["list"]);
    assert!(out.success());
    assert!(out.stdout.contains("apps.ctx"), "{}", out.stdout);

    // An empty context lists as empty.
    assert!(nameclt(port, &["bind_new_context", "empty"]).success());
    let out = nameclt(port, &["list", "empty"]);
    assert!(out.success());

    // Errors come back as exceptions nameclt understands.
    let out = nameclt(port, &["bind", "apps.ctx/x.obj", &x_ior]);
    assert!(!out.success());
    assert!(
        (out.stdout.clone() + &out.stderr).contains("AlreadyBound"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    let out = nameclt(port, &["resolve", "apps.ctx/missing"]);
    assert!(!out.success());
    assert!(
        (out.stdout.clone() + &out.stderr).contains("NotFound"),
        "{}{}",
        out.stdout,
        out.stderr
    );

    assert!(nameclt(
        port,
        &[
            "-advanced",
            "rebind",
            "apps.ctx/x.obj",
            &orb.object_to_string(&apps)
        ]
    )
    .success());
    assert_eq!(root.resolve_str("apps.ctx/x.obj").unwrap(), apps);
    assert!(nameclt(port, &["unbind", "apps.ctx/x.obj"]).success());
    assert!(matches!(
        root.resolve_str("apps.ctx/x.obj"),
        Err(armillary_naming::cos_naming::naming_context_ext::ResolveStrError::NotFound(_))
    ));
    // remove_context unbinds and destroys.
    assert!(nameclt(port, &["remove_context", "empty"]).success());
    assert!(root.resolve_str("empty").is_err());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// omniNames, started and asked by `orb` until its root context answers.
fn omninames(orb: &Orb) -> (OmniNames, armillary::ObjectRef) {
    let url = |port| format!("corbaloc:iiop:127.0.0.1:{port}/NameService");
    let names = OmniNames::start(|port| {
        orb.string_to_object(&url(port))
            .is_ok_and(|o| o.non_existent() == Ok(false))
    });
    let object = orb.string_to_object(&names.corbaloc()).unwrap();
    (names, object)
}

#[test]
fn generated_stubs_drive_omninames() {
    if !armillary_testkit::omniorb_available() {
        return;
    }
    let orb = orb();
    let (names, object) = omninames(&orb);
    let root = NamingContextExt::narrow(&object)
        .unwrap()
        .expect("omniNames serves a NamingContextExt");

    // A context served by Armillary, to bind in omniNames.
    let ours = armillary_naming::start(&orb).unwrap();
    let x = orb
        .string_to_object("corbaloc::127.0.0.1:1/some/object")
        .unwrap();
    ours.bind(&n("x.obj"), &x).unwrap();

    let sub = root.bind_new_context(&n("armillary")).unwrap();
    assert!(!sub.is_nil());
    root.bind(&n("armillary/x.obj"), &x).unwrap();
    assert_eq!(
        root.bind(&n("armillary/x.obj"), &x),
        Err(BindError::AlreadyBound(AlreadyBound {}))
    );
    assert_eq!(root.resolve(&n("armillary/x.obj")).unwrap(), x);
    assert_eq!(
        root.resolve(&n("armillary/none/y")),
        Err(ResolveError::NotFound(NotFound {
            why: NotFoundReason::MissingNode,
            rest_of_name: n("none/y"),
        }))
    );
    // (Past an object binding omniNames does not raise not_context: it
    // calls the object, which here does not answer; not checked.)
    assert_eq!(sub.destroy(), Err(DestroyError::NotEmpty(NotEmpty {})));

    // omniNames resolves through the context Armillary serves, and the
    // reference it hands back works.
    root.bind_context(&n("armillary/ours"), &ours.clone().into())
        .unwrap();
    let resolved = root.resolve_str("armillary/ours").unwrap();
    let resolved = NamingContextExt::narrow(&resolved).unwrap().unwrap();
    assert_eq!(resolved.resolve_str("x.obj").unwrap(), x);
    assert_eq!(root.resolve_str("armillary/ours/x.obj").unwrap(), x);

    // list with an iterator, from omniNames.
    for i in 0..5 {
        sub.bind(&n(&format!("o{i}")), &x).unwrap();
    }
    let (first, iterator) = sub.list(2).unwrap();
    assert_eq!(first.len(), 2);
    let mut seen: Vec<Name> = first.into_iter().map(|b| b.binding_name).collect();
    let (more, rest) = iterator.next_n(100).unwrap();
    assert!(more);
    seen.extend(rest.into_iter().map(|b| b.binding_name));
    assert!(!iterator.next_one().unwrap().0);
    iterator.destroy().unwrap();
    seen.sort_by_key(|name| armillary_naming::name::to_string(name).unwrap_or_default());
    let expected: Vec<Name> = ["o0", "o1", "o2", "o3", "o4", "ours", "x.obj"]
        .iter()
        .map(|sn| n(sn))
        .collect();
    assert_eq!(seen, expected);

    // omniORB's string names and URLs agree with ours, asked through a
    // reference with omniNames' full IOR (UTF-8 negotiated) ...
    let sub_ext = NamingContextExt::from_object(sub.clone().into_object());
    let tricky: Name = vec![
        component("a/b", "c.d"),
        component(r"back\slash", ""),
        component("", "kind"),
        component("", ""),
        component("sp ace", "ü"),
    ];
    let sn = sub_ext.to_string(&tricky).unwrap();
    assert_eq!(sn, armillary_naming::name::to_string(&tricky).unwrap());
    assert_eq!(sub_ext.to_name(&sn).unwrap(), tricky);
    // ... and through the corbaloc reference, which names no code sets: on
    // the same connection it must use the code sets the connection
    // negotiated (non-ASCII text was DATA_CONVERSION before).
    assert_eq!(root.to_name(&sn).unwrap(), tricky);
    assert_eq!(root.to_string(&tricky).unwrap(), sn);
    for sn in ["a.b/c", r"a\/b\.c.d\\e", ".k/."] {
        assert_eq!(
            sub_ext.to_name(sn).unwrap(),
            armillary_naming::name::to_name(sn).unwrap(),
            "{sn}"
        );
    }
    let url = sub_ext.to_url(":myhost:2809", r"a b/c\.d").unwrap();
    assert_eq!(
        url.to_ascii_lowercase(),
        armillary_naming::name::to_url(":myhost:2809", r"a b/c\.d")
            .unwrap()
            .to_ascii_lowercase()
    );

    // A corbaname: URL resolved by omniNames.
    let url = format!("corbaname::127.0.0.1:{}#armillary/x.obj", names.port());
    assert_eq!(orb.string_to_object(&url).unwrap(), x);

    // omniORB's nameclt sees what Armillary bound.
    let listing = nameclt(names.port(), &["list", "armillary"]);
    assert!(listing.stdout.contains("x.obj"), "{}", listing.stdout);

    root.unbind(&n("armillary/ours")).unwrap();
    let leftover: NamingContext = sub.clone();
    for sn in ["o0", "o1", "o2", "o3", "o4", "x.obj"] {
        leftover.unbind(&n(sn)).unwrap();
    }
    sub.destroy().unwrap();
    root.unbind(&n("armillary")).unwrap();
    assert!(root.resolve_str("armillary").is_err());
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}
