//! IIOP profiles as a client uses them, decoded once: the profile body
//! (address, object key, components), the routes to call it by and the
//! form of union default labels its ORB reads, kept by the profile's
//! bytes. A reference called again and again is not decoded again on
//! every call (its components were, code sets and TLS addresses
//! included, which showed in the client's profile).

use std::collections::VecDeque;
use std::sync::Arc;

use armillary_giop::ior::{
    KnownComponent, ProfileBody, TaggedProfile, TAG_INTERNET_IOP, TAG_ORB_TYPE,
};
use armillary_giop::system_exception::SystemException;
use armillary_giop::typecode::DefaultLabelForm;
use parking_lot::Mutex;

use super::tls::{routes, Route};

/// How many profiles the cache keeps: the ones used last.
const CAPACITY: usize = 64;

/// An IIOP profile, decoded, with the routes to it.
#[derive(Debug)]
pub(crate) struct UsableProfile {
    /// The profile's bytes, its key in the cache.
    data: Vec<u8>,
    pub(crate) body: ProfileBody,
    /// The addresses to call, in order, or why none can be.
    pub(crate) routes: Result<Vec<Route>, SystemException>,
    /// How the ORB that made the profile reads a union's default label,
    /// by its `TAG_ORB_TYPE` ([`DefaultLabelForm::read_by`]); `None`:
    /// no ORB type, or one that reads both forms or is not known.
    pub(crate) default_label: Option<DefaultLabelForm>,
}

/// The profiles used last, each decoded once (see the module docs).
#[derive(Debug)]
pub(crate) struct ProfileCache {
    /// Whether this client has trusted roots (TLS routes are used).
    client_tls: bool,
    /// Whether it refuses plain routes.
    require_tls: bool,
    /// Most recently used first.
    recent: Mutex<VecDeque<Arc<UsableProfile>>>,
}

impl ProfileCache {
    /// A cache for a client with or without TLS roots, requiring TLS or
    /// not (see [`routes`]).
    pub(crate) fn new(client_tls: bool, require_tls: bool) -> Self {
        ProfileCache {
            client_tls,
            require_tls,
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// The first IIOP profile of `profiles` that decodes, with its index.
    pub(crate) fn first_iiop(
        &self,
        profiles: &[TaggedProfile],
    ) -> Option<(usize, Arc<UsableProfile>)> {
        profiles
            .iter()
            .enumerate()
            .filter(|(_, p)| p.tag == TAG_INTERNET_IOP)
            .find_map(|(i, p)| self.get(&p.data).map(|u| (i, u)))
    }

    /// The IIOP profile body encoded in `data`, decoded (now, or when it
    /// was last used); `None` when it does not decode.
    fn get(&self, data: &[u8]) -> Option<Arc<UsableProfile>> {
        {
            let mut recent = self.recent.lock();
            if let Some(i) = recent.iter().position(|u| u.data == data) {
                let found = recent[i].clone();
                if i > 0 {
                    recent.remove(i);
                    recent.push_front(found.clone());
                }
                return Some(found);
            }
        }
        let body = ProfileBody::decode(data).ok()?;
        let default_label = match body.component(TAG_ORB_TYPE) {
            Some(KnownComponent::OrbType(id)) => DefaultLabelForm::read_by(id),
            _ => None,
        };
        let usable = Arc::new(UsableProfile {
            data: data.to_vec(),
            routes: routes(&body, self.client_tls, self.require_tls),
            default_label,
            body,
        });
        let mut recent = self.recent.lock();
        recent.push_front(usable.clone());
        recent.truncate(CAPACITY);
        Some(usable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use armillary_giop::GiopVersion;

    fn profile(port: u16) -> TaggedProfile {
        let body = ProfileBody::new(GiopVersion::V1_2, "127.0.0.1", port, vec![1, 2, 3]);
        TaggedProfile {
            tag: TAG_INTERNET_IOP,
            data: body.encode().unwrap(),
        }
    }

    #[test]
    fn the_orb_type_tells_the_default_label_form() {
        use armillary_giop::ior::{TaggedComponent, ORB_TYPE_ARMILLARY, ORB_TYPE_JACORB};
        use armillary_giop::ior::{ORB_TYPE_OMNIORB, ORB_TYPE_TAO};
        let cache = ProfileCache::new(false, false);
        let with_orb_type = |orb_type: Option<u32>| {
            let mut body = ProfileBody::new(GiopVersion::V1_2, "127.0.0.1", 1, vec![1]);
            body.components
                .extend(orb_type.map(TaggedComponent::orb_type));
            TaggedProfile {
                tag: TAG_INTERNET_IOP,
                data: body.encode().unwrap(),
            }
        };
        for (orb_type, form) in [
            (
                Some(ORB_TYPE_OMNIORB),
                Some(DefaultLabelForm::DiscriminatorTyped),
            ),
            (
                Some(ORB_TYPE_TAO),
                Some(DefaultLabelForm::DiscriminatorTyped),
            ),
            (Some(ORB_TYPE_JACORB), Some(DefaultLabelForm::ZeroOctet)),
            (Some(ORB_TYPE_ARMILLARY), None),
            (Some(0x1234_5678), None),
            (None, None),
        ] {
            let (_, usable) = cache.first_iiop(&[with_orb_type(orb_type)]).unwrap();
            assert_eq!(usable.default_label, form, "{orb_type:x?}");
        }
    }

    #[test]
    fn a_profile_is_decoded_once_and_the_least_recently_used_go_first() {
        let cache = ProfileCache::new(false, false);
        let garbage = TaggedProfile {
            tag: TAG_INTERNET_IOP,
            data: vec![9],
        };
        let (index, first) = cache.first_iiop(&[garbage, profile(1)]).unwrap();
        assert_eq!((index, first.body.port), (1, 1));
        assert_eq!(first.routes.as_ref().unwrap()[0].port, 1);
        let (_, again) = cache.first_iiop(&[profile(1)]).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "decoded once");
        for port in 2..=CAPACITY as u16 + 1 {
            cache.first_iiop(&[profile(port)]).unwrap();
        }
        let (_, evicted) = cache.first_iiop(&[profile(1)]).unwrap();
        assert!(!Arc::ptr_eq(&first, &evicted), "decoded again once evicted");
        assert_eq!(evicted.body, first.body);
    }
}
