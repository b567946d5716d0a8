//! How tierkit sets the kernel's DAMOS migration schemes from its own telemetry, once a
//! period: their byte quotas and the access frequency that separates hot from cold.
//!
//! Inputs: the fast tier's room (free memory above the kernel's watermarks and tierkit's
//! margin, [`crate::topology::Node::room_pages`]) and DAMON's access histogram per node:
//! the bytes of regions accessed at least `e` times per aggregation interval, for a
//! ladder of frequencies `e` (0, 1, 2, 4, ... up to the samples per aggregation), counted
//! by `stat` schemes in the kernel ([`super::schemes`]), averaged over the period's
//! apply intervals.
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
//!   (the `young` filter, [`super::schemes`]). Within its quota DAMOS takes the coldest
//!   regions first, so idle memory goes before memory that is only colder than `t`.
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
//! - A period in which DAMON found no region accessed at all tells nothing: no new
//!   settings, those in force stay.
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

/// What the tuner reads each period.
#[derive(Clone, Debug, PartialEq)]
pub struct TunerInput {
    /// The fast tier's room in bytes.
    pub fast_room_bytes: u64,
    /// The access ladder ([`access_ladder`]).
    pub ladder: Vec<u32>,
    /// Per rung, the bytes on the fast tier of regions accessed at least that often,
    /// summed over the period's apply intervals.
    pub fast_bytes: Vec<u64>,
    /// The same on the slow tier.
    pub slow_bytes: Vec<u64>,
    /// Apply intervals in the period (the sums above cover this many).
    pub intervals: u64,
}

impl TunerInput {
    /// Bytes of one apply interval on the fast and the slow tier at rung `k`.
    fn at(&self, k: usize) -> (u64, u64) {
        let n = self.intervals.max(1);
        let get = |v: &[u64]| v.get(k).copied().unwrap_or(0) / n;
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
    /// Demotion takes regions accessed at most this often.
    pub cold_max_accesses: u32,
}

impl Default for Quotas {
    /// Both paused; DAMOS's own rule: hot is accessed at least once, cold never.
    fn default() -> Self {
        Quotas { promote: 0, demote: 0, hot_min_accesses: 1, cold_max_accesses: 0 }
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

    /// The schemes' settings for the next period; `None` when DAMON found no region
    /// accessed in this one.
    pub fn tune(&self, input: &TunerInput) -> Option<Tuning> {
        if input.at(1) == (0, 0) {
            return None;
        }
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
        let quotas = Quotas { promote, demote, hot_min_accesses, cold_max_accesses };
        Some(Tuning { quotas, hit_ratio })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn tuner() -> QuotaTuner {
        QuotaTuner::new(TunerParams::default()).unwrap()
    }

    /// An input over 10 apply intervals of a ladder 0, 1, 2, 4, 8, 16 with the given bytes
    /// per interval accessed at least that often on each tier (rung 0: the tier's size).
    fn input(room: u64, fast: [u64; 6], slow: [u64; 6]) -> TunerInput {
        TunerInput {
            fast_room_bytes: room,
            ladder: access_ladder(20),
            fast_bytes: fast.iter().map(|b| b * 10).collect(),
            slow_bytes: slow.iter().map(|b| b * 10).collect(),
            intervals: 10,
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
        let q = tuner().tune(&hot(64 * MIB, 0, 32 * MIB)).unwrap().quotas;
        assert_eq!(q, Quotas { promote: 32 * MIB, ..Quotas::default() }, "hot once per aggregation fits");
        assert_eq!(tuner().tune(&hot(4 << 30, 0, 32 * MIB)).unwrap().quotas.promote, 200 * MIB, "at most the ceiling");
    }

    #[test]
    fn a_full_fast_tier_with_hot_memory_below_exchanges_colder_for_hot() {
        // No room, half the hot memory on the slow tier: exchange at (0.95-0.5)/0.95 of 200 MiB/s,
        // but no more than the hot slow-tier bytes.
        let t = tuner().tune(&hot(0, 32 * MIB, 32 * MIB)).unwrap();
        assert_eq!(t.quotas.promote, 0, "promotion waits for the room demotion frees");
        assert_eq!(t.quotas.demote, 32 * MIB);
        assert_eq!(t.hit_ratio, Some(0.5));
        let q = tuner().tune(&hot(0, 512 * MIB, 512 * MIB)).unwrap().quotas;
        assert_eq!(q.demote, (200.0 * MIB as f64 * (0.45 / 0.95)) as u64);
        // Some room: only what promotion cannot take is exchanged.
        let q = tuner().tune(&hot(8 * MIB, 32 * MIB, 32 * MIB)).unwrap().quotas;
        assert_eq!((q.promote, q.demote), (4 * MIB, 28 * MIB));
    }

    #[test]
    fn hot_is_the_lowest_frequency_whose_slow_bytes_fit_and_cold_lies_below_the_rung_under_it() {
        // 96 MiB on the slow tier read about once per aggregation, 16 MiB of it at least
        // four times, 2 MiB at least sixteen times; 32 MiB of room.
        let slow = [GIB, 96 * MIB, 40 * MIB, 16 * MIB, 6 * MIB, 2 * MIB];
        let t = tuner().tune(&input(32 * MIB, [GIB, 0, 0, 0, 0, 0], slow)).unwrap();
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (4, 1), "40 MiB do not fit, 16 do");
        assert_eq!(t.quotas.promote, 16 * MIB);
        assert_eq!(t.hit_ratio, Some(0.0));
        // The fast tier full of pages read about once (promoted when everything looked hot):
        // they are what an exchange frees, so the rung at 2 fits (40 <= 0 + 48 - 0)...
        let fast = [GIB, 48 * MIB, 0, 0, 0, 0];
        let t = tuner().tune(&input(0, fast, slow)).unwrap();
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (2, 0));
        // ...and when those are lukewarm (read twice), the hot ones are 4 and up, and what
        // is read once or never makes room.
        let fast = [GIB, 48 * MIB, 48 * MIB, 0, 0, 0];
        let t = tuner().tune(&input(0, fast, slow)).unwrap();
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (4, 1));
        assert_eq!(t.hit_ratio, Some(0.0));
        assert_eq!((t.quotas.promote, t.quotas.demote), (0, 16 * MIB), "an exchange of the 16 hot MiB");
    }

    #[test]
    fn when_nothing_fits_the_top_of_the_ladder_is_hot() {
        let t = tuner().tune(&hot(0, 0, 64 * MIB)).unwrap();
        assert_eq!((t.quotas.hot_min_accesses, t.quotas.cold_max_accesses), (16, 7));
        assert_eq!(t.quotas.demote, 64 * MIB, "an exchange up to the ceiling's share");
    }

    #[test]
    fn at_the_hit_goal_or_with_nothing_hot_nothing_is_exchanged() {
        assert_eq!(tuner().tune(&hot(0, 96 * MIB, 4 * MIB)).unwrap().quotas.demote, 0, "hit 0.96 >= 0.95");
        let idle = input(0, [GIB, 0, 0, 0, 0, 0], [GIB, 0, 0, 0, 0, 0]);
        assert_eq!(tuner().tune(&idle), None, "nothing accessed: no new settings");
        // A MiB read once per aggregation, on the slow tier of a full fast one: the rung
        // at 2 fits, and nothing is that hot.
        let lukewarm = input(0, [GIB, 0, 0, 0, 0, 0], [GIB, MIB, 0, 0, 0, 0]);
        let t = tuner().tune(&lukewarm).unwrap();
        assert_eq!((t.quotas.hot_min_accesses, t.hit_ratio), (2, None));
        assert_eq!(tuner().tune(&hot(0, 3 * MIB, MIB)).unwrap().hit_ratio, Some(0.75));
    }

    #[test]
    fn nonsense_parameters_are_refused() {
        assert!(QuotaTuner::new(TunerParams { hit_goal: 0.0, ..TunerParams::default() }).is_none());
        assert!(QuotaTuner::new(TunerParams { hit_goal: 1.5, ..TunerParams::default() }).is_none());
        assert!(QuotaTuner::new(TunerParams { max_bytes_per_sec: 0, ..TunerParams::default() }).is_none());
    }
}
