//! `struct perf_event_attr` and the `perf_event_open(2)` system call.
//!
//! The layout follows `include/uapi/linux/perf_event.h` up to `PERF_ATTR_SIZE_VER8`
//! (136 bytes, Linux 6.3). Older kernels accept the larger struct as long as the fields
//! they do not know are zero, which they are unless a caller sets them.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::error::Errno;

/// `PERF_ATTR_SIZE_VER8`: the size of [`PerfEventAttr`] the kernel is told.
pub const PERF_ATTR_SIZE_VER8: u32 = 136;

/// `PERF_TYPE_SOFTWARE`.
pub const PERF_TYPE_SOFTWARE: u32 = 1;

/// `PERF_COUNT_SW_PAGE_FAULTS` (a `PERF_TYPE_SOFTWARE` config).
pub const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;

/// `PERF_FLAG_FD_CLOEXEC`: open the event file descriptor close-on-exec.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `PERF_EVENT_IOC_ENABLE` (`_IO('$', 0)`).
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;

/// `PERF_EVENT_IOC_DISABLE` (`_IO('$', 1)`).
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// `PERF_IOC_FLAG_GROUP`: apply an ioctl to the whole group of the leader.
const PERF_IOC_FLAG_GROUP: libc::c_ulong = 1;

/// Bits of the `perf_event_attr` flag word (the C bitfield starting at `disabled`).
pub mod flag {
    /// `disabled`: the event starts off and is enabled with an ioctl.
    pub const DISABLED: u64 = 1 << 0;
    /// `exclude_kernel`: do not count or sample in kernel mode.
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    /// `exclude_hv`: do not count or sample in the hypervisor.
    pub const EXCLUDE_HV: u64 = 1 << 6;
    /// Shift of the two-bit `precise_ip` field (0 = arbitrary skid .. 3 = zero skid).
    pub const PRECISE_IP_SHIFT: u32 = 15;
    /// `use_clockid`: sample times come from `clockid` rather than the perf clock.
    pub const USE_CLOCKID: u64 = 1 << 25;
}

/// `struct perf_event_attr` (`PERF_ATTR_SIZE_VER8` layout). Unions are represented by
/// the member tierkit uses (`sample_period`, `wakeup_events`, `config1`, `config2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// PMU type: `PERF_TYPE_*` or the number in `/sys/bus/event_source/devices/*/type`.
    pub type_: u32,
    /// Size of this struct, for forward and backward compatibility.
    pub size: u32,
    /// PMU-specific event selector.
    pub config: u64,
    /// Sampling period: one sample every `sample_period` events.
    pub sample_period: u64,
    /// `PERF_SAMPLE_*` bits: which fields each sample record carries.
    pub sample_type: u64,
    /// `PERF_FORMAT_*` bits for `read(2)`.
    pub read_format: u64,
    /// The bitfield word (the bits of this module's `flag`).
    pub flags: u64,
    /// Wake up a poller every this many samples.
    pub wakeup_events: u32,
    /// Breakpoint type (breakpoint events only).
    pub bp_type: u32,
    /// Extension of `config` (Intel: load-latency threshold).
    pub config1: u64,
    /// Second extension of `config` (AMD IBS: software filter).
    pub config2: u64,
    /// `PERF_SAMPLE_BRANCH_*` bits.
    pub branch_sample_type: u64,
    /// User registers dumped with each sample.
    pub sample_regs_user: u64,
    /// Bytes of user stack dumped with each sample.
    pub sample_stack_user: u32,
    /// Clock for sample times when `use_clockid` is set.
    pub clockid: i32,
    /// Registers dumped at the interrupt.
    pub sample_regs_intr: u64,
    /// AUX area wakeup watermark.
    pub aux_watermark: u32,
    /// Maximum call-chain depth.
    pub sample_max_stack: u16,
    /// Reserved, must be zero.
    pub reserved_2: u16,
    /// AUX data bytes copied into each sample.
    pub aux_sample_size: u32,
    /// Reserved, must be zero.
    pub reserved_3: u32,
    /// Data passed to a `SIGTRAP` handler.
    pub sig_data: u64,
    /// Third extension of `config`.
    pub config3: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER8 as usize);

impl PerfEventAttr {
    /// An attribute for PMU `type_` with the four config words, `size` filled in.
    pub fn new(type_: u32, config: [u64; 4]) -> Self {
        Self {
            type_,
            size: PERF_ATTR_SIZE_VER8,
            config: config[0],
            config1: config[1],
            config2: config[2],
            config3: config[3],
            ..Self::default()
        }
    }

    /// Sets the two-bit `precise_ip` field (values above 3 are clamped to 3).
    pub fn set_precise_ip(&mut self, precise: u8) {
        self.flags &= !(3 << flag::PRECISE_IP_SHIFT);
        self.flags |= u64::from(precise.min(3)) << flag::PRECISE_IP_SHIFT;
    }
}

/// `perf_event_open(2)`: opens `attr` for thread `pid` (-1 = every process) on `cpu`
/// (-1 = any CPU), in the group of `group` when given. The descriptor is close-on-exec.
pub fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32, group: Option<&OwnedFd>) -> Result<OwnedFd, Errno> {
    let group_fd = group.map_or(-1, |fd| fd.as_raw_fd());
    // SAFETY: `attr` points at a live, fully initialised `perf_event_attr` whose `size`
    // field matches its real size; the kernel only reads it. The other arguments are
    // plain integers.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::c_long,
            cpu as libc::c_long,
            group_fd as libc::c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if ret < 0 {
        return Err(Errno::last());
    }
    // SAFETY: a non-negative return is a new file descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ret as libc::c_int) })
}

/// Enables the event (and, for a group leader, its whole group).
pub fn enable(fd: &OwnedFd) -> Result<(), Errno> {
    ioctl(fd, PERF_EVENT_IOC_ENABLE)
}

/// Disables the event (and, for a group leader, its whole group).
pub fn disable(fd: &OwnedFd) -> Result<(), Errno> {
    ioctl(fd, PERF_EVENT_IOC_DISABLE)
}

fn ioctl(fd: &OwnedFd, request: libc::c_ulong) -> Result<(), Errno> {
    // SAFETY: `fd` is an open perf event descriptor; the enable/disable ioctls take an
    // integer flag argument and touch no user memory.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, PERF_IOC_FLAG_GROUP) };
    if ret < 0 {
        Err(Errno::last())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offset_of<T>(base: &PerfEventAttr, field: &T) -> usize {
        field as *const T as usize - base as *const PerfEventAttr as usize
    }

    #[test]
    fn fields_sit_at_the_uapi_offsets() {
        let a = PerfEventAttr::default();
        assert_eq!(offset_of(&a, &a.config), 8);
        assert_eq!(offset_of(&a, &a.sample_type), 24);
        assert_eq!(offset_of(&a, &a.flags), 40);
        assert_eq!(offset_of(&a, &a.wakeup_events), 48);
        assert_eq!(offset_of(&a, &a.config1), 56);
        assert_eq!(offset_of(&a, &a.config2), 64);
        assert_eq!(offset_of(&a, &a.clockid), 92);
        assert_eq!(offset_of(&a, &a.aux_sample_size), 112);
        assert_eq!(offset_of(&a, &a.config3), 128);
    }

    #[test]
    fn precise_ip_is_a_two_bit_field() {
        let mut a = PerfEventAttr::new(4, [0; 4]);
        a.flags = flag::DISABLED;
        a.set_precise_ip(2);
        assert_eq!(a.flags, flag::DISABLED | (2 << 15));
        a.set_precise_ip(9);
        assert_eq!((a.flags >> 15) & 3, 3);
        a.set_precise_ip(1);
        assert_eq!((a.flags >> 15) & 3, 1);
        assert_eq!(a.size, 136);
    }
}
