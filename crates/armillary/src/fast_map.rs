//! The hash map of the ORB's per-call lookups: request ids to reply
//! slots, endpoints to connections, object keys, POA paths and object ids
//! to servants. Every call looks in several of these, and `std`'s SipHash
//! showed in the call's profile; foldhash is several times cheaper for
//! short keys. Each map still has a seed of its own, so keys a peer
//! chooses (an object id in a request) cannot be aimed at one map's
//! collisions from outside.

/// A `HashMap` with [`foldhash`]'s fast hasher, seeded per map.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
