//! Encoding and decoding a typical Request and Reply: the `echo_ll` and
//! `get_quote` shapes of the benchmark IDL, GIOP 1.2, a short object key,
//! one CodeSets service context.

use armillary_giop::cdr::codeset::CodeSetContext;
use armillary_giop::giop::{
    FrameDecoder, Message, MessageBody, MessageBuilder, ReplyHeader, ReplyStatus, RequestHeader,
    ServiceContext, TargetAddress,
};
use armillary_giop::{ByteOrder, CodeSets, GiopVersion};
use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;

fn request(operation: &str, id: u32) -> MessageBody {
    MessageBody::Request(RequestHeader {
        request_id: id,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(b"\xa7RM\x01\0quoter-key"[..].into()),
        operation: operation.into(),
        service_contexts: vec![ServiceContext::code_sets(
            CodeSetContext {
                char_data: 0x0501_0001,
                wchar_data: 0x0001_0109,
            },
            GiopVersion::V1_2,
        )],
        requesting_principal: Vec::new(),
    })
}

fn reply(id: u32) -> MessageBody {
    MessageBody::Reply(ReplyHeader {
        request_id: id,
        reply_status: ReplyStatus::NoException,
        service_contexts: Vec::new(),
    })
}

fn bench(c: &mut Criterion) {
    let order = ByteOrder::Little;
    let v = GiopVersion::V1_2;
    c.bench_function("encode echo_ll request", |b| {
        let fields = request("echo_ll", 2);
        b.iter(|| {
            let mut m = MessageBuilder::new(v, order, black_box(&fields)).unwrap();
            m.body().write_longlong(black_box(0x0102_0304_0506_0708));
            black_box(m.finish(false))
        })
    });
    c.bench_function("encode get_quote request", |b| {
        let fields = request("get_quote", 4);
        b.iter(|| {
            let mut m = MessageBuilder::new(v, order, black_box(&fields)).unwrap();
            m.body().set_codesets(CodeSets::NATIVE);
            m.body().write_string(black_box("IBM")).unwrap();
            black_box(m.finish(false))
        })
    });
    c.bench_function("encode echo_ll reply", |b| {
        let fields = reply(2);
        b.iter(|| {
            let mut m = MessageBuilder::new(v, order, black_box(&fields)).unwrap();
            m.body().write_longlong(black_box(42));
            black_box(m.finish(false))
        })
    });

    let mut m = MessageBuilder::new(v, order, &request("echo_ll", 2)).unwrap();
    m.body().write_longlong(7);
    let req = m.finish(false);
    let mut m = MessageBuilder::new(v, order, &reply(2)).unwrap();
    m.body().write_longlong(7);
    let rep = m.finish(false);
    c.bench_function("decode echo_ll request", |b| {
        b.iter(|| {
            let msg = Message::decode(black_box(&req)).unwrap();
            black_box(msg.body_reader(&req).read_longlong().unwrap())
        })
    });
    c.bench_function("decode echo_ll reply", |b| {
        b.iter(|| {
            let msg = Message::decode(black_box(&rep)).unwrap();
            black_box(msg.body_reader(&rep).read_longlong().unwrap())
        })
    });
    c.bench_function("frame + decode echo_ll request", |b| {
        let mut decoder = FrameDecoder::default();
        b.iter(|| {
            decoder.handle_bytes(black_box(&req)).unwrap();
            let frame = decoder.poll_frame().unwrap();
            let (_, mut body) = frame.decode().unwrap();
            black_box(body.read_longlong().unwrap())
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
