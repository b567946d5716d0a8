//! Address sampling with `perf_event_open(2)`.
//!
//! Three event kinds deliver data addresses: Intel PEBS load latency, AMD IBS op, and
//! (where no PMU exists, e.g. virtual machines) software page faults. [`detect()`]
//! finds the first that works here and explains why each other one does not;
//! [`PerfSource`] opens it on every thread of a process, reads the ring buffers, and
//! [`samples_to_events`] turns samples into policy events.
//!
//! - `attr`: `struct perf_event_attr` and the system call.
//! - `pmu`: sysfs event descriptions (`event=0xcd,umask=0x1,ldlat=3` + `format/`).
//! - `detect`: planning, privilege checks and probing.
//! - `ring`: the mmap'd ring buffer.
//! - `record`: record parsing, a pure function over bytes.
//! - `source`: the sampling source.
//!
//! This is still tierkit's own binding of the system call. A maintained crate covers what
//! it needs: `perf-event2` 0.7 (records parsed by `perf-event-data`) has sysfs-described
//! PMUs with `config1` terms (`Dynamic`, for `ldlat`), `PERF_SAMPLE_ADDR`, `DATA_SRC` and
//! `WEIGHT`, `precise_ip`, and the mmap'd ring buffer (`Sampler`). Moving to it is a
//! change of its own, to be checked again on PEBS, IBS and the page-fault fallback.

mod attr;
mod detect;
mod error;
mod pmu;
mod record;
mod ring;
mod source;

pub use attr::PerfEventAttr;
pub use detect::{
    detect, online_cpus, parse_cpu_list, plan, privilege_reason, Detection, EventSpec, PerfKind, Privilege, Scope,
    SAMPLE_TYPE,
};
pub use error::{Errno, PerfError, Unavailable};
pub use pmu::{encode, parse_terms, FormatField};
pub use record::{
    sample, PerfStats, RawSample, RecordParser, SampleFormat, PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES,
    PERF_RECORD_SAMPLE, PERF_RECORD_THROTTLE, PERF_RECORD_UNTHROTTLE,
};
pub use source::{monotonic_ns, samples_to_events, PerfConfig, PerfSource};
