//! Raw system calls that libc does not wrap: `move_pages(2)`.
//!
//! Everything here is a thin, checked wrapper: lengths are validated before the kernel
//! sees a pointer, and failures come back as an [`Errno`].

use std::fmt;

/// `move_pages(2)` flag: move only pages mapped by this process alone (`MPOL_MF_MOVE`
/// in `<linux/mempolicy.h>`). Pages shared with other processes come back `-EACCES`.
pub const MPOL_MF_MOVE: i32 = 1 << 1;

/// An `errno` value from a failed system call (positive, e.g. `libc::ENOMEM`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Errno(pub i32);

impl Errno {
    /// The calling thread's current `errno`.
    pub fn last() -> Self {
        Self(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO))
    }

    /// The symbolic name (`"ENOMEM"`), or `"errno"` for a value outside
    /// [`errno_symbol`]'s table; stable, for reports and metric labels.
    pub fn name(self) -> &'static str {
        errno_symbol(self.0).unwrap_or("errno")
    }
}

/// The symbolic name of the errnos tierkit meets (moving pages, perf, sysfs, procfs).
pub fn errno_symbol(errno: i32) -> Option<&'static str> {
    Some(match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOSPC => "ENOSPC",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::ENODATA => "ENODATA",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::EHWPOISON => "EHWPOISON",
        _ => return None,
    })
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), std::io::Error::from_raw_os_error(self.0))
    }
}

impl std::error::Error for Errno {}

/// `move_pages(2)` on process `pid` (0 = the caller).
///
/// `pages` holds virtual addresses. With `nodes = None` nothing moves and `status[i]`
/// receives the node of `pages[i]` (or a negative errno); with `Some(nodes)` page `i` is
/// moved to `nodes[i]` and `status[i]` receives its node afterwards or a negative errno.
/// Returns the number of pages the kernel reports as not migrated (non-zero only for
/// transient failures on kernels that report them this way; their `status` may still
/// name the destination). `EINVAL` without a call when the slices differ in length.
pub fn move_pages(
    pid: libc::pid_t,
    pages: &[usize],
    nodes: Option<&[i32]>,
    status: &mut [i32],
    flags: i32,
) -> Result<usize, Errno> {
    if status.len() != pages.len() || nodes.is_some_and(|n| n.len() != pages.len()) {
        return Err(Errno(libc::EINVAL));
    }
    if pages.is_empty() {
        return Ok(0);
    }
    let nodes_ptr = nodes.map_or(std::ptr::null(), |n| n.as_ptr());
    // SAFETY: `pages`, `nodes` (when given) and `status` are live slices of exactly
    // `pages.len()` elements; the kernel reads the first two and writes only `status`.
    // `usize` has the layout of `void *` on every Linux target.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            pid,
            pages.len() as libc::c_ulong,
            pages.as_ptr(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    if rc < 0 {
        Err(Errno::last())
    } else {
        Ok(rc as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatched_lengths_never_reach_the_kernel() {
        let mut status = [0; 1];
        assert_eq!(move_pages(0, &[0x1000, 0x2000], None, &mut status, 0), Err(Errno(libc::EINVAL)));
        let mut status = [0; 2];
        assert_eq!(move_pages(0, &[0x1000, 0x2000], Some(&[0]), &mut status, 0), Err(Errno(libc::EINVAL)));
        assert_eq!(move_pages(0, &[], None, &mut [], 0), Ok(0));
    }

    #[test]
    fn querying_an_own_page_names_a_node() {
        let word = Box::new(7u64);
        let addr = (&*word as *const u64 as usize) & !4095;
        let mut status = [-1];
        move_pages(0, &[addr], None, &mut status, 0).unwrap();
        assert!(status[0] >= 0, "a touched heap page lives on some node: {status:?}");
        assert_eq!(Errno(libc::ENOMEM).to_string().split(' ').next(), Some("ENOMEM"));
    }
}
