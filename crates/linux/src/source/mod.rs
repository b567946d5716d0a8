//! Where access information comes from: perf address sampling ([`perf`]), DAMON
//! ([`damon`]), the kernel's own tiering ([`kernel`]), and `/proc/PID/smaps` referenced
//! bits ([`smaps`]). [`live`] puts them behind one type for a tiering session, with
//! DAMON's regions turned into samples by [`damon_samples`]; [`damos_live`] is the kernel's
//! DAMOS migration schemes as a source.

pub mod damon;
pub mod damon_samples;
pub mod damos_live;
pub mod kernel;
pub mod live;
pub mod perf;
pub mod smaps;
