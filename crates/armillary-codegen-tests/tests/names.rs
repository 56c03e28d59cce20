//! Rust names that meet through inheritance (`idl/names.idl`): `Both`
//! inherits the operation `my_factory` from `Maker` and the attribute
//! `MyFactory` from `Keeper`, and the AMI forms of `Maker::getValue` and
//! `Keeper::value`, which have the same Rust names. The derived stub gives
//! the later base's a suffix (`my_factory_2`, `get_value_async_2`), the
//! bases keep theirs, and a servant implements each base's trait in its
//! own `impl`. Every method reaches its own operation through a real ORB.

use std::sync::{Arc, Mutex};

use armillary::ami::ExceptionHolder;
use armillary::config::OrbConfig;
use armillary::{Orb, SystemException};
use armillary_codegen_tests::names::names::{
    AmiBothHandler, AmiBothHandlerServant, AmiBothHandlerSkeleton, AmiKeeperHandlerServant,
    AmiMakerHandlerServant, Both, BothServant, BothSkeleton, Derived, DerivedServant,
    DerivedSkeleton, Keeper, KeeperServant, Maker, MakerServant,
};
use armillary_testkit::wait_until;

/// One servant for `Both` and `Derived`: each base's methods in that
/// base's trait.
struct Objects {
    my_factory: Mutex<String>,
    value: Mutex<i32>,
}

impl Default for Objects {
    fn default() -> Self {
        Objects {
            my_factory: Mutex::new("Keeper::MyFactory".to_owned()),
            value: Mutex::new(0),
        }
    }
}

impl MakerServant for Objects {
    fn my_factory(&self) -> Result<String, SystemException> {
        Ok("Maker::my_factory".to_owned())
    }

    fn get_value(&self) -> Result<i32, SystemException> {
        Ok(7)
    }
}

impl KeeperServant for Objects {
    fn my_factory(&self) -> Result<String, SystemException> {
        Ok(self.my_factory.lock().unwrap().clone())
    }

    fn set_my_factory(&self, value: String) -> Result<(), SystemException> {
        *self.my_factory.lock().unwrap() = value;
        Ok(())
    }

    fn value(&self) -> Result<i32, SystemException> {
        Ok(*self.value.lock().unwrap())
    }

    fn set_value(&self, value: i32) -> Result<(), SystemException> {
        *self.value.lock().unwrap() = value;
        Ok(())
    }
}

impl BothServant for Objects {
    fn own(&self) -> Result<String, SystemException> {
        // Inside the servant, each base's method by its trait.
        Ok(format!(
            "{} and {}",
            MakerServant::my_factory(self)?,
            KeeperServant::my_factory(self)?
        ))
    }
}

impl DerivedServant for Objects {
    fn my_factory_2_2(&self) -> Result<String, SystemException> {
        Ok("Derived::my_factory_2".to_owned())
    }
}

/// A server ORB serving a `Both` and a `Derived` (one servant), and their
/// references in a client ORB, whose root POA is active (for handlers).
fn server_and_client() -> (Orb, Orb, Arc<Objects>, Both, Derived) {
    let server = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = server.root_poa();
    poa.manager().activate().unwrap();
    let objects = Arc::new(Objects::default());
    let both = BothSkeleton::from_arc(objects.clone())
        .activate(&poa)
        .unwrap();
    let derived = DerivedSkeleton::from_arc(objects.clone())
        .activate(&poa)
        .unwrap();
    let client = Orb::with_config(OrbConfig::default()).unwrap();
    client.root_poa().manager().activate().unwrap();
    let remote = |object: &armillary::ObjectRef| {
        client
            .string_to_object(&server.object_to_string(object))
            .unwrap()
    };
    let both = Both::from_object(remote(both.as_object()));
    let derived = Derived::from_object(remote(derived.as_object()));
    (server, client, objects, both, derived)
}

#[test]
fn the_derived_stub_calls_each_base_s_operation_under_its_own_name() {
    let (_server, _client, objects, both, _) = server_and_client();
    assert_eq!(both.my_factory().unwrap(), "Maker::my_factory");
    assert_eq!(both.my_factory_2().unwrap(), "Keeper::MyFactory");
    both.set_my_factory("set through Both").unwrap();
    assert_eq!(both.my_factory_2().unwrap(), "set through Both");
    // The bases' stubs keep their names.
    assert_eq!(
        Keeper::from(both.clone()).my_factory().unwrap(),
        "set through Both"
    );
    assert_eq!(
        Maker::from(both.clone()).my_factory().unwrap(),
        "Maker::my_factory"
    );
    assert_eq!(both.get_value().unwrap(), 7);
    both.set_value(5).unwrap();
    assert_eq!(both.value().unwrap(), 5);
    assert_eq!(
        both.own().unwrap(),
        "Maker::my_factory and set through Both"
    );
    // The servant, called by trait.
    assert_eq!(
        MakerServant::my_factory(&*objects).unwrap(),
        "Maker::my_factory"
    );
    assert_eq!(
        KeeperServant::my_factory(&*objects).unwrap(),
        "set through Both"
    );
}

#[test]
fn the_derived_stub_s_ami_forms_call_each_base_s_operation() {
    let (_server, _client, _, both, _) = server_and_client();
    both.set_value(5).unwrap();
    // `Maker::getValue` and `Keeper::value`'s getter.
    assert_eq!(pollster::block_on(both.get_value_async()).unwrap(), 7);
    assert_eq!(pollster::block_on(both.get_value_async_2()).unwrap(), 5);
    assert_eq!(both.sendp_get_value().take().unwrap(), 7);
    assert_eq!(both.sendp_get_value_2().take().unwrap(), 5);
    assert_eq!(
        pollster::block_on(both.my_factory_async()).unwrap(),
        "Maker::my_factory"
    );
    assert_eq!(
        pollster::block_on(both.get_my_factory_async()).unwrap(),
        "Keeper::MyFactory"
    );
}

/// The replies a handler heard.
#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl Heard {
    fn push(&self, event: String) {
        self.0.lock().unwrap().push(event);
    }

    fn sorted(&self) -> Vec<String> {
        let mut events = self.0.lock().unwrap().clone();
        events.sort();
        events
    }
}

/// A reply handler for `Both`: the replies of `Maker::getValue` and
/// `Keeper::value`, each in its base handler's trait (the rest default).
struct ValueHandler(Arc<Heard>);

impl AmiMakerHandlerServant for ValueHandler {
    fn get_value(&self, ami_return_val: i32) -> Result<(), SystemException> {
        self.0.push(format!("Maker::getValue {ami_return_val}"));
        Ok(())
    }
}

impl AmiKeeperHandlerServant for ValueHandler {
    fn get_value(&self, ami_return_val: i32) -> Result<(), SystemException> {
        self.0.push(format!("Keeper::value {ami_return_val}"));
        Ok(())
    }

    fn get_value_excep(
        &self,
        excep_holder: ExceptionHolder<SystemException>,
    ) -> Result<(), SystemException> {
        self.0
            .push(format!("Keeper::value {:?}", excep_holder.raise()));
        Ok(())
    }
}

impl AmiBothHandlerServant for ValueHandler {}

#[test]
fn callbacks_reach_each_base_s_handler_method() {
    let (_server, client, _, both, _) = server_and_client();
    both.set_value(5).unwrap();
    let heard = Arc::new(Heard::default());
    let handler: AmiBothHandler = AmiBothHandlerSkeleton::new(ValueHandler(heard.clone()))
        .activate(&client.root_poa())
        .unwrap();
    both.sendc_get_value(&handler).unwrap();
    both.sendc_get_value_2(&handler).unwrap();
    wait_until("both replies are heard", || heard.sorted().len() == 2);
    assert_eq!(heard.sorted(), ["Keeper::value 5", "Maker::getValue 7"]);
    // The handler's stub, called directly: `get_value` is Maker's handler
    // method (the first base), `get_value_2` Keeper's.
    handler.get_value(1).unwrap();
    handler.get_value_2(2).unwrap();
    assert_eq!(
        heard.sorted(),
        [
            "Keeper::value 2",
            "Keeper::value 5",
            "Maker::getValue 1",
            "Maker::getValue 7"
        ]
    );
}

#[test]
fn a_derived_interface_names_inherited_methods_as_its_base_and_renames_its_own() {
    let (_server, _client, _, _, derived) = server_and_client();
    assert_eq!(derived.my_factory().unwrap(), "Maker::my_factory");
    assert_eq!(derived.my_factory_2().unwrap(), "Keeper::MyFactory");
    // Its own `my_factory_2` comes after the inherited names.
    assert_eq!(derived.my_factory_2_2().unwrap(), "Derived::my_factory_2");
    assert_eq!(pollster::block_on(derived.get_value_async_2()).unwrap(), 0);
    assert_eq!(
        Both::from(derived).my_factory_2().unwrap(),
        "Keeper::MyFactory"
    );
}
