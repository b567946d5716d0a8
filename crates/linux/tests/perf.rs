//! The perf sampling source: the record parser on synthetic rings, sysfs planning on
//! fixture trees, and real software page-fault sampling of child processes and of this
//! test process (perf events on one's own processes are allowed at
//! `perf_event_paranoid` 2).

use std::collections::HashSet;
use std::path::PathBuf;

use tierkit_core::{Event, TierId};
use tierkit_linux::source::perf::{
    detect, parse_terms, plan, sample, samples_to_events, FormatField, PerfConfig, PerfError, PerfKind, PerfSource,
    PerfStats, RawSample, RecordParser, SampleFormat, Scope, PERF_RECORD_LOST, PERF_RECORD_LOST_SAMPLES,
    PERF_RECORD_SAMPLE, PERF_RECORD_THROTTLE, PERF_RECORD_UNTHROTTLE, SAMPLE_TYPE,
};

// ---------------------------------------------------------------- synthetic records

fn header(kind: u32, size: usize) -> Vec<u8> {
    let mut r = kind.to_ne_bytes().to_vec();
    r.extend_from_slice(&0u16.to_ne_bytes());
    r.extend_from_slice(&(size as u16).to_ne_bytes());
    r
}

/// A `PERF_RECORD_SAMPLE` in the full tierkit format (IP, TID, TIME, ADDR, WEIGHT, DATA_SRC).
fn sample_record(s: &RawSample) -> Vec<u8> {
    let mut r = header(PERF_RECORD_SAMPLE, 56);
    r.extend_from_slice(&s.ip.to_ne_bytes());
    r.extend_from_slice(&s.pid.to_ne_bytes());
    r.extend_from_slice(&s.tid.to_ne_bytes());
    for v in [s.time, s.addr, s.weight, s.data_src] {
        r.extend_from_slice(&v.to_ne_bytes());
    }
    r
}

fn lost_record(lost: u64) -> Vec<u8> {
    let mut r = header(PERF_RECORD_LOST, 24);
    r.extend_from_slice(&7u64.to_ne_bytes()); // id
    r.extend_from_slice(&lost.to_ne_bytes());
    r
}

fn throttle_record(kind: u32) -> Vec<u8> {
    let mut r = header(kind, 32);
    for v in [123u64, 7, 7] {
        r.extend_from_slice(&v.to_ne_bytes());
    }
    r
}

fn nth_sample(i: u64) -> RawSample {
    RawSample {
        ip: 0x40_0000 + i,
        pid: 1000,
        tid: 1000 + (i % 3) as u32,
        time: 1_000_000 + i,
        addr: 0x7f00_0000_0000 + i * 4096 + 64 * (i % 64),
        weight: i * 10,
        data_src: if i.is_multiple_of(2) { 0x02 } else { 0x04 },
    }
}

/// Writes `stream` into a ring of `size` bytes starting at free-running offset `tail`.
fn ring_with(stream: &[u8], size: usize, tail: u64) -> Vec<u8> {
    let mut ring = vec![0xeeu8; size];
    for (i, b) in stream.iter().enumerate() {
        ring[(tail as usize + i) % size] = *b;
    }
    ring
}

fn full_parser() -> RecordParser {
    RecordParser::new(SampleFormat::new(SAMPLE_TYPE).unwrap(), None)
}

#[test]
fn records_straddling_the_wrap_point_are_reassembled_at_every_offset() {
    let samples: Vec<RawSample> = (0..5).map(nth_sample).collect();
    let stream: Vec<u8> = samples.iter().flat_map(sample_record).collect();
    let size = 512;
    // Every byte offset of the wrap point within the stream, including inside headers.
    for start in 0..size as u64 {
        let tail = 3 * size as u64 + start;
        let ring = ring_with(&stream, size, tail);
        let (mut out, mut stats) = (Vec::new(), PerfStats::default());
        full_parser().parse_ring(&ring, tail, tail + stream.len() as u64, &mut out, &mut stats);
        assert_eq!(out, samples, "tail offset {start}");
        assert_eq!(stats.samples, 5);
        assert_eq!(stats.corrupt, 0);
        let wraps_inside_a_record =
            (size - start as usize) < stream.len() && !(size - start as usize).is_multiple_of(56);
        assert_eq!(stats.straddled, u64::from(wraps_inside_a_record), "tail offset {start}");
    }
}

#[test]
fn lost_throttle_and_unknown_records_are_counted_and_skipped() {
    let mut stream = sample_record(&nth_sample(1));
    stream.extend(lost_record(17));
    stream.extend(throttle_record(PERF_RECORD_THROTTLE));
    stream.extend(header(3, 16)); // PERF_RECORD_COMM-sized unknown record
    stream.extend([0u8; 8]);
    stream.extend(throttle_record(PERF_RECORD_UNTHROTTLE));
    let mut lost_samples = header(PERF_RECORD_LOST_SAMPLES, 16);
    lost_samples.extend(5u64.to_ne_bytes());
    stream.extend(lost_samples);
    stream.extend(sample_record(&nth_sample(2)));
    let ring = ring_with(&stream, 256, 200);
    let (mut out, mut stats) = (Vec::new(), PerfStats::default());
    full_parser().parse_ring(&ring, 200, 200 + stream.len() as u64, &mut out, &mut stats);
    assert_eq!(out, vec![nth_sample(1), nth_sample(2)]);
    let expected = PerfStats {
        samples: 2,
        lost: 22,
        throttled: 1,
        unthrottled: 1,
        other: 1,
        straddled: stats.straddled,
        ..PerfStats::default()
    };
    assert_eq!(stats, expected);
}

#[test]
fn formats_without_some_fields_shift_the_rest() {
    let format = SampleFormat::new(sample::TID | sample::ADDR).unwrap();
    let mut r = header(PERF_RECORD_SAMPLE, 24);
    r.extend(42u32.to_ne_bytes());
    r.extend(43u32.to_ne_bytes());
    r.extend(0xdead_b000u64.to_ne_bytes());
    let (mut out, mut stats) = (Vec::new(), PerfStats::default());
    RecordParser::new(format, None).parse_split(&r[..10], &r[10..], &mut out, &mut stats);
    assert_eq!(out, vec![RawSample { pid: 42, tid: 43, addr: 0xdead_b000, ..RawSample::default() }]);
    assert_eq!(stats.straddled, 1);
}

#[test]
fn corrupt_headers_and_counters_stop_the_parse_without_panicking() {
    let good = sample_record(&nth_sample(0));
    for bad_size in [0u16, 4, 1000] {
        let mut stream = good.clone();
        let mut bad = header(PERF_RECORD_SAMPLE, 0);
        bad[6..8].copy_from_slice(&bad_size.to_ne_bytes());
        stream.extend(bad);
        stream.extend(good.clone());
        let (mut out, mut stats) = (Vec::new(), PerfStats::default());
        full_parser().parse_split(&stream, &[], &mut out, &mut stats);
        assert_eq!(out.len(), 1, "size {bad_size}");
        assert_eq!(stats.corrupt, 1, "size {bad_size}");
    }
    // A sample record shorter than its format: counted corrupt, parsing goes on.
    let mut stream = header(PERF_RECORD_SAMPLE, 16);
    stream.extend([0u8; 8]);
    stream.extend(good.clone());
    let (mut out, mut stats) = (Vec::new(), PerfStats::default());
    full_parser().parse_split(&stream, &[], &mut out, &mut stats);
    assert_eq!((out.len(), stats.corrupt), (1, 1));
    // Impossible counters: head behind tail, more than the ring, odd ring size.
    let ring = ring_with(&good, 256, 0);
    for (ring_len, tail, head) in [(256, 100, 50), (256, 0, 257), (200, 0, 56)] {
        let (mut out, mut stats) = (Vec::new(), PerfStats::default());
        full_parser().parse_ring(&ring[..ring_len], tail, head, &mut out, &mut stats);
        assert!(out.is_empty());
        assert_eq!(stats.corrupt, 1);
    }
    // A trailing fragment shorter than a header.
    let (mut out, mut stats) = (Vec::new(), PerfStats::default());
    full_parser().parse_split(&good, &[9, 0, 0], &mut out, &mut stats);
    assert_eq!((out.len(), stats.corrupt), (1, 1));
}

#[test]
fn the_pid_filter_drops_other_processes_samples() {
    let mut stream = sample_record(&nth_sample(0));
    stream.extend(sample_record(&RawSample { pid: 77, ..nth_sample(1) }));
    let (mut out, mut stats) = (Vec::new(), PerfStats::default());
    RecordParser::new(SampleFormat::new(SAMPLE_TYPE).unwrap(), Some(1000)).parse_split(
        &stream,
        &[],
        &mut out,
        &mut stats,
    );
    assert_eq!(out, vec![nth_sample(0)]);
    assert_eq!((stats.samples, stats.foreign), (1, 1));
}

#[test]
fn samples_become_policy_events_on_known_pages() {
    let base = 0x7f12_3450_0000u64;
    let samples = [
        RawSample { addr: base + 0x1c0, time: 5_000, data_src: 0x04, ..RawSample::default() },
        RawSample { addr: base + 4096 + 64, time: 6_000, data_src: 0x02, ..RawSample::default() },
        RawSample { addr: base + 2 * 4096, time: 7_000, ..RawSample::default() }, // unknown page
        RawSample { addr: 0, time: 8_000, ..RawSample::default() },               // no address
        RawSample { addr: 0xffff_8880_0000_1000, ..RawSample::default() },        // kernel address
    ];
    let mut out = vec![];
    let tier_of = |page| match page - (base >> 12) {
        0 => Some(TierId(0)),
        1 => Some(TierId(1)),
        _ => None,
    };
    assert_eq!(samples_to_events(&samples, 1_000, tier_of, &mut out), 2);
    assert_eq!(
        out,
        vec![
            Event::Sample {
                page: base >> 12,
                tier: TierId(0),
                word: Some(7),
                write: true,
                time: 4_000,
                stall_ns: None
            },
            Event::Sample {
                page: (base >> 12) + 1,
                tier: TierId(1),
                word: Some(1),
                write: false,
                time: 5_000,
                stall_ns: None
            },
        ]
    );
}

// ---------------------------------------------------------------- sysfs fixtures

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/perf").join(name)
}

fn cfg_at(name: &str) -> PerfConfig {
    PerfConfig { root: fixture(name), ..PerfConfig::default() }
}

#[test]
fn sysfs_event_strings_and_formats_encode_to_config_words() {
    let terms = parse_terms("event=0xcd,umask=0x1,ldlat=3").unwrap();
    let dir = fixture("intel/sys/bus/event_source/devices/cpu");
    assert_eq!(tierkit_linux::source::perf::encode(&dir, &terms).unwrap(), [0x1cd, 3, 0, 0]);
    let field = FormatField::parse(&std::fs::read_to_string(dir.join("format/ldlat")).unwrap()).unwrap();
    assert_eq!(field, FormatField { word: 1, ranges: vec![(0, 15)] });
    let amd = fixture("amd/sys/bus/event_source/devices/cpu");
    let split = parse_terms("event=0x1ab,umask=0x2").unwrap();
    assert_eq!(tierkit_linux::source::perf::encode(&amd, &split).unwrap()[0], 0xab | 0x200 | (0x1 << 32));
}

#[test]
fn pebs_is_planned_from_mem_loads() {
    let spec = plan(PerfKind::Pebs, &cfg_at("intel")).unwrap();
    assert_eq!((spec.pmu.as_str(), spec.pmu_type, spec.config), ("cpu", 4, [0x1cd, 3, 0, 0]));
    assert_eq!(spec.aux_leader, None);
    assert!(spec.exclude_kernel && spec.precise_ip == 3 && spec.scope == Scope::Threads);
    assert_eq!(spec.period, 10_007);

    let tuned = PerfConfig { load_latency: Some(64), period: Some(2003), ..cfg_at("intel") };
    let spec = plan(PerfKind::Pebs, &tuned).unwrap();
    assert_eq!((spec.config[1], spec.period), (64, 2003));
    assert!(spec.to_string().contains("config1 0x40"), "{spec}");

    let spr = plan(PerfKind::Pebs, &cfg_at("spr")).unwrap();
    assert_eq!(spr.aux_leader, Some([0x8203, 0, 0, 0]));

    let hybrid = plan(PerfKind::Pebs, &cfg_at("hybrid")).unwrap();
    assert_eq!((hybrid.pmu.as_str(), hybrid.config[0]), ("cpu_core", 0x1cd));
}

#[test]
fn pebs_reasons_name_what_is_missing() {
    let amd = plan(PerfKind::Pebs, &cfg_at("amd")).unwrap_err();
    assert!(amd.reason.contains("no mem-loads event") && amd.reason.contains("cpu/events/mem-loads"), "{amd}");
    let vm = plan(PerfKind::Pebs, &cfg_at("vm")).unwrap_err();
    assert!(vm.to_string().starts_with("Intel PEBS load latency not available here because there is no core PMU"));
    let broken = plan(PerfKind::Pebs, &cfg_at("broken")).unwrap_err();
    assert!(broken.reason.contains("format/ldlat"), "{broken}");
}

#[test]
fn ibs_is_planned_from_ibs_op_formats() {
    let spec = plan(PerfKind::Ibs, &PerfConfig { period: Some(1000), ..cfg_at("amd") }).unwrap();
    assert_eq!((spec.pmu_type, spec.config), (11, [1 << 19, 0, 1, 0]));
    assert!(spec.exclude_kernel && !spec.exclude_hv, "swfilt lets IBS drop kernel samples");
    assert_eq!((spec.period, spec.precise_ip, spec.scope), (1008, 0, Scope::Auto));

    let old = plan(PerfKind::Ibs, &cfg_at("amd-old")).unwrap();
    assert_eq!((old.pmu_type, old.config, old.exclude_kernel), (9, [1 << 19, 0, 0, 0], false));
    assert_eq!(old.period, 65_536);

    let none = plan(PerfKind::Ibs, &cfg_at("intel")).unwrap_err();
    assert!(none.reason.contains("no ibs_op PMU") && none.reason.contains("ibs_op/type"), "{none}");
}

#[test]
fn detection_in_a_locked_down_vm_lists_a_reason_per_kind() {
    let err = detect(std::process::id() as i32, &cfg_at("vm")).unwrap_err();
    let PerfError::Unavailable(reasons) = &err else { panic!("{err}") };
    let kinds: Vec<PerfKind> = reasons.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [PerfKind::Pebs, PerfKind::Ibs, PerfKind::PageFaults]);
    assert!(reasons[2].reason.contains("perf_event_paranoid is 3"), "{err}");
    assert!(reasons[2].reason.contains("CAP_PERFMON"), "{err}");
}

// ---------------------------------------------------------------- live: this host

const PAGE: usize = 4096;
/// Where in each page the children write: word 2.
const OFFSET: u64 = 128;

/// A fresh anonymous region, never touched, without huge pages.
struct Region {
    base: *mut u8,
    pages: usize,
}

impl Region {
    fn new(pages: usize) -> Region {
        // SAFETY: a new private anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                pages * PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the range was just mapped.
        unsafe { libc::madvise(base, pages * PAGE, libc::MADV_NOHUGEPAGE) };
        Region { base: base.cast(), pages }
    }

    fn page_of(&self, addr: u64) -> Option<usize> {
        let start = self.base as u64;
        (addr >= start && addr < start + (self.pages * PAGE) as u64).then(|| ((addr - start) as usize) / PAGE)
    }

    /// Writes one byte at `OFFSET` in pages `from..to`.
    fn touch(&self, from: usize, to: usize) {
        for i in from..to {
            // SAFETY: `i < pages`, inside the mapping.
            unsafe { self.base.add(i * PAGE + OFFSET as usize).write_volatile(1) };
        }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`.
        unsafe { libc::munmap(self.base.cast(), self.pages * PAGE) };
    }
}

/// A forked child that touches a region's pages in batches, one batch per `1` byte the
/// parent sends, answering each with a byte; it exits on a `0` byte or end of input.
/// (Not on end of input alone: children forked by concurrent tests inherit copies of
/// each other's pipe ends, so end of input may never come.)
struct Toucher {
    pid: i32,
    go: libc::c_int,
    done: libc::c_int,
}

impl Toucher {
    fn spawn(region: &Region, batch: usize) -> Toucher {
        let (mut go, mut done) = ([0; 2], [0; 2]);
        // SAFETY: plain pipe creation into local arrays.
        unsafe {
            assert_eq!(libc::pipe(go.as_mut_ptr()), 0);
            assert_eq!(libc::pipe(done.as_mut_ptr()), 0);
        }
        // SAFETY: the child runs only async-signal-safe code (read, write, stores into
        // the inherited mapping, _exit) and never returns into the test harness.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let mut next = 0;
            let mut byte = 0u8;
            loop {
                // SAFETY: reads one byte into a local.
                if unsafe { libc::read(go[0], (&mut byte as *mut u8).cast(), 1) } != 1 || byte == 0 {
                    // SAFETY: ends the child without running the parent's destructors.
                    unsafe { libc::_exit(0) };
                }
                let end = (next + batch).min(region.pages);
                region.touch(next, end);
                next = end;
                // SAFETY: writes one byte from a local.
                unsafe { libc::write(done[1], (&byte as *const u8).cast(), 1) };
            }
        }
        // SAFETY: closing the child's ends in the parent.
        unsafe {
            libc::close(go[0]);
            libc::close(done[1]);
        }
        Toucher { pid, go: go[1], done: done[0] }
    }

    /// Lets the child touch one batch and waits until it has.
    fn batch(&self) {
        let mut byte = 1u8;
        // SAFETY: one-byte reads and writes on our pipe ends.
        unsafe {
            assert_eq!(libc::write(self.go, (&byte as *const u8).cast(), 1), 1);
            assert_eq!(libc::read(self.done, (&mut byte as *mut u8).cast(), 1), 1);
        }
    }
}

impl Drop for Toucher {
    fn drop(&mut self) {
        let quit = 0u8;
        // SAFETY: a one-byte write on our pipe end tells the child to exit; then close
        // our ends and reap it.
        unsafe {
            libc::write(self.go, (&quit as *const u8).cast(), 1);
            libc::close(self.go);
            libc::close(self.done);
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

fn page_faults(ring_pages: usize, scope: Scope) -> PerfConfig {
    PerfConfig { kind: PerfKind::PageFaults, period: Some(1), ring_pages, scope, ..PerfConfig::default() }
}

/// Samples inside `region`: all at the offset the child writes, one per page at most.
fn in_region(region: &Region, samples: &[RawSample]) -> usize {
    let mut pages = HashSet::new();
    for s in samples.iter() {
        if let Some(page) = region.page_of(s.addr) {
            assert_eq!(s.addr & 4095, OFFSET, "sample {s:?} is not where the child wrote");
            assert_eq!(s.word(), 2);
            assert!(pages.insert(page), "page {page} reported twice: {s:?}");
        }
    }
    pages.len()
}

#[test]
fn page_fault_samples_carry_the_addresses_a_child_touched() {
    const N: usize = 512;
    let region = Region::new(N);
    let child = Toucher::spawn(&region, N);
    let t0 = tierkit_linux::source::perf::monotonic_ns();
    let mut source = PerfSource::open(child.pid, page_faults(64, Scope::Auto)).unwrap();
    assert_eq!(source.spec().kind, PerfKind::PageFaults);
    assert_eq!(source.spec().scope, Scope::Threads);
    assert_eq!(source.streams(), 1, "the child has one thread");
    child.batch();
    let mut out = Vec::new();
    source.poll(&mut out);
    let seen = in_region(&region, &out);
    assert!(seen >= N / 2, "only {seen} of {N} faults sampled; stats {:?}", source.stats());
    assert!(out.iter().all(|s| s.pid == child.pid as u32 && s.tid == child.pid as u32));
    assert!(out.iter().all(|s| s.time >= t0), "sample times are CLOCK_MONOTONIC");
    let stats = source.stats();
    assert_eq!((stats.samples, stats.corrupt), (out.len() as u64, 0));
    // The events are user-only: no kernel addresses.
    assert!(out.iter().all(|s| s.addr >> 63 == 0));
    let mut again = Vec::new();
    assert_eq!(source.poll(&mut again), 0, "everything was consumed");
}

#[test]
fn a_tiny_ring_overflows_into_lost_records() {
    const N: usize = 2000;
    let region = Region::new(N + 64);
    let child = Toucher::spawn(&region, N);
    let mut source = PerfSource::open(child.pid, page_faults(1, Scope::Threads)).unwrap();
    child.batch(); // 2000 faults into a 4 KiB ring: about 73 fit.
    let mut out = Vec::new();
    source.poll(&mut out);
    // The kernel reports the loss with the first record it can write afterwards.
    child.batch(); // 64 more faults

    source.poll(&mut out);
    let stats = source.stats();
    assert!(stats.lost > 0, "{stats:?}");
    assert!(stats.samples + stats.lost >= N as u64 / 2, "{stats:?}");
    assert!(stats.samples < N as u64 / 2, "a 4 KiB ring cannot hold {N} samples: {stats:?}");
    assert_eq!(stats.corrupt, 0);
    in_region(&region, &out);
}

#[test]
fn a_tiny_ring_wraps_many_times_without_corrupting_records() {
    const N: usize = 2048;
    const BATCH: usize = 16; // 16 samples of 56 bytes: well under the 4 KiB ring
    let region = Region::new(N);
    let child = Toucher::spawn(&region, BATCH);
    let mut source = PerfSource::open(child.pid, page_faults(1, Scope::Threads)).unwrap();
    let mut out = Vec::new();
    for _ in 0..N / BATCH {
        child.batch();
        source.poll(&mut out);
    }
    let stats = source.stats();
    let seen = in_region(&region, &out);
    assert!(seen >= N / 2, "{seen} of {N}: {stats:?}");
    assert_eq!(stats.corrupt, 0);
    assert!(stats.straddled > 0, "56-byte records in a 4096-byte ring must straddle its end: {stats:?}");
    assert_eq!(stats.lost, 0, "{stats:?}");
}

#[test]
fn per_cpu_events_keep_only_the_target_samples() {
    const N: usize = 256;
    let region = Region::new(N);
    let child = Toucher::spawn(&region, 16);
    let mut source = PerfSource::open(child.pid, page_faults(256, Scope::Cpus)).unwrap();
    assert_eq!(source.spec().scope, Scope::Cpus);
    let cpus = tierkit_linux::source::perf::online_cpus(std::path::Path::new("/")).unwrap();
    assert_eq!(source.streams(), cpus.len());
    assert_eq!(source.refresh_threads().unwrap(), 0, "CPU events cover new threads already");
    let mut out = Vec::new();
    for _ in 0..N / 16 {
        child.batch();
        source.poll(&mut out);
    }
    assert!(out.iter().all(|s| s.pid == child.pid as u32));
    let seen = in_region(&region, &out);
    let stats = source.stats();
    assert!(seen >= N / 2 || stats.lost > 0, "{seen} of {N}: {stats:?}");
    assert!(seen > 0, "{stats:?}");
}

#[test]
fn new_threads_are_picked_up_and_exited_ones_drained() {
    const N: usize = 256;
    let region = Region::new(N);
    let me = std::process::id() as i32;
    let mut source = PerfSource::open(me, page_faults(64, Scope::Threads)).unwrap();
    let before = source.streams();
    assert!(before >= 1);

    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let base = region.base as usize;
    let worker = std::thread::spawn(move || {
        go_rx.recv().unwrap();
        for i in 0..N {
            // SAFETY: the region outlives the thread (joined below) and has N pages.
            unsafe { ((base + i * PAGE + OFFSET as usize) as *mut u8).write_volatile(1) };
        }
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    });
    assert!(source.refresh_threads().unwrap() >= 1, "the worker thread is new");
    go_tx.send(()).unwrap();
    let tid = worker.join().unwrap();
    // The worker has exited: refresh closes its event and keeps its samples.
    let streams = source.streams();
    source.refresh_threads().unwrap();
    assert!(source.streams() < streams, "the exited worker's event is closed");
    let mut out = Vec::new();
    source.poll(&mut out);
    let mine: Vec<RawSample> = out.iter().copied().filter(|s| s.tid == tid as u32).collect();
    let seen = in_region(&region, &mine);
    assert!(seen >= N / 2, "{seen} of {N} from tid {tid}: {:?}", source.stats());
}

#[test]
fn detection_here_gives_reasons_for_missing_pmus() {
    let me = std::process::id() as i32;
    let auto = detect(me, &PerfConfig::default()).unwrap();
    for skipped in &auto.skipped {
        assert!(!skipped.reason.trim().is_empty(), "{skipped:?}");
        assert!(skipped.to_string().contains("not available here because"));
    }
    if auto.spec.kind == PerfKind::PageFaults {
        let kinds: Vec<PerfKind> = auto.skipped.iter().map(|u| u.kind).collect();
        assert_eq!(kinds, [PerfKind::Pebs, PerfKind::Ibs]);
    }
    for kind in [PerfKind::Pebs, PerfKind::Ibs] {
        let cfg = PerfConfig { kind, ..PerfConfig::default() };
        match detect(me, &cfg) {
            Ok(found) => assert_eq!(found.spec.kind, kind),
            Err(PerfError::Unavailable(reasons)) => {
                assert_eq!(reasons.len(), 1);
                assert_eq!(reasons[0].kind, kind);
                assert!(reasons[0].reason.len() > 20, "{:?}", reasons[0]);
            }
            Err(other) => panic!("{kind}: {other}"),
        }
    }
}

#[test]
fn the_source_can_move_to_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<PerfSource>();
}

#[test]
fn bad_configurations_and_gone_targets_are_errors() {
    let bad_ring = PerfSource::open(1, PerfConfig { ring_pages: 3, ..PerfConfig::default() }).unwrap_err();
    assert!(bad_ring.to_string().contains("power of two"), "{bad_ring}");
    let huge = PerfSource::open(1, PerfConfig { ring_pages: 1 << 40, ..PerfConfig::default() }).unwrap_err();
    assert!(matches!(huge, PerfError::Config(_)), "{huge}");
    let bad_period = PerfSource::open(1, PerfConfig { period: Some(0), ..PerfConfig::default() }).unwrap_err();
    assert!(matches!(bad_period, PerfError::Config(_)));
    let gone = PerfSource::open(i32::MAX, page_faults(1, Scope::Threads)).unwrap_err();
    assert!(matches!(gone, PerfError::TargetGone { .. }), "{gone}");
}
