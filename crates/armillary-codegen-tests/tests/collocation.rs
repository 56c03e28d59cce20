//! Collocation through generated code (`idl/collocation.idl`): a skeleton
//! answers `Servant::local_interface` for its interface and each ancestor
//! (a base reached through both sides of a diamond) with a view that calls
//! the servant, and `None` otherwise (an AMH skeleton, always); every kind
//! of stub call to an object served in this process (in, out, inout,
//! return value, user and system exceptions, attributes, oneway, inherited
//! operations, a reply handler's operations) gives the servant's values,
//! whatever the reference's collocation strategy. The calls pass whichever
//! path the runtime takes: over loopback IIOP, or typed in-process through
//! the closures the stubs hand to `ObjectRef::invoke_typed`.

use std::any::TypeId;
use std::sync::{Arc, Mutex};

use armillary::ami::ExceptionHolder;
use armillary::config::Collocation;
use armillary::giop::system_exception::SystemExceptionKind;
use armillary::{CompletionStatus, Interface, Orb, Servant, SystemException};
use armillary_codegen_tests::collocation::colloc::{
    diamond::{BumpError, MixError},
    AmiBaseHandlerServant, AmiDiamondHandler, AmiDiamondHandlerServant, AmiDiamondHandlerSkeleton,
    AmiLeftHandlerServant, AmiRightHandlerServant, Base, BaseServant, Diamond, DiamondServant,
    DiamondSkeleton, LeftServant, Longs, Point, Refused, RightServant, UnrelatedServant,
};
use armillary_codegen_tests::quoter::stock::{QuoterAmhSkeleton, QuoterServant};
use armillary_codegen_tests::HeldQuoter;
use armillary_testkit::wait_until;

/// The label `mix` refuses with `Refused`.
const REFUSED_LABEL: &str = "refuse";

/// A `Diamond` whose answers are computed from its arguments, keeping its
/// `level` attribute and the texts of its oneway `note`s.
#[derive(Debug, Default)]
struct DiamondImpl {
    level: Mutex<i32>,
    notes: Mutex<Vec<String>>,
}

impl DiamondImpl {
    fn notes(&self) -> Vec<String> {
        self.notes.lock().unwrap().clone()
    }
}

impl BaseServant for DiamondImpl {
    fn twice(&self, n: i32) -> Result<i32, SystemException> {
        Ok(2 * n)
    }

    fn name(&self) -> Result<String, SystemException> {
        Ok("diamond".into())
    }
}

impl LeftServant for DiamondImpl {
    fn shout(&self, text: String) -> Result<String, SystemException> {
        Ok(format!("{}!", text.to_uppercase()))
    }
}

impl RightServant for DiamondImpl {
    fn spread(&self, p: Point) -> Result<Longs, SystemException> {
        Ok(vec![p.x, p.y])
    }
}

impl DiamondServant for DiamondImpl {
    /// Appends `counter` to `values` and bumps it; returns their sum, and
    /// where: the label's length and the new count of values.
    fn mix(
        &self,
        label: String,
        values: &mut Longs,
        counter: &mut i32,
    ) -> Result<(i64, Point), MixError> {
        if label == REFUSED_LABEL {
            return Err(Refused {
                why: label,
                code: *counter,
            }
            .into());
        }
        values.push(*counter);
        *counter += 1;
        let sum = values.iter().map(|&v| i64::from(v)).sum();
        let len = |n: usize| i32::try_from(n).unwrap();
        Ok((
            sum,
            Point {
                x: len(label.len()),
                y: len(values.len()),
            },
        ))
    }

    fn level(&self) -> Result<i32, SystemException> {
        Ok(*self.level.lock().unwrap())
    }

    fn set_level(&self, value: i32) -> Result<(), SystemException> {
        *self.level.lock().unwrap() = value;
        Ok(())
    }

    fn note(&self, text: String) -> Result<(), SystemException> {
        self.notes.lock().unwrap().push(text);
        Ok(())
    }

    /// Adds a `+`; refuses `""` with NO_PERMISSION and `"-"` with
    /// `Refused`.
    fn bump(&self, text: &mut String) -> Result<(), BumpError> {
        match text.as_str() {
            "" => Err(SystemException::no_permission(5, CompletionStatus::Yes).into()),
            "-" => Err(Refused {
                why: "minus".into(),
                code: 1,
            }
            .into()),
            _ => {
                text.push('+');
                Ok(())
            }
        }
    }
}

/// A reply handler for `Diamond` that keeps what it receives, described.
#[derive(Debug, Default)]
struct Recorder {
    received: Mutex<Vec<String>>,
}

impl Recorder {
    fn received(&self) -> Vec<String> {
        self.received.lock().unwrap().clone()
    }

    fn record(&self, what: String) -> Result<(), SystemException> {
        self.received.lock().unwrap().push(what);
        Ok(())
    }
}

impl AmiBaseHandlerServant for Recorder {
    fn twice(&self, ami_return_val: i32) -> Result<(), SystemException> {
        self.record(format!("twice {ami_return_val}"))
    }
}
impl AmiLeftHandlerServant for Recorder {}
impl AmiRightHandlerServant for Recorder {}

impl AmiDiamondHandlerServant for Recorder {
    fn mix(
        &self,
        ami_return_val: i64,
        r#where: Point,
        values: Longs,
        counter: i32,
    ) -> Result<(), SystemException> {
        self.record(format!(
            "mix {ami_return_val} ({}, {}) {values:?} {counter}",
            r#where.x, r#where.y
        ))
    }

    fn mix_excep(&self, excep_holder: ExceptionHolder<MixError>) -> Result<(), SystemException> {
        match excep_holder.raise() {
            MixError::Refused(refused) => {
                self.record(format!("mix refused {} {}", refused.why, refused.code))
            }
            MixError::System(e) => self.record(format!("mix system {:?} {}", e.kind(), e.minor())),
        }
    }
}

/// The view `skeleton` answers for the servant trait `S`.
fn view<S: ?Sized + 'static>(skeleton: &dyn Servant) -> Option<&Arc<S>> {
    skeleton
        .local_interface(TypeId::of::<Arc<S>>())
        .map(|view| view.downcast_ref::<Arc<S>>().expect("the asked type"))
}

#[test]
fn a_skeleton_answers_local_interface_for_each_ancestor() {
    let skeleton = DiamondSkeleton::new(DiamondImpl::default());
    let diamond = view::<dyn DiamondServant>(&skeleton).expect("its own interface");
    let mut values = vec![1];
    let mut counter = 2;
    assert_eq!(
        diamond.mix("ab".into(), &mut values, &mut counter).unwrap(),
        (3, Point { x: 2, y: 2 })
    );
    assert_eq!((values, counter), (vec![1, 2], 3));
    let left = view::<dyn LeftServant>(&skeleton).expect("a direct base");
    assert_eq!(left.shout("hi".into()).unwrap(), "HI!");
    let right = view::<dyn RightServant>(&skeleton).expect("the other direct base");
    assert_eq!(right.spread(Point { x: 3, y: 4 }).unwrap(), [3, 4]);
    let base = view::<dyn BaseServant>(&skeleton).expect("the base of both");
    assert_eq!(base.twice(21).unwrap(), 42);
    assert_eq!(base.name().unwrap(), "diamond");
    // One servant behind every view.
    diamond.set_level(9).unwrap();
    assert_eq!(skeleton.servant().level().unwrap(), 9);

    assert!(view::<dyn UnrelatedServant>(&skeleton).is_none());
    assert!(view::<dyn QuoterServant>(&skeleton).is_none());
    assert!(skeleton
        .local_interface(TypeId::of::<Arc<DiamondImpl>>())
        .is_none());
    assert!(skeleton
        .local_interface(TypeId::of::<dyn DiamondServant>())
        .is_none());
}

#[test]
fn a_reply_handler_skeleton_answers_for_each_ancestor_handler() {
    let skeleton = AmiDiamondHandlerSkeleton::new(Recorder::default());
    let base = view::<dyn AmiBaseHandlerServant>(&skeleton).expect("the base's handler");
    base.twice(4).unwrap();
    assert!(view::<dyn AmiLeftHandlerServant>(&skeleton).is_some());
    assert!(view::<dyn AmiRightHandlerServant>(&skeleton).is_some());
    assert!(view::<dyn AmiDiamondHandlerServant>(&skeleton).is_some());
    assert!(view::<dyn DiamondServant>(&skeleton).is_none());
    assert_eq!(skeleton.servant().received(), ["twice 4"]);
}

#[test]
fn an_amh_skeleton_answers_no_local_interface() {
    let skeleton = QuoterAmhSkeleton::new(HeldQuoter::default());
    assert!(view::<dyn QuoterServant>(&skeleton).is_none());
}

/// An ORB serving a `DiamondImpl` (kept, to look at its state), and the
/// reference to it, in the same ORB.
fn serve_diamond() -> (Orb, Arc<DiamondImpl>, Diamond) {
    let orb = Orb::with_config(Default::default()).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let servant = Arc::new(DiamondImpl::default());
    let diamond = DiamondSkeleton::from_arc(Arc::clone(&servant))
        .activate(&poa)
        .unwrap();
    (orb, servant, diamond)
}

const STRATEGIES: [Collocation; 3] = [Collocation::None, Collocation::ThruPoa, Collocation::Direct];

#[test]
fn every_kind_of_call_gives_the_servants_values_whatever_the_strategy() {
    let (_orb, servant, served) = serve_diamond();
    for strategy in STRATEGIES {
        let d = served.with_collocation(strategy);
        let s = strategy.as_str();
        // Inherited, through both sides of the diamond; and on the base's
        // own stub.
        assert_eq!(d.twice(21).unwrap(), 42, "{s}");
        assert_eq!(Base::from(d.clone()).twice(-4).unwrap(), -8, "{s}");
        assert_eq!(d.name().unwrap(), "diamond", "{s}");
        assert_eq!(d.shout("hi").unwrap(), "HI!", "{s}");
        assert_eq!(d.spread(&Point { x: 3, y: 4 }).unwrap(), [3, 4], "{s}");

        // In, out, two inouts and a return value.
        let mut values = vec![10, 20];
        let mut counter = 5;
        let (sum, at) = d.mix("label", &mut values, &mut counter).unwrap();
        assert_eq!((sum, at), (35, Point { x: 5, y: 3 }), "{s}");
        assert_eq!((values.as_slice(), counter), (&[10, 20, 5][..], 6), "{s}");
        // A user exception leaves the inouts alone.
        match d.mix(REFUSED_LABEL, &mut values, &mut counter) {
            Err(MixError::Refused(refused)) => {
                assert_eq!((refused.why.as_str(), refused.code), (REFUSED_LABEL, 6));
            }
            other => panic!("{s}: expected Refused, got {other:?}"),
        }
        assert_eq!((values.len(), counter), (3, 6), "{s}");

        // Only an inout; a user and a system exception.
        let mut text = String::from("a");
        d.bump(&mut text).unwrap();
        assert_eq!(text, "a+", "{s}");
        let mut minus = String::from("-");
        assert!(
            matches!(d.bump(&mut minus), Err(BumpError::Refused(r)) if r.why == "minus"),
            "{s}"
        );
        assert_eq!(minus, "-", "{s}");
        match d.bump(&mut String::new()) {
            Err(BumpError::System(e)) => assert_eq!(
                (e.kind(), e.minor(), e.completed()),
                (SystemExceptionKind::NoPermission, 5, CompletionStatus::Yes),
                "{s}"
            ),
            other => panic!("{s}: expected NO_PERMISSION, got {other:?}"),
        }

        // An attribute's setter and getter.
        d.set_level(7).unwrap();
        assert_eq!(d.level().unwrap(), 7, "{s}");
        d.set_level(-1).unwrap();
        assert_eq!(d.level().unwrap(), -1, "{s}");

        // A oneway.
        d.note(s).unwrap();
        wait_until("the note arrives", || {
            servant.notes().iter().any(|note| note == s)
        });
    }
}

#[test]
fn a_reply_handler_in_this_process_gets_its_calls_and_replies() {
    let (orb, _servant, served) = serve_diamond();
    let poa = orb.root_poa();
    let recorder = Arc::new(Recorder::default());
    let handler: AmiDiamondHandler = AmiDiamondHandlerSkeleton::from_arc(Arc::clone(&recorder))
        .activate(&poa)
        .unwrap();
    for strategy in STRATEGIES {
        let h = handler.with_collocation(strategy);
        let s = strategy.as_str();
        recorder.received.lock().unwrap().clear();
        // The handler's operations called as plain operations.
        h.mix(9, &Point { x: 1, y: 2 }, &[3, 4], 5).unwrap();
        h.twice(6).unwrap();
        let timeout = SystemException::timeout(8, CompletionStatus::Maybe);
        h.mix_excep(&ExceptionHolder::from_system_exception(&timeout))
            .unwrap();
        assert_eq!(
            recorder.received(),
            ["mix 9 (1, 2) [3, 4] 5", "twice 6", "mix system Timeout 8"],
            "{s}"
        );

        // And as the target of a callback.
        recorder.received.lock().unwrap().clear();
        let d = served.with_collocation(strategy);
        d.sendc_mix(&h, "ab", &[1], 2).unwrap();
        d.sendc_mix(&h, REFUSED_LABEL, &[], 4).unwrap();
        wait_until("both replies arrive", || recorder.received().len() == 2);
        let mut received = recorder.received();
        received.sort();
        assert_eq!(
            received,
            ["mix 3 (2, 2) [1, 2] 3", "mix refused refuse 4"],
            "{s}"
        );
    }
}
