//! The process's memory as tierkit sees and moves it: its mappings and pages from procfs
//! ([`procfs`]), the view, placement and migration of a running process
//! ([`process::LiveProcess`]), and the pacing of its page moves ([`pacing`]).

pub mod pacing;
pub mod process;
pub mod procfs;
