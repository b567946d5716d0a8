//! `/proc/PID/maps` parsing on fixture text, and pagemap reads on this process.

use std::ffi::CString;
use std::path::Path;

use tierkit_core::{PageKind, PAGE_SIZE};
#[path = "common/region.rs"]
mod region;
use region::Region;
use tierkit_linux::memory::procfs::{parse_maps, read_maps, MappingKind, Pagemap, ProcError};

const MAPS: &str = "\
55d0c3a00000-55d0c3a02000 r--p 00000000 08:01 1835052                    /usr/bin/sleep
55d0c3a02000-55d0c3a06000 r-xp 00002000 08:01 1835052                    /usr/bin/sleep
55d0c4c1e000-55d0c4c3f000 rw-p 00000000 00:00 0                          [heap]
7f1e2c000000-7f1e2c021000 rw-p 00000000 00:00 0 
7f1e2c021000-7f1e30000000 ---p 00000000 00:00 0 
7f1e30000000-7f1e30200000 rw-p 00000000 00:00 0                          [anon:jemalloc]
7f1e30200000-7f1e30400000 rw-s 00000000 00:01 1025                       /memfd:arena (deleted)
7f1e30400000-7f1e30500000 rw-s 00000000 00:1a 77                         /dev/shm/pool
7f1e30500000-7f1e30600000 rw-s 00000000 00:01 32768                      /SYSV0000162e (deleted)
7f1e30600000-7f1e30700000 rw-s 00000000 00:01 4099                       /dev/zero (deleted)
7f1e30700000-7f1e30800000 rw-s 00000000 00:01 4100                       [anon_shmem:ring]
7f1e30800000-7f1e30900000 rw-s 10000000 00:05 488                        /dev/dri/card0
7f1e30900000-7f1e30901000 rw-p 00000000 00:0f 1063                       anon_inode:[io_uring]
7f1e30901000-7f1e30902000 r--p 00000000 08:01 42                         /data/my file.bin (deleted)
7ffd5e8b1000-7ffd5e8d2000 rw-p 00000000 00:00 0                          [stack]
7ffd5e9a0000-7ffd5e9a4000 r--p 00000000 00:00 0                          [vvar]
7ffd5e9a4000-7ffd5e9a6000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

#[test]
fn every_kind_of_mapping_is_classified() {
    let maps = parse_maps(MAPS).unwrap();
    let kinds: Vec<_> = maps.iter().map(|m| m.kind).collect();
    use MappingKind::*;
    assert_eq!(
        kinds,
        [
            File, File, Heap, Anon, Anon, Anon, Shmem, Shmem, Shmem, Shmem, Shmem, Special, Special, File, Stack, Vvar,
            Vdso, Vsyscall
        ]
    );
    let bin = &maps[1];
    assert_eq!(
        (bin.start, bin.end, bin.offset, bin.dev, bin.inode),
        (0x55d0c3a02000, 0x55d0c3a06000, 0x2000, (8, 1), 1835052)
    );
    assert!(bin.perms.read && bin.perms.exec && !bin.perms.write && !bin.perms.shared);
    assert_eq!(bin.pages(), 0x55d0c3a02..0x55d0c3a06);
    assert_eq!(maps[3].path, "", "plain anonymous memory has no path");
    assert_eq!(maps[13].path, "/data/my file.bin (deleted)", "paths keep their spaces");
    // Guard areas, kernel pages and device memory are never tiered.
    let tierable: Vec<bool> = maps.iter().map(|m| m.tierable()).collect();
    assert_eq!(
        tierable,
        [
            true, true, true, true, false, true, true, true, true, true, true, false, false, true, true, false, false,
            false
        ]
    );
    assert_eq!(maps[6].page_kind(), PageKind::Tmpfs);
    assert_eq!(maps[0].page_kind(), PageKind::File);
    assert_eq!(maps[14].page_kind(), PageKind::Anon);
    assert_eq!(maps[17].start, 0xffffffffff600000);
}

#[test]
fn bad_lines_are_named_and_fixture_roots_work() {
    let (line, what) = parse_maps("0-1000 rw-p 0 00:00 0\nzzz rw-p 0 00:00 0").unwrap_err();
    assert_eq!(line, 2);
    assert!(what.contains("invalid digit") && what.contains("start-end perms"), "{what}");
    assert_eq!(parse_maps("2000-1000 rw-p 0 00:00 0").unwrap_err().1, "end address below start address");
    assert_eq!(parse_maps("1000-2000 rw 0 00:00 0").unwrap_err().1, "permissions are not 4 characters like rw-p");
    assert!(parse_maps("1000-2000 rw-p 0 00:00").unwrap_err().1.starts_with("too few fields"));
    let root = std::env::temp_dir().join(format!("tierkit-procfs-{}", std::process::id()));
    std::fs::create_dir_all(root.join("proc/4242")).unwrap();
    std::fs::write(root.join("proc/4242/maps"), MAPS).unwrap();
    assert_eq!(read_maps(&root, 4242).unwrap().len(), 18);
    std::fs::write(root.join("proc/4242/maps"), "1000-2000 rw-p 0 00:00 x\n").unwrap();
    let e = read_maps(&root, 4242).unwrap_err();
    assert!(matches!(&e, ProcError::Parse { line: 1, what, .. } if what.contains("inode")), "{e}");
    assert!(e.to_string().contains("proc/4242/maps line 1"), "{e}");
    assert!(matches!(read_maps(&root, 4343), Err(ProcError::Gone { pid: 4343, .. })));
    std::fs::remove_dir_all(&root).unwrap();
}

#[test]
fn own_maps_and_pagemap_show_touched_and_untouched_pages() {
    let pid = std::process::id();
    let maps = read_maps(Path::new("/"), pid).unwrap();
    assert!(maps.iter().any(|m| m.kind == MappingKind::Stack));
    assert!(maps.iter().any(|m| m.kind == MappingKind::Vdso && !m.tierable()));
    let len = 16 * PAGE_SIZE as usize;
    let region = Region::new(len);
    let addr = region.addr;
    for i in (0..len).step_by(2 * PAGE_SIZE as usize) {
        // SAFETY: inside the mapping made above.
        unsafe { addr.add(i).write(1) };
    }
    let first = region.page();
    let mut pagemap = Pagemap::open(Path::new("/"), pid).unwrap();
    let mut entries = Vec::new();
    pagemap.read(first, 16, &mut entries).unwrap();
    let present: Vec<bool> = entries.iter().map(|e| e.present()).collect();
    assert_eq!(present, (0..16).map(|i| i % 2 == 0).collect::<Vec<_>>());
    assert!(entries[0].exclusive() && !entries[0].file_shared());
    let root = unsafe { libc::geteuid() } == 0;
    assert_eq!(entries[0].pfn().is_some(), root, "PFNs are shown to root only");
}

#[test]
fn sysv_paths_round_trip_and_odd_sysv_file_names_do_not_panic() {
    let maps = parse_maps(
        "7f1e30500000-7f1e30600000 rw-s 00000000 00:01 32768                      /SYSV0000162e (deleted)\n\
         7f1e30600000-7f1e30601000 r--p 00000000 08:01 99                         /SYSVx\n\
         7f1e30601000-7f1e30602000 r--p 00000000 08:01 98                         /SYSV\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\n",
    )
    .unwrap();
    assert_eq!(maps[0].path, "/SYSV0000162e (deleted)");
    assert_eq!(maps[0].kind, MappingKind::Shmem);
    assert_eq!((maps[1].path.as_str(), maps[1].inode), ("/SYSVx", 99));
    assert_eq!(maps[2].path, "/SYSV\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}");
}

/// Mappings this process makes are found through the procfs-core path with their
/// permissions, kinds and names, and their touched pages are present.
#[test]
fn own_mappings_have_their_permissions_kinds_and_present_pages() {
    let pid = std::process::id();
    let len = 8 * PAGE_SIZE as usize;
    let name = CString::new("tierkit-procfs-test").unwrap();
    // SAFETY: memfd_create with a valid C string; the descriptor is closed below.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), 0) };
    assert!(fd >= 0);
    // SAFETY: resizing the memfd made above.
    assert_eq!(unsafe { libc::ftruncate(fd, len as libc::off_t) }, 0);
    // SAFETY: fresh mappings used only in this test and unmapped at its end.
    let (shared, readonly) = unsafe {
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let shared = libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0);
        let private = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        let readonly = libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, private, -1, 0);
        (shared, readonly)
    };
    assert!(shared != libc::MAP_FAILED && readonly != libc::MAP_FAILED);
    for i in (0..len).step_by(PAGE_SIZE as usize).take(3) {
        // SAFETY: inside the shared mapping made above.
        unsafe { (shared as *mut u8).add(i).write(7) };
    }
    let maps = read_maps(Path::new("/"), pid).unwrap();
    let find = |addr: *mut libc::c_void| maps.iter().find(|m| (m.start..m.end).contains(&(addr as u64)));
    let memfd = find(shared).expect("the memfd mapping is listed");
    assert_eq!(memfd.kind, MappingKind::Shmem);
    assert_eq!(memfd.page_kind(), PageKind::Tmpfs);
    assert!(memfd.path.starts_with("/memfd:tierkit-procfs-test"), "{}", memfd.path);
    assert!(memfd.perms.read && memfd.perms.write && memfd.perms.shared && !memfd.perms.exec);
    assert!(memfd.tierable());
    let ro = find(readonly).expect("the read-only mapping is listed");
    assert!(ro.perms.read && !ro.perms.write && !ro.perms.shared, "{ro:?}");
    assert_eq!(ro.kind, MappingKind::Anon);
    let mut pagemap = Pagemap::open(Path::new("/"), pid).unwrap();
    let mut entries = Vec::new();
    pagemap.read(shared as u64 / PAGE_SIZE, 8, &mut entries).unwrap();
    let present: Vec<bool> = entries.iter().map(|e| e.present()).collect();
    assert_eq!(present, [true, true, true, false, false, false, false, false]);
    assert!(entries[0].file_shared(), "shared memory pages are file/shared pages");
    assert!(entries.iter().all(|e| !e.swapped()));
    // SAFETY: unmapping and closing what was made above; nothing refers to it any more.
    unsafe {
        libc::munmap(shared, len);
        libc::munmap(readonly, len);
        libc::close(fd);
    }
}
