//! IIOP profile bodies (1.0–1.2), multiple-components profiles and tagged
//! components.

use crate::cdr::codeset::CodeSetComponentInfo;
use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};
use crate::version::{ByteOrder, GiopVersion};

use super::security::{
    CompoundSecMechList, SslSecTrans, TlsSecTrans, TAG_CSI_SEC_MECH_LIST, TAG_NULL_TAG,
    TAG_SECIOP_SEC_TRANS, TAG_SSL_SEC_TRANS, TAG_TLS_SEC_TRANS,
};
use super::{IorError, TaggedProfile, TAG_INTERNET_IOP, TAG_MULTIPLE_COMPONENTS};

/// `TAG_ORB_TYPE`: which ORB made the reference.
pub const TAG_ORB_TYPE: u32 = 0;
/// `TAG_CODE_SETS`: the server's native and conversion code sets.
pub const TAG_CODE_SETS: u32 = 1;
/// `TAG_ALTERNATE_IIOP_ADDRESS`: another host and port for the profile.
pub const TAG_ALTERNATE_IIOP_ADDRESS: u32 = 3;

/// The ORB type id omniORB publishes ("ATT\0", from its AT&T origins).
pub const ORB_TYPE_OMNIORB: u32 = 0x4154_5400;
/// The ORB type id TAO publishes ("TAO\0").
pub const ORB_TYPE_TAO: u32 = 0x5441_4f00;
/// The ORB type id JacORB publishes ("JAC\0").
pub const ORB_TYPE_JACORB: u32 = 0x4a41_4300;
/// The ORB type id Armillary publishes ("ARM\0"; not registered with the
/// OMG, chosen so it cannot be mistaken for another ORB's).
pub const ORB_TYPE_ARMILLARY: u32 = 0x4152_4d00;

/// A readable name for an ORB type id.
pub fn orb_type_name(id: u32) -> Option<&'static str> {
    Some(match id {
        ORB_TYPE_OMNIORB => "omniORB",
        ORB_TYPE_TAO => "TAO",
        ORB_TYPE_JACORB => "JacORB",
        ORB_TYPE_ARMILLARY => "Armillary",
        _ => return None,
    })
}

/// A tag and its data, exactly as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaggedComponent {
    /// The component tag.
    pub tag: u32,
    /// The component data (an encapsulation for the standard tags).
    pub data: Vec<u8>,
}

/// A component Armillary understands, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownComponent {
    /// `TAG_ORB_TYPE`.
    OrbType(u32),
    /// `TAG_CODE_SETS`.
    CodeSets(CodeSetComponentInfo),
    /// `TAG_ALTERNATE_IIOP_ADDRESS`.
    AlternateIiopAddress {
        /// Host.
        host: String,
        /// Port.
        port: u16,
    },
    /// `TAG_SSL_SEC_TRANS`: a TLS (SSL) port on the profile's host.
    SslSecTrans(SslSecTrans),
    /// `TAG_CSI_SEC_MECH_LIST`: CSIv2 mechanisms (TLS addresses among them).
    CsiSecMechList(CompoundSecMechList),
    /// `TAG_TLS_SEC_TRANS` (normally inside a CSIv2 mechanism).
    TlsSecTrans(TlsSecTrans),
}

impl TaggedComponent {
    pub(super) fn encapsulated(
        tag: u32,
        body: impl FnOnce(&mut CdrWriter) -> Result<(), CdrError>,
    ) -> Result<Self, CdrError> {
        let order = ByteOrder::NATIVE;
        let mut w = CdrWriter::new(order, GiopVersion::V1_2);
        w.write_octet(order.flag());
        body(&mut w)?;
        Ok(TaggedComponent {
            tag,
            data: w.into_bytes(),
        })
    }

    /// A `TAG_ORB_TYPE` component.
    pub fn orb_type(id: u32) -> Self {
        // A single ulong cannot fail to encode.
        Self::encapsulated(TAG_ORB_TYPE, |w| {
            w.write_ulong(id);
            Ok(())
        })
        .unwrap_or(TaggedComponent {
            tag: TAG_ORB_TYPE,
            data: Vec::new(),
        })
    }

    /// A `TAG_CODE_SETS` component.
    pub fn code_sets(info: &CodeSetComponentInfo) -> Self {
        Self::encapsulated(TAG_CODE_SETS, |w| info.encode(w)).unwrap_or(TaggedComponent {
            tag: TAG_CODE_SETS,
            data: Vec::new(),
        })
    }

    /// A `TAG_ALTERNATE_IIOP_ADDRESS` component.
    pub fn alternate_address(host: &str, port: u16) -> Result<Self, CdrError> {
        Self::encapsulated(TAG_ALTERNATE_IIOP_ADDRESS, |w| {
            w.write_string(host)?;
            w.write_ushort(port);
            Ok(())
        })
    }

    /// A `TAG_SSL_SEC_TRANS` component.
    pub fn ssl_sec_trans(ssl: &SslSecTrans) -> Result<Self, CdrError> {
        Self::encapsulated(TAG_SSL_SEC_TRANS, |w| ssl.encode(w))
    }

    /// A `TAG_CSI_SEC_MECH_LIST` component.
    pub fn csi_sec_mech_list(list: &CompoundSecMechList) -> Result<Self, CdrError> {
        Self::encapsulated(TAG_CSI_SEC_MECH_LIST, |w| list.encode(w))
    }

    /// Decodes the component if its tag is one Armillary understands.
    pub fn decode_known(&self) -> Result<Option<KnownComponent>, CdrError> {
        let reader = || CdrReader::encapsulation(&self.data, GiopVersion::V1_2, 0);
        Ok(Some(match self.tag {
            TAG_ORB_TYPE => KnownComponent::OrbType(reader()?.read_ulong()?),
            TAG_CODE_SETS => {
                KnownComponent::CodeSets(CodeSetComponentInfo::decode(&mut reader()?)?)
            }
            TAG_ALTERNATE_IIOP_ADDRESS => {
                let mut r = reader()?;
                KnownComponent::AlternateIiopAddress {
                    host: r.read_string()?,
                    port: r.read_ushort()?,
                }
            }
            TAG_SSL_SEC_TRANS => KnownComponent::SslSecTrans(SslSecTrans::decode(&mut reader()?)?),
            TAG_CSI_SEC_MECH_LIST => {
                KnownComponent::CsiSecMechList(CompoundSecMechList::decode(&mut reader()?)?)
            }
            TAG_TLS_SEC_TRANS => {
                KnownComponent::TlsSecTrans(TlsSecTrans::decode_component(&self.data)?)
            }
            _ => return Ok(None),
        }))
    }

    /// The standard name of a component tag, for display.
    pub fn name_of(tag: u32) -> Option<&'static str> {
        Some(match tag {
            TAG_ORB_TYPE => "TAG_ORB_TYPE",
            TAG_CODE_SETS => "TAG_CODE_SETS",
            2 => "TAG_POLICIES",
            TAG_ALTERNATE_IIOP_ADDRESS => "TAG_ALTERNATE_IIOP_ADDRESS",
            5 => "TAG_ASSOCIATION_OPTIONS",
            TAG_SSL_SEC_TRANS => "TAG_SSL_SEC_TRANS",
            TAG_CSI_SEC_MECH_LIST => "TAG_CSI_SEC_MECH_LIST",
            TAG_NULL_TAG => "TAG_NULL_TAG",
            TAG_SECIOP_SEC_TRANS => "TAG_SECIOP_SEC_TRANS",
            TAG_TLS_SEC_TRANS => "TAG_TLS_SEC_TRANS",
            38 => "TAG_RMI_CUSTOM_MAX_STREAM_FORMAT",
            0x4154_5400 => "TAG_OMNIORB_BIDIR",
            0x4154_5401 => "TAG_OMNIORB_UNIX_TRANS",
            0x4154_5402 => "TAG_OMNIORB_PERSISTENT_ID",
            0x4154_5403 => "TAG_OMNIORB_RESTRICTED_CONNECTION",
            _ => return None,
        })
    }
}

impl CdrEncode for TaggedComponent {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_ulong(self.tag);
        w.write_octet_seq(&self.data)
    }
}

impl CdrDecode for TaggedComponent {
    const MIN_SIZE: usize = 8;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(TaggedComponent {
            tag: r.read_ulong()?,
            data: r.read_octet_seq()?.to_vec(),
        })
    }
}

/// An IIOP profile body (`IIOP::ProfileBody_1_0` / `_1_1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProfileBody {
    /// The IIOP version: the highest GIOP version the server speaks there.
    pub iiop_version: GiopVersion,
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The object key.
    pub object_key: Vec<u8>,
    /// Tagged components (IIOP 1.1 and later).
    pub components: Vec<TaggedComponent>,
    /// The byte order of the encapsulation it came in (kept so that
    /// re-encoding gives the same bytes).
    pub byte_order: ByteOrder,
}

impl ProfileBody {
    /// A body with the given address and key, no components, in the
    /// machine's byte order.
    pub fn new(iiop_version: GiopVersion, host: &str, port: u16, object_key: Vec<u8>) -> Self {
        ProfileBody {
            iiop_version,
            host: host.to_owned(),
            port,
            object_key,
            components: Vec::new(),
            byte_order: ByteOrder::NATIVE,
        }
    }

    /// Decodes the body of a `TAG_INTERNET_IOP` profile.
    pub fn decode(data: &[u8]) -> Result<Self, IorError> {
        let at = |source| IorError::Profile { source };
        let mut r = CdrReader::encapsulation(data, GiopVersion::V1_2, 0).map_err(at)?;
        let byte_order = r.byte_order();
        let major = r.read_octet().map_err(at)?;
        let minor = r.read_octet().map_err(at)?;
        let iiop_version = GiopVersion::new(major, minor);
        if major != 1 {
            return Err(IorError::UnsupportedIiopVersion(iiop_version));
        }
        let host = r.read_string().map_err(at)?;
        let port = r.read_ushort().map_err(at)?;
        let object_key = r.read_octet_seq().map_err(at)?.to_vec();
        let components = if minor >= 1 {
            Vec::decode(&mut r).map_err(at)?
        } else {
            Vec::new()
        };
        Ok(ProfileBody {
            iiop_version,
            host,
            port,
            object_key,
            components,
            byte_order,
        })
    }

    /// Encodes the body as the data of a `TAG_INTERNET_IOP` profile.
    pub fn encode(&self) -> Result<Vec<u8>, CdrError> {
        let mut w = CdrWriter::new(self.byte_order, GiopVersion::V1_2);
        w.write_octet(self.byte_order.flag());
        w.write_octet(self.iiop_version.major);
        w.write_octet(self.iiop_version.minor);
        w.write_string(&self.host)?;
        w.write_ushort(self.port);
        w.write_octet_seq(&self.object_key)?;
        if self.iiop_version.minor >= 1 {
            self.components.encode(&mut w)?;
        }
        Ok(w.into_bytes())
    }

    /// The profile carrying this body.
    pub fn to_profile(&self) -> Result<TaggedProfile, CdrError> {
        Ok(TaggedProfile {
            tag: TAG_INTERNET_IOP,
            data: self.encode()?,
        })
    }

    /// The first component with `tag`, decoded.
    pub fn component(&self, tag: u32) -> Option<KnownComponent> {
        self.components
            .iter()
            .find(|c| c.tag == tag)
            .and_then(|c| c.decode_known().ok().flatten())
    }

    /// The code sets the server published, if any.
    pub fn code_sets(&self) -> Option<CodeSetComponentInfo> {
        match self.component(TAG_CODE_SETS) {
            Some(KnownComponent::CodeSets(info)) => Some(info),
            _ => None,
        }
    }

    /// The TLS addresses the profile announces: those of the TLS
    /// mechanisms of a `TAG_CSI_SEC_MECH_LIST`, then the port of each
    /// `TAG_SSL_SEC_TRANS` on the profile's host (duplicates removed).
    /// Components that do not decode are skipped.
    pub fn tls_addresses(&self) -> Vec<(String, u16)> {
        let mut out: Vec<(String, u16)> = Vec::new();
        let mut add = |a: (String, u16)| {
            if a.1 != 0 && !out.contains(&a) {
                out.push(a);
            }
        };
        for c in &self.components {
            if let Ok(Some(KnownComponent::CsiSecMechList(list))) = c.decode_known() {
                list.tls_addresses().into_iter().for_each(&mut add);
            }
        }
        for c in &self.components {
            if let Ok(Some(KnownComponent::SslSecTrans(ssl))) = c.decode_known() {
                add((self.host.clone(), ssl.port));
            }
        }
        out
    }

    /// Every address of the profile: its own, then alternates.
    pub fn addresses(&self) -> Vec<(String, u16)> {
        let mut out = vec![(self.host.clone(), self.port)];
        for c in &self.components {
            if let Ok(Some(KnownComponent::AlternateIiopAddress { host, port })) = c.decode_known()
            {
                out.push((host, port));
            }
        }
        out
    }
}

/// Decodes a `TAG_MULTIPLE_COMPONENTS` profile body.
pub fn decode_multiple_components(data: &[u8]) -> Result<Vec<TaggedComponent>, IorError> {
    let at = |source| IorError::Profile { source };
    let mut r = CdrReader::encapsulation(data, GiopVersion::V1_2, 0).map_err(at)?;
    Vec::decode(&mut r).map_err(at)
}

/// The name of a profile tag, for display.
pub fn profile_tag_name(tag: u32) -> Option<&'static str> {
    Some(match tag {
        TAG_INTERNET_IOP => "TAG_INTERNET_IOP",
        TAG_MULTIPLE_COMPONENTS => "TAG_MULTIPLE_COMPONENTS",
        2 => "TAG_SCCP_IOP",
        3 => "TAG_UIPMC",
        _ => return None,
    })
}
