//! Trace readers: replay existing access traces as workloads, so users can bring the
//! traces they already have instead of a generator.
//!
//! | workload | format | module |
//! |---|---|---|
//! | `trace` | libCacheSim `oracleGeneral` binary (24-byte records, no header) | [`oracle_general`] |
//!
//! A trace is not generated from a seed: its stream is the file's contents, so
//! `WorkloadSpec::seed`, `pages` and `accesses` are ignored (the footprint is the number
//! of distinct objects in the trace, the length its number of requests, optionally capped
//! by the `limit` option). Readers stream the file; only the object-id map (and a
//! bounded look-ahead ring) lives in memory.

pub mod oracle_general;

pub use oracle_general::{build, write_oracle_general, NextAccess, OracleGeneralTrace, TraceInfo};
