//! `nomad`: NOMAD (Xiang, Lin, Deng, Lu, Rao, Yuan, Wang, "Nomad: Non-Exclusive Memory
//! Tiering via Transactional Page Migration", OSDI '24) as a tierkit policy.
//!
//! NOMAD keeps TPP's decisions (what to promote, when and what to demote) and changes
//! how pages move (paper §3). The mechanisms are the platform's, asked for with
//! [`Policy::non_exclusive`](crate::Policy::non_exclusive); the policy is
//! [`TppPolicy`] in its NOMAD mode ([`TppPolicy::nomad`]), aware of shadows:
//!
//! - **Promotion (TPP §5.3; the artifact's `decide_queue_page`).** NUMA hint faults on
//!   the slow tier only. A fault on an inactive slow page activates it; a fault on an
//!   active one queues its promotion when a fast page is free (two-touch). At most
//!   `max_queued` promotions wait at a time (the artifact's promotion queue).
//! - **Transactional page migration (§3, platform).** The promotion copies the page
//!   while it stays mapped and accessible, then commits the move only if the page was
//!   not written during the copy; otherwise the platform reports [`MoveStatus::Busy`],
//!   the page stays active on the slow tier and its next fault queues it again.
//! - **Page shadowing (§3, platform).** A committed promotion keeps the slow copy as a
//!   shadow, occupying slow-tier capacity, until the first write to the page (a
//!   write-protection fault) drops it; shadows are reclaimed first when the slow tier
//!   runs out of free pages. Demoting a page with a valid shadow remaps it to the shadow:
//!   no copy.
//! - **Demotion (TPP §5.1–5.2, shadow-aware).** kswapd as in TPP: below
//!   `demote_scale_factor` free, demote from the inactive list (then the active list)
//!   until `demotion_watermark` is free. Among the `shadow_window` least recently used
//!   pages of that list, a page with a valid shadow goes first: its demotion costs no
//!   copy; without one, the tail goes.
//! - **Fast-tier LRU, page-type-aware allocation, counters.** As [`super::TppPolicy`]:
//!   accessed-bit checks activate referenced fast pages; file and tmpfs pages allocated
//!   on the fast tier are demoted at once; [`TppStats`](super::TppStats) counts aborted
//!   commits and shadow demotions beside TPP's §5.5 counters.
//!
//! Differences from the artifact: it decides a promotion by looking back over the last
//! 20 faults for pages found young and active; here the fault itself finds the page
//! active, as TPP does. Its kernel worker starts a queued copy at once; here the
//! platform's mover executes queued promotions at its next round (as for `tpp`). The
//! shadow-first victim window is tierkit's. On a platform without shadows (a live
//! process) the policy makes exactly TPP's moves.

use super::tpp::{Shadows, TppParams, TppPolicy};
use crate::sketches::PageTable;
use crate::ParamError;

/// Parameters of NOMAD. NOMAD runs on TPP's kernel and keeps its settings (`tpp.`,
/// TPP's defaults); the paper states no constant of its own, so the other two are its
/// artifact's or tierkit's.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NomadParams {
    /// TPP's parameters: its scans, watermarks, accessed-bit checks and page-type-aware
    /// allocation, as `tpp` runs them.
    pub tpp: TppParams,
    /// Promotions queued and not yet executed, at most. Artifact `PROMOTE_QUEUE_LEN`:
    /// 512 (a full queue drops the fault's request).
    pub max_queued: usize,
    /// Least recently used pages a demotion looks through for one with a valid shadow.
    /// The paper leaves the victim order to TPP's LRU; tierkit's choice is 32, the batch
    /// Linux reclaim isolates from an LRU tail at a time (`SWAP_CLUSTER_MAX`), so a
    /// shadowed page goes first within the batch reclaim would take anyway. 0 demotes in
    /// plain LRU order.
    pub shadow_window: usize,
}

impl Default for NomadParams {
    fn default() -> Self {
        Self { tpp: TppParams::default(), max_queued: 512, shadow_window: 32 }
    }
}

impl TppPolicy {
    /// NOMAD with `params`: TPP in its non-exclusive mode (see the module documentation).
    pub fn nomad(params: NomadParams) -> Result<Self, ParamError> {
        let mut policy = Self::new(params.tpp).map_err(|e| e.within("tpp"))?;
        if params.max_queued == 0 {
            return Err(ParamError::new("max_queued", 0, "at least 1 promotion"));
        }
        policy.shadows =
            Some(Shadows { max_queued: params.max_queued, window: params.shadow_window, remaps: PageTable::new() });
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::memory::{Memory, MoveStatus, Resident, ScanCursor};
    use crate::policy::{Ctx, Migration, Policy};
    use crate::types::{Nanos, Page, PageKind, TierId, TierInfo};
    use crate::{Event, InMemory, Mover, Plan};

    /// [`InMemory`] with shadows: a promoted page keeps one until `write`, and a page
    /// in `dirty` fails its promotion as written during the copy.
    struct Shadowed {
        mem: InMemory,
        shadows: BTreeSet<Page>,
        dirty: BTreeSet<Page>,
    }

    impl Memory for Shadowed {
        fn now(&self) -> Nanos {
            self.mem.now()
        }
        fn tiers(&self) -> &[TierInfo] {
            self.mem.tiers()
        }
        fn free_pages(&self, tier: TierId) -> u64 {
            self.mem.free_pages(tier)
        }
        fn tier_of(&self, page: Page) -> Option<TierId> {
            self.mem.tier_of(page)
        }
        fn scan(&self, cursor: &mut ScanCursor, max: usize, out: &mut Vec<Resident>) -> usize {
            self.mem.scan(cursor, max, out)
        }
        fn shadowed(&self, page: Page) -> bool {
            self.shadows.contains(&page)
        }
        fn migrate(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
            for &page in pages {
                if to == TierId::FAST && self.dirty.remove(&page) {
                    out.push(MoveStatus::Busy);
                    continue;
                }
                self.mem.migrate(&[page], to, out);
                if *out.last().unwrap() == MoveStatus::Moved {
                    if to == TierId::FAST {
                        self.shadows.insert(page);
                    } else {
                        self.shadows.remove(&page);
                    }
                }
            }
        }
    }

    fn fault(page: Page) -> Event {
        Event::HintFault { page, tier: TierId(1), since_protect: 1000, time: 0 }
    }

    fn step(policy: &mut TppPolicy, mem: &mut Shadowed, events: &[Event]) -> Vec<Migration> {
        let mut plan = Plan::default();
        let mut sources = policy.sources();
        policy.on_events(events, &mut Ctx { mem: &*mem, plan: &mut plan, sources: &mut sources });
        let queued = plan.as_slice().to_vec();
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, mem, &mut results);
        policy.on_moved(&results);
        queued
    }

    /// 100 fast pages, 0..96 allocated there (4 free: no reclaim yet), slow 1000..1100.
    fn setup(params: NomadParams) -> (TppPolicy, Shadowed) {
        let mut mem =
            Shadowed { mem: InMemory::new(&[100, 1000]).unwrap(), shadows: BTreeSet::new(), dirty: BTreeSet::new() };
        let mut events = Vec::new();
        for p in 0..96 {
            mem.mem.touch(p);
            events.push(Event::Alloc { page: p, kind: PageKind::Anon, tier: TierId::FAST });
        }
        for p in 1000..1100 {
            mem.mem.place(p, TierId(1), false);
        }
        let mut policy = TppPolicy::nomad(params).unwrap();
        assert!(step(&mut policy, &mut mem, &events).is_empty());
        (policy, mem)
    }

    #[test]
    fn it_asks_for_non_exclusive_tiering_and_promotes_at_the_second_fault() {
        let (mut policy, mut mem) = setup(NomadParams::default());
        assert!(policy.non_exclusive());
        assert!(step(&mut policy, &mut mem, &[fault(1000)]).is_empty(), "the first fault only activates");
        assert_eq!(step(&mut policy, &mut mem, &[fault(1000)]), [Migration { page: 1000, to: TierId::FAST }]);
        assert_eq!(mem.tier_of(1000), Some(TierId::FAST));
        assert!(mem.shadowed(1000));
        let s = policy.stats();
        assert_eq!((s.hint_faults, s.promotion_candidates, s.promotions), (2, 1, 1));
    }

    #[test]
    fn an_aborted_commit_leaves_the_page_active_for_its_next_fault() {
        let (mut policy, mut mem) = setup(NomadParams::default());
        step(&mut policy, &mut mem, &[fault(1001)]);
        mem.dirty.insert(1001);
        step(&mut policy, &mut mem, &[fault(1001)]);
        assert_eq!(mem.tier_of(1001), Some(TierId(1)));
        assert_eq!((policy.stats().aborted, policy.stats().promotion_failures), (1, 0));
        // Still active: one more fault retries, and this time the copy commits.
        step(&mut policy, &mut mem, &[fault(1001)]);
        assert_eq!(mem.tier_of(1001), Some(TierId::FAST));
        assert_eq!(policy.stats().promotions, 1);
    }

    #[test]
    fn reclaim_takes_a_shadowed_page_within_the_window_before_the_lru_tail() {
        // With a window of 10, page 10 enters it once page 0 has gone.
        let cases: [(usize, [Page; 3]); 4] = [(32, [10, 0, 1]), (11, [10, 0, 1]), (10, [0, 10, 1]), (0, [0, 1, 2])];
        for (window, expected) in cases {
            let (mut policy, mut mem) = setup(NomadParams { shadow_window: window, ..Default::default() });
            // Page 10, the 11th least recently used, keeps a shadow. Three allocations
            // leave 1 page free (< 2%): reclaim demotes 3 (up to 4% free).
            mem.shadows.insert(10);
            let allocs: Vec<Event> = (96..99)
                .map(|p| {
                    mem.mem.touch(p);
                    Event::Alloc { page: p, kind: PageKind::Anon, tier: TierId::FAST }
                })
                .collect();
            let demoted: Vec<Page> = step(&mut policy, &mut mem, &allocs).iter().map(|m| m.page).collect();
            assert_eq!(demoted, expected, "window {window}");
            assert_eq!(policy.stats().shadow_demotions, expected.contains(&10) as u64, "window {window}");
            assert_eq!(policy.stats().demotions, 3);
        }
    }

    #[test]
    fn the_promotion_queue_is_bounded() {
        let (mut policy, mut mem) = setup(NomadParams { max_queued: 2, ..Default::default() });
        let faults: Vec<Event> = (1000..1004).map(fault).collect();
        step(&mut policy, &mut mem, &faults);
        let queued = step(&mut policy, &mut mem, &faults);
        assert_eq!(queued.iter().filter(|m| m.to == TierId::FAST).count(), 2);
        assert_eq!(policy.stats().promotion_failures, 2);
    }

    #[test]
    fn freed_pages_are_forgotten() {
        let (mut policy, mut mem) = setup(NomadParams::default());
        step(&mut policy, &mut mem, &[fault(1000)]);
        step(&mut policy, &mut mem, &[Event::Free { page: 1000 }]);
        assert!(step(&mut policy, &mut mem, &[fault(1000)]).is_empty(), "a new page starts inactive");
        assert!(policy.metadata_bytes() > 0);
    }

    #[test]
    fn parameters_are_checked() {
        let d = NomadParams::default();
        let bad = |p: NomadParams| TppPolicy::nomad(p).unwrap_err().param;
        let tpp = |tpp: TppParams| NomadParams { tpp, ..d };
        assert_eq!(bad(tpp(TppParams { scan_window_pages: 0, ..d.tpp })), "tpp.scan_window_pages");
        assert_eq!(bad(tpp(TppParams { scan_period: 0, ..d.tpp })), "tpp.scan_period");
        assert_eq!(bad(tpp(TppParams { demote_scale_factor: f64::NAN, ..d.tpp })), "tpp.demote_scale_factor");
        assert_eq!(bad(tpp(TppParams { demotion_watermark: 0.01, ..d.tpp })), "tpp.demotion_watermark");
        assert_eq!(bad(NomadParams { max_queued: 0, ..d }), "max_queued");
        let policy = TppPolicy::nomad(d).unwrap();
        assert_eq!((policy.name(), TppPolicy::new(d.tpp).unwrap().non_exclusive()), ("nomad", false));
    }
}
