//! The metrics endpoint under abuse, over loopback: a thousand idle connections, clients
//! sending one byte a second, floods of header bytes, and oversized, binary, malformed
//! and `POST` requests. Meanwhile scrapes of `/metrics` are answered within
//! [`SCRAPE_BOUND`], every bad request gets its error status and is closed, the server
//! keeps at most [`MAX_CONNECTIONS`] connections and drops idle and slow ones after
//! [`CONNECTION_TIMEOUT`], a tick loop updating the registry every 10 ms keeps its pace,
//! and memory stays bounded. Every count and wait is bounded: the test takes seconds, and at most minutes when
//! the server misbehaves.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tierkit_linux::metrics::{Direction, TierkitMetrics};
use tierkit_linux::metrics_server::{MetricsServer, CONNECTION_TIMEOUT, MAX_CONNECTIONS, MAX_DRAIN_BYTES};

/// Idle connections held open (they connect and send nothing).
const IDLE: usize = 1000;
/// Clients sending a valid request one byte a second.
const SLOW: usize = 4;
/// Clients sending an endless header line as fast as they can.
const FLOODS: usize = 3;
/// Most bytes a flood tries to send; the server must cut it off well before.
const FLOOD_BYTES: usize = 64 << 20;
/// Room in the socket buffers of both ends (loopback autotuning allows a few MiB each):
/// a flood may send this much more than the server drains before it is cut off.
const SOCKET_BUFFERS: usize = 16 << 20;
/// A scrape takes milliseconds on loopback; under abuse on a busy machine it must still
/// be answered within this.
const SCRAPE_BOUND: Duration = Duration::from_secs(5);
/// Longest time for one exchange with the server, so that nothing hangs the test.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest time to open the idle connections, or for one flood to run.
const PHASE_TIME: Duration = Duration::from_secs(30);
/// Slack for a busy machine on top of the server's own timeout.
const SLACK: Duration = Duration::from_secs(4);
/// Period of the tick loop standing for the daemon.
const TICK: Duration = Duration::from_millis(10);
/// Longest gap allowed between two ticks: a tick held up by the server would wait for
/// its seconds-long connection timeouts.
const MAX_TICK_GAP: Duration = Duration::from_secs(1);
/// Most the process's resident memory may grow during the test.
const MAX_RSS_GROWTH_KIB: u64 = 64 * 1024;

#[test]
fn metrics_endpoint_keeps_answering_under_abuse_without_delaying_ticks() {
    raise_fd_limit(4096, IDLE + MAX_CONNECTIONS + 256);
    let rss_before = status_kib("VmRSS");
    let metrics = TierkitMetrics::new();
    let server = MetricsServer::start("127.0.0.1:0", metrics.shared()).unwrap();
    let addr = server.local_addr();
    let ticker = Ticker::start(metrics.clone());

    let idle_start = Instant::now();
    let idle: Vec<TcpStream> = (0..IDLE).map(|_| connect(addr, idle_start + PHASE_TIME)).collect();
    let (status, _, took) = exchange(addr, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK", "a scrape past {IDLE} idle connections");
    assert!(took < SCRAPE_BOUND, "a scrape past {IDLE} idle connections took {took:?}");

    let stop = Arc::new(AtomicBool::new(false));
    let scraper = {
        let stop = Arc::clone(&stop);
        thread::spawn(move || scrape_until(addr, &stop))
    };
    let slow: Vec<JoinHandle<Duration>> = (0..SLOW).map(|_| thread::spawn(move || slow_client(addr))).collect();
    let floods: Vec<JoinHandle<(usize, ErrorKind)>> = (0..FLOODS).map(|_| thread::spawn(move || flood(addr))).collect();

    let oversized = format!("GET /metrics HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(64 * 1024));
    let many_headers = format!("GET /metrics HTTP/1.1\r\n{}\r\n", "X-N: 1\r\n".repeat(100));
    let cases: [(&str, &[u8], &str); 7] = [
        ("POST", b"POST /metrics HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello=world", "HTTP/1.1 405 Method Not Allowed"),
        ("unknown path", b"GET /nope HTTP/1.1\r\n\r\n", "HTTP/1.1 404 Not Found"),
        ("oversized head", oversized.as_bytes(), "HTTP/1.1 431 Request Header Fields Too Large"),
        ("too many headers", many_headers.as_bytes(), "HTTP/1.1 431 Request Header Fields Too Large"),
        ("binary", &garbage(4096), "HTTP/1.1 400 Bad Request"),
        ("bad version", b"GET /metrics HTTP/9.9\r\n\r\n", "HTTP/1.1 400 Bad Request"),
        ("bad target", b"GET metrics HTTP/1.1\r\n\r\n", "HTTP/1.1 400 Bad Request"),
    ];
    for (what, request, expected) in cases {
        let (status, headers, took) = exchange(addr, request);
        assert_eq!(status, expected, "{what}");
        assert!(headers.contains("Connection: close"), "{what}: {headers}");
        assert!(took < SCRAPE_BOUND, "{what} took {took:?}");
    }

    // Every idle connection was accepted before the requests above were answered, and
    // each one past the cap closed an older idle one at once.
    let open = wait_for(Duration::from_secs(2), || open_count(&idle) <= MAX_CONNECTIONS, || open_count(&idle));
    assert!(open <= MAX_CONNECTIONS, "{open} idle connections still open, cap {MAX_CONNECTIONS}");

    for client in slow {
        let dropped_after = client.join().unwrap();
        assert!(dropped_after < CONNECTION_TIMEOUT + SLACK, "a slow client was dropped after {dropped_after:?}");
    }
    for client in floods {
        let (sent, error) = client.join().unwrap();
        assert!(sent < MAX_DRAIN_BYTES + SOCKET_BUFFERS, "a flood sent {sent} bytes before being cut off");
        assert!(matches!(error, ErrorKind::BrokenPipe | ErrorKind::ConnectionReset), "a flood ended with {error:?}");
    }
    let rss_peak = status_kib("VmHWM");

    let deadline = (idle_start + CONNECTION_TIMEOUT + SLACK).saturating_duration_since(Instant::now());
    let open = wait_for(deadline, || open_count(&idle) == 0, || open_count(&idle));
    assert_eq!(open, 0, "idle connections left open {:?} after they connected", idle_start.elapsed());

    let (ticks, longest_gap, ran) = ticker.stop();
    assert!(longest_gap < MAX_TICK_GAP, "a tick waited {longest_gap:?}");
    let expected = ran.as_millis() as u64 / TICK.as_millis() as u64;
    assert!(ticks * 4 >= expected, "{ticks} ticks in {ran:?}, {expected} expected");
    stop.store(true, Ordering::SeqCst);
    let (scrapes, slowest) = scraper.join().unwrap();
    assert!(scrapes >= 5, "only {scrapes} scrapes during the abuse");
    assert!(slowest < SCRAPE_BOUND, "the slowest scrape took {slowest:?}");
    let (_, body, _) = exchange_body(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
    let promoted = body.lines().find_map(|l| l.strip_prefix("tierkit_promoted_pages_total "));
    assert_eq!(promoted, Some(ticks.to_string().as_str()), "the registry has every tick");

    let growth = rss_peak.saturating_sub(rss_before);
    assert!(growth < MAX_RSS_GROWTH_KIB, "resident memory grew by {growth} KiB");
    drop(server);
}

/// Sets the soft descriptor limit to at least `want` when the hard limit allows, and
/// checks it is at least `need` (client and server ends both live in this process).
fn raise_fd_limit(want: u64, need: usize) {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit and setrlimit only read or write the struct given.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < want {
            limit.rlim_cur = want.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
    assert!(limit.rlim_cur >= need as u64, "RLIMIT_NOFILE {} is below the {need} this test needs", limit.rlim_cur);
}

/// A field of /proc/self/status, in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix(field)?.strip_prefix(':')).unwrap();
    line.trim().trim_end_matches(" kB").parse().unwrap()
}

/// Sends `request` on a new connection and reads until the server closes it: the
/// status line, the other header lines, and the time taken.
fn exchange(addr: SocketAddr, request: &[u8]) -> (String, String, Duration) {
    let (head, _, took) = exchange_body(addr, request);
    let (status, headers) = head.split_once("\r\n").unwrap_or((&head, ""));
    (status.to_string(), headers.to_string(), took)
}

/// Like [`exchange`], with the head and the body whole. Panics past [`IO_TIMEOUT`].
fn exchange_body(addr: SocketAddr, request: &[u8]) -> (String, String, Duration) {
    let start = Instant::now();
    let deadline = start + IO_TIMEOUT;
    let mut s = connect(addr, deadline);
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(request).unwrap();
    let (mut response, mut buf) = (Vec::new(), [0u8; 4096]);
    loop {
        let left = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero());
        s.set_read_timeout(Some(left.expect("no answer within IO_TIMEOUT"))).unwrap();
        match s.read(&mut buf).unwrap_or_else(|e| panic!("no answer within {IO_TIMEOUT:?}: {e}")) {
            0 => break,
            n => response.extend_from_slice(&buf[..n]),
        }
    }
    let took = start.elapsed();
    let response = String::from_utf8(response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (head.to_string(), body.to_string(), took)
}

/// Connects to `addr`, panicking if that is not done by `deadline`.
fn connect(addr: SocketAddr, deadline: Instant) -> TcpStream {
    let left = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero());
    TcpStream::connect_timeout(&addr, left.expect("connecting took too long")).unwrap()
}

/// Scrapes `/metrics` every 100 ms until `stop`, checking each answer: how many, and the
/// slowest.
fn scrape_until(addr: SocketAddr, stop: &AtomicBool) -> (usize, Duration) {
    let (mut count, mut slowest) = (0, Duration::ZERO);
    while !stop.load(Ordering::SeqCst) {
        let (head, body, took) = exchange_body(addr, b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(body.contains("\ntierkit_promoted_pages_total "), "{body}");
        count += 1;
        slowest = slowest.max(took);
        thread::sleep(Duration::from_millis(100));
    }
    (count, slowest)
}

/// Sends a valid request one byte a second; returns how long after connecting the
/// server closed the connection. Panics if it answered or never closed.
fn slow_client(addr: SocketAddr) -> Duration {
    let start = Instant::now();
    let mut s = connect(addr, start + IO_TIMEOUT);
    s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    for byte in b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n" {
        if s.write_all(&[*byte]).is_err() {
            return start.elapsed();
        }
        // The read's timeout paces the bytes.
        match s.read(&mut [0u8; 64]) {
            Ok(0) => return start.elapsed(),
            Ok(n) => panic!("a slow client got {n} bytes before finishing its request"),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return start.elapsed(),
        }
    }
    panic!("a slow client sent its whole request a byte a second without being dropped");
}

/// Sends an endless header line; returns the bytes sent before a write failed, and how
/// (`TimedOut` past [`PHASE_TIME`]).
fn flood(addr: SocketAddr) -> (usize, ErrorKind) {
    let deadline = Instant::now() + PHASE_TIME;
    let mut s = connect(addr, deadline);
    s.set_write_timeout(Some(IO_TIMEOUT)).unwrap();
    let chunk = vec![b'a'; 64 * 1024];
    let mut sent = 0;
    if let Err(e) = s.write_all(b"GET /metrics HTTP/1.1\r\nX-Flood: ") {
        return (sent, e.kind());
    }
    while sent < FLOOD_BYTES {
        if Instant::now() > deadline {
            return (sent, ErrorKind::TimedOut);
        }
        match s.write(&chunk) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (sent, e.kind()),
        }
    }
    panic!("the server took {FLOOD_BYTES} bytes of one header line");
}

/// Deterministic binary bytes (xorshift), starting with a byte no HTTP method has.
fn garbage(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out: Vec<u8> = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    out[0] = 0x16; // a TLS handshake record
    out
}

/// How many of `conns` the server has not closed (nothing to read, no end of stream).
fn open_count(conns: &[TcpStream]) -> usize {
    conns
        .iter()
        .filter(|s| {
            s.set_nonblocking(true).unwrap();
            matches!(s.peek(&mut [0u8; 1]), Err(e) if e.kind() == ErrorKind::WouldBlock)
        })
        .count()
}

/// Polls `done` every 100 ms for up to `limit`; returns `value()` at the end.
fn wait_for<T>(limit: Duration, done: impl Fn() -> bool, value: impl Fn() -> T) -> T {
    let end = Instant::now() + limit;
    while !done() && Instant::now() < end {
        thread::sleep(Duration::from_millis(100));
    }
    value()
}

/// A thread standing for the daemon's tick: counts a promoted page every [`TICK`] and
/// records the longest gap between two ticks.
struct Ticker {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<(u64, Duration, Duration)>,
}

impl Ticker {
    fn start(metrics: TierkitMetrics) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let start = Instant::now();
            let (mut ticks, mut last, mut longest) = (0u64, start, Duration::ZERO);
            while !flag.load(Ordering::SeqCst) {
                metrics.add_moved(Direction::Promote, 1, 4096);
                ticks += 1;
                let now = Instant::now();
                longest = longest.max(now - last);
                last = now;
                thread::sleep(TICK);
            }
            (ticks, longest, start.elapsed())
        });
        Ticker { stop, thread }
    }

    /// Stops it: the ticks, the longest gap and how long it ran.
    fn stop(self) -> (u64, Duration, Duration) {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap()
    }
}
