//! The standard traits of generated types (`idl/traits.idl`): `Default`
//! everywhere, `Eq` and `Hash` where every member allows them (so values,
//! stubs and references key maps), and the attributes `build.rs` adds with
//! `Builder::type_attribute` / `field_attribute`.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;

use armillary::giop::ior::{Ior, TaggedProfile};
use armillary::giop::typecode::TCKind;
use armillary::runtime::{
    ByteOrder, CdrDecode, CdrEncode, CdrReader, CdrWriter, CodeSets, GiopVersion,
};
use armillary::{Fixed, ObjectRef};
use armillary_codegen_tests::traits::traits::{
    service::{CheckError, LooseError},
    ByFlag, Inexact, Keyed, Large, Level, Measure, Node, OnlyDefault, Pick, Problem, Tree, Version,
    WithAny, WithDouble,
};

/// `Probe::<T>::EQ_HASH` is true when `T: Eq + Hash` (the inherent const
/// applies only then; otherwise the trait's default answers).
struct Probe<T>(PhantomData<T>);

trait NotEqHash {
    const EQ_HASH: bool = false;
}

impl<T> NotEqHash for Probe<T> {}

#[allow(dead_code)]
impl<T: Eq + std::hash::Hash> Probe<T> {
    const EQ_HASH: bool = true;
}

fn round_trip<T: CdrEncode + CdrDecode>(value: &T) -> T {
    let mut w =
        CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2).with_codesets(CodeSets::NATIVE);
    value.encode(&mut w).unwrap();
    let bytes = w.into_bytes();
    let mut r = CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2)
        .with_codesets(CodeSets::NATIVE);
    T::decode(&mut r).unwrap()
}

/// A reference to `key` at a made-up endpoint (never called).
fn reference(key: u8) -> ObjectRef {
    ObjectRef::unbound(Ior {
        type_id: "IDL:Traits/Node:1.0".into(),
        profiles: vec![TaggedProfile {
            tag: 0,
            data: vec![1, 2, key],
        }],
    })
}

#[test]
fn eq_and_hash_are_derived_where_every_member_allows_them() {
    let answers = [
        ("Keyed", Probe::<Keyed>::EQ_HASH, true),
        (
            "Tree, recursive through a sequence",
            Probe::<Tree>::EQ_HASH,
            true,
        ),
        ("Pick", Probe::<Pick>::EQ_HASH, true),
        ("OnlyDefault", Probe::<OnlyDefault>::EQ_HASH, true),
        ("ByFlag", Probe::<ByFlag>::EQ_HASH, true),
        ("Large", Probe::<Large>::EQ_HASH, true),
        ("Version", Probe::<Version>::EQ_HASH, true),
        ("Problem", Probe::<Problem>::EQ_HASH, true),
        (
            "CheckError, over Eq exceptions",
            Probe::<CheckError>::EQ_HASH,
            true,
        ),
        ("the stub Node", Probe::<Node>::EQ_HASH, true),
        ("ObjectRef", Probe::<ObjectRef>::EQ_HASH, true),
        ("WithDouble", Probe::<WithDouble>::EQ_HASH, false),
        ("WithAny", Probe::<WithAny>::EQ_HASH, false),
        (
            "Measure, with a double member",
            Probe::<Measure>::EQ_HASH,
            false,
        ),
        ("Inexact, with a float", Probe::<Inexact>::EQ_HASH, false),
        (
            "LooseError, over Inexact",
            Probe::<LooseError>::EQ_HASH,
            false,
        ),
    ];
    for (name, actual, expected) in answers {
        assert_eq!(actual, expected, "Eq + Hash for {name}");
    }
}

#[test]
fn defaults_are_each_members_default() {
    let keyed = Keyed::default();
    assert_eq!(keyed.name, "");
    assert_eq!(keyed.rank, Level::Low, "the first enumerator");
    assert!(keyed.data.is_empty());
    assert!(keyed.peer.is_nil(), "a stub defaults to nil");
    assert!(keyed.obj.is_nil());
    assert_eq!(armillary::TypeCode::default().kind(), TCKind::Null);
    assert_eq!(armillary::Any::default(), armillary::Any::null());
    assert_eq!(
        keyed.price,
        Fixed::new(0, 2).unwrap(),
        "zero at the scale of fixed<5,2>"
    );
    assert_eq!(keyed.count, 0);
    assert_eq!(round_trip(&keyed), keyed);

    // Arrays over 32 elements: written out, not derived.
    let large = Large::default();
    assert_eq!(large.row, [0; 40]);
    assert_eq!(large.table, [[0; 40]; 2]);
    assert_eq!(round_trip(&large), large);

    assert_eq!(WithDouble::default(), WithDouble { d: 0.0, n: 0 });
    assert_eq!(Tree::default().children, Vec::new());
}

#[test]
fn a_union_defaults_to_its_first_labelled_member() {
    assert_eq!(Pick::default(), Pick::Text(String::new()));
    assert_eq!(Measure::default(), Measure::Value(0.0));
    assert_eq!(ByFlag::default(), ByFlag::Yes(0));
    // No label at all: the default member, with any discriminator.
    let OnlyDefault::Text {
        discriminator: _,
        value,
    } = OnlyDefault::default();
    assert_eq!(value, "");
    for union in [
        Pick::default(),
        Pick::Number(7),
        Pick::Unselected(Level::Low),
    ] {
        assert_eq!(round_trip(&union), union);
    }
    assert_eq!(round_trip(&ByFlag::default()), ByFlag::default());
}

// References and stubs key maps with no `allow` of clippy's
// `mutable_key_type`: nothing in them changes after they are made.
#[test]
fn values_stubs_and_references_key_maps() {
    let mut trees = HashSet::new();
    let leaf = Tree {
        value: 1,
        children: Vec::new(),
    };
    let node = Tree {
        value: 0,
        children: vec![leaf.clone(), leaf.clone()],
    };
    assert!(trees.insert(node.clone()));
    assert!(!trees.insert(round_trip(&node)), "equal values hash alike");
    assert!(trees.insert(leaf));

    let mut named: HashMap<Node, &str> = HashMap::new();
    named.insert(Node::from_object(reference(1)), "one");
    named.insert(Node::from_object(reference(2)), "two");
    named.insert(Node::from_object(reference(1)), "uno");
    assert_eq!(named.len(), 2, "the same IOR is the same key");
    assert_eq!(named[&Node::from_object(reference(1))], "uno");

    let references: HashSet<ObjectRef> = [reference(1), reference(1), ObjectRef::nil()].into();
    assert_eq!(references.len(), 2);
    assert!(
        references.contains(&ObjectRef::default()),
        "the default is nil"
    );

    let problems: HashSet<CheckError> = [
        CheckError::Problem(Problem {
            why: "low".into(),
            severity: Level::Low,
        }),
        CheckError::Problem(Problem::default()),
        CheckError::Problem(Problem::default()),
    ]
    .into();
    assert_eq!(problems.len(), 2);
}

#[test]
fn builder_attributes_reach_the_generated_types() {
    // `#[derive(PartialOrd, Ord)]` from `type_attribute("Traits::Version", …)`.
    let mut versions = vec![
        Version { major: 2, minor: 0 },
        Version { major: 1, minor: 9 },
        Version {
            major: 1,
            minor: 10,
        },
    ];
    versions.sort();
    assert_eq!(
        versions,
        [
            Version { major: 1, minor: 9 },
            Version {
                major: 1,
                minor: 10
            },
            Version { major: 2, minor: 0 },
        ]
    );
    assert!(Version { major: 1, minor: 0 } < Version { major: 1, minor: 1 });
}
