//! The tagged components that announce a secure (TLS) transport in an IIOP
//! profile: `SSLIOP::SSL` (`TAG_SSL_SEC_TRANS`, the CORBA Security
//! Service's SSL component that omniORB and TAO publish) and CSIv2's
//! `CSIIOP::CompoundSecMechList` (`TAG_CSI_SEC_MECH_LIST`) whose transport
//! mechanism is a `CSIIOP::TLS_SEC_TRANS` (`TAG_TLS_SEC_TRANS`).
//!
//! Both are CDR encapsulations. The `SSL` component names only a port: the
//! host is the profile's. A `TLS_SEC_TRANS` lists whole addresses. omniORB
//! 4.2 publishes `TAG_SSL_SEC_TRANS` (with the profile's own port 0 when it
//! listens only on SSL) and reads both.

use crate::cdr::{CdrDecode, CdrEncode, CdrError, CdrReader, CdrWriter};

/// `SSLIOP::TAG_SSL_SEC_TRANS`.
pub const TAG_SSL_SEC_TRANS: u32 = 20;
/// `IOP::TAG_CSI_SEC_MECH_LIST` (CSIv2).
pub const TAG_CSI_SEC_MECH_LIST: u32 = 33;
/// `IOP::TAG_NULL_TAG`: the transport mechanism of a CSIv2 mechanism that
/// needs no transport security.
pub const TAG_NULL_TAG: u32 = 34;
/// `IOP::TAG_SECIOP_SEC_TRANS` (CSIv2 over SECIOP; shown, not used).
pub const TAG_SECIOP_SEC_TRANS: u32 = 35;
/// `IOP::TAG_TLS_SEC_TRANS`: a CSIv2 transport mechanism over TLS.
pub const TAG_TLS_SEC_TRANS: u32 = 36;

/// `Security::AssociationOptions` / `CSIIOP::AssociationOptions` bits.
pub mod association {
    /// The target accepts unprotected associations.
    pub const NO_PROTECTION: u16 = 1;
    /// Messages are integrity-protected.
    pub const INTEGRITY: u16 = 2;
    /// Messages are encrypted.
    pub const CONFIDENTIALITY: u16 = 4;
    /// Replayed messages are detected.
    pub const DETECT_REPLAY: u16 = 8;
    /// Misordered messages are detected.
    pub const DETECT_MISORDERING: u16 = 16;
    /// The target proves its identity (a server certificate).
    pub const ESTABLISH_TRUST_IN_TARGET: u16 = 32;
    /// The client proves its identity (a client certificate).
    pub const ESTABLISH_TRUST_IN_CLIENT: u16 = 64;

    /// The names of the bits set in `options`, for display.
    pub fn names(options: u16) -> Vec<&'static str> {
        [
            (NO_PROTECTION, "NoProtection"),
            (INTEGRITY, "Integrity"),
            (CONFIDENTIALITY, "Confidentiality"),
            (DETECT_REPLAY, "DetectReplay"),
            (DETECT_MISORDERING, "DetectMisordering"),
            (ESTABLISH_TRUST_IN_TARGET, "EstablishTrustInTarget"),
            (ESTABLISH_TRUST_IN_CLIENT, "EstablishTrustInClient"),
        ]
        .into_iter()
        .filter(|(bit, _)| options & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }
}

/// `SSLIOP::SSL`, the body of a `TAG_SSL_SEC_TRANS` component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SslSecTrans {
    /// What the target supports ([`association`] bits).
    pub target_supports: u16,
    /// What the target requires of its clients.
    pub target_requires: u16,
    /// The TLS port, on the profile's host.
    pub port: u16,
}

impl CdrEncode for SslSecTrans {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_ushort(self.target_supports);
        w.write_ushort(self.target_requires);
        w.write_ushort(self.port);
        Ok(())
    }
}

impl CdrDecode for SslSecTrans {
    const MIN_SIZE: usize = 6;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        Ok(SslSecTrans {
            target_supports: r.read_ushort()?,
            target_requires: r.read_ushort()?,
            port: r.read_ushort()?,
        })
    }
}

/// `CSIIOP::TLS_SEC_TRANS`: the transport mechanism of a CSIv2 mechanism
/// that runs over TLS.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TlsSecTrans {
    /// What the target supports ([`association`] bits).
    pub target_supports: u16,
    /// What the target requires of its clients.
    pub target_requires: u16,
    /// Where the TLS endpoints are, as (host, port).
    pub addresses: Vec<(String, u16)>,
}

impl TlsSecTrans {
    /// This mechanism as a `TAG_TLS_SEC_TRANS` component (an encapsulation).
    pub fn to_component(&self) -> Result<super::TaggedComponent, CdrError> {
        super::TaggedComponent::encapsulated(TAG_TLS_SEC_TRANS, |w| {
            w.write_ushort(self.target_supports);
            w.write_ushort(self.target_requires);
            w.write_len(self.addresses.len())?;
            for (host, port) in &self.addresses {
                w.write_string(host)?;
                w.write_ushort(*port);
            }
            Ok(())
        })
    }

    /// Decodes the data of a `TAG_TLS_SEC_TRANS` component.
    pub fn decode_component(data: &[u8]) -> Result<Self, CdrError> {
        let mut r = CdrReader::encapsulation(data, crate::GiopVersion::V1_2, 0)?;
        let target_supports = r.read_ushort()?;
        let target_requires = r.read_ushort()?;
        // A TransportAddress is at least a 4-byte string length, a 1-byte
        // string and a 2-byte port.
        let count = r.read_seq_len(8)?;
        let mut addresses = Vec::with_capacity(count);
        for _ in 0..count {
            let host = r.read_string()?;
            addresses.push((host, r.read_ushort()?));
        }
        Ok(TlsSecTrans {
            target_supports,
            target_requires,
            addresses,
        })
    }
}

/// `CSIIOP::AS_ContextSec`: the client authentication layer of a CSIv2
/// mechanism.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct AsContextSec {
    /// What the target supports.
    pub target_supports: u16,
    /// What the target requires.
    pub target_requires: u16,
    /// The GSS mechanism OID (ASN.1 DER), empty for none.
    pub client_authentication_mech: Vec<u8>,
    /// The target's GSS exported name, empty for none.
    pub target_name: Vec<u8>,
}

/// `CSIIOP::ServiceConfiguration`: one privilege authority.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ServiceConfiguration {
    /// `ServiceConfigurationSyntax`.
    pub syntax: u32,
    /// `ServiceSpecificName`.
    pub name: Vec<u8>,
}

/// `CSIIOP::SAS_ContextSec`: the attribute (identity assertion) layer of a
/// CSIv2 mechanism.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SasContextSec {
    /// What the target supports.
    pub target_supports: u16,
    /// What the target requires.
    pub target_requires: u16,
    /// The privilege authorities.
    pub privilege_authorities: Vec<ServiceConfiguration>,
    /// The naming mechanisms (OIDs) of the identities it accepts.
    pub supported_naming_mechanisms: Vec<Vec<u8>>,
    /// `CSI::IdentityTokenType` bits.
    pub supported_identity_types: u32,
}

/// `CSIIOP::CompoundSecMech`: one way of reaching the target securely.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompoundSecMech {
    /// What the mechanism as a whole requires.
    pub target_requires: u16,
    /// The transport layer: a `TAG_TLS_SEC_TRANS`, `TAG_SECIOP_SEC_TRANS`
    /// or `TAG_NULL_TAG` component, kept as received.
    pub transport_mech: super::TaggedComponent,
    /// The authentication layer.
    pub as_context_mech: AsContextSec,
    /// The attribute layer.
    pub sas_context_mech: SasContextSec,
}

impl CompoundSecMech {
    /// The transport mechanism decoded, if it is TLS.
    pub fn tls(&self) -> Option<TlsSecTrans> {
        (self.transport_mech.tag == TAG_TLS_SEC_TRANS)
            .then(|| TlsSecTrans::decode_component(&self.transport_mech.data).ok())
            .flatten()
    }
}

/// `CSIIOP::CompoundSecMechList`, the body of `TAG_CSI_SEC_MECH_LIST`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompoundSecMechList {
    /// Whether the target keeps security contexts across requests.
    pub stateful: bool,
    /// The mechanisms, in the target's order of preference.
    pub mechanisms: Vec<CompoundSecMech>,
}

impl CompoundSecMechList {
    /// Every TLS address of every mechanism, in order.
    pub fn tls_addresses(&self) -> Vec<(String, u16)> {
        self.mechanisms
            .iter()
            .filter_map(CompoundSecMech::tls)
            .flat_map(|t| t.addresses)
            .collect()
    }
}

fn write_oid_list(w: &mut CdrWriter, list: &[Vec<u8>]) -> Result<(), CdrError> {
    w.write_len(list.len())?;
    for oid in list {
        w.write_octet_seq(oid)?;
    }
    Ok(())
}

fn read_oid_list(r: &mut CdrReader<'_>) -> Result<Vec<Vec<u8>>, CdrError> {
    let count = r.read_seq_len(4)?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        out.push(r.read_octet_seq()?.to_vec());
    }
    Ok(out)
}

impl CdrEncode for CompoundSecMechList {
    fn encode(&self, w: &mut CdrWriter) -> Result<(), CdrError> {
        w.write_bool(self.stateful);
        w.write_len(self.mechanisms.len())?;
        for m in &self.mechanisms {
            w.write_ushort(m.target_requires);
            m.transport_mech.encode(w)?;
            let a = &m.as_context_mech;
            w.write_ushort(a.target_supports);
            w.write_ushort(a.target_requires);
            w.write_octet_seq(&a.client_authentication_mech)?;
            w.write_octet_seq(&a.target_name)?;
            let s = &m.sas_context_mech;
            w.write_ushort(s.target_supports);
            w.write_ushort(s.target_requires);
            w.write_len(s.privilege_authorities.len())?;
            for p in &s.privilege_authorities {
                w.write_ulong(p.syntax);
                w.write_octet_seq(&p.name)?;
            }
            write_oid_list(w, &s.supported_naming_mechanisms)?;
            w.write_ulong(s.supported_identity_types);
        }
        Ok(())
    }
}

impl CdrDecode for CompoundSecMechList {
    const MIN_SIZE: usize = 8;

    fn decode(r: &mut CdrReader<'_>) -> Result<Self, CdrError> {
        let stateful = r.read_bool()?;
        // A CompoundSecMech is at least 2 + 8 + 12 + 16 bytes.
        let count = r.read_seq_len(38)?;
        let mut mechanisms = Vec::with_capacity(count);
        for _ in 0..count {
            let target_requires = r.read_ushort()?;
            let transport_mech = super::TaggedComponent::decode(r)?;
            let as_context_mech = AsContextSec {
                target_supports: r.read_ushort()?,
                target_requires: r.read_ushort()?,
                client_authentication_mech: r.read_octet_seq()?.to_vec(),
                target_name: r.read_octet_seq()?.to_vec(),
            };
            let target_supports = r.read_ushort()?;
            let sas_requires = r.read_ushort()?;
            let authorities = r.read_seq_len(8)?;
            let mut privilege_authorities = Vec::with_capacity(authorities);
            for _ in 0..authorities {
                privilege_authorities.push(ServiceConfiguration {
                    syntax: r.read_ulong()?,
                    name: r.read_octet_seq()?.to_vec(),
                });
            }
            let sas_context_mech = SasContextSec {
                target_supports,
                target_requires: sas_requires,
                privilege_authorities,
                supported_naming_mechanisms: read_oid_list(r)?,
                supported_identity_types: r.read_ulong()?,
            };
            mechanisms.push(CompoundSecMech {
                target_requires,
                transport_mech,
                as_context_mech,
                sas_context_mech,
            });
        }
        Ok(CompoundSecMechList {
            stateful,
            mechanisms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ior::{Ior, KnownComponent, TaggedComponent};

    /// The IOR of omniORB 4.2's `interop_ssl_server` listening on
    /// `giop:ssl:127.0.0.1:0` only (catior: `IIOP 1.2 127.0.0.1 0`,
    /// `TAG_SSL_SEC_TRANS port = 57905 supports 102 requires 102`).
    const OMNIORB_SSL_ONLY: &str = "IOR:010000001b00000049444c3a496e7465726f702f45766572797468696e673a312e300000010000000000000070000000010102000a0000003132372e302e302e310000000e000000fe474b046b00005bdd000000000000000300000000000000080000000100000000545441010000001c00000001000000010001000100000001000105090101000100000009010100140000000800000001006600660031e2";

    #[test]
    fn omniorb_ssl_component_decodes() {
        let ior: Ior = OMNIORB_SSL_ONLY.parse().unwrap();
        let body = &ior.iiop_profiles()[0];
        assert_eq!(body.port, 0);
        let ssl = body
            .components
            .iter()
            .find_map(|c| match c.decode_known() {
                Ok(Some(KnownComponent::SslSecTrans(s))) => Some(s),
                _ => None,
            })
            .unwrap();
        assert_eq!(
            ssl,
            SslSecTrans {
                target_supports: 102,
                target_requires: 102,
                port: 57905
            }
        );
        assert_eq!(
            association::names(102),
            [
                "Integrity",
                "Confidentiality",
                "EstablishTrustInTarget",
                "EstablishTrustInClient"
            ]
        );
        assert_eq!(body.tls_addresses(), [("127.0.0.1".to_owned(), 57905)]);
    }

    #[test]
    fn ssl_component_round_trips_byte_exact() {
        let ior: Ior = OMNIORB_SSL_ONLY.parse().unwrap();
        let body = &ior.iiop_profiles()[0];
        let theirs = body.components.iter().find(|c| c.tag == 20).unwrap();
        let ssl = SslSecTrans {
            target_supports: 102,
            target_requires: 102,
            port: 57905,
        };
        // omniORB writes little-endian encapsulations, as Armillary does on
        // this machine.
        if crate::ByteOrder::NATIVE == crate::ByteOrder::Little {
            assert_eq!(&TaggedComponent::ssl_sec_trans(&ssl).unwrap(), theirs);
        }
    }

    #[test]
    fn csi_mech_list_round_trips() {
        let tls = TlsSecTrans {
            target_supports: 0x66,
            target_requires: 0x46,
            addresses: vec![("127.0.0.1".into(), 4433), ("::1".into(), 4434)],
        };
        let list = CompoundSecMechList {
            stateful: false,
            mechanisms: vec![CompoundSecMech {
                target_requires: 0x46,
                transport_mech: tls.to_component().unwrap(),
                as_context_mech: AsContextSec {
                    client_authentication_mech: vec![6, 1, 2],
                    ..AsContextSec::default()
                },
                sas_context_mech: SasContextSec {
                    privilege_authorities: vec![ServiceConfiguration {
                        syntax: 1,
                        name: b"x".to_vec(),
                    }],
                    supported_naming_mechanisms: vec![vec![6, 3]],
                    supported_identity_types: 1,
                    ..SasContextSec::default()
                },
            }],
        };
        let c = TaggedComponent::csi_sec_mech_list(&list).unwrap();
        assert_eq!(c.tag, TAG_CSI_SEC_MECH_LIST);
        let Ok(Some(KnownComponent::CsiSecMechList(back))) = c.decode_known() else {
            panic!("not decoded");
        };
        assert_eq!(back, list);
        assert_eq!(back.mechanisms[0].tls(), Some(tls.clone()));
        assert_eq!(back.tls_addresses(), tls.addresses);
        // Every truncation is an error, never a panic.
        for n in 0..c.data.len() {
            let cut = TaggedComponent {
                tag: c.tag,
                data: c.data[..n].to_vec(),
            };
            assert!(cut.decode_known().is_err(), "{n}");
        }
    }

    #[test]
    fn garbage_never_panics() {
        // A small deterministic generator (xorshift): many shapes of
        // garbage, the same every run.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let len = (next() % 96) as usize;
            let mut data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if let Some(first) = data.first_mut() {
                *first &= 1;
            }
            for tag in [TAG_SSL_SEC_TRANS, TAG_CSI_SEC_MECH_LIST, TAG_TLS_SEC_TRANS] {
                let c = TaggedComponent {
                    tag,
                    data: data.clone(),
                };
                if let Ok(Some(KnownComponent::CsiSecMechList(list))) = c.decode_known() {
                    let _ = list.tls_addresses();
                    let again = TaggedComponent::csi_sec_mech_list(&list).unwrap();
                    let Ok(Some(KnownComponent::CsiSecMechList(back))) = again.decode_known()
                    else {
                        panic!("a re-encoded list does not decode");
                    };
                    assert_eq!(back, list);
                }
            }
        }
    }
}
