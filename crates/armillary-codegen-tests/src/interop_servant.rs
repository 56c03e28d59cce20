//! A servant for `Interop::Everything` written against the generated
//! skeleton: what omniORB's `interop_client` checks, and a model of a
//! server written with generated code.

use std::sync::atomic::{AtomicI32, Ordering};

use armillary::poa::PoaCurrent;
use armillary::{Any, Fixed};
use armillary::{CompletionStatus, ObjectRef, SystemException};

use crate::interop::interop::{
    everything, Base, BaseServant, BoundedLongSeq, Choice, Color, Empty, Everything,
    EverythingServant, Failure, Flag, LongSeq, Matrix, OctetSeq, Peer, Point, Primitives, Shape,
    ShortString, StringSeq, Value,
};

type Result<T> = std::result::Result<T, SystemException>;

/// The implementation of `Interop::Everything`: echoes, a counter
/// attribute, a count of oneways, and raises on request.
#[derive(Debug, Default)]
pub struct EverythingImpl {
    counter: AtomicI32,
    oneways: AtomicI32,
}

impl BaseServant for EverythingImpl {
    fn base_op(&self) -> Result<String> {
        Ok("base".into())
    }

    fn base_name(&self) -> Result<String> {
        Ok("Armillary base".into())
    }
}

impl EverythingServant for EverythingImpl {
    fn echo_short(&self, v: i16) -> Result<i16> {
        Ok(v)
    }
    fn echo_ushort(&self, v: u16) -> Result<u16> {
        Ok(v)
    }
    fn echo_long(&self, v: i32) -> Result<i32> {
        Ok(v)
    }
    fn echo_ulong(&self, v: u32) -> Result<u32> {
        Ok(v)
    }
    fn echo_longlong(&self, v: i64) -> Result<i64> {
        Ok(v)
    }
    fn echo_ulonglong(&self, v: u64) -> Result<u64> {
        Ok(v)
    }
    fn echo_float(&self, v: f32) -> Result<f32> {
        Ok(v)
    }
    fn echo_double(&self, v: f64) -> Result<f64> {
        Ok(v)
    }
    fn echo_boolean(&self, v: bool) -> Result<bool> {
        Ok(v)
    }
    fn echo_char(&self, v: char) -> Result<char> {
        Ok(v)
    }
    fn echo_wchar(&self, v: char) -> Result<char> {
        Ok(v)
    }
    fn echo_octet(&self, v: u8) -> Result<u8> {
        Ok(v)
    }
    fn echo_primitives(&self, v: Primitives) -> Result<Primitives> {
        Ok(v)
    }
    fn echo_money(&self, v: Fixed) -> Result<Fixed> {
        Ok(v)
    }
    fn echo_string(&self, v: String) -> Result<String> {
        Ok(v)
    }
    fn echo_wstring(&self, v: String) -> Result<String> {
        Ok(v)
    }
    fn echo_short_string(&self, v: ShortString) -> Result<ShortString> {
        Ok(v)
    }
    fn echo_longs(&self, v: LongSeq) -> Result<LongSeq> {
        Ok(v)
    }
    fn echo_strings(&self, v: StringSeq) -> Result<StringSeq> {
        Ok(v)
    }
    fn echo_octets(&self, v: OctetSeq) -> Result<OctetSeq> {
        Ok(v)
    }
    fn echo_bounded(&self, v: BoundedLongSeq) -> Result<BoundedLongSeq> {
        Ok(v)
    }
    fn echo_matrix(&self, v: Matrix) -> Result<Matrix> {
        Ok(v)
    }
    fn echo_shape(&self, v: Shape) -> Result<Shape> {
        Ok(v)
    }
    fn echo_color(&self, v: Color) -> Result<Color> {
        Ok(v)
    }
    fn echo_value(&self, v: Value) -> Result<Value> {
        Ok(v)
    }
    fn echo_choice(&self, v: Choice) -> Result<Choice> {
        Ok(v)
    }
    fn echo_flag(&self, v: Flag) -> Result<Flag> {
        Ok(v)
    }
    fn echo_any(&self, v: Any) -> Result<Any> {
        Ok(v)
    }

    fn split(&self, a: i32, b: &mut i32) -> Result<(i32, i32)> {
        let sum = a.wrapping_add(*b);
        let c = a.wrapping_sub(*b);
        *b = b.wrapping_mul(2);
        Ok((sum, c))
    }

    fn out_shape(&self) -> Result<(Shape, String)> {
        let shape = Shape {
            name: "triangle".into(),
            hue: Color::Blue,
            points: (0..3).map(|i| Point { x: i, y: i * i }).collect(),
            origin: Point { x: -1, y: -2 },
        };
        Ok((shape, "out".into()))
    }

    fn fail(&self, code: i32) -> std::result::Result<(), everything::FailError> {
        if code == 0 {
            return Err(Empty {}.into());
        }
        Err(Failure {
            code,
            reason: "failed on purpose".into(),
            details: vec!["first".into(), "second".into()],
        }
        .into())
    }

    fn fail_system(&self, minor: i32) -> Result<()> {
        Err(SystemException::no_permission(
            minor as u32,
            CompletionStatus::Yes,
        ))
    }

    fn get_self(&self) -> Result<Everything> {
        // The typed `_this()`: a POA error would become a system exception.
        Ok(PoaCurrent.this()?)
    }

    fn get_base(&self) -> Result<Base> {
        Ok(PoaCurrent.this::<Base>()?)
    }

    fn call_peer(&self, p: Peer, text: String) -> Result<String> {
        p.hello(&text)
    }

    fn same_object(&self, a: ObjectRef, b: ObjectRef) -> Result<bool> {
        Ok(a.is_equivalent(&b))
    }

    fn counter(&self) -> Result<i32> {
        Ok(self.counter.load(Ordering::SeqCst))
    }

    fn set_counter(&self, value: i32) -> Result<()> {
        self.counter.store(value, Ordering::SeqCst);
        Ok(())
    }

    fn name(&self) -> Result<String> {
        Ok("Armillary everything".into())
    }

    fn ping(&self, n: i32) -> Result<()> {
        if n >= 0 {
            self.oneways.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }

    fn oneway_count(&self) -> Result<i32> {
        Ok(self.oneways.load(Ordering::SeqCst))
    }
}
