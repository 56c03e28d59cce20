//! [`LineHandler`]: a reply handler for `Interop::Everything` written
//! against the generated `AmiEverythingHandlerServant`, which turns every
//! reply it hears into one line of text and hands it to a sink. The AMI
//! tests use it in process (the sink collects the lines) and in another
//! process (`src/bin/ami_handler.rs`, whose sink prints them).
//!
//! The lines: the operation's name, then each value the reply carries (the
//! return value, then inout and out parameters) in Rust's `Debug` form,
//! separated by spaces (`echo_long -42`, `split 12 10 2`,
//! `echo_string "text"`); `out_shape` prints its shape's name, hue, number
//! of points and its string (`out_shape "triangle" Blue 3 "out"`). An
//! exception is `<op>_excep` and what `ExceptionHolder::raise` gave:
//! `system <kind> <minor> <completion>` for a system exception, and for
//! `fail`'s user exceptions `Failure <code> <reason> <details>` or `Empty`
//! (`fail_excep Failure 3 "failed on purpose" ["first", "second"]`). The
//! omniORB handler of the same tests (`tests/interop/cpp/ami_handler.cc`)
//! prints the same lines for the replies it implements.

use armillary::ami::ExceptionHolder;
use armillary::{Any, Fixed, SystemException};

use crate::interop::interop::{
    everything::FailError, AmiBaseHandlerServant, AmiEverythingHandlerServant, Base,
    BoundedLongSeq, Choice, Color, Everything, Flag, LongSeq, Matrix, OctetSeq, Primitives, Shape,
    ShortString, StringSeq, Value,
};

type Result = std::result::Result<(), SystemException>;

/// A reply handler that hands each reply, as a line, to its sink.
pub struct LineHandler {
    sink: Box<dyn Fn(String) + Send + Sync>,
}

impl std::fmt::Debug for LineHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LineHandler").finish_non_exhaustive()
    }
}

impl LineHandler {
    /// A handler whose lines go to `sink` (called on the ORB's threads, in
    /// the order the replies are delivered).
    pub fn new(sink: impl Fn(String) + Send + Sync + 'static) -> Self {
        LineHandler {
            sink: Box::new(sink),
        }
    }

    fn hear(&self, line: String) -> Result {
        (self.sink)(line);
        Ok(())
    }
}

/// A system exception as a line tells it.
fn system_line(e: &SystemException) -> String {
    format!("system {:?} {} {:?}", e.kind(), e.minor(), e.completed())
}

/// `fail`'s error as a line tells it.
fn fail_line(e: &FailError) -> String {
    match e {
        FailError::Failure(f) => format!("Failure {} {:?} {:?}", f.code, f.reason, f.details),
        FailError::Empty(_) => "Empty".to_owned(),
        FailError::System(e) => system_line(e),
    }
}

/// Implements, for each `op(values) op_excep;`, the reply operation (the
/// line: its name and each value in `Debug` form) and the exception
/// operation of an operation without user exceptions.
macro_rules! replies {
    ($($op:ident($($value:ident: $ty:ty),*) $excep:ident;)*) => {
        $(
            fn $op(&self, $($value: $ty),*) -> Result {
                #[allow(unused_mut)]
                let mut line = String::from(stringify!($op));
                $(line.push_str(&format!(" {:?}", $value));)*
                self.hear(line)
            }

            fn $excep(&self, excep_holder: ExceptionHolder<SystemException>) -> Result {
                self.hear(format!(
                    "{} {}",
                    stringify!($excep),
                    system_line(&excep_holder.raise())
                ))
            }
        )*
    };
}

impl AmiBaseHandlerServant for LineHandler {
    replies! {
        base_op(ami_return_val: String) base_op_excep;
        get_base_name(ami_return_val: String) get_base_name_excep;
    }
}

impl AmiEverythingHandlerServant for LineHandler {
    replies! {
        echo_short(ami_return_val: i16) echo_short_excep;
        echo_ushort(ami_return_val: u16) echo_ushort_excep;
        echo_long(ami_return_val: i32) echo_long_excep;
        echo_ulong(ami_return_val: u32) echo_ulong_excep;
        echo_longlong(ami_return_val: i64) echo_longlong_excep;
        echo_ulonglong(ami_return_val: u64) echo_ulonglong_excep;
        echo_float(ami_return_val: f32) echo_float_excep;
        echo_double(ami_return_val: f64) echo_double_excep;
        echo_boolean(ami_return_val: bool) echo_boolean_excep;
        echo_char(ami_return_val: char) echo_char_excep;
        echo_wchar(ami_return_val: char) echo_wchar_excep;
        echo_octet(ami_return_val: u8) echo_octet_excep;
        echo_primitives(ami_return_val: Primitives) echo_primitives_excep;
        echo_money(ami_return_val: Fixed) echo_money_excep;
        echo_string(ami_return_val: String) echo_string_excep;
        echo_wstring(ami_return_val: String) echo_wstring_excep;
        echo_short_string(ami_return_val: ShortString) echo_short_string_excep;
        echo_longs(ami_return_val: LongSeq) echo_longs_excep;
        echo_strings(ami_return_val: StringSeq) echo_strings_excep;
        echo_octets(ami_return_val: OctetSeq) echo_octets_excep;
        echo_bounded(ami_return_val: BoundedLongSeq) echo_bounded_excep;
        echo_matrix(ami_return_val: Matrix) echo_matrix_excep;
        echo_shape(ami_return_val: Shape) echo_shape_excep;
        echo_color(ami_return_val: Color) echo_color_excep;
        echo_value(ami_return_val: Value) echo_value_excep;
        echo_choice(ami_return_val: Choice) echo_choice_excep;
        echo_flag(ami_return_val: Flag) echo_flag_excep;
        echo_any(ami_return_val: Any) echo_any_excep;
        split(ami_return_val: i32, b: i32, c: i32) split_excep;
        fail_system() fail_system_excep;
        get_self(ami_return_val: Everything) get_self_excep;
        get_base(ami_return_val: Base) get_base_excep;
        call_peer(ami_return_val: String) call_peer_excep;
        same_object(ami_return_val: bool) same_object_excep;
        get_counter(ami_return_val: i32) get_counter_excep;
        set_counter() set_counter_excep;
        get_name(ami_return_val: String) get_name_excep;
        oneway_count(ami_return_val: i32) oneway_count_excep;
    }

    fn out_shape(&self, s: Shape, name: String) -> Result {
        self.hear(format!(
            "out_shape {:?} {:?} {} {name:?}",
            s.name,
            s.hue,
            s.points.len()
        ))
    }

    fn out_shape_excep(&self, excep_holder: ExceptionHolder<SystemException>) -> Result {
        self.hear(format!(
            "out_shape_excep {}",
            system_line(&excep_holder.raise())
        ))
    }

    fn fail(&self) -> Result {
        self.hear("fail".to_owned())
    }

    fn fail_excep(&self, excep_holder: ExceptionHolder<FailError>) -> Result {
        self.hear(format!("fail_excep {}", fail_line(&excep_holder.raise())))
    }
}
