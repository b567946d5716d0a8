//! What a Valgrind recording saw, and the summary printed after it.

use std::path::Path;

use tierkit_sim::trace::LlcStats;

/// The program's accesses as the recorder counted them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Guest instructions executed (one per IMark, lackey's `I` lines).
    pub instructions: u64,
    /// Loads.
    pub loads: u64,
    /// Stores.
    pub stores: u64,
    /// Modifies (a load and a store of the same bytes in one instruction).
    pub modifies: u64,
    /// The simulated LLC's counters.
    pub llc: LlcStats,
    /// Instructions before records could be written (the start marker and
    /// `--skip-instructions`); `None` when that point never came.
    pub first_instruction: Option<u64>,
}

/// A Valgrind recording's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Which recorder ran: `tk_record` or `lackey`.
    pub recorder: &'static str,
    /// The recorder's counts; `None` when tierkit stopped the program at
    /// `--max-records` before the tool could report them.
    pub counts: Option<Counts>,
    /// Records written to the trace.
    pub kept: u64,
    /// Distinct pages among them.
    pub pages: u64,
    /// The trace holds one in this many memory-level accesses.
    pub sample_every: u64,
    /// Whether tierkit stopped reading at `--max-records`.
    pub stopped_at_max: bool,
}

impl Summary {
    /// The text printed after a recording.
    pub fn text(&self, out: &Path, llc: u64, ways: usize) -> String {
        let mut t = format!("recorder: {}\n", self.recorder);
        if let Some(c) = &self.counts {
            t += &format!("instructions: {}", c.instructions);
            match c.first_instruction {
                Some(0) => {}
                Some(f) => t += &format!(" (records from instruction {f} on)"),
                None => t += " (the start was never reached: no records)",
            }
            t += &format!(
                "\nloads: {}  stores: {}  modifies: {}\n\
                 LLC ({} MiB, {ways}-way, 64 B lines): {} hits, {} misses, {} dirty write-backs\n",
                c.loads,
                c.stores,
                c.modifies,
                llc as f64 / (1u64 << 20) as f64,
                c.llc.hits,
                c.llc.misses,
                c.llc.writebacks,
            );
        }
        if self.stopped_at_max {
            t += &format!("stopped the program at --max-records {}\n", self.kept);
        }
        let sample = match self.sample_every {
            1 => String::new(),
            n => format!(" (a 1-in-{n} sample)"),
        };
        t + &format!("kept {} memory-level accesses{sample} on {} pages in {}\n", self.kept, self.pages, out.display())
    }
}
