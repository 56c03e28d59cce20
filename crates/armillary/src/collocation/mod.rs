//! Collocation: calls to objects served in this process.
//!
//! Today that is the ORB's own local objects (POA Current, the `RootPOA`
//! reference): [`local_objects`] routes their requests to a
//! [`marshalled::CollocatedInvoker`], which runs the servant on the
//! calling thread through the same marshalling path as a remote call. A
//! reference to any other object of this ORB goes through the invocation
//! engine (`crate::invocation`) over loopback IIOP, as if remote.

pub(crate) mod local_objects;
pub(crate) mod marshalled;
