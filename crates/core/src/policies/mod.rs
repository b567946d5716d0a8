//! Tiering policies, one per file. Each keeps its constants in a `Params` struct whose
//! defaults come from the paper it implements; [`REGISTRY`] builds them by name.

mod admission;
mod alto;
mod arc;
mod arms;
mod autonuma;
mod clock;
mod colloid;
mod damon;
mod freqtier;
mod hemem;
mod hybridtier;
mod ledger;
mod lfu;
mod lru;
mod lru_lists;
mod m5;
mod memtis;
mod nomad;
#[cfg(test)]
mod rig;
mod score_table;
mod streams;
mod threshold;
mod tierkit;
mod tpp;
pub mod tuning;
mod two_q;

pub use alto::{AltoParams, AltoPolicy};
pub use arc::{ArcParams, ArcPolicy};
pub use arms::{ArmsParams, ArmsPolicy};
pub use autonuma::{AutoNumaParams, AutoNumaPolicy, AutoNumaStats};
pub use clock::{ClockParams, ClockPolicy};
pub use colloid::{with_colloid, ColloidParams, ColloidPolicy};
pub use damon::{DamonParams, DamonPolicy};
pub use freqtier::{FreqTierMode, FreqTierParams, FreqTierPolicy};
pub use hemem::{HememParams, HememPolicy};
pub use hybridtier::{HybridTierParams, HybridTierPolicy};
pub use ledger::{Cost, Ledger, LedgerParams};
pub use lfu::{LfuParams, LfuPolicy};
pub use lru::{LruParams, LruPolicy};
pub use m5::{M5Mode, M5Params, M5Policy};
pub use memtis::{MemtisParams, MemtisPolicy};
pub use nomad::NomadParams;
pub use streams::{Observation, StreamDetector, StreamParams};
pub use threshold::{ThresholdParams, ThresholdPolicy};
pub use tierkit::{TierkitParams, TierkitPolicy};
pub use tpp::{TppParams, TppPolicy, TppStats};
pub use two_q::{TwoQParams, TwoQPolicy};

use crate::memory::{Memory, Resident, ScanCursor};
use crate::types::Page;
use crate::{ParamError, Policy};
use tuning::{apply, describe, describe_default, tuned, ParamDoc, Setting, Spec};

/// What a platform tells a policy about the process it will manage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolicySetup {
    /// Pages of the fast tier available to the process.
    pub fast_pages: u64,
    /// Pages of the process's footprint (all tiers), when known.
    pub pages: u64,
}

/// Checks the parameters every watermark-driven demotion scan shares: free-page
/// fractions `0 <= promoting_wmark <= demoting_wmark <= 1` and a scan batch of at least
/// one page.
pub(crate) fn check_demotion_scan(
    promoting_wmark: f64,
    demoting_wmark: f64,
    scan_batch: usize,
) -> Result<(), ParamError> {
    if !(0.0..=1.0).contains(&promoting_wmark) || !(promoting_wmark..=1.0).contains(&demoting_wmark) {
        return Err(ParamError::new(
            "demoting_wmark",
            demoting_wmark,
            "fractions with 0 <= promoting_wmark <= demoting_wmark <= 1",
        ));
    }
    if scan_batch == 0 {
        return Err(ParamError::new("scan_batch", 0, "at least 1 page"));
    }
    Ok(())
}

/// One pass of a wrapping scan ([`Memory::scan`]) over the resident pages: each resident
/// unit at most once, then no more.
///
/// The pass starts where the cursor is and ends by address order once the scan has
/// wrapped past that start: after one wrap a unit at or above the start was seen when
/// the pass began, and after two wraps every unit was. Such units are cut from the batch
/// that reaches them. A call that returns fewer units than asked has returned every
/// resident unit, so it ends the pass too. So a pass ends whatever the cursor points at
/// (a freed page, a gap, the end of the address space) and however the platform's calls
/// wrap, and one pass returns no more units than are resident. The memory must not
/// change during a pass, as it cannot within one call of a policy.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScanPass {
    start: Page,
    passes: u64,
    done: bool,
}

impl ScanPass {
    /// A pass that starts at `cursor`.
    pub(crate) fn new(cursor: &ScanCursor) -> Self {
        Self { start: cursor.next, passes: cursor.passes, done: false }
    }

    /// Replaces `out` with the next units of the pass, at most `max`, advancing `cursor`.
    /// False, with `out` empty, once the pass is over or nothing is resident.
    pub(crate) fn next(
        &mut self,
        mem: &dyn Memory,
        cursor: &mut ScanCursor,
        max: usize,
        out: &mut Vec<Resident>,
    ) -> bool {
        out.clear();
        if self.done {
            return false;
        }
        let before = *cursor;
        let short = mem.scan(cursor, max, out) < max;
        // A call wraps at most once; the unit after its wrap is the first below its
        // predecessor (or below where the call started).
        let mut wraps = before.passes.saturating_sub(self.passes);
        let mut wrap_here = cursor.passes > before.passes;
        let mut at = before.next;
        let seen = out.iter().position(|r| {
            if wrap_here && r.page < at {
                (wraps, wrap_here) = (wraps + 1, false);
            }
            at = r.page.saturating_add(1);
            wraps >= 2 || (wraps == 1 && r.page >= self.start)
        });
        wraps += wrap_here as u64;
        if let Some(i) = seen {
            out.truncate(i);
        }
        self.done = short || seen.is_some() || wraps >= 2 || (wraps == 1 && cursor.next >= self.start);
        !out.is_empty()
    }
}

/// How a registered policy is built: for a setup, with the settings of its spec.
pub type Builder = fn(&PolicySetup, &[Setting<'_>]) -> Result<Box<dyn Policy>, ParamError>;

/// A registered policy.
pub struct Registered {
    /// Name on the command line.
    pub name: &'static str,
    /// One line: what it is.
    pub about: &'static str,
    /// Builds it with its paper defaults, changed by the settings of its spec
    /// ([`tuning`]).
    pub build: Builder,
    /// Its parameters, defaults and doc comments.
    pub params: fn() -> Vec<ParamDoc>,
}

/// Every built-in policy.
pub const REGISTRY: &[Registered] = &[
    Registered {
        name: "tierkit",
        about: "tierkit: exact counts, capacity-fitted threshold, M5 cost gate, sweep prefetch, adaptive headroom and hysteresis",
        build: |s, o| Ok(Box::new(TierkitPolicy::new(tuned::<TierkitParams>(o)?, s)?)),
        params: describe_default::<TierkitParams>,
    },
    Registered {
        name: "lru",
        about: "promote on sampled slow access, demote the least recently sampled fast page",
        build: |s, o| Ok(Box::new(LruPolicy::new(tuned::<LruParams>(o)?, s)?)),
        params: describe_default::<LruParams>,
    },
    Registered {
        name: "clock",
        about: "promote on sampled slow access, demote the CLOCK victim",
        build: |s, o| Ok(Box::new(ClockPolicy::new(tuned::<ClockParams>(o)?, s)?)),
        params: describe_default::<ClockParams>,
    },
    Registered {
        name: "freqtier",
        about: "FreqTier: blocked 4-bit CBF, dynamic hot threshold, wrapping demotion scan, adaptive sampling",
        build: |s, o| Ok(Box::new(FreqTierPolicy::new(tuned::<FreqTierParams>(o)?, s)?)),
        params: describe_default::<FreqTierParams>,
    },
    Registered {
        name: "hybridtier",
        about: "HybridTier: frequency + momentum CBFs, Table 1 promotion/demotion with second chance",
        build: |s, o| Ok(Box::new(HybridTierPolicy::new(tuned::<HybridTierParams>(o)?, s)?)),
        params: describe_default::<HybridTierParams>,
    },
    Registered {
        name: "tpp",
        about: "TPP: slow-tier hint faults, promote pages found on the active LRU, demote inactive to keep 2% free",
        build: |_, o| Ok(Box::new(TppPolicy::new(tuned::<TppParams>(o)?)?)),
        params: describe_default::<TppParams>,
    },
    Registered {
        name: "autonuma",
        about: "Linux NUMA balancing tiering: promote on short hint-fault latency, MGLRU-style demotion",
        build: |_, o| Ok(Box::new(AutoNumaPolicy::new(tuned::<AutoNumaParams>(o)?)?)),
        params: describe_default::<AutoNumaParams>,
    },
    Registered {
        name: "m5",
        about:
            "M5: device Count-Min top-K hot-page tracker (HPT-only Nominator), Algorithm 1 bandwidth-density Elector",
        build: |s, o| Ok(Box::new(M5Policy::new(tuned::<M5Params>(o)?, s)?)),
        params: describe_default::<M5Params>,
    },
    Registered {
        name: "m5-hwt",
        about: "M5 with the HWT-driven Nominator: hot words build pages with a word mask, dense pages first",
        build: |s, o| Ok(Box::new(M5Policy::new(apply(hwt_driven(), o)?, s)?)),
        params: || describe(&hwt_driven()),
    },
    Registered {
        name: "damon",
        about: "DAMON-based tiering: adaptive regions, DAMOS migrate_hot / migrate_cold under a quota",
        build: |_, o| Ok(Box::new(DamonPolicy::new(tuned::<DamonParams>(o)?)?)),
        params: describe_default::<DamonParams>,
    },
    Registered {
        name: "hemem",
        about: "HeMem: exact per-page PEBS counts, hot at 4 reads/writes, cooling at 10, 10 ms migration quantum",
        build: |s, o| Ok(Box::new(HememPolicy::new(tuned::<HememParams>(o)?, s)?)),
        params: describe_default::<HememParams>,
    },
    Registered {
        name: "memtis",
        about: "MEMTIS: exact PEBS counts, log2 histogram, capacity-aware hot/warm thresholds, 500 ms kmigraterd",
        build: |s, o| Ok(Box::new(MemtisPolicy::new(tuned::<MemtisParams>(o)?, s)?)),
        params: describe_default::<MemtisParams>,
    },
    Registered {
        name: "arms",
        about: "ARMS: short/long-term EWMA scores, capacity-sized hot set (no threshold), cost/benefit gate, interval-bounded batches",
        build: |s, o| Ok(Box::new(ArmsPolicy::new(tuned::<ArmsParams>(o)?, s)?)),
        params: describe_default::<ArmsParams>,
    },
    Registered {
        name: "nomad",
        about: "NOMAD: TPP's hint-fault promotion and LRU demotion with shadow copies (clean demotions remap, no copy) and transactional promotion",
        build: |_, o| Ok(Box::new(TppPolicy::nomad(tuned::<NomadParams>(o)?)?)),
        params: describe_default::<NomadParams>,
    },
    Registered {
        name: "alto",
        about: "SOAR/ALTO: pages ranked by sampled stall (amortized offcore latency) instead of counts, benefit-gated promotions regulated by the application's AOL",
        build: |s, o| Ok(Box::new(AltoPolicy::new(tuned::<AltoParams>(o)?, s)?)),
        params: describe_default::<AltoParams>,
    },
    Registered {
        name: "arc",
        about: "ARC (Megiddo & Modha): T1/T2 with ghost lists B1/B2 and adaptive target p, sampled hits and misses",
        build: |s, o| Ok(Box::new(ArcPolicy::new(tuned::<ArcParams>(o)?, s)?)),
        params: describe_default::<ArcParams>,
    },
    Registered {
        name: "2q",
        about: "2Q (Kin = 1/4, Kout = 1/2 of the fast tier): FIFO for pages seen once, LRU for pages seen again",
        build: |s, o| Ok(Box::new(TwoQPolicy::new(tuned::<TwoQParams>(o)?, s)?)),
        params: describe_default::<TwoQParams>,
    },
    Registered {
        name: "lfu",
        about: "promote on sampled slow access, demote the least frequently sampled fast page (no aging)",
        build: |s, o| Ok(Box::new(LfuPolicy::new(tuned::<LfuParams>(o)?, s)?)),
        params: describe_default::<LfuParams>,
    },
    Registered {
        name: "lru-cache",
        about: "LRU as a plain cache: every slow access promotes",
        build: |s, o| {
            tuning::none("lru-cache", o)?;
            Ok(Box::new(LruPolicy::cache(s)?))
        },
        params: Vec::new,
    },
    Registered {
        name: "clock-cache",
        about: "CLOCK as a plain cache: every slow access promotes",
        build: |s, o| {
            tuning::none("clock-cache", o)?;
            Ok(Box::new(ClockPolicy::cache(s)?))
        },
        params: Vec::new,
    },
    Registered {
        name: "threshold",
        about: "the example policy: CBF counts, fixed hot threshold, watermark demotion scan",
        build: |s, o| Ok(Box::new(ThresholdPolicy::new(tuned::<ThresholdParams>(o)?, s.fast_pages)?)),
        params: describe_default::<ThresholdParams>,
    },
];

/// The registered policy called `name`.
pub fn find(name: &str) -> Option<&'static Registered> {
    REGISTRY.iter().find(|r| r.name == name)
}

/// M5's parameters with the HWT-driven Nominator (`m5-hwt`).
fn hwt_driven() -> M5Params {
    M5Params { mode: M5Mode::HwtDriven, ..Default::default() }
}

/// Colloid's parameters as a `+colloid` spec names them: under `colloid.`.
#[derive(Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Colloid {
    /// Colloid's own parameters.
    colloid: ColloidParams,
}

/// The parameters a spec of the policy `name` may set (a registered name, or one with
/// [`COLLOID_SUFFIX`], whose Colloid parameters come under `colloid.`); `None` when no
/// such policy exists.
pub fn param_docs(name: &str) -> Option<Vec<ParamDoc>> {
    match name.strip_suffix(COLLOID_SUFFIX) {
        Some(base) => find(base).map(|r| [(r.params)(), describe_default::<Colloid>()].concat()),
        None => find(name).map(|r| (r.params)()),
    }
}

/// Suffix that wraps any registered policy in [`ColloidPolicy`] (`hemem+colloid`).
pub const COLLOID_SUFFIX: &str = "+colloid";

/// Builds the policy a spec names — a registered name, or one followed by
/// [`COLLOID_SUFFIX`], then any settings ([`tuning`]: `hemem:hot_threshold=8`, and for a
/// Colloid-wrapped policy `colloid.`-prefixed keys for Colloid's own); `None` when no
/// such policy exists.
pub fn build(spec: &str, setup: &PolicySetup) -> Option<Result<Box<dyn Policy>, ParamError>> {
    let spec = match Spec::parse(spec) {
        Ok(spec) => spec,
        Err(e) => return find(spec.split(':').next().unwrap_or("")).map(|_| Err(e)),
    };
    match spec.name.strip_suffix(COLLOID_SUFFIX) {
        Some(base) => {
            let (own, wrapper): (Vec<Setting<'_>>, Vec<Setting<'_>>) =
                spec.settings.iter().partition(|s| !s.key.starts_with("colloid."));
            let colloid = |base| {
                let params = tuned::<Colloid>(&wrapper)?.colloid;
                Ok(Box::new(ColloidPolicy::new(params, base).map_err(|e| e.within("colloid"))?) as Box<dyn Policy>)
            };
            find(base).map(|r| (r.build)(setup, &own).and_then(colloid))
        }
        None => find(spec.name).map(|r| (r.build)(setup, &spec.settings)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, ScanMeter};

    /// The units of one whole pass from `cursor`, `max` a call, and the calls of
    /// [`Memory::scan`] it took.
    fn pass(mem: &InMemory, cursor: &mut ScanCursor, max: usize) -> (Vec<Page>, u64) {
        let meter = ScanMeter::new(mem, 100);
        let (mut seen, mut out) = (Vec::new(), Vec::new());
        let mut pass = ScanPass::new(cursor);
        while pass.next(&meter, cursor, max, &mut out) {
            seen.extend(out.iter().map(|r| r.page));
        }
        assert!(meter.units() < 100, "the pass from {cursor:?} has not ended");
        let calls = meter.calls();
        assert!(out.is_empty() && !pass.next(&meter, cursor, max, &mut out), "a pass stays over");
        assert_eq!(meter.calls(), calls, "without another scan");
        (seen, calls)
    }

    fn memory(pages: &[Page]) -> InMemory {
        let mut mem = InMemory::new(&[4, 100]).unwrap();
        for &p in pages {
            mem.touch(p);
        }
        mem
    }

    #[test]
    fn a_pass_returns_every_resident_page_once_from_any_start_with_any_batch() {
        let resident = [1, 3, 5, 9, 10];
        let mem = memory(&resident);
        for next in 0..14 {
            for max in 1..8 {
                let mut cursor = ScanCursor { next, passes: 3 };
                let (mut seen, calls) = pass(&mem, &mut cursor, max);
                let first = seen[0];
                seen.sort_unstable();
                assert_eq!(seen, resident, "from {next}, {max} a call");
                assert!(calls <= 5usize.div_ceil(max) as u64 + 1, "{calls} calls from {next}, {max} a call");
                assert_eq!(first, *resident.iter().find(|&&p| p >= next).unwrap_or(&1), "starts at the cursor");
            }
        }
    }

    #[test]
    fn a_pass_ends_when_the_page_it_started_after_was_freed() {
        // The cursor rests past page 10, the highest; then 10 is freed. Every later
        // call wraps and stops short of 11, where the pass began.
        let mut mem = memory(&[1, 3, 5, 9, 10]);
        mem.free(10);
        let mut cursor = ScanCursor { next: 11, passes: 0 };
        let (seen, calls) = pass(&mem, &mut cursor, 1024);
        assert_eq!((seen, calls), (vec![1, 3, 5, 9], 1));
        // The next pass again sees each page once.
        assert_eq!(pass(&mem, &mut cursor, 3).0, [1, 3, 5, 9]);
    }

    #[test]
    fn a_pass_over_nothing_ends_at_once() {
        let mem = memory(&[]);
        let mut cursor = ScanCursor::default();
        assert_eq!(pass(&mem, &mut cursor, 8), (vec![], 1));
    }

    #[test]
    fn a_pass_cut_short_resumes_where_it_stopped() {
        let mem = memory(&[1, 3, 5, 9, 10]);
        let mut cursor = ScanCursor::default();
        let (mut out, mut scan) = (Vec::new(), ScanPass::new(&cursor));
        assert!(scan.next(&mem, &mut cursor, 2, &mut out));
        assert_eq!(out.iter().map(|r| r.page).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(pass(&mem, &mut cursor, 2).0, [5, 9, 10, 1, 3]);
    }
}
