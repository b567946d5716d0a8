//! A cache prefetch hint for per-page tables read at random: the engine starts loading
//! the entries of the accesses a few ahead of the one it works on, so their misses
//! overlap.

/// Hints the CPU to start loading `table[index]` (no effect on correctness; nothing for
/// an index out of range, or off x86-64).
#[inline(always)]
pub(crate) fn prefetch_at<T>(table: &[T], index: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(entry) = table.get(index) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: a prefetch is only a hint and never faults; the address is valid.
        unsafe { _mm_prefetch::<_MM_HINT_T0>((entry as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (table, index);
}
