//! How tierkit sets the kernel's DAMOS migration schemes from its own telemetry, once a
//! period: their byte quotas and the access frequency that separates hot from cold.
//!
//! Inputs: the fast tier's room (free memory above the kernel's watermarks and tierkit's
//! margin, [`crate::topology::Node::room_pages`]) and DAMON's access histogram per node:
//! the bytes of regions accessed at least `e` times per aggregation interval, for a
//! ladder of frequencies `e` (0, 1, 2, 4, ... up to the samples per aggregation), counted
//! by `stat` schemes in the kernel ([`super::schemes`]), per apply interval, as an
//! exponential moving average over periods ([`AccessHistogram`]).
//!
//! Rules:
//! - **Hot is relative.** DAMOS's own rule, "accessed at least once per aggregation", calls
//!   every page hot that is read a few times a second; when such pages do not fit in the
//!   fast tier, that rule promotes them in the order regions come and can never demote
//!   them again (they are never idle). So the promotion threshold `t` is the lowest
//!   frequency of the ladder whose slow-tier bytes fit in the fast tier's room plus the
//!   fast-tier bytes accessed less often than `t` (what an exchange could free). Nothing
//!   fits: the top of the ladder.
//! - Promotion takes slow-tier regions accessed at least `t` times; demotion fast-tier
//!   regions accessed fewer times than the rung below `t` (idle ones when `t` is 1 or 2),
//!   so that regions in between stay where they are instead of crossing back and forth
//!   with the sampling noise. Demotion also skips pages accessed since the last check
//!   (the `young` filter, [`super::schemes`]).
//! - Above idle, demotion leaves idle regions out: DAMOS charges a region's whole size to
//!   the quota whatever it migrates, and on `paddr` the idle regions of the fast node are
//!   mostly memory no migration can take (free pages, kernel and hugetlb memory), taken
//!   first by the quota's address order: a demotion quota spent there moves nothing.
//! - The *realised hit ratio* is the share of the bytes accessed at least `t` times that
//!   the fast tier holds.
//! - Promotion fills the room: its quota is half the room per second, at most
//!   [`TunerParams::max_bytes_per_sec`], the room read afresh each period. Half, so that
//!   the quotas of successive periods add up to less than the room even when the
//!   kernel's free-memory counts lag the migrations. (Promoting past the room
//!   pushes the fast node to its min watermark; in the test guest the kernel then
//!   OOM-killed the target, as node 1, onlined movable, serves no kernel allocation.)
//! - When that quota cannot take the hot bytes on the slow tier and the hit ratio is
//!   below [`TunerParams::hit_goal`], colder fast-tier memory is *exchanged* for hot
//!   slow-tier memory: demotion gets a quota of the missing room, at most the ceiling
//!   times the hit ratio's relative shortfall (`(goal - hit) / goal`). What it frees
//!   shows as room at the next read, which promotion then fills.
//! - A quota of zero pauses its scheme (DAMOS reads a zero byte quota as "unlimited", so
//!   pausing is done with the scheme's access pattern, [`super::schemes`]).

/// The tuner's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunerParams {
    /// Most bytes a scheme may migrate per second. Default 200 MiB/s: the quota of the
    /// kernel's own DAMON tiering sample (`samples/damon/mtier.c`, "200 MiB per sec by
    /// most").
    pub max_bytes_per_sec: u64,
    /// The realised hit ratio below which colder fast-tier memory is exchanged for hot
    /// slow-tier memory. Default 0.95, chosen here (no source states one): below it a
    /// twentieth or more of the hot memory is served by the slow tier.
    pub hit_goal: f64,
}

impl Default for TunerParams {
    fn default() -> Self {
        TunerParams { max_bytes_per_sec: 200 << 20, hit_goal: 0.95 }
    }
}

/// The access frequencies the histogram is kept at: 0, 1, then powers of two up to
/// `max_accesses` (DAMON's samples per aggregation interval).
pub fn access_ladder(max_accesses: u32) -> Vec<u32> {
    let mut ladder = vec![0, 1];
    let mut e = 2;
    while e <= max_accesses {
        ladder.push(e);
        e *= 2;
    }
    ladder
}

/// DAMON's access histogram of both tiers: per rung of the ladder, the bytes of regions
/// accessed at least that often in one apply interval, as an exponential moving average
/// over periods in which each new period weighs [`AccessHistogram::NEW_WEIGHT`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AccessHistogram {
    fast: Vec<f64>,
    slow: Vec<f64>,
}

impl AccessHistogram {
    /// The weight of a new period: a shift in the workload shows fully within a few
    /// periods, while one period's sampling noise moves the average only halfway.
    pub const NEW_WEIGHT: f64 = 0.5;

    /// Adds a period: per rung, the bytes summed over its `intervals` apply intervals. A
    /// period without an interval (the kdamond did not aggregate) tells nothing and
    /// changes nothing.
    pub fn add(&mut self, fast_sums: &[u64], slow_sums: &[u64], intervals: u64) {
        if intervals == 0 {
            return;
        }
        let blend = |avg: &mut Vec<f64>, sums: &[u64]| {
            let new = sums.iter().map(|&b| b as f64 / intervals as f64);
            if avg.len() != sums.len() {
                *avg = new.collect();
            } else {
                avg.iter_mut().zip(new).for_each(|(a, n)| *a += Self::NEW_WEIGHT * (n - *a));
            }
        };
        blend(&mut self.fast, fast_sums);
        blend(&mut self.slow, slow_sums);
    }

    /// Per rung, the fast tier's bytes.
    pub fn fast(&self) -> Vec<u64> {
        self.fast.iter().map(|&b| b.round() as u64).collect()
    }

    /// Per rung, the slow tier's bytes.
    pub fn slow(&self) -> Vec<u64> {
        self.slow.iter().map(|&b| b.round() as u64).collect()
    }
}

/// What the tuner reads each period.
#[derive(Clone, Debug, PartialEq)]
pub struct TunerInput {
    /// The fast tier's room in bytes.
    pub fast_room_bytes: u64,
    /// The access ladder ([`access_ladder`]).
    pub ladder: Vec<u32>,
    /// Per rung, the bytes on the fast tier of regions accessed at least that often in
    /// an apply interval ([`AccessHistogram::fast`]).
    pub fast_bytes: Vec<u64>,
    /// The same on the slow tier.
    pub slow_bytes: Vec<u64>,
}

impl TunerInput {
    /// Bytes on the fast and the slow tier at rung `k`.
    fn at(&self, k: usize) -> (u64, u64) {
        let get = |v: &[u64]| v.get(k).copied().unwrap_or(0);
        (get(&self.fast_bytes), get(&self.slow_bytes))
    }

    /// The rung of the promotion threshold (see the [module documentation](self)).
    fn threshold_rung(&self) -> usize {
        let top = self.ladder.len().saturating_sub(1).max(1);
        let (accessed_fast, _) = self.at(1);
        (1..=top)
            .find(|&k| {
                let (fast, slow) = self.at(k);
                slow <= self.fast_room_bytes + accessed_fast.saturating_sub(fast)
            })
            .unwrap_or(top)
    }
}

/// What the schemes are set to; a quota of 0 pauses the scheme.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quotas {
    /// `migrate_hot` (slow → fast), bytes per second.
    pub promote: u64,
    /// `migrate_cold` (fast → slow), bytes per second.
    pub demote: u64,
    /// Promotion takes regions accessed at least this often per aggregation interval.
    pub hot_min_accesses: u32,
    /// Demotion takes regions accessed at least this often...
    pub cold_min_accesses: u32,
    /// ...and at most this often.
    pub cold_max_accesses: u32,
}

impl Default for Quotas {
    /// Both paused; DAMOS's own rule: hot is accessed at least once, cold never.
    fn default() -> Self {
        Quotas { promote: 0, demote: 0, hot_min_accesses: 1, cold_min_accesses: 0, cold_max_accesses: 0 }
    }
}

/// What the tuner decided for a period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tuning {
    /// The schemes' settings.
    pub quotas: Quotas,
    /// The realised hit ratio at the promotion threshold (`None`: nothing was that hot).
    pub hit_ratio: Option<f64>,
}

/// Sets quotas from [`TunerInput`]s by the rules of the [module documentation](self).
#[derive(Clone, Debug)]
pub struct QuotaTuner {
    params: TunerParams,
}

impl QuotaTuner {
    /// A tuner with `params`; `None` when the hit goal is not a ratio in (0, 1] or the
    /// ceiling is 0.
    pub fn new(params: TunerParams) -> Option<Self> {
        (params.hit_goal > 0.0 && params.hit_goal <= 1.0 && params.max_bytes_per_sec > 0)
            .then_some(QuotaTuner { params })
    }

    /// The schemes' settings for the next period.
    pub fn tune(&self, input: &TunerInput) -> Tuning {
        let max = self.params.max_bytes_per_sec;
        let k = input.threshold_rung();
        let hot_min_accesses = input.ladder.get(k).copied().unwrap_or(1);
        let cold_max_accesses = match k {
            0..=2 => 0,
            _ => input.ladder[k - 1] - 1,
        };
        let promote = (input.fast_room_bytes / 2).min(max);
        // The hot bytes of one apply interval: what promotion would take now.
        let (hot_fast, hot_slow) = input.at(k);
        let hit_ratio = (hot_fast + hot_slow > 0).then(|| hot_fast as f64 / (hot_fast + hot_slow) as f64);
        let demote = match hit_ratio {
            Some(hit) if hit < self.params.hit_goal && hot_slow > promote => {
                let shortfall = (self.params.hit_goal - hit) / self.params.hit_goal;
                (hot_slow - promote).min((max as f64 * shortfall) as u64)
            }
            _ => 0,
        };
        let cold_min_accesses = cold_max_accesses.min(1);
        let quotas = Quotas { promote, demote, hot_min_accesses, cold_min_accesses, cold_max_accesses };
        Tuning { quotas, hit_ratio }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn tuner() -> QuotaTuner {
        QuotaTuner::new(TunerParams::default()).unwrap()
    }

    /// An input on a ladder 0, 1, 2, 4, 8, 16 with the given bytes per interval accessed
    /// at least that often on each tier (rung 0: the tier's size).
    fn input(room: u64, fast: [u64; 6], slow: [u64; 6]) -> TunerInput {
        TunerInput {
            fast_room_bytes: room,
            ladder: access_ladder(20),
            fast_bytes: fast.into(),
            slow_bytes: slow.into(),
        }
    }

    /// Hot bytes only (accessed at every sample) on each tier.
    fn hot(room: u64, fast: u64, slow: u64) -> TunerInput {
        input(room, [GIB, fast, fast, fast, fast, fast], [GIB, slow, slow, slow, slow, slow])
    }

    const GIB: u64 = 1 << 30;

    #[test]
    fn the_ladder_doubles_up_to_the_samples_per_aggregation() {
        assert_eq!(access_ladder(20), [0, 1, 2, 4, 8, 16]);
        assert_eq!(access_ladder(1), [0, 1]);
        assert_eq!(access_ladder(32), [0, 1, 2, 4, 8, 16, 32]);
    }

    #[test]
    fn with_room_promotion_takes_half_of_it_a_second_and_nothing_is_demoted() {
        let q = tuner().tune(&hot(64 * MIB, 0, 32 * MIB)).quotas;
        assert_eq!(q, Quotas { promote: 32 * MIB, ..Quotas::default() }, "hot once per aggregation fits");
        assert_eq!(tuner().tune(&hot(4 << 30, 0, 32 * MIB)).quotas.promote, 200 * MIB, "at most the ceiling");
    }

    #[test]
    fn a_full_fast_tier_with_hot_memory_below_exchanges_colder_for_hot() {
        // No room, half the hot memory on the slow tier: exchange at (0.95-0.5)/0.95 of 200 MiB/s,
        // but no more than the hot slow-tier bytes.
        let t = tuner().tune(&hot(0, 32 * MIB, 32 * MIB));
        assert_eq!(t.quotas.promote, 0, "promotion waits for the room demotion frees");
        assert_eq!(t.quotas.demote, 32 * MIB);
        assert_eq!(t.hit_ratio, Some(0.5));
        let q = tuner().tune(&hot(0, 512 * MIB, 512 * MIB)).quotas;
        assert_eq!(q.demote, (200.0 * MIB as f64 * (0.45 / 0.95)) as u64);
        // Some room: only what promotion cannot take is exchanged.
        let q = tuner().tune(&hot(8 * MIB, 32 * MIB, 32 * MIB)).quotas;
        assert_eq!((q.promote, q.demote), (4 * MIB, 28 * MIB));
    }

    #[test]
    fn hot_is_the_lowest_frequency_whose_slow_bytes_fit_and_cold_lies_below_the_rung_under_it() {
        // 96 MiB on the slow tier read about once per aggregation, 16 MiB of it at least
        // four times, 2 MiB at least sixteen times; 32 MiB of room.
        let slow = [GIB, 96 * MIB, 40 * MIB, 16 * MIB, 6 * MIB, 2 * MIB];
        let t = tuner().tune(&input(32 * MIB, [GIB, 0, 0, 0, 0, 0], slow));
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (4, 1), "40 MiB do not fit, 16 do");
        assert_eq!(t.quotas.cold_min_accesses, 1, "idle regions, mostly what no migration takes, are left out");
        assert_eq!(t.quotas.promote, 16 * MIB);
        assert_eq!(t.hit_ratio, Some(0.0));
        // The fast tier full of pages read about once (promoted when everything looked hot):
        // they are what an exchange frees, so the rung at 2 fits (40 <= 0 + 48 - 0)...
        let fast = [GIB, 48 * MIB, 0, 0, 0, 0];
        let t = tuner().tune(&input(0, fast, slow));
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (2, 0));
        assert_eq!(t.quotas.cold_min_accesses, 0, "below 1: idle");
        // ...and when those are lukewarm (read twice), the hot ones are 4 and up, and what
        // is read once or never makes room.
        let fast = [GIB, 48 * MIB, 48 * MIB, 0, 0, 0];
        let t = tuner().tune(&input(0, fast, slow));
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (4, 1));
        assert_eq!(t.hit_ratio, Some(0.0));
        assert_eq!((t.quotas.promote, t.quotas.demote), (0, 16 * MIB), "an exchange of the 16 hot MiB");
    }

    #[test]
    fn when_nothing_fits_the_top_of_the_ladder_is_hot() {
        let t = tuner().tune(&hot(0, 0, 64 * MIB));
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (16, 7));
        assert_eq!(t.quotas.demote, 64 * MIB, "an exchange up to the ceiling's share");
    }

    #[test]
    fn at_the_hit_goal_or_with_nothing_hot_nothing_is_exchanged() {
        assert_eq!(tuner().tune(&hot(0, 96 * MIB, 4 * MIB)).quotas.demote, 0, "hit 0.96 >= 0.95");
        let idle = tuner().tune(&input(0, [GIB, 0, 0, 0, 0, 0], [GIB, 0, 0, 0, 0, 0]));
        assert_eq!(idle.quotas, Quotas::default());
        assert_eq!(idle.hit_ratio, None);
        assert_eq!(tuner().tune(&hot(0, 3 * MIB, MIB)).hit_ratio, Some(0.75));
    }

    #[test]
    fn the_histogram_moves_halfway_to_each_new_period_and_ignores_one_without_intervals() {
        let mut h = AccessHistogram::default();
        h.add(&[40, 20], &[400, 0], 4);
        assert_eq!((h.fast(), h.slow()), (vec![10, 5], vec![100, 0]), "the first period as it is, per interval");
        h.add(&[0, 0], &[0, 0], 0);
        assert_eq!((h.fast(), h.slow()), (vec![10, 5], vec![100, 0]), "no interval: unchanged");
        h.add(&[60, 30], &[0, 120], 2);
        assert_eq!((h.fast(), h.slow()), (vec![20, 10], vec![50, 30]));
    }

    #[test]
    fn nonsense_parameters_are_refused() {
        assert!(QuotaTuner::new(TunerParams { hit_goal: 0.0, ..TunerParams::default() }).is_none());
        assert!(QuotaTuner::new(TunerParams { hit_goal: 1.5, ..TunerParams::default() }).is_none());
        assert!(QuotaTuner::new(TunerParams { max_bytes_per_sec: 0, ..TunerParams::default() }).is_none());
    }
}
