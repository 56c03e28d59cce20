//! `armillary ior`: decode and print IORs and object URLs, and build IORs.

use std::path::Path;
use std::process::ExitCode;

use armillary_giop::cdr::codeset::{self, CodeSetComponent, CodeSetComponentInfo};
use armillary_giop::ior::{
    decode_multiple_components, escape, orb_type_name, profile_tag_name, security::association,
    Ior, KnownComponent, ObjectUrl, ProfileBody, TaggedComponent, ORB_TYPE_ARMILLARY,
    TAG_INTERNET_IOP, TAG_MULTIPLE_COMPONENTS,
};
use armillary_giop::GiopVersion;
use clap::{Args, Subcommand};
use serde_json::{json, Value};

/// `armillary ior …`
#[derive(Debug, Args)]
pub struct IorArgs {
    #[command(subcommand)]
    command: IorCommand,
}

#[derive(Debug, Subcommand)]
enum IorCommand {
    /// Print what an IOR, corbaloc: or corbaname: URL (or a file holding
    /// one) contains.
    Decode {
        /// `IOR:…`, `corbaloc:…`, `corbaname:…`, or a file holding one.
        reference: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Build an IOR with one IIOP profile and print it.
    Encode {
        /// Repository id, e.g. IDL:Stock/Quoter:1.0.
        #[arg(long)]
        type_id: String,
        /// Host name or address.
        #[arg(long)]
        host: String,
        /// TCP port.
        #[arg(long)]
        port: u16,
        /// Object key as text.
        #[arg(long, conflicts_with = "key_hex")]
        key: Option<String>,
        /// Object key as hex.
        #[arg(long)]
        key_hex: Option<String>,
        /// IIOP version of the profile.
        #[arg(long, default_value = "1.2")]
        giop: String,
        /// Leave out the TAG_CODE_SETS component.
        #[arg(long)]
        no_codesets: bool,
    },
}

/// Runs `armillary ior`.
pub fn run(args: IorArgs) -> ExitCode {
    let result = match args.command {
        IorCommand::Decode { reference, json } => decode(&reference, json),
        IorCommand::Encode {
            type_id,
            host,
            port,
            key,
            key_hex,
            giop,
            no_codesets,
        } => encode(&type_id, &host, port, key, key_hex, &giop, no_codesets),
    };
    match result {
        Ok(text) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

fn read_reference(reference: &str) -> Result<String, String> {
    let looks_like_url = ["IOR:", "corbaloc:", "corbaname:"].iter().any(|p| {
        reference
            .get(..p.len())
            .is_some_and(|h| h.eq_ignore_ascii_case(p))
    });
    if !looks_like_url && Path::new(reference).is_file() {
        return std::fs::read_to_string(reference)
            .map(|s| s.trim().to_owned())
            .map_err(|e| format!("cannot read {reference}: {e}"));
    }
    Ok(reference.trim().to_owned())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key as text when it is printable ASCII.
fn readable_key(key: &[u8]) -> Option<String> {
    (!key.is_empty() && key.iter().all(|b| (0x20..0x7f).contains(b)))
        .then(|| String::from_utf8_lossy(key).into_owned())
}

fn code_set_name(id: u32) -> String {
    match id {
        codeset::ISO_8859_1 => "ISO-8859-1".into(),
        codeset::ISO_646 => "ISO-646".into(),
        codeset::UTF_8 => "UTF-8".into(),
        codeset::UTF_16 => "UTF-16".into(),
        codeset::UCS_2 => "UCS-2".into(),
        other => format!("{other:#010x}"),
    }
}

fn code_set_json(c: &CodeSetComponent) -> Value {
    json!({
        "native": code_set_name(c.native_code_set),
        "conversion": c.conversion_code_sets.iter().map(|id| code_set_name(*id)).collect::<Vec<_>>(),
    })
}

fn component_json(c: &TaggedComponent) -> Value {
    let name = TaggedComponent::name_of(c.tag);
    match c.decode_known() {
        Ok(Some(KnownComponent::OrbType(id))) => json!({
            "tag": c.tag, "name": name, "orb_type": format!("{id:#010x}"),
            "orb": orb_type_name(id),
        }),
        Ok(Some(KnownComponent::CodeSets(info))) => json!({
            "tag": c.tag, "name": name,
            "char": code_set_json(&info.for_char_data),
            "wchar": code_set_json(&info.for_wchar_data),
        }),
        Ok(Some(KnownComponent::AlternateIiopAddress { host, port })) => json!({
            "tag": c.tag, "name": name, "host": host, "port": port,
        }),
        Ok(Some(KnownComponent::SslSecTrans(ssl))) => json!({
            "tag": c.tag, "name": name, "port": ssl.port,
            "target_supports": ssl.target_supports, "target_requires": ssl.target_requires,
            "supports": association::names(ssl.target_supports),
            "requires": association::names(ssl.target_requires),
        }),
        Ok(Some(KnownComponent::CsiSecMechList(list))) => json!({
            "tag": c.tag, "name": name, "stateful": list.stateful,
            "mechanisms": list.mechanisms.iter().map(|m| json!({
                "target_requires": m.target_requires,
                "transport": TaggedComponent::name_of(m.transport_mech.tag),
            })).collect::<Vec<_>>(),
            "tls_addresses": list.tls_addresses().iter().map(|(h, p)| format!("{h}:{p}")).collect::<Vec<_>>(),
        }),
        Ok(Some(KnownComponent::TlsSecTrans(tls))) => json!({
            "tag": c.tag, "name": name,
            "target_supports": tls.target_supports, "target_requires": tls.target_requires,
            "tls_addresses": tls.addresses.iter().map(|(h, p)| format!("{h}:{p}")).collect::<Vec<_>>(),
        }),
        Ok(None) => json!({ "tag": c.tag, "name": name, "data": hex(&c.data) }),
        Err(e) => {
            json!({ "tag": c.tag, "name": name, "data": hex(&c.data), "error": e.to_string() })
        }
    }
}

fn ior_json(ior: &Ior) -> Value {
    let profiles: Vec<Value> = ior
        .profiles
        .iter()
        .map(|p| match p.tag {
            TAG_INTERNET_IOP => match ProfileBody::decode(&p.data) {
                Ok(body) => json!({
                    "tag": p.tag,
                    "name": "TAG_INTERNET_IOP",
                    "iiop_version": body.iiop_version.to_string(),
                    "host": body.host,
                    "port": body.port,
                    "object_key": readable_key(&body.object_key),
                    "object_key_hex": hex(&body.object_key),
                    "components": body.components.iter().map(component_json).collect::<Vec<_>>(),
                }),
                Err(e) => json!({ "tag": p.tag, "name": "TAG_INTERNET_IOP", "data": hex(&p.data), "error": e.to_string() }),
            },
            TAG_MULTIPLE_COMPONENTS => match decode_multiple_components(&p.data) {
                Ok(cs) => json!({
                    "tag": p.tag, "name": "TAG_MULTIPLE_COMPONENTS",
                    "components": cs.iter().map(component_json).collect::<Vec<_>>(),
                }),
                Err(e) => json!({ "tag": p.tag, "name": "TAG_MULTIPLE_COMPONENTS", "data": hex(&p.data), "error": e.to_string() }),
            },
            tag => json!({ "tag": tag, "name": profile_tag_name(tag), "data": hex(&p.data) }),
        })
        .collect();
    json!({ "type_id": ior.type_id, "profiles": profiles })
}

fn text_component(out: &mut String, c: &Value) {
    let name = c["name"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("tag {}", c["tag"]));
    if let Some(orb) = c.get("orb_type") {
        let who = c["orb"].as_str().unwrap_or("unknown ORB");
        out.push_str(&format!(
            "      {name} {who} ({})\n",
            orb.as_str().unwrap_or("")
        ));
    } else if let Some(chars) = c.get("char") {
        let list = |v: &Value| {
            v["conversion"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default()
        };
        let wchars = &c["wchar"];
        out.push_str(&format!(
            "      {name} char native: {}, conversion: [{}]; wchar native: {}, conversion: [{}]\n",
            chars["native"].as_str().unwrap_or(""),
            list(chars),
            wchars["native"].as_str().unwrap_or(""),
            list(wchars)
        ));
    } else if let Some(port) = c.get("target_supports").and(c.get("port")) {
        // As catior prints it.
        out.push_str(&format!(
            "      {name} port = {port} supports {} requires {}\n",
            c["target_supports"], c["target_requires"]
        ));
    } else if let Some(addresses) = c.get("tls_addresses").and_then(Value::as_array) {
        let list: Vec<&str> = addresses.iter().filter_map(Value::as_str).collect();
        out.push_str(&format!("      {name} TLS endpoints {}\n", list.join(" ")));
    } else if let Some(host) = c.get("host") {
        out.push_str(&format!(
            "      {name} {}:{}\n",
            host.as_str().unwrap_or(""),
            c["port"]
        ));
    } else {
        out.push_str(&format!(
            "      {name} data {}\n",
            c["data"].as_str().unwrap_or("")
        ));
    }
}

fn ior_text(json: &Value) -> String {
    let mut out = format!(
        "Type ID: \"{}\"\nProfiles:\n",
        json["type_id"].as_str().unwrap_or("")
    );
    for (i, p) in json["profiles"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let n = i + 1;
        if p.get("host").is_some() {
            let key = match p["object_key"].as_str() {
                Some(k) => format!("\"{k}\""),
                None => "(binary)".to_owned(),
            };
            out.push_str(&format!(
                "{n}. IIOP {} {} {} {key}\n   key hex: {}\n",
                p["iiop_version"].as_str().unwrap_or(""),
                p["host"].as_str().unwrap_or(""),
                p["port"],
                p["object_key_hex"].as_str().unwrap_or("")
            ));
        } else {
            let name = p["name"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| format!("profile tag {}", p["tag"]));
            out.push_str(&format!("{n}. {name}\n"));
            if let Some(data) = p.get("data") {
                out.push_str(&format!("   data: {}\n", data.as_str().unwrap_or("")));
            }
        }
        if let Some(err) = p.get("error") {
            out.push_str(&format!("   error: {}\n", err.as_str().unwrap_or("")));
        }
        for c in p["components"].as_array().into_iter().flatten() {
            text_component(&mut out, c);
        }
    }
    out.trim_end().to_owned()
}

fn url_json(url: &ObjectUrl) -> Value {
    let addresses = |a: &[armillary_giop::ior::CorbalocAddress]| {
        a.iter()
            .map(|a| json!({ "iiop_version": a.version.to_string(), "host": a.host, "port": a.port }))
            .collect::<Vec<_>>()
    };
    match url {
        ObjectUrl::Ior(ior) => ior_json(ior),
        ObjectUrl::Corbaloc { addresses: a, key } => json!({
            "corbaloc": { "addresses": addresses(a), "object_key": readable_key(key), "object_key_hex": hex(key) }
        }),
        ObjectUrl::CorbalocRir { key } => json!({ "corbaloc_rir": { "key": key } }),
        ObjectUrl::Corbaname {
            addresses: a,
            key,
            name,
        } => json!({
            "corbaname": {
                "addresses": a.as_deref().map(addresses),
                "rir": a.is_none(),
                "object_key": escape(key),
                "name": name,
            }
        }),
    }
}

fn decode(reference: &str, as_json: bool) -> Result<String, String> {
    let text = read_reference(reference)?;
    let url: ObjectUrl = text.parse().map_err(|e| format!("{e}"))?;
    let json = url_json(&url);
    if as_json {
        return serde_json::to_string_pretty(&json).map_err(|e| e.to_string());
    }
    Ok(match &url {
        ObjectUrl::Ior(_) => ior_text(&json),
        ObjectUrl::Corbaloc { addresses, key } => {
            let mut out = String::from("corbaloc\n");
            for a in addresses {
                out.push_str(&format!("  IIOP {} {} {}\n", a.version, a.host, a.port));
            }
            out.push_str(&format!(
                "  key: {} (hex {})",
                readable_key(key)
                    .map(|k| format!("\"{k}\""))
                    .unwrap_or_else(|| "(binary)".into()),
                hex(key)
            ));
            out
        }
        ObjectUrl::CorbalocRir { key } => format!("corbaloc rir: initial reference \"{key}\""),
        ObjectUrl::Corbaname {
            addresses,
            key,
            name,
        } => {
            let mut out = String::from("corbaname\n");
            match addresses {
                Some(list) => {
                    for a in list {
                        out.push_str(&format!("  IIOP {} {} {}\n", a.version, a.host, a.port));
                    }
                }
                None => out.push_str("  rir:\n"),
            }
            out.push_str(&format!(
                "  naming context key: {}\n  name: \"{name}\"",
                escape(key)
            ));
            out
        }
    })
}

fn parse_hex(s: &str) -> Result<Vec<u8>, String> {
    if let Some((at, ch)) = s.chars().enumerate().find(|(_, c)| !c.is_ascii_hexdigit()) {
        return Err(format!(
            "bad hex digit {ch:?} in --key-hex at character {at}"
        ));
    }
    if s.len() % 2 != 0 {
        return Err("--key-hex needs an even number of hex digits".into());
    }
    // Only ASCII hex digits are left, so every pair is two bytes.
    s.as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            std::str::from_utf8(pair)
                .ok()
                .and_then(|p| u8::from_str_radix(p, 16).ok())
                .ok_or_else(|| "bad hex digit in --key-hex".to_owned())
        })
        .collect()
}

fn encode(
    type_id: &str,
    host: &str,
    port: u16,
    key: Option<String>,
    key_hex: Option<String>,
    giop: &str,
    no_codesets: bool,
) -> Result<String, String> {
    let key = match (key, key_hex) {
        (Some(k), _) => k.into_bytes(),
        (None, Some(h)) => parse_hex(&h)?,
        (None, None) => return Err("give the object key with --key or --key-hex".into()),
    };
    let version = match giop {
        "1.0" => GiopVersion::V1_0,
        "1.1" => GiopVersion::V1_1,
        "1.2" => GiopVersion::V1_2,
        other => {
            return Err(format!(
                "unsupported IIOP version {other:?} (use 1.0, 1.1 or 1.2)"
            ))
        }
    };
    if host.is_empty() || host == "0.0.0.0" || host == "::" {
        return Err(format!(
            "{host:?} is not an address a client can connect to"
        ));
    }
    let mut body = ProfileBody::new(version, host, port, key);
    if version >= GiopVersion::V1_1 {
        body.components
            .push(TaggedComponent::orb_type(ORB_TYPE_ARMILLARY));
        if !no_codesets {
            body.components.push(TaggedComponent::code_sets(
                &CodeSetComponentInfo::armillary(),
            ));
        }
    }
    let ior = Ior::iiop(type_id, &body).map_err(|e| e.to_string())?;
    Ok(ior.to_string())
}
