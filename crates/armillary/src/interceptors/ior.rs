//! IOR interceptors (`PortableInterceptor::IORInterceptor`): what adds
//! tagged components to the references an ORB's POAs make.

use armillary_giop::ior::TaggedComponent;
use armillary_giop::system_exception::CompletionStatus;

use super::{contained, Interceptors};

/// Adds tagged components to the IIOP profile of the references the ORB
/// makes.
pub trait IorInterceptor: Send + Sync + 'static {
    /// Called for each reference the ORB's POAs make, before it is
    /// published: add components with [`IorInfo::add_ior_component`]. A
    /// panic here is contained: the reference gets no components from
    /// this interceptor.
    fn establish_components(&self, info: &mut IorInfo<'_>);
}

/// The reference being made, as an [`IorInterceptor`] sees it
/// (`PortableInterceptor::IORInfo`).
#[derive(Debug)]
pub struct IorInfo<'a> {
    type_id: &'a str,
    components: Vec<TaggedComponent>,
}

impl IorInfo<'_> {
    /// The repository id the reference names.
    pub fn type_id(&self) -> &str {
        self.type_id
    }

    /// Adds `component` to the reference's IIOP profile.
    pub fn add_ior_component(&mut self, component: TaggedComponent) {
        self.components.push(component);
    }
}

/// The components `interceptors` add to a reference to `type_id`.
pub(crate) fn components(interceptors: &Interceptors, type_id: &str) -> Vec<TaggedComponent> {
    let mut all = Vec::new();
    for interceptor in &interceptors.ior {
        let mut info = IorInfo {
            type_id,
            components: Vec::new(),
        };
        let ran = contained(CompletionStatus::No, || {
            interceptor.establish_components(&mut info);
            Ok(())
        });
        if ran.is_ok() {
            all.append(&mut info.components);
        }
    }
    all
}
