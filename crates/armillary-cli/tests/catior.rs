//! `armillary ior decode` agrees with omniORB's `catior`, field by field,
//! on IORs that omniORB produces (the captured ones and fresh ones from a
//! running omniORB server speaking GIOP 1.0, 1.1 and 1.2), and `catior`
//! reads the IORs `armillary ior encode` builds.
//!
//! Needs omniORB (`scripts/test.sh` installs it). Set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip on a machine without it.

use std::process::Command;

use armillary_testkit::{build_peers, captured_iors, omniorb_available, start_interop_server};
use serde_json::Value;

fn armillary(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_armillary"))
        .args(args)
        .output()
        .unwrap()
}

/// What catior says about one IIOP profile.
#[derive(Debug, PartialEq)]
struct Profile {
    version: String,
    host: String,
    port: u16,
    key: Vec<u8>,
    orb_type: Option<String>,
    char_native: Option<String>,
    char_conversion: Vec<String>,
    wchar_native: Option<String>,
    wchar_conversion: Vec<String>,
}

/// Undoes catior's quoting of object keys (`\xNN` for unprintable bytes).
fn unquote(s: &str) -> Vec<u8> {
    let s = s.trim().trim_matches('"');
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1) == Some(&b'x') && i + 3 < b.len() + 1 {
            if let Ok(v) = u8::from_str_radix(&s[i + 2..i + 4], 16) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    out
}

fn code_set_name(name: &str) -> String {
    match name {
        "UCS-2-level-1" => "UCS-2".into(),
        other => other.into(),
    }
}

fn catior(ior: &str) -> (String, Vec<Profile>) {
    let out = Command::new("catior").arg(ior).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "catior failed on {ior}: {text}");
    let mut type_id = String::new();
    let mut profiles: Vec<Profile> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(id) = t.strip_prefix("Type ID: ") {
            type_id = id.trim_matches('"').to_owned();
        } else if let Some((_, rest)) = t.split_once(". IIOP ") {
            let mut parts = rest.splitn(4, ' ');
            profiles.push(Profile {
                version: parts.next().unwrap().to_owned(),
                host: parts.next().unwrap().to_owned(),
                port: parts.next().unwrap().parse().unwrap(),
                key: unquote(parts.next().unwrap_or("")),
                orb_type: None,
                char_native: None,
                char_conversion: Vec::new(),
                wchar_native: None,
                wchar_conversion: Vec::new(),
            });
        } else if let Some(p) = profiles.last_mut() {
            if let Some(rest) = t.strip_prefix("TAG_ORB_TYPE ") {
                // "omniORB (ATT\x00)" or "(unknown) (ARM\x00)"
                let raw = rest
                    .rsplit_once('(')
                    .map(|(_, r)| r.trim_end_matches(')'))
                    .unwrap_or("");
                p.orb_type = Some(raw.to_owned());
            } else if let Some((label, value)) =
                t.trim_start_matches("TAG_CODE_SETS ").split_once(':')
            {
                let list: Vec<String> = value
                    .split(',')
                    .map(|s| code_set_name(s.trim()))
                    .filter(|s| !s.is_empty())
                    .collect();
                match label.trim() {
                    "char native code set" => p.char_native = list.into_iter().next(),
                    "char conversion code sets" => p.char_conversion = list,
                    "wchar native code set" => p.wchar_native = list.into_iter().next(),
                    "wchar conversion code sets" => p.wchar_conversion = list,
                    _ => {}
                }
            }
        }
    }
    (type_id, profiles)
}

fn ours(ior: &str) -> (String, Vec<Profile>) {
    let out = armillary(&["ior", "decode", "--json", ior]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let profiles = json["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == "TAG_INTERNET_IOP")
        .map(|p| {
            let hex = p["object_key_hex"].as_str().unwrap();
            let key = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let comps = p["components"].as_array().unwrap();
            let find = |name: &str| comps.iter().find(|c| c["name"] == name);
            let orb_type = find("TAG_ORB_TYPE").map(|c| {
                let id = u32::from_str_radix(
                    c["orb_type"].as_str().unwrap().trim_start_matches("0x"),
                    16,
                )
                .unwrap();
                id.to_be_bytes()
                    .iter()
                    .map(|b| {
                        if b.is_ascii_graphic() {
                            char::from(*b).to_string()
                        } else {
                            format!("\\x{b:02x}")
                        }
                    })
                    .collect::<String>()
            });
            let cs = find("TAG_CODE_SETS");
            let list = |v: &Value| -> Vec<String> {
                v["conversion"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_owned())
                    .collect()
            };
            Profile {
                version: p["iiop_version"].as_str().unwrap().to_owned(),
                host: p["host"].as_str().unwrap().to_owned(),
                port: p["port"].as_u64().unwrap() as u16,
                key,
                orb_type,
                char_native: cs.map(|c| c["char"]["native"].as_str().unwrap().to_owned()),
                char_conversion: cs.map(|c| list(&c["char"])).unwrap_or_default(),
                wchar_native: cs.map(|c| c["wchar"]["native"].as_str().unwrap().to_owned()),
                wchar_conversion: cs.map(|c| list(&c["wchar"])).unwrap_or_default(),
            }
        })
        .collect();
    (json["type_id"].as_str().unwrap().to_owned(), profiles)
}

fn agree(ior: &str, what: &str) {
    let (their_id, theirs) = catior(ior);
    let (our_id, mine) = ours(ior);
    assert_eq!(our_id, their_id, "{what}: type id");
    assert!(!theirs.is_empty(), "{what}: catior saw no IIOP profile");
    assert_eq!(mine, theirs, "{what}: profiles");
}

#[test]
fn catior_and_armillary_agree_on_captured_omniorb_iors() {
    if !omniorb_available() {
        return;
    }
    let iors = captured_iors();
    for (path, ior) in &iors {
        agree(ior, &path.display().to_string());
    }
    let n = iors.len();
    assert!(n >= 30, "only {n} IORs found");
}

#[test]
fn catior_and_armillary_agree_on_fresh_omniorb_iors() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    for version in ["1.0", "1.1", "1.2"] {
        let (_server, ior) = start_interop_server(
            &peers,
            &format!("catior-{version}"),
            &["-ORBmaxGIOPVersion", version],
        );
        agree(&ior, &format!("omniORB GIOP {version} IOR"));
        let (_, profiles) = ours(&ior);
        assert_eq!(profiles[0].version, version);
    }
}

#[test]
fn catior_reads_what_armillary_encodes() {
    if !omniorb_available() {
        return;
    }
    for (giop, key_args) in [
        ("1.2", vec!["--key", "Quoter"]),
        ("1.1", vec!["--key-hex", "00ff41"]),
        ("1.0", vec!["--key", "plain"]),
    ] {
        let mut args = vec![
            "ior",
            "encode",
            "--type-id",
            "IDL:Stock/Quoter:1.0",
            "--host",
            "127.0.0.1",
            "--port",
            "2809",
            "--giop",
            giop,
        ];
        args.extend(key_args);
        let out = armillary(&args);
        assert!(out.status.success());
        let ior = String::from_utf8(out.stdout).unwrap();
        agree(ior.trim(), &format!("armillary IOR, IIOP {giop}"));
        let (_, theirs) = catior(ior.trim());
        assert_eq!(theirs[0].host, "127.0.0.1");
        assert_eq!(theirs[0].port, 2809);
        if giop != "1.0" {
            assert_eq!(theirs[0].orb_type.as_deref(), Some("ARM\\x00"));
            assert_eq!(theirs[0].char_native.as_deref(), Some("UTF-8"));
        }
    }
}
