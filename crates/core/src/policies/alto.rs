//! `alto`: SOAR's ranking and ALTO's regulation (Liu, Hadian, Xu, Li, "Tiered Memory
//! Management Beyond Hotness", OSDI'25), as one migration policy. The paper's constants
//! are those of its artifact (repository MoatLab/SoarAlto), which the `Params` docs cite.
//!
//! - **Amortized offcore latency (AOL).** A miss costs its thread not its latency but its
//!   latency divided by the misses in flight beside it (memory-level parallelism): the
//!   artifact measures it as `OFFCORE_REQUESTS_OUTSTANDING.CYCLES_WITH_DEMAND_DATA_RD /
//!   OFFCORE_REQUESTS.DEMAND_DATA_RD` (`src/aol`). A page walked by dependent loads
//!   (pointer chasing, one miss in flight) costs its full latency per miss; a page
//!   streamed by independent loads costs a fraction of it, however often it is touched.
//! - **Ranking (SOAR).** SOAR ranks objects by their performance contribution: each
//!   sample counts as the stall it stands for, not as one access. Online and per page:
//!   every sampled miss adds its weight to the page's score, where the weight is the
//!   stall the sample reports ([`Event::Sample`]'s `stall_ns`) divided by the loaded
//!   latency of the tier that served it — the inverse of the miss's memory-level
//!   parallelism, so that pages on either tier compare on the same scale. A source that
//!   reports no stall (the live perf source) gives every sample the weight 1: the
//!   ranking degrades to access counts. Scores halve every `cooling_period`.
//! - **Hot set.** Every `interval` pages are ranked by score; the hot set is the top of
//!   the ranking that fits the fast tier. Slow pages in it are promotion candidates, best
//!   first; the victims they displace are fast pages with no score (a wrapping scan of
//!   resident pages), then scored fast pages outside the hot set, lowest first.
//! - **Benefit gate.** A promotion saves its page's stall-weighted misses times the
//!   latency gap between the tiers; over `benefit_horizon` that must exceed
//!   `cb_multiplier` × the cost of the move (of two moves, and counting the victim's lost
//!   stall, for an exchange). The first candidate that fails ends the interval's
//!   promotions.
//! - **Regulation (ALTO).** Every `aol_period` the application's AOL ([`Telemetry`]'s
//!   `aol_ns`) sets how many of every ten promotion candidates go ahead: the lower the
//!   AOL (the more the application overlaps its misses), the less a promotion can buy.
//!   While the application's mean load latency is at most `regulate_above_cycles` the
//!   share stays as it was (the artifact's script leaves the setting alone); where the
//!   platform reports no AOL, every candidate goes ahead.
//!
//! Differences from the paper: SOAR places objects at allocation from an offline
//! profile, and ALTO regulates the promotions of a kernel policy (TPP, NBT, Nomad,
//! Colloid); here one online policy ranks pages as SOAR ranks objects and regulates its
//! own promotions as ALTO does. SOAR's score is an object's share of each second's
//! samples times that second's estimated slowdown, with a heuristic re-weighting of
//! dominant and rare objects in high-MLP seconds; per-sample stalls measure directly
//! what that heuristic estimates. Huge pages are out of scope.

use super::score_table::{Order, Ranked, ScoreTable, Scored};
use super::{PolicySetup, ScanPass};
use crate::memory::{MoveStatus, Resident, ScanCursor};
use crate::policy::{Ctx, Migration, Policy, Sampling, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::{Nanos, Page, TierId, MILLISECOND, SECOND};
use crate::{Event, ParamError};

/// Parameters of [`AltoPolicy`]; defaults are the artifact's (MoatLab/SoarAlto) where it
/// has the value, else tierkit's choice, said at the field.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AltoParams {
    /// PEBS period, sampled last-level-cache load misses per sample. SOAR's profiler
    /// (`src/soar/run/prof.sh`): `perf record -e mem_load_retired.l3_miss:P -c 3001`.
    pub sample_period: u64,
    /// Weigh each sample by its stall (SOAR's ranking); false counts samples (a
    /// frequency ranking, for comparison).
    pub weigh_stalls: bool,
    /// Ranking and migration interval. The paper gives none for an online ranking;
    /// tierkit takes the platform's default tick: 100 ms.
    pub interval: Nanos,
    /// Scores halve this often. SOAR scores each 1 s profile interval
    /// (`proc_obj_e.py`, `interval`); tierkit lets each second's samples count half as
    /// much a second later: 1 s.
    pub cooling_period: Nanos,
    /// How often ALTO re-reads the AOL and sets the admitted share. Artifact
    /// (`set_migrate_scale.py` over `perf stat -I 1000`): 1 s.
    pub aol_period: Nanos,
    /// Core clock, GHz, converting the artifact's thresholds from cycles to ns: 2.2, the
    /// Xeon Silver 4114 (SKX) on which they were profiled (artifact `README.md`,
    /// `run/README.md`).
    pub clock_ghz: f64,
    /// Mean load latency, cycles, at or below which an AOL reading leaves the admitted
    /// share as it was. Artifact `set_migrate_scale.py` (`load_lat <= 100`: no write): 100.
    pub regulate_above_cycles: f64,
    /// AOL thresholds, cycles, ascending: an AOL at or below `aol_steps[i]` (and above
    /// the previous one) admits `admit_tenths[i]` of every ten candidates, above the last
    /// all ten. Artifact `set_migrate_scale.py` (from Figure 2d): 40, 60, 80, 100.
    pub aol_steps: [f64; 4],
    /// Candidates admitted of every ten, per step of `aol_steps`. Artifact
    /// `numa_balancing_page_promote_scale` settings: 0, 1, 3, 5.
    pub admit_tenths: [u8; 4],
    /// Time a promotion is expected to pay back over. The paper states none; tierkit
    /// takes one `cooling_period` (what a score measures): 1 s.
    pub benefit_horizon: Nanos,
    /// A promotion must buy this multiple of its cost. The paper states none; tierkit
    /// takes ARMS's `CB_MULTIPLIER`: 1.5.
    pub cb_multiplier: f64,
    /// Cost of one page move, ns: 5 µs, kernel `move_pages` per 4 KiB page (the
    /// simulator's `migration.cpu_ns_per_page`; tierkit's choice, the paper states none).
    pub move_cost_ns: f64,
    /// Latency gap between the tiers, ns, when the platform reports no latencies: 39 ns,
    /// the simulator's `cxl` preset (124 - 85 ns; tierkit's choice, the paper states none).
    pub latency_gap_ns: f64,
    /// Resident pages examined per step of the victim scan (tierkit's, as `arms`).
    pub scan_batch: usize,
}

impl Default for AltoParams {
    fn default() -> Self {
        Self {
            sample_period: 3001,
            weigh_stalls: true,
            interval: 100 * MILLISECOND,
            cooling_period: SECOND,
            aol_period: SECOND,
            clock_ghz: 2.2,
            regulate_above_cycles: 100.0,
            aol_steps: [40.0, 60.0, 80.0, 100.0],
            admit_tenths: [0, 1, 3, 5],
            benefit_horizon: SECOND,
            cb_multiplier: 1.5,
            move_cost_ns: 5_000.0,
            latency_gap_ns: 39.0,
            scan_batch: 4096,
        }
    }
}

/// A page's stall-weighted sample score.
#[derive(Clone, Copy, Debug)]
struct Record {
    page: Page,
    score: f32,
}

impl Scored for Record {
    fn page(&self) -> Page {
        self.page
    }
    fn score(&self) -> f32 {
        self.score
    }
}

/// SOAR/ALTO tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct AltoPolicy {
    params: AltoParams,
    table: ScoreTable<Record>,
    /// Loaded latency per tier, ns, from the last telemetry (0 = unknown).
    latency: Vec<f64>,
    /// Candidates of every ten that go ahead now.
    admit: u8,
    /// Candidates seen in the current round of ten.
    round: u8,
    next_cooling: Nanos,
    next_aol: Nanos,
    /// Promotions minus demotions queued and not yet executed.
    inflight: i64,
    cursor: ScanCursor,
    scratch: Vec<Resident>,
}

impl AltoPolicy {
    /// An ALTO policy; its page table is sized for `setup.pages`.
    pub fn new(params: AltoParams, setup: &PolicySetup) -> Result<Self, ParamError> {
        let p = &params;
        let checks = [
            ("sample_period", p.sample_period.to_string(), p.sample_period > 0),
            ("interval", p.interval.to_string(), p.interval > 0),
            ("cooling_period", p.cooling_period.to_string(), p.cooling_period > 0),
            ("aol_period", p.aol_period.to_string(), p.aol_period > 0),
            ("clock_ghz", p.clock_ghz.to_string(), p.clock_ghz > 0.0 && p.clock_ghz.is_finite()),
            ("regulate_above_cycles", p.regulate_above_cycles.to_string(), p.regulate_above_cycles >= 0.0),
            ("aol_steps", format!("{:?}", p.aol_steps), p.aol_steps.windows(2).all(|w| w[0] <= w[1])),
            ("admit_tenths", format!("{:?}", p.admit_tenths), p.admit_tenths.iter().all(|&a| a <= 10)),
            ("benefit_horizon", p.benefit_horizon.to_string(), p.benefit_horizon > 0),
            ("cb_multiplier", p.cb_multiplier.to_string(), p.cb_multiplier >= 0.0 && p.cb_multiplier.is_finite()),
            ("move_cost_ns", p.move_cost_ns.to_string(), p.move_cost_ns >= 0.0 && p.move_cost_ns.is_finite()),
            ("latency_gap_ns", p.latency_gap_ns.to_string(), p.latency_gap_ns > 0.0),
            ("scan_batch", p.scan_batch.to_string(), p.scan_batch > 0),
        ];
        if let Some((name, value, _)) = checks.into_iter().find(|(_, _, ok)| !ok) {
            return Err(ParamError::new(
                name,
                value,
                "a positive value; aol_steps ascending; admit_tenths at most 10; costs and margins >= 0",
            ));
        }
        Ok(Self {
            params,
            table: ScoreTable::with_capacity(setup.pages),
            latency: Vec::new(),
            admit: 10,
            round: 0,
            next_cooling: p.cooling_period,
            next_aol: 0,
            inflight: 0,
            cursor: ScanCursor::default(),
            scratch: Vec::new(),
        })
    }

    /// Candidates of every ten that go ahead now.
    pub fn admitted_tenths(&self) -> u8 {
        self.admit
    }

    /// The score of `page`, if it has one.
    pub fn score(&self, page: Page) -> Option<f32> {
        self.table.get(page).map(|r| r.score)
    }

    /// A sample's weight: its stall over its tier's loaded latency (1 / its MLP), or 1.
    fn weight(&self, tier: TierId, stall_ns: Option<f32>) -> f32 {
        match stall_ns {
            Some(stall) if self.params.weigh_stalls => match self.latency.get(tier.index()) {
                Some(&l) if l > 0.0 => (f64::from(stall) / l) as f32,
                _ => 1.0,
            },
            _ => 1.0,
        }
    }

    /// Halves every score due by `now`; drops records that have decayed to nothing.
    fn cool(&mut self, now: Nanos) {
        while now >= self.next_cooling {
            self.next_cooling += self.params.cooling_period;
            self.table.records.iter_mut().for_each(|r| r.score *= 0.5);
        }
        self.table.forget_where(|r| r.score < 1e-3);
    }

    /// ALTO: the share of candidates to admit at the application's AOL, when due.
    fn regulate(&mut self, telemetry: &Telemetry) {
        if telemetry.now < self.next_aol {
            return;
        }
        self.next_aol = telemetry.now + self.params.aol_period;
        let p = &self.params;
        let accesses: u64 = telemetry.tiers.iter().map(|t| t.accesses).sum();
        let weighted: f64 = telemetry.tiers.iter().map(|t| t.accesses as f64 * t.latency_ns).sum();
        let cycles = |ns: f64| ns * p.clock_ghz;
        match telemetry.aol_ns {
            None => self.admit = 10,
            Some(aol) if accesses > 0 && cycles(weighted / accesses as f64) > p.regulate_above_cycles => {
                let aol = cycles(aol);
                self.admit = p.aol_steps.iter().position(|&s| aol <= s).map_or(10, |i| p.admit_tenths[i]);
            }
            Some(_) => {}
        }
    }

    /// Whether the next candidate goes ahead: `admit` of every round of ten.
    fn admitted(&mut self) -> bool {
        let go = self.round < self.admit;
        self.round = (self.round + 1) % 10;
        go
    }

    /// The next demotion victim: a fast page with no score (one pass of the wrapping
    /// scan), then the lowest-scored fast pages outside the hot set.
    fn victim(
        &mut self,
        ctx: &Ctx<'_>,
        pass: &mut ScanPass,
        pending: &mut Vec<Page>,
        cold: &mut Ranked,
    ) -> Option<Record> {
        loop {
            if let Some(page) = pending.pop() {
                return Some(Record { page, score: 0.0 });
            }
            if !pass.next(ctx.mem, &mut self.cursor, self.params.scan_batch, &mut self.scratch) {
                return cold.next().map(|slot| self.table.records[slot as usize]);
            }
            let table = &self.table;
            let unscored = |r: &&Resident| r.tier == TierId::FAST && table.get(r.page).is_none();
            pending.extend(self.scratch.iter().filter(unscored).map(|r| r.page).rev());
        }
    }

    /// The interval's benefit-gated, regulated promotions and exchanges.
    fn migrate(&mut self, ctx: &mut Ctx<'_>) {
        let Some(slow) = ctx.mem.slower_than(TierId::FAST) else { return };
        let p = self.params;
        // Stall-weighted misses per score unit over the horizon, times the gap they save.
        let per_score = p.sample_period as f64 * p.benefit_horizon as f64 / (2.0 * p.cooling_period as f64);
        let gap = self.gap_ns();
        let worth = |score: f32| f64::from(score) * per_score * gap;
        let mut room = ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight;
        let table = &self.table;
        let on = |slot: u32, slow: bool| {
            ctx.mem.tier_of(table.records[slot as usize].page).is_some_and(|t| (t != TierId::FAST) == slow)
        };
        let mut cold = table.ranked(table.slots(false).filter(|&s| on(s, false)), Order::WorstFirst);
        // Candidates: the hot set's slow pages, best first.
        let candidates = table.ranked(table.slots(true).filter(|&s| on(s, true)), Order::BestFirst);
        let mut pass = ScanPass::new(&self.cursor);
        let mut pending = Vec::new();
        let (mut promote, mut demote) = (Vec::new(), Vec::new());
        for slot in candidates {
            let h = self.table.records[slot as usize];
            if worth(h.score) < p.cb_multiplier * p.move_cost_ns {
                break;
            }
            if !self.admitted() {
                continue;
            }
            if room > 0 {
                room -= 1;
                promote.push(h.page);
                continue;
            }
            let Some(v) = self.victim(ctx, &mut pass, &mut pending, &mut cold) else { break };
            if worth(h.score - v.score) < p.cb_multiplier * 2.0 * p.move_cost_ns {
                break;
            }
            demote.push(v.page);
            promote.push(h.page);
        }
        for &page in &demote {
            ctx.plan.push(page, slow);
        }
        for &page in &promote {
            ctx.promote(page);
        }
        self.inflight += promote.len() as i64 - demote.len() as i64;
    }

    /// The measured latency gap between the slow and the fast tier, or the default.
    fn gap_ns(&self) -> f64 {
        match self.latency.as_slice() {
            [fast, slow, ..] if *fast > 0.0 && *slow > 0.0 => (slow - fast).max(0.0),
            _ => self.params.latency_gap_ns,
        }
    }
}

impl Policy for AltoPolicy {
    fn name(&self) -> &str {
        "alto"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { samples: Some(Sampling::every(self.params.sample_period)), ..Default::default() }
    }

    fn tick_interval(&self) -> Nanos {
        self.params.interval
    }

    fn horizon(&self) -> Nanos {
        (10 * self.params.interval).max(2 * self.params.cooling_period)
    }

    fn on_events(&mut self, events: &[Event], _ctx: &mut Ctx<'_>) {
        for e in events {
            match *e {
                Event::Sample { page, tier, stall_ns, .. } => {
                    let w = self.weight(tier, stall_ns);
                    self.table.entry(page, || Record { page, score: 0.0 }).score += w;
                }
                Event::Free { page } => self.table.forget(page),
                _ => {}
            }
        }
    }

    fn on_tick(&mut self, telemetry: &Telemetry, ctx: &mut Ctx<'_>) {
        for t in &telemetry.tiers {
            if self.latency.len() <= t.tier.index() {
                self.latency.resize(t.tier.index() + 1, 0.0);
            }
            if t.accesses > 0 && t.latency_ns > 0.0 {
                self.latency[t.tier.index()] = t.latency_ns;
            }
        }
        // A period of real misses is a rate once the platform reports the miss rate.
        let rate: f64 = telemetry.tiers.iter().map(|t| t.request_rate).sum();
        if rate > 0.0 {
            ctx.sources.samples = Some(Sampling::new(rate / self.params.sample_period as f64));
        }
        self.cool(telemetry.now);
        self.regulate(telemetry);
        let capacity = ctx.mem.tiers().first().map_or(0, |t| t.capacity_pages);
        self.table.rank(capacity);
        self.migrate(ctx);
    }

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for &(m, status) in results {
            self.inflight += if m.to == TierId::FAST { -1 } else { 1 };
            if status == MoveStatus::NotResident {
                self.table.forget(m.page);
            }
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.table.heap_bytes()
            + self.scratch.capacity() * std::mem::size_of::<Resident>()
            + self.latency.capacity() * std::mem::size_of::<f64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::TierStats;
    use crate::{InMemory, Memory, Mover, Plan};

    const FAST_NS: f64 = 85.0;
    const SLOW_NS: f64 = 124.0;

    struct Rig {
        mem: InMemory,
        policy: AltoPolicy,
        sources: SourceRequest,
    }

    impl Rig {
        /// `fast` fast pages, of which `0..full` are resident; slow pages 1000 on.
        fn new(params: AltoParams, fast: u64, full: u64, slow: u64) -> Self {
            let mut mem = InMemory::new(&[fast, 10_000]).unwrap();
            for p in (0..fast).chain(1000..1000 + slow) {
                mem.touch(p);
            }
            for p in full..fast {
                mem.free(p);
            }
            let policy = AltoPolicy::new(params, &PolicySetup { fast_pages: fast, pages: 2000 }).unwrap();
            Self { mem, sources: policy.sources(), policy }
        }

        /// `times` samples of `page` from its tier, each reporting a miss of `mlp`
        /// (`None`: no stall reported).
        fn sample(&mut self, page: Page, times: usize, mlp: Option<f64>) {
            let tier = self.mem.tier_of(page).unwrap();
            let latency = if tier == TierId::FAST { FAST_NS } else { SLOW_NS };
            let stall_ns = mlp.map(|m| (latency / m) as f32);
            let e = Event::Sample { page, tier, word: None, write: false, time: 0, stall_ns };
            let events = vec![e; times];
            let mut plan = Plan::default();
            self.policy.on_events(&events, &mut Ctx { mem: &self.mem, plan: &mut plan, sources: &mut self.sources });
        }

        /// A tick 100 ms on with the given application AOL, then the mover's round.
        fn tick(&mut self, aol_ns: Option<f64>) {
            self.mem.advance(100 * MILLISECOND);
            let stats =
                |t: u8, latency_ns| TierStats { tier: TierId(t), accesses: 1000, latency_ns, ..Default::default() };
            let telemetry = Telemetry {
                now: self.mem.now(),
                tiers: vec![stats(0, FAST_NS), stats(1, SLOW_NS)],
                aol_ns,
                ..Default::default()
            };
            let mut plan = Plan::default();
            self.policy.on_tick(&telemetry, &mut Ctx { mem: &self.mem, plan: &mut plan, sources: &mut self.sources });
            let mut moved = Vec::new();
            Mover::default().execute(&mut plan, &mut self.mem, &mut moved);
            self.policy.on_moved(&moved);
        }

        fn fast(&self, page: Page) -> bool {
            self.mem.tier_of(page) == Some(TierId::FAST)
        }
    }

    /// An AOL above every step of the table: nothing regulated.
    const HIGH_AOL: Option<f64> = Some(100.0);

    #[test]
    fn a_chased_page_outranks_a_more_often_streamed_one() {
        for (weigh_stalls, winner) in [(true, 1000), (false, 1001)] {
            // One fast page, free: room for one of the two.
            let mut rig = Rig::new(AltoParams { weigh_stalls, ..Default::default() }, 1, 0, 2);
            rig.tick(HIGH_AOL); // the policy learns the tiers' latencies
            rig.sample(1000, 4, Some(1.0)); // chased: 4 misses, each its full latency
            rig.sample(1001, 12, Some(10.0)); // streamed: 3x the misses, a tenth of the stall each
            rig.tick(HIGH_AOL);
            assert!(rig.fast(winner), "weigh_stalls = {weigh_stalls}: {winner} should have the free page");
            assert!(!rig.fast(2001 - winner), "one fast page");
        }
    }

    #[test]
    fn without_stalls_the_ranking_is_by_counts() {
        let mut rig = Rig::new(AltoParams::default(), 1, 0, 2);
        rig.tick(HIGH_AOL);
        rig.sample(1000, 4, None);
        rig.sample(1001, 12, None);
        rig.tick(None);
        assert!(rig.fast(1001) && !rig.fast(1000));
    }

    #[test]
    fn a_page_whose_stall_buys_less_than_its_move_stays() {
        let mut rig = Rig::new(AltoParams::default(), 4, 2, 2);
        rig.tick(HIGH_AOL);
        // One streamed sample: 0.1 x 1500 misses x 39 ns < 1.5 x 5 µs. Two pass.
        rig.sample(1000, 1, Some(10.0));
        rig.tick(HIGH_AOL);
        assert!(!rig.fast(1000));
        rig.sample(1000, 1, Some(10.0));
        rig.sample(1001, 1, Some(1.0));
        rig.tick(HIGH_AOL);
        assert!(rig.fast(1000) && rig.fast(1001));
    }

    #[test]
    fn an_exchange_takes_an_unscored_victim_and_spares_a_better_fast_page() {
        let mut rig = Rig::new(AltoParams::default(), 2, 2, 2);
        rig.tick(HIGH_AOL);
        rig.sample(0, 40, Some(1.0)); // fast page 0 is the best; page 1 has no score
        rig.sample(1000, 8, Some(1.0));
        rig.sample(1001, 4, Some(1.0));
        rig.tick(HIGH_AOL);
        // The hot set is {0, 1000}: 1000 displaces the unscored page 1, and 1001, outside
        // the hot set, displaces nothing.
        assert!(rig.fast(0) && rig.fast(1000) && !rig.fast(1) && !rig.fast(1001));
    }

    #[test]
    fn exchanges_demote_the_lowest_scored_fast_pages_outside_the_hot_set_first() {
        let mut rig = Rig::new(AltoParams::default(), 4, 4, 2);
        rig.tick(HIGH_AOL);
        for (page, chased) in [(0, 50), (1, 45), (1000, 40), (1001, 8), (3, 8), (2, 2)] {
            rig.sample(page, chased, Some(1.0));
        }
        rig.sample(1001, 1, Some(10.0)); // a streamed sample: 1001 just outranks page 3
        rig.tick(HIGH_AOL);
        // The hot set is {0, 1, 1000, 1001}. 1000 displaces the coldest fast page, 2; 1001
        // would gain too little over the next one, 3, to pay for an exchange.
        assert!(rig.fast(1000) && !rig.fast(2), "1000 takes page 2's place");
        assert!(rig.fast(3) && !rig.fast(1001), "1001 and 3 stay where they are");
        assert!(rig.fast(0) && rig.fast(1));
    }

    #[test]
    fn the_applications_aol_sets_the_share_of_candidates_admitted() {
        // The artifact's table at 2.2 GHz: 44 cycles admits 1 in 10, 66 cycles 3, 110 all.
        for (aol_ns, tenths, promoted) in [(20.0, 1, 1), (30.0, 3, 3), (50.0, 10, 10), (15.0, 0, 0)] {
            let mut rig = Rig::new(AltoParams::default(), 20, 0, 10);
            rig.tick(Some(aol_ns));
            rig.tick(Some(aol_ns)); // within the same AOL period: no new reading
            assert_eq!(rig.policy.admitted_tenths(), tenths, "AOL {aol_ns} ns");
            for page in 1000..1010 {
                rig.sample(page, 8, Some(1.0));
            }
            rig.tick(Some(aol_ns));
            assert_eq!((1000..1010).filter(|&p| rig.fast(p)).count(), promoted, "AOL {aol_ns} ns");
        }
        // No AOL from the platform: unregulated.
        let mut rig = Rig::new(AltoParams::default(), 20, 0, 10);
        rig.tick(Some(15.0));
        assert_eq!(rig.policy.admitted_tenths(), 0);
        for _ in 0..10 {
            rig.tick(None);
        }
        assert_eq!(rig.policy.admitted_tenths(), 10);
        // Loads at most `regulate_above_cycles` on average: the share stays as it was.
        let fast_loads = AltoParams { regulate_above_cycles: 2.2 * SLOW_NS, ..Default::default() };
        let mut rig = Rig::new(fast_loads, 20, 0, 10);
        rig.tick(Some(15.0));
        assert_eq!(rig.policy.admitted_tenths(), 10);
        rig.policy.params.regulate_above_cycles = 0.0;
        for _ in 0..10 {
            rig.tick(Some(15.0));
        }
        assert_eq!(rig.policy.admitted_tenths(), 0);
        rig.policy.params.regulate_above_cycles = 2.2 * SLOW_NS;
        for _ in 0..10 {
            rig.tick(Some(50.0));
        }
        assert_eq!(rig.policy.admitted_tenths(), 0, "an AOL read at low load latency changes nothing");
    }

    #[test]
    fn scores_halve_each_cooling_period_and_vanish() {
        let mut rig = Rig::new(AltoParams::default(), 4, 4, 2);
        rig.tick(HIGH_AOL);
        rig.sample(1000, 1, Some(2.0));
        assert_eq!(rig.policy.score(1000), Some(0.5));
        for _ in 0..10 {
            rig.tick(HIGH_AOL); // 10 x 100 ms: one cooling
        }
        assert_eq!(rig.policy.score(1000), Some(0.25));
        for _ in 0..100 {
            rig.tick(HIGH_AOL);
        }
        assert_eq!(rig.policy.score(1000), None, "a decayed record is dropped");
    }

    #[test]
    fn bad_parameters_are_named() {
        let setup = PolicySetup { fast_pages: 4, pages: 100 };
        let bad = |p: AltoParams| AltoPolicy::new(p, &setup).unwrap_err().param.to_string();
        assert_eq!(bad(AltoParams { sample_period: 0, ..Default::default() }), "sample_period");
        assert_eq!(bad(AltoParams { aol_steps: [40.0, 30.0, 80.0, 100.0], ..Default::default() }), "aol_steps");
        assert_eq!(bad(AltoParams { admit_tenths: [0, 1, 3, 11], ..Default::default() }), "admit_tenths");
        assert_eq!(bad(AltoParams { clock_ghz: 0.0, ..Default::default() }), "clock_ghz");
    }
}
