//! NUMA hint-fault scanning (AutoNUMA; TPP §5.2).
//!
//! Every `period` the scanner protects the next `window_pages` resident pages in
//! address order (Linux's task_numa_work walks 256 MB per scan period), wrapping at the
//! end; with `slow_tiers_only` (TPP) it protects only pages on slower tiers. The next
//! access to a protected page faults: an [`Event::HintFault`] carrying the time since
//! protection (AutoNUMA's hint-fault latency). Protecting costs `mechanisms.pte_ns` per
//! page; each fault stalls the faulting thread `mechanisms.hint_fault_ns`.

use tierkit_core::{Event, HintFaults, Nanos, TierId};

use crate::machine::Machine;

pub(crate) struct HintScanner {
    pub(crate) config: HintFaults,
    next_scan: Nanos,
    cursor: u64,
    /// Protection time + 1 per page; 0 = not protected.
    protected: Vec<Nanos>,
    /// Faults since the last drain.
    pub(crate) faults: u64,
    /// Pages protected since the last drain.
    pub(crate) protected_pages: u64,
}

impl HintScanner {
    pub(crate) fn new(config: HintFaults, pages: u64) -> Self {
        Self { config, next_scan: 0, cursor: 0, protected: vec![0; pages as usize], faults: 0, protected_pages: 0 }
    }

    /// Starts loading `page`'s protection stamp, which [`Self::on_access`] reads.
    #[inline(always)]
    pub(crate) fn prefetch(&self, page: u64) {
        tierkit_core::prefetch::prefetch_at(&self.protected, page as usize);
    }

    #[inline(always)]
    pub(crate) fn on_access(&mut self, page: u64, tier: u8, time: impl Fn() -> Nanos, events: &mut Vec<Event>) {
        let p = &mut self.protected[page as usize];
        if *p != 0 {
            let time = time();
            events.push(Event::HintFault {
                page,
                tier: TierId(tier),
                since_protect: time.saturating_sub(*p - 1),
                time,
            });
            *p = 0;
            self.faults += 1;
        }
    }

    /// Runs the scans due by `now`.
    pub(crate) fn advance(&mut self, now: Nanos, machine: &Machine) {
        let pages = machine.pages();
        if pages == 0 || self.config.period == 0 {
            return;
        }
        while self.next_scan <= now {
            let mut protected = 0;
            let mut visited = 0;
            while protected < self.config.window_pages && visited < pages {
                if self.cursor >= pages {
                    self.cursor = 0;
                }
                if let Some(t) = machine.tier_index(self.cursor) {
                    if !self.config.slow_tiers_only || t != 0 {
                        self.protected[self.cursor as usize] = self.next_scan + 1;
                        protected += 1;
                    }
                }
                self.cursor += 1;
                visited += 1;
            }
            self.protected_pages += protected;
            self.next_scan += self.config.period;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::capacities;
    use crate::model::MachineConfig;

    #[test]
    fn protects_a_window_per_period_and_faults_once() {
        let cfg = MachineConfig::preset("cxl").unwrap();
        let mut m = Machine::new(&cfg, &capacities(2, 100, (1, 1)), 100);
        for p in 0..100 {
            m.first_touch(p, true); // 0..49 fast (watermark 1: 49 fast), rest slow
        }
        let mut s = HintScanner::new(HintFaults { window_pages: 10, period: 1000, slow_tiers_only: true }, 100);
        s.advance(0, &m);
        assert_eq!(s.protected_pages, 10);
        let mut ev = Vec::new();
        s.on_access(3, 0, || 50, &mut ev); // fast page: TPP never protects it
        s.on_access(49, 1, || 70, &mut ev);
        s.on_access(49, 1, || 80, &mut ev); // protection is gone after the fault
        assert_eq!(ev, [Event::HintFault { page: 49, tier: TierId(1), since_protect: 70, time: 70 }]);
        s.advance(2500, &m); // two more periods: 20 more pages, continuing from the cursor
        assert_eq!(s.protected_pages, 30);
        s.on_access(69, 1, || 2600, &mut ev);
        assert_eq!(ev.len(), 2);
        assert!(matches!(ev[1], Event::HintFault { since_protect: 600, .. }));
    }
}
