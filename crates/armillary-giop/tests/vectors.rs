//! The omniORB 4.2 captures in `tests/vectors/omniorb-4.2`: every message decodes with
//! the fields its `index.json` names, re-encodes to the same bytes, and the
//! frame decoder cuts each session's streams into the same messages however
//! they are split.

use std::collections::BTreeMap;
use std::path::PathBuf;

use armillary_giop::giop::{
    FrameDecoder, FrameLimits, Message, MessageBody, MessageType, ReplyStatus,
};
use armillary_giop::system_exception::SystemException;
use armillary_giop::{ByteOrder, CdrReader, CodeSets, GiopVersion};
use armillary_testkit::vectors_dir;
use serde_json::Value;

struct Session {
    name: String,
    dir: PathBuf,
    messages: Vec<Value>,
}

fn sessions() -> Vec<Session> {
    let root = vectors_dir();
    let mut out = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot read the vectors at {}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("index.json").exists())
        .collect();
    dirs.sort();
    for dir in dirs {
        let index: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap())
                .unwrap();
        out.push(Session {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            messages: index["messages"].as_array().unwrap().clone(),
            dir,
        });
    }
    assert!(
        out.len() >= 12,
        "expected the 12 omniORB sessions, found {}",
        out.len()
    );
    out
}

fn key_text(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

/// Checks one message against its index entry; returns the number of
/// fields compared.
fn check_message(session: &str, entry: &Value, bytes: &[u8]) -> usize {
    let file = entry["file"].as_str().unwrap();
    let what = format!("{session}/{file}");
    let msg = Message::decode_exact(bytes).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut checked = 0;
    let mut eq = |field: &str, actual: Value| {
        if let Some(expected) = entry.get(field) {
            assert_eq!(&actual, expected, "{what}: field {field}");
            checked += 1;
        }
    };
    eq("msg_type", msg.header.message_type.name().into());
    eq("giop", msg.header.version.to_string().into());
    eq(
        "byte_order",
        match msg.header.byte_order {
            ByteOrder::Big => "big",
            ByteOrder::Little => "little",
        }
        .into(),
    );
    eq("more_fragments", msg.header.more_fragments.into());
    eq("size", msg.header.size.into());
    if msg.header.message_type != MessageType::Fragment {
        eq(
            "request_id",
            msg.body.request_id().map_or(Value::Null, Into::into),
        );
    }
    match &msg.body {
        MessageBody::Request(h) => {
            eq("operation", h.operation.as_str().into());
            eq("object_key", key_text(h.object_key().unwrap()).into());
            eq("response_expected", h.response_expected().into());
            eq("response_flags", h.response_flags.into());
            eq(
                "requesting_principal_len",
                h.requesting_principal.len().into(),
            );
            let ids: Vec<Value> = h.service_contexts.iter().map(|c| c.id.into()).collect();
            let expected: Vec<Value> = entry["service_contexts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].clone())
                .collect();
            assert_eq!(ids, expected, "{what}: service context ids");
            if let Some(target) = entry.get("target") {
                assert_eq!(
                    target["KeyAddr"],
                    Value::from(key_text(h.object_key().unwrap())),
                    "{what}: target"
                );
            }
            eq("body_offset", msg.body_offset.into());
        }
        MessageBody::Reply(h) => {
            eq("reply_status", h.reply_status.name().into());
            eq("body_offset", msg.body_offset.into());
            let mut body = msg.body_reader(bytes);
            match h.reply_status {
                ReplyStatus::UserException => {
                    eq("exception_id", body.read_string().unwrap().into());
                }
                ReplyStatus::SystemException => {
                    let e = SystemException::decode_body(&mut body).unwrap();
                    eq("exception_id", e.repository_id().into());
                    eq("minor", e.minor().into());
                    eq("completed", e.completed().name().into());
                }
                _ => {}
            }
        }
        MessageBody::LocateRequest { target, .. } => {
            eq("object_key", key_text(target.object_key().unwrap()).into());
        }
        MessageBody::LocateReply(h) => {
            eq("locate_status", h.locate_status.name().into());
            eq("body_offset", msg.body_offset.into());
        }
        _ => {}
    }
    // Re-encoding gives the same bytes.
    let again = msg.encode(&bytes[msg.body_offset..]).unwrap();
    assert_eq!(again, bytes, "{what}: re-encoding differs");
    checked
}

#[test]
fn every_vector_decodes_with_its_indexed_fields_and_re_encodes_exactly() {
    let mut messages = 0;
    let mut fields = 0;
    for s in sessions() {
        for entry in &s.messages {
            let bytes = std::fs::read(s.dir.join(entry["file"].as_str().unwrap())).unwrap();
            fields += check_message(&s.name, entry, &bytes);
            messages += 1;
        }
    }
    assert!(messages >= 290, "only {messages} messages");
    println!("{messages} messages, {fields} fields checked");
}

/// Each direction of each connection, as the byte stream it was.
fn streams(s: &Session) -> BTreeMap<(i64, String), Vec<u8>> {
    let mut out: BTreeMap<(i64, String), Vec<u8>> = BTreeMap::new();
    for entry in &s.messages {
        let key = (
            entry["conn"].as_i64().unwrap(),
            entry["dir"].as_str().unwrap().to_owned(),
        );
        let bytes = std::fs::read(s.dir.join(entry["file"].as_str().unwrap())).unwrap();
        out.entry(key).or_default().extend(bytes);
    }
    out
}

fn frames(stream: &[u8], splits: &mut dyn FnMut(usize) -> usize) -> Vec<Vec<u8>> {
    let mut decoder = FrameDecoder::new(FrameLimits::default());
    let mut out = Vec::new();
    let mut at = 0;
    while at < stream.len() {
        let n = splits(stream.len() - at).clamp(1, stream.len() - at);
        decoder.handle_bytes(&stream[at..at + n]).unwrap();
        at += n;
        while let Some(f) = decoder.poll_frame() {
            out.push(f.bytes.to_vec());
        }
    }
    assert!(decoder.is_idle());
    out
}

#[test]
fn the_frame_decoder_gives_the_same_messages_for_every_split() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = move |left: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 300) as usize % left.max(1) + 1
    };
    for s in sessions() {
        for (key, stream) in streams(&s) {
            let whole = frames(&stream, &mut |left| left);
            assert!(!whole.is_empty());
            // One byte at a time is slow for the 1 MiB sessions: 64 KiB
            // pieces there, single bytes elsewhere.
            let tiny = if stream.len() > 100_000 { 65_536 } else { 1 };
            assert_eq!(frames(&stream, &mut |_| tiny), whole, "{} {key:?}", s.name);
            assert_eq!(frames(&stream, &mut random), whole, "{} {key:?}", s.name);
            for f in &whole {
                Message::decode(f).unwrap_or_else(|e| panic!("{} {key:?}: {e}", s.name));
            }
        }
    }
}

/// Reads a `Kinds::Shape` as omniORB sent it: a name, a colour (enum) and
/// a sequence of points (two doubles each, so 8-byte alignment across
/// fragment boundaries matters); returns the point count.
fn read_shape(r: &mut CdrReader<'_>) -> usize {
    let _name = r.read_string().unwrap();
    let _colour = r.read_ulong().unwrap();
    let n = r.read_ulong().unwrap() as usize;
    for i in 0..n {
        let x = r.read_double().unwrap();
        let y = r.read_double().unwrap();
        assert!(x.is_finite() && y.is_finite(), "point {i}: ({x}, {y})");
    }
    n
}

#[test]
fn fragmented_sessions_reassemble_into_decodable_bodies() {
    for s in sessions() {
        if !(s.name.ends_with("-big") || s.name.ends_with("-bigshape")) {
            continue;
        }
        let fragmented = !s.name.starts_with("giop-1.0");
        for (key, stream) in streams(&s) {
            let mut decoder = FrameDecoder::default();
            decoder.handle_bytes(&stream).unwrap();
            while let Some(frame) = decoder.poll_frame() {
                let (msg, body) = frame.decode().unwrap();
                let is_big_call = match &msg.body {
                    MessageBody::Request(h) => {
                        h.operation == "echo_bytes" || h.operation == "echo_shape"
                    }
                    MessageBody::Reply(h) => h.reply_status == ReplyStatus::NoException,
                    _ => false,
                };
                if !is_big_call || msg.header.size < 2000 {
                    continue;
                }
                if fragmented {
                    assert!(frame.fragments > 1, "{} {key:?} was not fragmented", s.name);
                }
                let mut body = body.with_codesets(CodeSets::NATIVE);
                if s.name.ends_with("-big") {
                    assert_eq!(body.read_octet_seq().unwrap().len(), 1 << 20, "{}", s.name);
                } else {
                    assert_eq!(read_shape(&mut body), 2000, "{} {key:?}", s.name);
                }
                assert!(body.is_empty(), "{} {key:?}: trailing bytes", s.name);
            }
        }
    }
}

#[test]
fn versions_are_what_the_folders_say() {
    for s in sessions() {
        let want = if s.name.starts_with("giop-1.0") {
            GiopVersion::V1_0
        } else if s.name.starts_with("giop-1.1") {
            GiopVersion::V1_1
        } else {
            GiopVersion::V1_2
        };
        for entry in &s.messages {
            assert_eq!(entry["giop"], Value::from(want.to_string()), "{}", s.name);
        }
    }
}
