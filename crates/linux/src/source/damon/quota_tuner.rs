//! How tierkit sets the quotas of the kernel's DAMOS migration schemes from its own
//! telemetry, once a period.
//!
//! Inputs: the fast tier's room (free memory above the kernel's watermarks and tierkit's
//! margin, [`crate::topology::Node::room_pages`]) and DAMON's view of where the hot
//! memory is: the bytes of regions accessed at least once per aggregation interval on
//! the fast and on the slow tier. Their ratio is the *realised hit ratio*: the share of
//! hot memory the fast tier serves.
//!
//! Rules:
//! - Promotion fills the room: its quota is half the room per second, at most
//!   [`TunerParams::max_bytes_per_sec`], the room read afresh each period. Half, so that
//!   the quotas of successive periods add up to less than the room even when the
//!   kernel's free-memory counts lag the migrations. (Promoting past the room
//!   pushes the fast node to its min watermark; in the test guest the kernel then
//!   OOM-killed the target, as node 1, onlined movable, serves no kernel allocation.)
//! - When that quota cannot take the hot bytes on the slow tier and the hit ratio is
//!   below [`TunerParams::hit_goal`], cold fast-tier memory is *exchanged* for hot
//!   slow-tier memory: demotion gets a quota of the missing room, at most the ceiling
//!   times the hit ratio's relative shortfall (`(goal - hit) / goal`). What it frees
//!   shows as room at the next read, which promotion then fills.
//! - A quota of zero pauses its scheme (DAMOS reads a zero byte quota as "unlimited", so
//!   pausing is done with the scheme's watermarks, [`super::schemes`]).

/// The tuner's parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunerParams {
    /// Most bytes a scheme may migrate per second. Default 200 MiB/s: the quota of the
    /// kernel's own DAMON tiering sample (`samples/damon/mtier.c`, "200 MiB per sec by
    /// most").
    pub max_bytes_per_sec: u64,
    /// The realised hit ratio below which cold fast-tier memory is exchanged for hot
    /// slow-tier memory. Default 0.95, chosen here (no source states one): below it a
    /// twentieth or more of the hot memory is served by the slow tier.
    pub hit_goal: f64,
}

impl Default for TunerParams {
    fn default() -> Self {
        TunerParams { max_bytes_per_sec: 200 << 20, hit_goal: 0.95 }
    }
}

/// What the tuner reads each period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TunerInput {
    /// The fast tier's room in bytes.
    pub fast_room_bytes: u64,
    /// Hot bytes DAMON saw on the fast tier (summed over the period's apply intervals).
    pub hot_fast_bytes: u64,
    /// Hot bytes DAMON saw on the slow tier, summed the same way.
    pub hot_slow_bytes: u64,
    /// Apply intervals in the period (the sums above cover this many).
    pub intervals: u64,
}

impl TunerInput {
    /// The realised hit ratio: the share of hot bytes on the fast tier (`None`: nothing
    /// was hot).
    pub fn hit_ratio(&self) -> Option<f64> {
        let total = self.hot_fast_bytes + self.hot_slow_bytes;
        (total > 0).then(|| self.hot_fast_bytes as f64 / total as f64)
    }
}

/// Quotas in bytes per second; 0 pauses the scheme.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Quotas {
    /// `migrate_hot` (slow → fast).
    pub promote: u64,
    /// `migrate_cold` (fast → slow).
    pub demote: u64,
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

    /// The quotas for the next period.
    pub fn quotas(&self, input: &TunerInput) -> Quotas {
        let max = self.params.max_bytes_per_sec;
        let promote = (input.fast_room_bytes / 2).min(max);
        // The hot slow-tier bytes of one apply interval: what promotion would take now.
        let hot_slow = input.hot_slow_bytes / input.intervals.max(1);
        let demote = match input.hit_ratio() {
            Some(hit) if hit < self.params.hit_goal && hot_slow > promote => {
                let shortfall = (self.params.hit_goal - hit) / self.params.hit_goal;
                (hot_slow - promote).min((max as f64 * shortfall) as u64)
            }
            _ => 0,
        };
        Quotas { promote, demote }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn tuner() -> QuotaTuner {
        QuotaTuner::new(TunerParams::default()).unwrap()
    }

    fn input(room: u64, hot_fast: u64, hot_slow: u64) -> TunerInput {
        TunerInput {
            fast_room_bytes: room,
            hot_fast_bytes: hot_fast * 10,
            hot_slow_bytes: hot_slow * 10,
            intervals: 10,
        }
    }

    #[test]
    fn with_room_promotion_takes_half_of_it_a_second_and_nothing_is_demoted() {
        assert_eq!(tuner().quotas(&input(64 * MIB, 0, 32 * MIB)), Quotas { promote: 32 * MIB, demote: 0 });
        assert_eq!(tuner().quotas(&input(4 << 30, 0, 32 * MIB)).promote, 200 * MIB, "at most the ceiling");
    }

    #[test]
    fn a_full_fast_tier_with_hot_memory_below_exchanges_cold_for_hot() {
        // No room, half the hot memory on the slow tier: exchange at (0.95-0.5)/0.95 of 200 MiB/s,
        // but no more than the hot slow-tier bytes.
        let q = tuner().quotas(&input(0, 32 * MIB, 32 * MIB));
        assert_eq!(q, Quotas { promote: 0, demote: 32 * MIB }, "promotion waits for the room demotion frees");
        let q = tuner().quotas(&input(0, 512 * MIB, 512 * MIB));
        let expect = (200.0 * MIB as f64 * (0.45 / 0.95)) as u64;
        assert_eq!(q, Quotas { promote: 0, demote: expect });
        // Some room: only what promotion cannot take is exchanged.
        let q = tuner().quotas(&input(8 * MIB, 32 * MIB, 32 * MIB));
        assert_eq!(q, Quotas { promote: 4 * MIB, demote: 28 * MIB });
    }

    #[test]
    fn at_the_hit_goal_or_with_nothing_hot_nothing_is_exchanged() {
        assert_eq!(tuner().quotas(&input(0, 96 * MIB, 4 * MIB)), Quotas::default(), "hit 0.96 >= 0.95");
        assert_eq!(tuner().quotas(&input(0, 0, 0)), Quotas::default());
        assert_eq!(input(0, 0, 0).hit_ratio(), None);
        assert_eq!(input(0, 3, 1).hit_ratio(), Some(0.75));
    }

    #[test]
    fn nonsense_parameters_are_refused() {
        assert!(QuotaTuner::new(TunerParams { hit_goal: 0.0, ..TunerParams::default() }).is_none());
        assert!(QuotaTuner::new(TunerParams { hit_goal: 1.5, ..TunerParams::default() }).is_none());
        assert!(QuotaTuner::new(TunerParams { max_bytes_per_sec: 0, ..TunerParams::default() }).is_none());
    }
}
