//! Pages whose last move failed for a reason retrying will not fix soon, and are not
//! retried for a while.
//!
//! `move_pages(2)` with `MPOL_MF_MOVE` refuses, page by page:
//!
//! - `EACCES`: the page is mapped by several processes (shared memory, page cache, or
//!   anonymous memory still shared copy-on-write after a `fork`). Only `MPOL_MF_MOVE_ALL`
//!   moves those, and tierkit moves only the target's private pages; the page stays
//!   shared until a process writes to it or exits.
//! - `EFAULT`: the shared zero page, or an address no longer mapped.
//! - `EINVAL` per page (not expected from the kernels tierkit knows, listed for safety).
//!
//! A policy that keeps choosing such a page would have it retried on every round (a
//! forked target produced 86–184 thousand `EACCES` in 4 s). For [`COOL_DOWN`] after such
//! a failure the page gets the same status again without a system call; the statuses
//! still reach the mover and its per-errno counts, so the refusals stay visible.

use std::collections::HashMap;

use tierkit_core::{Nanos, Page, SECOND};

/// How long a page that failed for a lasting reason is not retried: 30 s, long enough
/// that a refused page costs nothing between policy passes, short enough to notice when
/// a copy-on-write page stops being shared.
pub(super) const COOL_DOWN: Nanos = 30 * SECOND;

/// Most pages remembered at once (64 Ki units: up to 4 MiB of table); beyond it, further
/// refusals are retried as before until entries expire.
const MAX_COOLING: usize = 1 << 16;

/// Whether a per-page `errno` is a lasting refusal.
pub(super) fn lasting(errno: i32) -> bool {
    matches!(errno, libc::EACCES | libc::EFAULT | libc::EINVAL)
}

/// Units (a base page or a huge page's head) cooling down, with when they may be retried
/// and the errno they failed with.
#[derive(Debug, Default)]
pub(super) struct Cooling {
    until: HashMap<Page, (Nanos, i32)>,
}

impl Cooling {
    /// Records that moving `page` failed with `errno` at `now`; ignored unless the errno
    /// is [`lasting`].
    pub fn note(&mut self, page: Page, errno: i32, now: Nanos) {
        if !lasting(errno) {
            return;
        }
        if self.until.len() >= MAX_COOLING && !self.until.contains_key(&page) {
            self.retain(now, |_, _| true);
            if self.until.len() >= MAX_COOLING {
                return;
            }
        }
        self.until.insert(page, (now.saturating_add(COOL_DOWN), errno));
    }

    /// The errno `page` failed with, while its cool-down runs at `now`.
    pub fn errno(&self, page: Page, now: Nanos) -> Option<i32> {
        self.until.get(&page).filter(|&&(until, _)| now < until).map(|&(_, errno)| errno)
    }

    /// Forgets the pages whose cool-down ended by `now`, and those `keep(page, errno)`
    /// rejects.
    pub fn retain(&mut self, now: Nanos, mut keep: impl FnMut(Page, i32) -> bool) {
        self.until.retain(|&page, &mut (until, errno)| now < until && keep(page, errno));
    }

    /// Pages remembered (cooling, or expired and not pruned yet).
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.until.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lasting_refusals_cool_down_and_expire() {
        let mut c = Cooling::default();
        c.note(1, libc::EACCES, 0);
        c.note(2, libc::EFAULT, 10);
        c.note(3, libc::ENOMEM, 0);
        c.note(4, libc::EBUSY, 0);
        c.note(5, libc::ENOENT, 0);
        assert_eq!(c.len(), 2, "no space, busy and not present are worth retrying");
        assert_eq!(c.errno(1, COOL_DOWN - 1), Some(libc::EACCES));
        assert_eq!(c.errno(1, COOL_DOWN), None);
        assert_eq!(c.errno(2, COOL_DOWN), Some(libc::EFAULT));
        assert_eq!(c.errno(3, 0), None);
        // A second failure restarts the cool-down.
        c.note(1, libc::EACCES, COOL_DOWN);
        assert_eq!(c.errno(1, 2 * COOL_DOWN - 1), Some(libc::EACCES));
        c.retain(COOL_DOWN + 10, |_, _| true);
        assert_eq!((c.len(), c.errno(2, 0)), (1, None));
        c.retain(0, |_, errno| errno != libc::EACCES);
        assert_eq!(c.len(), 0);
    }

    #[test]
    fn the_table_is_bounded_and_makes_room_from_expired_entries() {
        let mut c = Cooling::default();
        for page in 0..MAX_COOLING as Page {
            c.note(page, libc::EACCES, 0);
        }
        c.note(u64::MAX, libc::EACCES, 1);
        assert_eq!((c.len(), c.errno(u64::MAX, 1)), (MAX_COOLING, None), "full: not remembered");
        c.note(0, libc::EFAULT, 2);
        assert_eq!(c.errno(0, 2), Some(libc::EFAULT), "a known page is updated");
        c.note(u64::MAX, libc::EACCES, COOL_DOWN + 1);
        assert_eq!((c.len(), c.errno(u64::MAX, COOL_DOWN + 1)), (2, Some(libc::EACCES)), "expired ones pruned");
    }
}
