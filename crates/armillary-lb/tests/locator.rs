//! The locator with its replicas and clients in separate ORBs of this
//! process, every call over IIOP (the clients' collocation is off):
//! what each policy spreads, what is forwarded (any operation), what a
//! LocateRequest finds, what happens to a group without replicas, to a
//! replica that stops answering, and to one whose locator forgot it.
//! The same with separate processes and omniORB clients is in
//! `crates/armillary-cli/tests/lb.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use armillary::config::{Collocation, OrbConfig};
use armillary::poa::{
    Cookie, ObjectId, Poa, Policy, RequestProcessingPolicy, ServantLocator, ServantManager,
    ServantManagerError, ServantRetentionPolicy,
};
use armillary::{
    CompletionStatus, Location, ObjectRef, Orb, Servant, ServerRequest, SystemException,
    WaitForCompletion,
};
use armillary_lb::load_balancing::locator::AddReplicaError;
use armillary_lb::load_balancing::Locator;
use armillary_lb::replica::ReplicaRegistration;
use armillary_lb::{LocatorConfig, LocatorService, PolicyKind};
use armillary_testkit::wait_until;

const NAMED: &str = "IDL:Test/Named:1.0";

/// A replica: `whoami` answers its name, `add(long, long)` the sum.
struct Named(String);

impl Servant for Named {
    fn repository_id(&self) -> &'static str {
        NAMED
    }

    fn is_a(&self, id: &str) -> bool {
        id == NAMED
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        let cdr = |e| SystemException::from_cdr_error(&e, CompletionStatus::No);
        match req.operation() {
            "whoami" => req.results().write_string(&self.0).map_err(cdr),
            "add" => {
                let (a, b) = {
                    let args = req.args();
                    (
                        args.read_long().map_err(cdr)?,
                        args.read_long().map_err(cdr)?,
                    )
                };
                req.results().write_long(a + b);
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

/// A locator in an ORB of its own.
struct Lb {
    orb: Orb,
    service: LocatorService,
}

impl Lb {
    fn start(config: LocatorConfig) -> Lb {
        let orb = Orb::with_config(OrbConfig::default()).unwrap();
        let service = armillary_lb::start(&orb, config).unwrap();
        Lb { orb, service }
    }

    fn locator(&self) -> &Locator {
        self.service.locator()
    }

    /// The group's reference as a client in another process gets it.
    fn group(&self, name: &str) -> String {
        let group = self.locator().group_reference(name).unwrap();
        self.orb.object_to_string(&group)
    }

    /// (replica id, forwarded) of every replica of `group`.
    fn forwarded(&self, group: &str) -> Vec<(String, u64)> {
        let groups = self.locator().list_groups().unwrap();
        let group = groups.into_iter().find(|g| g.name == group).unwrap();
        group
            .replicas
            .into_iter()
            .map(|r| (r.id, r.forwarded))
            .collect()
    }

    fn replica_ids(&self, group: &str) -> Vec<String> {
        self.forwarded(group)
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    }
}

impl Drop for Lb {
    fn drop(&mut self) {
        let _ = self.orb.shutdown(WaitForCompletion::Yes);
    }
}

/// A replica named `name` in an ORB of its own.
struct Replica {
    orb: Orb,
    reference: ObjectRef,
}

impl Replica {
    fn start(name: &str) -> Replica {
        let orb = Orb::with_config(OrbConfig::default()).unwrap();
        let poa = orb.root_poa();
        poa.manager().activate().unwrap();
        let servant: Arc<dyn Servant> = Arc::new(Named(name.to_owned()));
        let reference = poa.servant_to_reference(&servant).unwrap();
        Replica { orb, reference }
    }

    /// Starts replicas `names` and registers them in group `group`.
    fn group_of(lb: &Lb, group: &str, names: &[&str]) -> Vec<Replica> {
        names
            .iter()
            .map(|name| {
                let replica = Replica::start(name);
                lb.locator().add_replica(group, &replica.reference).unwrap();
                replica
            })
            .collect()
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.orb.shutdown(WaitForCompletion::Yes);
    }
}

/// A client ORB, as in another process: no collocation.
fn client() -> Orb {
    Orb::with_config(OrbConfig::new().collocation(Collocation::None)).unwrap()
}

fn whoami(obj: &ObjectRef) -> Result<String, SystemException> {
    obj.invoke_plain("whoami", &|_| Ok(()), |r| r.read_string())
}

#[test]
fn round_robin_spreads_the_clients_first_requests_over_the_replicas() {
    let lb = Lb::start(LocatorConfig::new().policy(PolicyKind::RoundRobin));
    let _replicas = Replica::group_of(&lb, "named", &["a", "b", "c"]);
    let group = lb.group("named");
    // Nine clients, one after the other, each with its first request.
    let mut served: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..9 {
        let orb = client();
        let named = orb.string_to_object(&group).unwrap();
        *served.entry(whoami(&named).unwrap()).or_default() += 1;
        orb.shutdown(WaitForCompletion::Yes).unwrap();
    }
    assert_eq!(
        served,
        BTreeMap::from([("a".into(), 3), ("b".into(), 3), ("c".into(), 3)])
    );
    let forwarded: Vec<u64> = lb.forwarded("named").into_iter().map(|(_, n)| n).collect();
    assert_eq!(forwarded, [3, 3, 3]);
}

#[test]
fn least_loaded_forwards_to_the_replica_that_reported_the_least_load() {
    // No weight for the locator's own forwards: the reports alone decide.
    let lb = Lb::start(
        LocatorConfig::new()
            .policy(PolicyKind::LeastLoaded)
            .forward_weight(0.0),
    );
    let _replicas = Replica::group_of(&lb, "named", &["a", "b", "c"]);
    let ids = lb.replica_ids("named");
    for (id, load) in ids.iter().zip([5.0, 1.0, 3.0]) {
        lb.locator().report_load("named", id, load).unwrap();
    }
    let orb = client();
    let named = orb.string_to_object(&lb.group("named")).unwrap();
    for _ in 0..4 {
        assert_eq!(whoami(&named).unwrap(), "b");
    }
    // b gets busier than c: c takes the next clients.
    lb.locator().report_load("named", &ids[1], 4.0).unwrap();
    assert_eq!(whoami(&named).unwrap(), "c");
    assert_eq!(lb.locator().policy().unwrap(), "least-loaded");
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn least_loaded_counts_its_own_recent_forwards() {
    // Forwards never forgotten: each counts exactly 1 (with the default
    // memory of a second, they would count a little less, by how long
    // ago the test made them).
    let lb = Lb::start(
        LocatorConfig::new()
            .policy(PolicyKind::LeastLoaded)
            .forward_memory(Duration::MAX),
    );
    let _replicas = Replica::group_of(&lb, "named", &["a", "b", "c"]);
    let ids = lb.replica_ids("named");
    for (id, load) in ids.iter().zip([0.0, 1.0, 3.0]) {
        lb.locator().report_load("named", id, load).unwrap();
    }
    let orb = client();
    let named = orb.string_to_object(&lb.group("named")).unwrap();
    let mut served: BTreeMap<String, usize> = BTreeMap::new();
    for _ in 0..6 {
        *served.entry(whoami(&named).unwrap()).or_default() += 1;
    }
    // a (0, 1, 2, 3), b (1, 2, 3), c (3): water-filling to a level of 3.
    assert_eq!(
        served,
        BTreeMap::from([("a".into(), 3), ("b".into(), 2), ("c".into(), 1)])
    );
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn any_operation_of_any_interface_is_forwarded() {
    let lb = Lb::start(LocatorConfig::new());
    let replicas = Replica::group_of(&lb, "named", &["a"]);
    let orb = client();
    let named = orb.string_to_object(&lb.group("named")).unwrap();
    assert_eq!(named.type_id(), NAMED);
    assert!(named.is_a(NAMED).unwrap());
    assert!(!named.is_a("IDL:Other:1.0").unwrap());
    assert!(!named.non_existent().unwrap());
    let sum = named.invoke_plain(
        "add",
        &|w| {
            w.write_long(40);
            w.write_long(2);
            Ok(())
        },
        |r| r.read_long(),
    );
    assert_eq!(sum.unwrap(), 42);
    // Every request reached the locator first (`is_a` of the
    // reference's own type is answered from its IOR, without a call).
    assert_eq!(lb.forwarded("named")[0].1, 3);
    drop(replicas);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_locate_request_finds_a_group_here_and_an_unknown_one_nowhere() {
    let lb = Lb::start(LocatorConfig::new());
    let _replicas = Replica::group_of(&lb, "named", &["a"]);
    let empty = lb.locator().create_group("empty", NAMED).unwrap();
    let orb = client();
    let named = orb.string_to_object(&lb.group("named")).unwrap();
    // OBJECT_FORWARD to the replica, counted as a forward.
    let Location::Forward(to) = named.locate().unwrap() else {
        panic!("a LocateRequest on a group is forwarded");
    };
    assert!(to.ior().iiop_profiles()[0].port != named.ior().iiop_profiles()[0].port);
    assert_eq!(lb.forwarded("named")[0].1, 1);
    // A group with no replica now: OBJECT_HERE (its requests get
    // TRANSIENT).
    let empty = orb
        .string_to_object(&lb.orb.object_to_string(&empty))
        .unwrap();
    assert_eq!(empty.locate().unwrap(), Location::Here);
    let other = lb.group("named").replace(&hex("named"), &hex("other"));
    let other = orb.string_to_object(&other).unwrap();
    assert_eq!(other.locate().unwrap(), Location::Unknown);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn an_empty_group_is_transient_and_an_unknown_one_does_not_exist() {
    let lb = Lb::start(LocatorConfig::new());
    let empty = lb.locator().create_group("empty", NAMED).unwrap();
    let orb = client();
    let empty = orb
        .string_to_object(&lb.orb.object_to_string(&empty))
        .unwrap();
    let e = whoami(&empty).unwrap_err();
    assert!(e.is_transient() && e.is_completed_no(), "{e}");
    assert_eq!(e.minor(), armillary_lb::minor::NO_REPLICA);
    // A group reference of a group the locator does not have (say, from
    // before a restart, before its replicas registered again).
    let _replicas = Replica::group_of(&lb, "named", &["a"]);
    let named = lb.group("named");
    lb.locator()
        .remove_replica("named", &lb.replica_ids("named")[0])
        .unwrap();
    let gone = orb
        .string_to_object(&named.replace(&hex("named"), &hex("other")))
        .unwrap();
    let e = whoami(&gone).unwrap_err();
    assert!(e.is_object_not_exist(), "{e}");
    assert_eq!(e.minor(), armillary_lb::minor::UNKNOWN_GROUP);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// `text` as a stringified IOR spells it (lower-case hex).
fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn a_replica_that_stops_answering_is_dropped_and_its_clients_go_elsewhere() {
    let lb = Lb::start(
        LocatorConfig::new()
            .probe_period(Duration::from_millis(20))
            .failures_to_drop(2),
    );
    let mut replicas = Replica::group_of(&lb, "named", &["a", "b", "c"]);
    let orb = client();
    let named = orb.string_to_object(&lb.group("named")).unwrap();
    for expected in ["a", "b", "c"] {
        assert_eq!(whoami(&named).unwrap(), expected);
    }
    // b's server goes away.
    let b = replicas.remove(1);
    let b_id = lb.replica_ids("named")[1].clone();
    drop(b);
    wait_until("the locator drops b", || {
        !lb.replica_ids("named").contains(&b_id)
    });
    let mut served = BTreeMap::<String, usize>::new();
    for _ in 0..6 {
        *served.entry(whoami(&named).unwrap()).or_default() += 1;
    }
    assert_eq!(served, BTreeMap::from([("a".into(), 3), ("c".into(), 3)]));
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

#[test]
fn a_registered_replica_reports_its_load_and_registers_again_when_forgotten() {
    let lb = Lb::start(LocatorConfig::new());
    let replica = Replica::start("a");
    let locator = Locator::from_object(
        replica
            .orb
            .string_to_object(&lb.orb.object_to_string(lb.locator().as_object()))
            .unwrap(),
    );
    let registration = ReplicaRegistration::start(
        &locator,
        "named",
        &replica.reference,
        Duration::from_millis(10),
        || 7.5,
    )
    .unwrap();
    wait_until("the locator has a load report", || {
        let groups = lb.locator().list_groups().unwrap();
        groups[0]
            .replicas
            .first()
            .is_some_and(|r| r.reports > 0 && r.load == 7.5)
    });
    assert!(registration
        .group_reference()
        .is_equivalent(&lb.locator().group_reference("named").unwrap()));
    // The locator forgets it (as after a restart): it registers again.
    let first_id = registration.replica_id();
    lb.locator().remove_replica("named", &first_id).unwrap();
    wait_until("the replica registers again", || {
        registration.re_registrations() > 0 && !lb.replica_ids("named").is_empty()
    });
    assert_eq!(lb.replica_ids("named"), [registration.replica_id()]);
    assert_ne!(registration.replica_id(), first_id);
    registration.withdraw().unwrap();
    assert!(lb.replica_ids("named").is_empty());
}

#[test]
fn the_locator_refuses_nil_replicas_its_own_groups_and_other_interfaces() {
    let lb = Lb::start(LocatorConfig::new());
    let refused =
        |group: &str, replica: &ObjectRef| lb.locator().add_replica(group, replica).unwrap_err();
    assert!(matches!(
        refused("named", &ObjectRef::nil()),
        AddReplicaError::InvalidReplica(e) if e.reason == "the reference is nil"
    ));
    assert!(matches!(
        refused("", &Replica::start("a").reference),
        AddReplicaError::InvalidName(e) if e.reason == "the name is empty"
    ));
    let _replicas = Replica::group_of(&lb, "named", &["a"]);
    let group = lb.locator().group_reference("named").unwrap();
    assert!(matches!(
        refused("other", &group),
        AddReplicaError::InvalidReplica(e) if e.reason == "the reference is a group of this locator"
    ));
    lb.locator()
        .create_group("quoters", "IDL:Stock/Quoter:1.0")
        .unwrap();
    let not_a_quoter = Replica::start("b");
    assert!(matches!(
        refused("quoters", &not_a_quoter.reference),
        AddReplicaError::InterfaceMismatch(e)
            if e.group_interface == "IDL:Stock/Quoter:1.0" && e.replica_interface == NAMED
    ));
}

/// CORBA 3.0 §15.6: when a forwarded address fails, a client "shall
/// restart the location process using the original address". A call the
/// locator forwards to a replica that died before the probes noticed
/// goes back to the group reference (the forwarded one failed before the
/// request could run: COMPLETED_NO) and is forwarded to a live replica;
/// so is every later call that is forwarded to the dead one.
#[test]
fn a_call_forwarded_to_a_dead_replica_goes_back_to_the_group() {
    // No probes in the test's time: the locator still has the dead one.
    let lb = Lb::start(LocatorConfig::new().probe_period(Duration::from_secs(3600)));
    let mut replicas = Replica::group_of(&lb, "named", &["dead", "alive"]);
    drop(replicas.remove(0));
    let orb = client();
    let named = orb.string_to_object(&lb.group("named")).unwrap();
    // Round robin forwards the first call to "dead", then "alive".
    for _ in 0..4 {
        assert_eq!(whoami(&named).unwrap(), "alive");
    }
    // Each call was forwarded twice: to "dead", then, back at the group,
    // to "alive".
    let counts: Vec<u64> = lb.forwarded("named").into_iter().map(|(_, n)| n).collect();
    assert_eq!(counts, [4, 4]);
    orb.shutdown(WaitForCompletion::Yes).unwrap();
}

/// Forwards every request of its POA, LocateRequests included, to one
/// reference.
struct ForwardAll(ObjectRef);

impl ServantLocator for ForwardAll {
    fn preinvoke(
        &self,
        _object_id: &ObjectId,
        _poa: &Poa,
        _operation: &str,
    ) -> Result<(Arc<dyn Servant>, Cookie), ServantManagerError> {
        Err(ServantManagerError::Forward(self.0.clone()))
    }

    fn postinvoke(&self, _: &ObjectId, _: &Poa, _: &str, _: Cookie, _: Arc<dyn Servant>) {}
}

/// CORBA 3.0 §15.4.6.2: "LocateReply bodies are marshaled immediately
/// following the LocateReply header" — GIOP 1.2 aligns Request and Reply
/// bodies to 8, not LocateReply's, and omniORB (`giopImpl12.cc`,
/// `sendLocateReply`) and TAO write and read them so. Armillary aligned
/// it, so the IOR of an OBJECT_FORWARD started 4 bytes late after a 1.2
/// header and omniORB, which sends a LocateRequest before its first call
/// on a reference, failed to read it (MARSHAL, "sequence is too long").
#[test]
fn a_locate_reply_body_follows_its_header() {
    use std::io::Write;

    use armillary::giop::giop::{MessageBody, MessageBuilder, TargetAddress};
    use armillary::giop::{ByteOrder, GiopVersion};

    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let target = Replica::start("a");
    let poa = server
        .root_poa()
        .create_poa(
            "forward",
            None,
            &[
                Policy::ServantRetention(ServantRetentionPolicy::NonRetain),
                Policy::RequestProcessing(RequestProcessingPolicy::UseServantManager),
            ],
        )
        .unwrap();
    poa.set_servant_manager(ServantManager::Locator(Arc::new(ForwardAll(
        target.reference.clone(),
    ))))
    .unwrap();
    poa.manager().activate().unwrap();
    let forwarding = poa.create_reference_with_id("x", NAMED).unwrap();
    let profile = forwarding.ior().iiop_profiles().remove(0);
    let locate = MessageBody::LocateRequest {
        request_id: 7,
        target: TargetAddress::Key(profile.object_key.into()),
    };
    let request = MessageBuilder::new(GiopVersion::V1_2, ByteOrder::Little, &locate)
        .unwrap()
        .finish(false);
    let mut stream = std::net::TcpStream::connect((profile.host.as_str(), profile.port)).unwrap();
    stream.write_all(&request).unwrap();
    let reply = armillary_testkit::giop::read_message(&mut stream)
        .unwrap()
        .unwrap();
    let word =
        |at: usize| u32::from_le_bytes([reply[at], reply[at + 1], reply[at + 2], reply[at + 3]]);
    assert_eq!(reply[6] & 1, 1, "little-endian, as asked");
    assert_eq!((word(12), word(16)), (7, 2), "request 7, OBJECT_FORWARD");
    // The forwarded IOR right after the header: its type id's length.
    assert_eq!(word(20) as usize, NAMED.len() + 1, "{reply:02x?}");
    drop(stream);
    server.shutdown(WaitForCompletion::Yes).unwrap();
}
