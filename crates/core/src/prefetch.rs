//! A cache prefetch hint, for loops that look up large tables at random: issuing the
//! loads of the next few items before working on the current one overlaps their misses.

/// How far ahead of the item it works on a walk over a batch (samples, or a batch's
/// distinct pages) prefetches the table entries the items will read: far enough to cover
/// a miss, near enough that the lines are still cached when their item comes.
pub const AHEAD: usize = 8;

/// The same for a scan over resident pages, whose work per page is a few instructions:
/// it must run further ahead to cover a miss.
pub const SCAN_AHEAD: usize = 64;

/// Hints the CPU to start loading the cache line holding `value` (no effect on
/// correctness; a no-op off x86-64).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching is a hint; it never faults, even for invalid addresses,
        // and `value` is a valid reference anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// [`prefetch`] of `table[index]`; nothing for an index out of range.
#[inline(always)]
pub fn prefetch_at<T>(table: &[T], index: usize) {
    if let Some(entry) = table.get(index) {
        prefetch(entry);
    }
}
