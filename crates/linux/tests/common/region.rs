//! A private anonymous mapping for tests that look at this process's own memory.

use tierkit_core::PAGE_SIZE;

/// A private anonymous mapping, unmapped on drop.
pub struct Region {
    /// Its start.
    pub addr: *mut u8,
    len: usize,
}

impl Region {
    /// `len` bytes, not touched yet.
    pub fn new(len: usize) -> Self {
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
        Self { addr: addr as *mut u8, len }
    }

    /// Its first page number.
    pub fn page(&self) -> u64 {
        self.addr as u64 / PAGE_SIZE
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value made.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}
