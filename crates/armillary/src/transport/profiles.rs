//! IIOP profiles as a client uses them, decoded once: the profile body
//! (address, object key, components) and the routes to call it by,
//! kept by the profile's bytes. A reference called again and again is
//! not decoded again on every call (its components were, code sets and
//! TLS addresses included, which showed in the client's profile).

use std::collections::VecDeque;
use std::sync::Arc;

use armillary_giop::ior::{ProfileBody, TaggedProfile, TAG_INTERNET_IOP};
use armillary_giop::system_exception::SystemException;
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
        let usable = Arc::new(UsableProfile {
            data: data.to_vec(),
            routes: routes(&body, self.client_tls, self.require_tls),
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
