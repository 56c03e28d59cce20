//! `armillary ior decode` shows the components that announce TLS
//! endpoints: omniORB's `TAG_SSL_SEC_TRANS` (as `catior` prints it) and a
//! CSIv2 `TAG_CSI_SEC_MECH_LIST` with a `TAG_TLS_SEC_TRANS` mechanism.

use std::process::Command;

use armillary_giop::ior::security::{CompoundSecMech, CompoundSecMechList, TlsSecTrans};
use armillary_giop::ior::{Ior, ProfileBody, TaggedComponent};
use armillary_giop::GiopVersion;

fn decode(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_armillary"))
        .args(["ior", "decode"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// omniORB 4.2's `interop_ssl_server` on `giop:ssl:127.0.0.1:0` only.
const OMNIORB_SSL: &str = "IOR:010000001b00000049444c3a496e7465726f702f45766572797468696e673a312e300000010000000000000070000000010102000a0000003132372e302e302e310000000e000000fe474b046b00005bdd000000000000000300000000000000080000000100000000545441010000001c00000001000000010001000100000001000105090101000100000009010100140000000800000001006600660031e2";

#[test]
fn the_ssl_component_reads_as_catior_prints_it() {
    let out = decode(&[OMNIORB_SSL]);
    assert!(out.contains("IIOP 1.2 127.0.0.1 0 "), "{out}");
    assert!(
        out.contains("TAG_SSL_SEC_TRANS port = 57905 supports 102 requires 102"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&decode(&["--json", OMNIORB_SSL])).unwrap();
    let ssl = &json["profiles"][0]["components"][2];
    assert_eq!(ssl["port"], 57905);
    assert_eq!(
        ssl["requires"],
        serde_json::json!([
            "Integrity",
            "Confidentiality",
            "EstablishTrustInTarget",
            "EstablishTrustInClient"
        ])
    );
}

#[test]
fn the_csiv2_tls_mechanism_lists_its_endpoints() {
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
            as_context_mech: Default::default(),
            sas_context_mech: Default::default(),
        }],
    };
    let mut body = ProfileBody::new(GiopVersion::V1_2, "127.0.0.1", 0, b"key".to_vec());
    body.components
        .push(TaggedComponent::csi_sec_mech_list(&list).unwrap());
    let ior = Ior::iiop("IDL:Test:1.0", &body).unwrap().to_string();
    let out = decode(&[&ior]);
    assert!(
        out.contains("TAG_CSI_SEC_MECH_LIST TLS endpoints 127.0.0.1:4433 ::1:4434"),
        "{out}"
    );
    let json: serde_json::Value = serde_json::from_str(&decode(&["--json", &ior])).unwrap();
    let csi = &json["profiles"][0]["components"][0];
    assert_eq!(csi["mechanisms"][0]["transport"], "TAG_TLS_SEC_TRANS");
    assert_eq!(csi["mechanisms"][0]["target_requires"], 0x46);
}
