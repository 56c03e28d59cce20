//! How much the ORB reports through `tracing` ([`TraceLevel`],
//! `-ORBTraceLevel`).

/// How much the ORB reports through the [`tracing`](https://docs.rs/tracing)
/// crate (`-ORBTraceLevel 0..5`, in the spirit of omniORB's
/// `-ORBtraceLevel`): each level adds the events of a `tracing` level (see
/// [`crate::trace`] for every span and event).
///
/// The ORB emits its events whatever this says, and a library installs no
/// subscriber: this is what an application that installs one reads to
/// choose its filter ([`directive`](Self::directive)), as the `armillary`
/// command and the examples do, a `RUST_LOG` filter taking precedence.
///
/// ```
/// use armillary::config::{OrbConfig, TraceLevel};
///
/// let mut config = OrbConfig::new();
/// config.apply_args(["-ORBTraceLevel", "4"]).unwrap();
/// assert_eq!(config.get_trace_level(), TraceLevel::Requests);
/// assert_eq!(config.get_trace_level().directive(), "armillary=debug");
/// assert_eq!(TraceLevel::default(), TraceLevel::Off);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum TraceLevel {
    /// 0: nothing (the default).
    #[default]
    Off,
    /// 1: errors (`ERROR`): a servant that panicked.
    Errors,
    /// 2: warnings too (`WARN`): connections refused or broken,
    /// MessageErrors, limits reached, dropped AMH responders, AMI replies
    /// nobody handled.
    Warnings,
    /// 3: connections too (`INFO`): opened and closed, the metrics
    /// endpoint.
    Connections,
    /// 4: requests too (`DEBUG`): a span per request on each side, with
    /// its outcome; back-pressure.
    Requests,
    /// 5: everything (`TRACE`).
    Everything,
}

impl TraceLevel {
    /// Every level, by number.
    const ALL: [TraceLevel; 6] = [
        TraceLevel::Off,
        TraceLevel::Errors,
        TraceLevel::Warnings,
        TraceLevel::Connections,
        TraceLevel::Requests,
        TraceLevel::Everything,
    ];

    /// The level numbered `number` (0 to 5), as `-ORBTraceLevel` takes it.
    pub fn from_number(number: u8) -> Option<TraceLevel> {
        Self::ALL.get(usize::from(number)).copied()
    }

    /// The level's number, 0 to 5.
    pub fn number(self) -> u8 {
        match self {
            TraceLevel::Off => 0,
            TraceLevel::Errors => 1,
            TraceLevel::Warnings => 2,
            TraceLevel::Connections => 3,
            TraceLevel::Requests => 4,
            TraceLevel::Everything => 5,
        }
    }

    /// The `tracing` filter directive that shows the ORB's events of this
    /// level (in the syntax of `RUST_LOG` and `tracing-subscriber`'s
    /// `EnvFilter`): `armillary=off` … `armillary=trace`.
    pub fn directive(self) -> &'static str {
        match self {
            TraceLevel::Off => "armillary=off",
            TraceLevel::Errors => "armillary=error",
            TraceLevel::Warnings => "armillary=warn",
            TraceLevel::Connections => "armillary=info",
            TraceLevel::Requests => "armillary=debug",
            TraceLevel::Everything => "armillary=trace",
        }
    }
}
