//! [`LiveProcess`]'s moves: pacer-sized `move_pages(2)` calls, one status per page.

use std::collections::HashMap;
use std::time::Instant;

use tierkit_core::{Memory, MoveStatus, Page, TierId, PAGE_SIZE};

use super::placement::Slot;
use super::LiveProcess;
use crate::pacing::CallRecord;
use crate::sys::{self, Errno, MPOL_MF_MOVE};

/// One distinct page to move: a base page, or a whole huge page named by its head.
#[derive(Clone, Copy, Debug)]
struct Unit {
    page: Page,
    /// Its cache slot, when it was resident at the last refresh.
    slot: Option<Slot>,
    /// Its node index in the cache.
    prev: Option<usize>,
}

impl Unit {
    fn weight(&self) -> u64 {
        self.slot.map_or(1, |s| s.weight)
    }
}

/// The status for a negative per-page `move_pages` result.
fn status_of_errno(errno: i32) -> MoveStatus {
    match errno {
        libc::ENOENT | libc::EFAULT => MoveStatus::NotResident,
        libc::ENOMEM => MoveStatus::NoSpace,
        libc::EBUSY | libc::EAGAIN => MoveStatus::Busy,
        e => MoveStatus::Failed(e),
    }
}

impl LiveProcess {
    /// [`Memory::migrate`]: moves each distinct page once (every base page of a huge page
    /// gets the status of the whole huge page), in calls of the pacer's batch size, to
    /// the node of tier `to` with the most free memory — or, for a page the cache already
    /// places in tier `to`, to the node it is on, so the kernel leaves it there.
    pub(super) fn migrate_pages(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
        let dest = self.topology.roomiest_node(to);
        let Some(dest) = dest.filter(|_| to.index() < self.tiers.len()) else {
            out.extend(pages.iter().map(|_| MoveStatus::NoSuchTier));
            return;
        };
        let mut units: Vec<Unit> = Vec::with_capacity(pages.len());
        let mut unit_of = Vec::with_capacity(pages.len());
        let mut seen: HashMap<Page, usize> = HashMap::with_capacity(pages.len());
        for &page in pages {
            let slot = self.placement.slot(page);
            let unit = slot.map_or(page, |s| s.unit);
            let index = *seen.entry(unit).or_insert_with(|| {
                units.push(Unit { page: unit, slot, prev: slot.and_then(|s| self.placement.node_at(s.index)) });
                units.len() - 1
            });
            unit_of.push(index);
        }
        let mut statuses = vec![MoveStatus::NotResident; units.len()];
        let mut done = 0;
        while done < units.len() && !self.gone {
            let end = units.len().min(done + self.pacer.batch_pages());
            self.move_batch(&units[done..end], to, dest, &mut statuses[done..end]);
            done = end;
        }
        out.extend(unit_of.iter().map(|&u| statuses[u]));
    }

    /// One `move_pages` call for `units`, filling `out` and updating the cache, the free
    /// memory and the pacer.
    fn move_batch(&mut self, units: &[Unit], to: TierId, dest: u32, out: &mut [MoveStatus]) {
        let valid = |u: &Unit| u.page.checked_mul(PAGE_SIZE).and_then(|a| usize::try_from(a).ok());
        let (mut addrs, mut nodes, mut index) = (Vec::new(), Vec::new(), Vec::new());
        for (i, u) in units.iter().enumerate() {
            let Some(addr) = valid(u) else { continue }; // no such address: stays NotResident
            let node = match u.prev {
                Some(n) if self.placement.node_tier[n] == to => self.node_ids[n],
                _ => dest,
            };
            addrs.push(addr);
            nodes.push(node as i32);
            index.push(i);
        }
        if addrs.is_empty() {
            return;
        }
        let mut status = vec![0i32; addrs.len()];
        let pid = self.pid as libc::pid_t;
        let started = Instant::now();
        let result = sys::move_pages(pid, &addrs, Some(&nodes), &mut status, MPOL_MF_MOVE);
        let took = started.elapsed().as_nanos() as u64;
        let now = self.now();
        let not_migrated = match result {
            Ok(n) => n,
            Err(Errno(errno)) => {
                self.pacer.count_call_error(errno);
                self.gone |= errno == libc::ESRCH;
                let all = match errno {
                    libc::ESRCH => MoveStatus::NotResident,
                    libc::ENOMEM => MoveStatus::NoSpace,
                    e => MoveStatus::Failed(e),
                };
                index.iter().for_each(|&i| out[i] = all);
                let no_space = errno == libc::ENOMEM;
                self.pacer.record(now, &CallRecord { pages: addrs.len(), took, no_space, ..CallRecord::default() });
                return;
            }
        };
        // Pages reported busy (a huge page may say so although it moved) and, when the
        // kernel says some pages were not migrated, pages claiming a node: ask again.
        let recheck: Vec<usize> = (0..status.len())
            .filter(|&k| {
                status[k] == -libc::EBUSY || status[k] == -libc::EAGAIN || (not_migrated > 0 && status[k] >= 0)
            })
            .collect();
        if !recheck.is_empty() {
            let again: Vec<usize> = recheck.iter().map(|&k| addrs[k]).collect();
            let mut where_now = vec![0i32; again.len()];
            if sys::move_pages(pid, &again, None, &mut where_now, 0).is_ok() {
                for (&k, &w) in recheck.iter().zip(&where_now) {
                    status[k] = match w {
                        w if w == nodes[k] => w,
                        w if w >= 0 && status[k] >= 0 => -libc::EAGAIN,
                        w if w >= 0 => status[k],
                        w => w,
                    };
                }
            }
        }
        let mut call = CallRecord { pages: addrs.len(), took, ..CallRecord::default() };
        for (k, &i) in index.iter().enumerate() {
            out[i] = self.settle(&units[i], status[k], to, &mut call);
        }
        self.pacer.record(now, &call);
    }

    /// Turns one page's `move_pages` status into a [`MoveStatus`], updating the cache, the
    /// free-memory estimate and the call record.
    fn settle(&mut self, unit: &Unit, status: i32, to: TierId, call: &mut CallRecord) -> MoveStatus {
        if status < 0 {
            let errno = -status;
            self.pacer.count_errno(errno, 1);
            let s = status_of_errno(errno);
            call.no_space |= s == MoveStatus::NoSpace;
            if let (MoveStatus::NotResident, Some(slot)) = (s, unit.slot) {
                self.placement.set(slot, None);
            }
            return s;
        }
        let node = self.index_of_node(status);
        if let Some(slot) = unit.slot {
            self.placement.set(slot, node);
        }
        let Some(n) = node.filter(|&n| self.placement.node_tier[n] == to) else {
            return MoveStatus::Busy; // left on a node of another tier without an error
        };
        match unit.prev {
            Some(prev) if prev != n => {
                let kib = unit.weight() * PAGE_SIZE / 1024;
                self.adjust_free(self.node_ids[prev], kib as i64);
                self.adjust_free(self.node_ids[n], -(kib as i64));
                call.moved += 1;
                call.moved_bytes += unit.weight() * PAGE_SIZE;
                MoveStatus::Moved
            }
            // Where it was (or, unknown before, where it is now: nothing to tell them apart).
            _ => MoveStatus::AlreadyThere,
        }
    }

    fn adjust_free(&mut self, node: u32, delta_kib: i64) {
        if let Some(n) = self.topology.nodes.iter_mut().find(|n| n.id == node) {
            n.mem_free_kib = n.mem_free_kib.saturating_add_signed(delta_kib);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_map_to_statuses() {
        assert_eq!(status_of_errno(libc::ENOENT), MoveStatus::NotResident);
        assert_eq!(status_of_errno(libc::EFAULT), MoveStatus::NotResident);
        assert_eq!(status_of_errno(libc::ENOMEM), MoveStatus::NoSpace);
        assert_eq!(status_of_errno(libc::EBUSY), MoveStatus::Busy);
        assert_eq!(status_of_errno(libc::EAGAIN), MoveStatus::Busy);
        assert_eq!(status_of_errno(libc::EACCES), MoveStatus::Failed(libc::EACCES));
    }
}
