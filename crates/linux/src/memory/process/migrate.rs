//! [`LiveProcess`]'s moves: pacer-sized `move_pages(2)` calls, one status per page.
//!
//! Within one [`Memory::migrate`] call:
//!
//! - **Each unit once.** A unit is a base page, or a whole huge page named by any of its
//!   base pages. Its first occurrence carries the outcome; later occurrences are reported
//!   `AlreadyThere` (nothing more was done for them), so a plan that repeats pages spends
//!   neither the pacer's allowance nor the promoted-page count twice.
//! - **Only what must move.** A unit the placement cache already puts in the destination
//!   tier is `AlreadyThere` without a system call. The others are located afresh first
//!   (one `move_pages` query per batch): the cache is as old as the last refresh, and a
//!   target that unmaps and maps memory again may have a new page at an address since. A
//!   unit found in the destination tier is `AlreadyThere` (the kernel would leave it and
//!   report its node, which must not count as a move), one no longer resident is
//!   `NotResident`; the rest are sent in address order.
//! - **No retry of lasting refusals.** A unit in its cool-down ([`super::cooling`]) gets
//!   the status it failed with again, without a system call.
//! - **Room first.** A unit that must move onto another node goes to the node of the
//!   destination tier with the most room ([`crate::topology::Node::room_pages`]), which is
//!   reserved as the batch is built; when no node of the tier has room left for it, it is
//!   `NoSpace` without a system call. Room is given back for pages that did not move, and
//!   a node that refuses a page with `ENOMEM` has no room until the next re-read.

use std::collections::HashMap;
use std::path::Path;

use tierkit_core::{Memory, MoveStatus, Nanos, Page, TierId, PAGE_SIZE};

use super::placement::Slot;
use super::LiveProcess;
use crate::memory::pacing::CallRecord;
use crate::memory::procfs::{read_maps, ProcError};
use crate::sys::{self, Errno, MPOL_MF_MOVE};

/// One distinct page to move: a base page, or a whole huge page named by its head.
#[derive(Clone, Copy, Debug)]
struct Unit {
    page: Page,
    /// Its cache slot, when it was resident at the last refresh.
    slot: Option<Slot>,
    /// Its node index in the cache.
    prev: Option<usize>,
    /// Index of its first occurrence in the caller's pages.
    first: usize,
}

impl Unit {
    fn weight(&self) -> u64 {
        self.slot.map_or(1, |s| s.weight)
    }
}

/// A unit in a `move_pages` call and the node it was sent to, where room was reserved
/// for it.
#[derive(Clone, Copy, Debug)]
struct Sent {
    unit: usize,
    node: u32,
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
    /// [`Memory::migrate`]: see the module documentation.
    pub(super) fn migrate_pages(&mut self, pages: &[Page], to: TierId, out: &mut Vec<MoveStatus>) {
        if to.index() >= self.tiers.len() || self.topology.tier_nodes(to).is_empty() {
            out.extend(pages.iter().map(|_| MoveStatus::NoSuchTier));
            return;
        }
        let mut units: Vec<Unit> = Vec::with_capacity(pages.len());
        let mut unit_of = Vec::with_capacity(pages.len());
        let mut seen: HashMap<Page, usize> = HashMap::with_capacity(pages.len());
        for (i, &page) in pages.iter().enumerate() {
            let slot = self.placement.slot(page);
            let unit = slot.map_or(page, |s| s.unit);
            let index = *seen.entry(unit).or_insert_with(|| {
                let prev = slot.and_then(|s| self.placement.node_at(s.index));
                units.push(Unit { page: unit, slot, prev, first: i });
                units.len() - 1
            });
            unit_of.push(index);
        }
        let now = self.now();
        let mut statuses = vec![MoveStatus::NotResident; units.len()];
        let mut todo = Vec::with_capacity(units.len());
        for (u, unit) in units.iter().enumerate() {
            match self.cooling.errno(unit.page, now) {
                Some(errno) => {
                    statuses[u] = status_of_errno(errno);
                    self.held.cooling += 1;
                }
                None => todo.push(u),
            }
        }
        // Address order: the kernel walks the page tables in order, as the raw loop does.
        todo.sort_unstable_by_key(|&u| units[u].page);
        let mut done = 0;
        while done < todo.len() && !self.gone {
            let end = todo.len().min(done + self.pacer.batch_pages());
            self.move_batch(&units, &todo[done..end], to, &mut statuses);
            done = end;
        }
        out.extend(unit_of.iter().enumerate().map(|(i, &u)| match units[u].first == i {
            true => statuses[u],
            false => MoveStatus::AlreadyThere,
        }));
    }

    /// One `move_pages` call for the units `batch` indexes, filling their `statuses` and
    /// updating the cache, the nodes' room, the cool-downs and the pacer.
    fn move_batch(&mut self, units: &[Unit], batch: &[usize], to: TierId, statuses: &mut [MoveStatus]) {
        let (mut addrs, mut nodes, mut sent) = (Vec::new(), Vec::new(), Vec::new());
        for &u in batch {
            let unit = &units[u];
            let Some(addr) = unit.page.checked_mul(PAGE_SIZE).and_then(|a| usize::try_from(a).ok()) else {
                continue; // no such address: stays NotResident
            };
            let node = match unit.prev {
                // Already in the tier by the cache (which every move keeps current): no
                // call. Should something else have moved it since the last refresh, the
                // next refresh shows it and the policy decides again.
                Some(n) if self.placement.node_tier[n] == to => {
                    statuses[u] = MoveStatus::AlreadyThere;
                    continue;
                }
                _ => match self.topology.roomiest_node(to) {
                    Some(id) if self.topology.node(id).is_some_and(|n| n.move_room_pages() >= unit.weight()) => {
                        self.take_room(id, unit.weight() as i64);
                        id
                    }
                    _ => {
                        statuses[u] = MoveStatus::NoSpace;
                        self.held.no_room += 1;
                        continue;
                    }
                },
            };
            addrs.push(addr);
            nodes.push(node as i32);
            sent.push(Sent { unit: u, node });
        }
        if addrs.is_empty() {
            return;
        }
        let pid = self.pid as libc::pid_t;
        let started = std::time::Instant::now();
        self.settle_located(units, to, statuses, &mut addrs, &mut nodes, &mut sent);
        if addrs.is_empty() {
            return;
        }
        let mut status = vec![0i32; addrs.len()];
        let result = sys::move_pages(pid, &addrs, Some(&nodes), &mut status, MPOL_MF_MOVE);
        let took = started.elapsed().as_nanos() as u64;
        let now = self.now();
        let not_migrated = match result {
            Ok(n) => n,
            Err(Errno(errno)) => return self.call_failed(errno, units, &sent, statuses, took),
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
        for (s, &st) in sent.iter().zip(&status) {
            statuses[s.unit] = self.settle(&units[s.unit], *s, st, to, now, &mut call);
        }
        self.pacer.record(now, &call);
    }

    /// Locates the units about to be sent (one `move_pages` query) and settles those that
    /// must not be: found in the destination tier (`AlreadyThere`, the cache takes the
    /// node) or not resident (their error, as a move would have returned it). The rest
    /// stay in `addrs`, `nodes` and `sent`. When the query itself fails, all stay: the
    /// move call meets the same failure and says what it is.
    fn settle_located(
        &mut self,
        units: &[Unit],
        to: TierId,
        statuses: &mut [MoveStatus],
        addrs: &mut Vec<usize>,
        nodes: &mut Vec<i32>,
        sent: &mut Vec<Sent>,
    ) {
        let mut found = vec![0i32; addrs.len()];
        if sys::move_pages(self.pid as libc::pid_t, addrs, None, &mut found, 0).is_err() {
            return;
        }
        let now = self.now();
        let mut call = CallRecord::default();
        let mut keep = 0;
        for k in 0..addrs.len() {
            let (s, status) = (sent[k], found[k]);
            let unit = &units[s.unit];
            if status < 0 {
                statuses[s.unit] = self.settle(unit, s, status, to, now, &mut call);
                continue;
            }
            match self.index_of_node(status) {
                Some(n) if self.placement.node_tier[n] == to => {
                    if let Some(slot) = unit.slot {
                        self.placement.set(slot, Some(n));
                    }
                    self.take_room(s.node, -(unit.weight() as i64));
                    statuses[s.unit] = MoveStatus::AlreadyThere;
                }
                _ => {
                    (addrs[keep], nodes[keep], sent[keep]) = (addrs[k], nodes[k], s);
                    keep += 1;
                }
            }
        }
        addrs.truncate(keep);
        nodes.truncate(keep);
        sent.truncate(keep);
    }

    /// A whole `move_pages` call failed with `errno`: every sent unit gets the same
    /// status and its reserved room back.
    ///
    /// `ESRCH`: the process is gone. `EINVAL` with valid arguments (tierkit passes only
    /// `MPOL_MF_MOVE` and equal-length arrays) means the process has no address space
    /// any more: it is exiting, or a zombie its parent has not reaped. Both mark it gone,
    /// so no further call is made. `ENOMEM`: a destination could not allocate; its
    /// nodes have no room until the next re-read, and the pacer backs off.
    fn call_failed(&mut self, errno: i32, units: &[Unit], sent: &[Sent], statuses: &mut [MoveStatus], took: Nanos) {
        self.pacer.count_call_error(errno);
        self.pacer.count_errno(errno, sent.len() as u64);
        self.gone |= errno == libc::ESRCH || (errno == libc::EINVAL && self.has_exited());
        let all = match errno {
            _ if self.gone => MoveStatus::NotResident,
            libc::ENOMEM => MoveStatus::NoSpace,
            e => MoveStatus::Failed(e),
        };
        for s in sent {
            statuses[s.unit] = all;
            self.take_room(s.node, -(units[s.unit].weight() as i64));
            if all == MoveStatus::NoSpace {
                self.no_room(s.node);
            }
        }
        let no_space = all == MoveStatus::NoSpace;
        self.pacer.record(self.now(), &CallRecord { pages: sent.len(), took, no_space, ..CallRecord::default() });
    }

    /// Whether the process has released its address space (its maps are empty or gone).
    fn has_exited(&self) -> bool {
        match read_maps(Path::new("/"), self.pid) {
            Ok(maps) => maps.is_empty(),
            Err(e) => matches!(e, ProcError::Gone { .. }),
        }
    }

    /// Turns one page's `move_pages` status into a [`MoveStatus`], updating the cache, the
    /// nodes' room, the cool-downs and the call record.
    fn settle(
        &mut self,
        unit: &Unit,
        sent: Sent,
        status: i32,
        to: TierId,
        now: Nanos,
        call: &mut CallRecord,
    ) -> MoveStatus {
        let weight = unit.weight() as i64;
        let release = |live: &mut Self| live.take_room(sent.node, -weight);
        if status < 0 {
            let errno = -status;
            self.pacer.count_errno(errno, 1);
            self.cooling.note(unit.page, errno, now);
            release(self);
            let s = status_of_errno(errno);
            if s == MoveStatus::NoSpace {
                call.no_space = true;
                self.no_room(sent.node);
            }
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
            release(self);
            return MoveStatus::Busy; // left on a node of another tier without an error
        };
        match unit.prev {
            Some(prev) if prev != n => {
                self.take_room(self.node_ids[prev], -weight);
                if sent.node != self.node_ids[n] {
                    release(self);
                    self.take_room(self.node_ids[n], weight);
                }
                call.moved += 1;
                call.moved_bytes += unit.weight() * PAGE_SIZE;
                MoveStatus::Moved
            }
            // Where it was; or, unknown before, where it is now: nothing tells the two
            // apart, so the room reserved for it stays taken.
            _ => MoveStatus::AlreadyThere,
        }
    }

    /// Counts `pages` base pages onto node `id` (negative: off it) in its room.
    fn take_room(&mut self, id: u32, pages: i64) {
        if let Some(node) = self.topology.nodes.iter_mut().find(|n| n.id == id) {
            node.adjust_headroom(pages);
        }
    }

    /// Node `id` refused a page for lack of memory: no room there until the next re-read.
    fn no_room(&mut self, id: u32) {
        if let Some(node) = self.topology.nodes.iter_mut().find(|n| n.id == id) {
            node.refused_for_memory();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::cooling::COOL_DOWN;
    use super::*;
    use crate::topology::Topology;

    /// Private anonymous pages of this process, unmapped on drop.
    struct Pages {
        addr: *mut u8,
        len: usize,
    }

    impl Pages {
        /// `n` pages in base pages, not touched yet.
        fn new(n: usize) -> Self {
            let len = n * PAGE_SIZE as usize;
            // SAFETY: a fresh private anonymous mapping owned by this value.
            let addr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            assert_ne!(addr, libc::MAP_FAILED);
            // SAFETY: the mapping just made.
            assert_eq!(unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) }, 0);
            Self { addr: addr as *mut u8, len }
        }

        /// Writes every page, making it resident.
        fn touch(&self) -> &Self {
            for off in (0..self.len).step_by(PAGE_SIZE as usize) {
                // SAFETY: inside the mapping.
                unsafe { self.addr.add(off).write_volatile(1) };
            }
            self
        }

        fn page(&self, i: usize) -> Page {
            self.addr as Page / PAGE_SIZE + i as Page
        }
    }

    impl Drop for Pages {
        fn drop(&mut self) {
            // SAFETY: unmaps exactly the mapping this value made.
            unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
        }
    }

    fn own() -> LiveProcess {
        let topo = Topology::discover(Path::new("/")).unwrap();
        LiveProcess::open(std::process::id(), &topo).unwrap()
    }

    fn unit(live: &LiveProcess, page: Page) -> Unit {
        let slot = live.placement.slot(page);
        Unit { page, slot, prev: slot.and_then(|s| live.placement.node_at(s.index)), first: 0 }
    }

    fn headroom(live: &LiveProcess, id: u32) -> i64 {
        live.topology.node(id).unwrap().headroom_pages
    }

    #[test]
    fn errnos_map_to_statuses() {
        assert_eq!(status_of_errno(libc::ENOENT), MoveStatus::NotResident);
        assert_eq!(status_of_errno(libc::EFAULT), MoveStatus::NotResident);
        assert_eq!(status_of_errno(libc::ENOMEM), MoveStatus::NoSpace);
        assert_eq!(status_of_errno(libc::EBUSY), MoveStatus::Busy);
        assert_eq!(status_of_errno(libc::EAGAIN), MoveStatus::Busy);
        assert_eq!(status_of_errno(libc::EACCES), MoveStatus::Failed(libc::EACCES));
    }

    /// `EACCES` (a page shared copy-on-write after a fork) cannot be provoked on a
    /// one-node host (the kernel answers "already there" before it checks sharing), so
    /// the kernel's answers are injected where `move_pages` results are settled.
    #[test]
    fn lasting_refusals_are_not_retried_until_a_refresh_shows_them_over() {
        let mem = Pages::new(4);
        mem.touch();
        let mut live = own();
        let (p, q) = (mem.page(0), mem.page(1));
        let node = live.node_ids[0];
        let before = headroom(&live, node);
        live.take_room(node, 1);
        let (sent, now) = (Sent { unit: 0, node }, live.now());
        let mut call = CallRecord::default();
        let status = live.settle(&unit(&live, q), sent, -libc::EACCES, TierId(0), now, &mut call);
        assert_eq!(status, MoveStatus::Failed(libc::EACCES));
        assert_eq!(headroom(&live, node), before, "the room reserved for it is given back");
        assert_eq!(live.pacer.counts().by_errno[&libc::EACCES], 1);
        live.take_room(node, 1);
        live.settle(&unit(&live, p), sent, -libc::EFAULT, TierId(0), now, &mut call);

        // Refused again without a system call, once per distinct page.
        let calls = live.pacer.counts().calls;
        let mut out = Vec::new();
        live.migrate(&[q, p, q], TierId(0), &mut out);
        use MoveStatus::*;
        assert_eq!(out, [Failed(libc::EACCES), NotResident, AlreadyThere]);
        assert_eq!(live.pacer.counts().calls, calls, "no move_pages call");
        assert_eq!(live.pacer.counts().by_errno[&libc::EACCES], 1, "counted when the kernel refused");
        assert_eq!(live.held_back().cooling, 2, "q and p held back, the repeat of q only reported");

        // A refresh finds p resident on a node: no longer unmapped or the zero page, so it
        // may be tried again. Whether q is still shared does not show: it keeps cooling.
        live.refresh().unwrap();
        let now = live.now();
        assert_eq!((live.cooling.errno(p, now), live.cooling.errno(q, now)), (None, Some(libc::EACCES)));
        assert_eq!(live.cooling.errno(q, now + COOL_DOWN), None, "until its cool-down ends");
    }

    /// Pages the view does not know (mapped after it was built, as a target that unmaps
    /// and maps memory again has them) are located before they are sent: one found in
    /// the destination tier is not moved, counted or given room, and one not resident
    /// is not sent.
    #[test]
    fn pages_located_in_the_destination_or_not_resident_are_not_sent() {
        let mut live = own();
        let fresh = Pages::new(3); // mapped after the process view was built
        let (here, absent) = (fresh.page(0), fresh.page(2));
        fresh.touch();
        // SAFETY: the third page of the mapping, dropped again; the others stay resident.
        assert_eq!(
            unsafe {
                libc::madvise(fresh.addr.add(2 * PAGE_SIZE as usize).cast(), PAGE_SIZE as usize, libc::MADV_DONTNEED)
            },
            0
        );
        let node = live.node_ids[0];
        let (calls, room) = (live.pacer.counts().calls, headroom(&live, node));
        let mut out = Vec::new();
        live.migrate(&[here, absent], TierId(0), &mut out);
        assert_eq!(out, [MoveStatus::AlreadyThere, MoveStatus::NotResident]);
        assert_eq!(live.pacer.counts().calls, calls, "no move_pages call to move them");
        assert_eq!(headroom(&live, node), room, "no room kept for them");
        assert_eq!(live.pacer.counts().pages_moved, 0);
    }

    #[test]
    fn a_node_refusing_for_lack_of_memory_takes_nothing_until_the_next_read() {
        let known = Pages::new(2);
        known.touch();
        let fresh = Pages::new(2); // touched after the process view is built
        let mut live = own();
        fresh.touch();
        let node = live.node_ids[0];
        let mut call = CallRecord::default();
        let sent = Sent { unit: 0, node };
        live.take_room(node, 1);
        let now = live.now();
        let status = live.settle(&unit(&live, known.page(0)), sent, -libc::ENOMEM, TierId(0), now, &mut call);
        assert_eq!((status, call.no_space), (MoveStatus::NoSpace, true));
        assert!(headroom(&live, node) <= 0);
        assert_eq!(live.free_pages(TierId(0)), 0);
        assert_eq!(live.cooling.errno(known.page(0), now), None, "no space is worth retrying");

        // A page the cache does not place needs room: refused without a system call.
        let (calls, enomem) = (live.pacer.counts().calls, live.pacer.counts().by_errno[&libc::ENOMEM]);
        let mut out = Vec::new();
        live.migrate(&[fresh.page(0), fresh.page(1), fresh.page(0)], TierId(0), &mut out);
        use MoveStatus::*;
        assert_eq!(out, [NoSpace, NoSpace, AlreadyThere]);
        assert_eq!(live.pacer.counts().calls, calls);
        assert_eq!(live.held_back().no_room, 2);
        assert_eq!(live.pacer.counts().by_errno[&libc::ENOMEM], enomem, "not the kernel's answer");
        // A page the cache places in the tier already needs no room and no call.
        out.clear();
        live.migrate(&[known.page(1)], TierId(0), &mut out);
        assert_eq!(live.pacer.counts().calls, calls);
        if live.topology.nodes.len() == 1 {
            assert_eq!(out, [AlreadyThere]);
        }
        live.refresh_free().unwrap();
        assert!(live.free_pages(TierId(0)) > 0, "re-read: this host has room");
    }
}
