//! The Driver: the loop every platform runs around a policy — events and ticks in, the
//! plan executed by a [`Mover`], the outcomes handed back to the policy.
//!
//! The simulator and the live daemon drive a policy through this one type, so "the same
//! policy code in the simulator and live" includes the driving of it: the order of
//! `on_events`, `on_tick`, `execute` and `on_moved`, the queue bound and the counts. A
//! platform decides only when to call each step and which [`Memory`] view to pass.

use crate::event::Event;
use crate::memory::{Memory, MoveStatus};
use crate::mover::Mover;
use crate::policy::{Ctx, Migration, Plan, Policy, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::TierId;

/// Most migrations kept queued while the platform allows none (bandwidth spent, `ENOMEM`
/// back-off). Beyond it the queue is handed back to the policy as `Busy` (it decides
/// again from fresh information) instead of growing without bound.
pub const MAX_QUEUED: usize = 1 << 18;

/// What one [`Driver::execute`] round did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    /// Pages moved to the fastest tier.
    pub promoted: u64,
    /// Pages moved to a slower tier.
    pub demoted: u64,
    /// Migrations attempted, whatever their outcome (they spend the round's allowance).
    pub attempted: u64,
    /// Queued migrations handed back to the policy because the queue was full.
    pub dropped: u64,
}

/// Totals over a whole run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Pages promoted.
    pub promoted: u64,
    /// Pages demoted.
    pub demoted: u64,
}

/// A policy with its plan, its current source request and the mover that executes it.
pub struct Driver {
    policy: Box<dyn Policy>,
    sources: SourceRequest,
    plan: Plan,
    mover: Mover,
    moved: Vec<(Migration, MoveStatus)>,
    totals: Totals,
}

impl Driver {
    /// Drives `policy`, executing its plan with `mover` (whose per-round limit each
    /// [`execute`](Self::execute) call sets).
    pub fn new(policy: Box<dyn Policy>, mover: Mover) -> Self {
        Self {
            sources: policy.sources(),
            policy,
            plan: Plan::default(),
            mover,
            moved: Vec::new(),
            totals: Totals::default(),
        }
    }

    /// The policy.
    pub fn policy(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// The policy's current source request (it may change it at every call).
    pub fn sources(&self) -> &SourceRequest {
        &self.sources
    }

    /// Migrations queued and not executed yet.
    pub fn queued(&self) -> usize {
        self.plan.len()
    }

    /// Everything executed so far.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// The outcomes of the last [`execute`](Self::execute) round, in execution order.
    pub fn moved(&self) -> &[(Migration, MoveStatus)] {
        &self.moved
    }

    /// Hands `events` to the policy (nothing when there are none).
    pub fn on_events(&mut self, events: &[Event], mem: &dyn Memory) {
        if !events.is_empty() {
            let ctx = &mut Ctx { mem, plan: &mut self.plan, sources: &mut self.sources };
            self.policy.on_events(events, ctx);
        }
    }

    /// Runs the policy's periodic work.
    pub fn on_tick(&mut self, telemetry: &Telemetry, mem: &dyn Memory) {
        self.policy.on_tick(telemetry, &mut Ctx { mem, plan: &mut self.plan, sources: &mut self.sources });
    }

    /// Executes up to `allowance` queued migrations against `mem` and tells the policy
    /// how they went. With no allowance, a queue longer than [`MAX_QUEUED`] is handed
    /// back to the policy as `Busy`; a shorter one waits.
    pub fn execute(&mut self, mem: &mut dyn Memory, allowance: usize) -> Round {
        let mut round = Round::default();
        self.moved.clear();
        if self.plan.is_empty() {
            return round;
        }
        if allowance == 0 {
            if self.plan.len() > MAX_QUEUED {
                round.dropped = self.plan.len() as u64;
                self.moved.extend(self.plan.as_slice().iter().map(|&m| (m, MoveStatus::Busy)));
                self.plan.clear();
                self.policy.on_moved(&self.moved);
            }
            return round;
        }
        self.mover.max_pages_per_round = allowance;
        self.mover.execute(&mut self.plan, mem, &mut self.moved);
        round.attempted = self.moved.len() as u64;
        for &(m, status) in &self.moved {
            match status {
                MoveStatus::Moved if m.to == TierId::FAST => round.promoted += 1,
                MoveStatus::Moved => round.demoted += 1,
                _ => {}
            }
        }
        self.totals.promoted += round.promoted;
        self.totals.demoted += round.demoted;
        if !self.moved.is_empty() {
            self.policy.on_moved(&self.moved);
        }
        round
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::SourceRequest;
    use crate::InMemory;
    use std::sync::{Arc, Mutex};

    type Told = Arc<Mutex<Vec<(Migration, MoveStatus)>>>;

    /// Promotes every sampled page and keeps the outcomes it is told.
    struct Promoter {
        told: Told,
    }

    impl Policy for Promoter {
        fn name(&self) -> &str {
            "promoter"
        }
        fn sources(&self) -> SourceRequest {
            SourceRequest::default()
        }
        fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
            for e in events {
                if let Event::Sample { page, .. } = *e {
                    ctx.promote(page);
                }
            }
        }
        fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}
        fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
            self.told.lock().unwrap().extend_from_slice(results);
        }
        fn metadata_bytes(&self) -> usize {
            0
        }
    }

    fn samples(pages: impl Iterator<Item = u64>) -> Vec<Event> {
        pages
            .map(|page| Event::Sample { page, tier: TierId(1), word: None, write: false, time: 0, stall_ns: None })
            .collect()
    }

    /// 2 free fast pages and pages 100..104 on the slow tier.
    fn setup() -> (InMemory, Driver, Told) {
        let mut mem = InMemory::new(&[2, 64]).unwrap();
        for page in 100..104 {
            mem.place(page, TierId(1), false);
        }
        let told = Told::default();
        (mem, Driver::new(Box::new(Promoter { told: told.clone() }), Mover::default()), told)
    }

    #[test]
    fn a_round_executes_within_its_allowance_and_counts_outcomes() {
        let (mut mem, mut driver, told) = setup();
        driver.on_events(&samples(100..104), &mem);
        assert_eq!(driver.queued(), 4);
        let first = driver.execute(&mut mem, 1);
        assert_eq!(first, Round { promoted: 1, attempted: 1, ..Round::default() });
        let rest = driver.execute(&mut mem, usize::MAX);
        assert_eq!(rest, Round { promoted: 1, attempted: 3, ..Round::default() }, "the fast tier holds 2");
        assert_eq!(driver.queued(), 0);
        assert_eq!(driver.totals(), &Totals { promoted: 2, demoted: 0 });
        let statuses: Vec<_> = driver.moved().iter().map(|m| m.1).collect();
        assert_eq!(statuses, [MoveStatus::Moved, MoveStatus::NoSpace, MoveStatus::NoSpace]);
        assert_eq!(mem.tier_of(101), Some(TierId::FAST));
        assert_eq!(told.lock().unwrap().len(), 4, "the policy was told every outcome");
    }

    #[test]
    fn without_allowance_a_short_queue_waits_and_a_long_one_is_handed_back() {
        let (mut mem, mut driver, told) = setup();
        driver.on_events(&samples(100..101), &mem);
        assert_eq!(driver.execute(&mut mem, 0), Round::default());
        assert_eq!(driver.queued(), 1, "the short queue waits");
        driver.on_events(&samples(1000..1000 + MAX_QUEUED as u64), &mem);
        let round = driver.execute(&mut mem, 0);
        assert_eq!(round, Round { dropped: MAX_QUEUED as u64 + 1, ..Round::default() });
        assert_eq!(driver.queued(), 0);
        assert_eq!(driver.moved().len(), MAX_QUEUED + 1);
        assert!(driver.moved().iter().all(|&(_, s)| s == MoveStatus::Busy), "handed back as Busy");
        assert_eq!(told.lock().unwrap().len(), MAX_QUEUED + 1, "the policy was told");
        assert_eq!(driver.totals(), &Totals::default(), "nothing moved");
    }
}
