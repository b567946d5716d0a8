//! The HTTP/1.x endpoint for Prometheus scrapes (`--metrics 127.0.0.1:PORT`).
//!
//! Requests are parsed by `httparse`; one background thread multiplexes every
//! connection with `mio` (epoll), so a client that is idle, slow or hostile holds up
//! neither other clients nor the daemon, which never waits for this thread. Rules:
//!
//! - Each connection gets one answer and is then closed: `GET /metrics` (or `HEAD`, or
//!   with a query) gets `200` with the registry rendered as `text/plain; version=0.0.4`;
//!   another path `404`; another method `405`; a request that is not HTTP/1.x, whose
//!   target does not start with `/`, or that ends before its head does, `400`; a head
//!   longer than [`MAX_HEAD_BYTES`] or with more than [`MAX_HEADERS`] headers, `431`.
//! - Every connection is closed [`CONNECTION_TIMEOUT`] after it was accepted, whatever
//!   it is doing (idle, sending a byte a second, reading its answer slowly).
//! - At most [`MAX_CONNECTIONS`] connections are open, and at most a quarter of the
//!   soft `RLIMIT_NOFILE`, so clients never take the descriptors the daemon needs. A
//!   connection beyond that closes the oldest open one that is not being answered (one
//!   still waiting for its request head, or draining after its answer: the likeliest
//!   idle or slow client), or, if every open one is being answered, is itself closed at
//!   once. Memory is bounded with it: an open connection holds at most one head and one
//!   rendered answer.
//! - After answering, the server reads and discards what the client still sends, up to
//!   [`MAX_DRAIN_BYTES`], until the client closes, so the answer is not lost to a reset.
//! - An accept that fails for lack of descriptors is retried after [`ACCEPT_RETRY`].
//!
//! The listener is bound before [`MetricsServer::start`] returns; dropping the
//! [`MetricsServer`] wakes, stops and joins the thread, closing every connection.
//!
//! The address must name its host: `PORT` or `:PORT` alone is refused, never bound to
//! every interface. A non-loopback host exposes the metrics to the network, which is
//! the user's choice.
//!
//! Why not a server crate: parsing is `httparse`'s (hyper's parser) and the sockets are
//! `mio`'s; what is written here is the per-connection bookkeeping the limits above
//! need. `tiny_http` 0.12, the usual small synchronous server, has none of them: it reads
//! a request head of any length into memory (its issue 56), gives every connection a
//! thread with no deadline and no cap, and stops accepting for good after one failed
//! accept (`EMFILE`). It takes only a listener, so they cannot be added around it (tried
//! in issue 14: one 64 MiB header line grew it by 66 MiB; 300 idle connections all stayed
//! open, on 266 threads; a client sending a byte a second was never dropped).

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};

use crate::metrics::{SharedMetrics, CONTENT_TYPE};

/// Most connections open at once (fewer when a quarter of the descriptor limit is less).
pub const MAX_CONNECTIONS: usize = 256;
/// Longest life of a connection, from accept to close.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest request head accepted, request line included.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// Most header fields accepted in a request.
pub const MAX_HEADERS: usize = 64;
/// Most bytes read and discarded after the answer before the connection is closed.
pub const MAX_DRAIN_BYTES: usize = 1024 * 1024;
/// Wait before accepting again after running out of descriptors.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// Connections the kernel queues until they are accepted (capped by
/// `net.core.somaxconn`): absorbs a burst of connects while the server thread waits for
/// a CPU, where std's 128 would make further clients retry their SYN a second later.
const LISTEN_BACKLOG: libc::c_int = 1024;
/// Most connections accepted between two looks at the open ones, so a flood of new
/// connections cannot starve the answers.
const ACCEPT_BATCH: usize = 64;
/// Size of one read from a connection.
const READ_CHUNK: usize = 4096;
/// Events taken from one poll.
const EVENTS: usize = 256;
/// Token of the listening socket.
const LISTENER: Token = Token(0);
/// Token of the waker that [`MetricsServer`]'s drop uses to stop the thread.
const WAKER: Token = Token(1);
/// Token (and key) of the first connection; later ones count up and are never reused.
const FIRST_CONNECTION: usize = 2;

/// Starting the server failed.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The address is not `HOST:PORT`.
    #[error("invalid metrics address {addr:?}: {reason}; expected HOST:PORT, for example 127.0.0.1:9464")]
    BadAddress {
        /// The address as given.
        addr: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source} (is the port already in use?)")]
    Bind {
        /// The address as given.
        addr: String,
        /// The error.
        source: io::Error,
    },
    /// The server thread could not be set up.
    #[error("cannot start the metrics server on {addr}: {source}")]
    Start {
        /// The address as given.
        addr: String,
        /// The error.
        source: io::Error,
    },
}

/// The running server; dropping it stops the server thread.
#[derive(Debug)]
pub struct MetricsServer {
    local_addr: SocketAddr,
    stop: Arc<AtomicBool>,
    waker: Waker,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Binds `addr` (`HOST:PORT`; port 0 picks a free one) and serves `metrics` from a
    /// background thread.
    pub fn start(addr: &str, metrics: SharedMetrics) -> Result<MetricsServer, ServerError> {
        let bad = |reason: String| ServerError::BadAddress { addr: addr.to_string(), reason };
        let candidates: Vec<SocketAddr> = match addr.parse::<SocketAddr>() {
            Ok(a) => vec![a],
            Err(_) => {
                if addr.rsplit_once(':').is_none_or(|(host, port)| host.is_empty() || port.parse::<u16>().is_err()) {
                    return Err(bad("no host or no valid port".to_string()));
                }
                addr.to_socket_addrs().map_err(|e| bad(e.to_string()))?.collect()
            }
        };
        let listener = std::net::TcpListener::bind(&candidates[..])
            .map_err(|source| ServerError::Bind { addr: addr.to_string(), source })?;
        let start_err = |source| ServerError::Start { addr: addr.to_string(), source };
        let local_addr = listener.local_addr().map_err(start_err)?;
        listener.set_nonblocking(true).map_err(start_err)?;
        // Listening again on a listening socket only sets its backlog (Linux).
        // SAFETY: the descriptor is the listener's own and stays open across the call.
        if unsafe { libc::listen(listener.as_raw_fd(), LISTEN_BACKLOG) } != 0 {
            return Err(start_err(io::Error::last_os_error()));
        }
        let mut listener = TcpListener::from_std(listener);
        let poll = Poll::new().map_err(start_err)?;
        poll.registry().register(&mut listener, LISTENER, Interest::READABLE).map_err(start_err)?;
        let waker = Waker::new(poll.registry(), WAKER).map_err(start_err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let server = Server {
            poll,
            listener,
            metrics,
            stop: Arc::clone(&stop),
            cap: connection_cap(),
            conns: BTreeMap::new(),
            next_id: FIRST_CONNECTION,
        };
        let thread = std::thread::Builder::new()
            .name("tierkit-metrics".to_string())
            .spawn(move || server.run())
            .map_err(start_err)?;
        Ok(MetricsServer { local_addr, stop, waker, thread: Some(thread) })
    }

    /// The address actually bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A failed wake leaves the thread to notice the flag at its next event or deadline.
        let _ = self.waker.wake();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The connection cap: [`MAX_CONNECTIONS`], or a quarter of the soft descriptor limit
/// when that is less (at least one).
fn connection_cap() -> usize {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct it is given, which outlives the call.
    let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 { limit.rlim_cur } else { 1024 };
    usize::try_from(soft / 4).unwrap_or(usize::MAX).clamp(1, MAX_CONNECTIONS)
}

/// Whether the listener may have connections waiting to be accepted.
#[derive(Clone, Copy)]
enum Accept {
    /// Accepted until it would block: wait for its next event.
    Drained,
    /// More may be waiting: accept again after a look at the open connections.
    Pending,
    /// Out of descriptors: accept again at this time.
    RetryAt(Instant),
}

/// The state owned by the server thread.
struct Server {
    poll: Poll,
    listener: TcpListener,
    metrics: SharedMetrics,
    stop: Arc<AtomicBool>,
    cap: usize,
    /// Open connections by id. Ids grow with the accept time and every connection lives
    /// [`CONNECTION_TIMEOUT`], so the first entry is the oldest and expires first.
    conns: BTreeMap<usize, Conn>,
    next_id: usize,
}

impl Server {
    /// Serves until [`MetricsServer`]'s drop sets the stop flag: waits for events, moves
    /// the connections they concern on, accepts, and closes the expired.
    fn run(mut self) {
        let mut events = Events::with_capacity(EVENTS);
        let mut accept = Accept::Drained;
        while !self.stop.load(Ordering::SeqCst) {
            let timeout = self.wait(accept, Instant::now());
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // epoll itself failed: nothing is left to serve with.
                return;
            }
            for event in &events {
                match event.token() {
                    LISTENER => accept = Accept::Pending,
                    WAKER => {}
                    Token(id) => self.advance(id),
                }
            }
            let now = Instant::now();
            accept = match accept {
                Accept::Pending => self.accept(now),
                Accept::RetryAt(at) if at <= now => self.accept(now),
                other => other,
            };
            self.expire(now);
        }
    }

    /// How long the next poll may block: until the oldest connection expires or the
    /// next accept is due; without either, until an event.
    fn wait(&self, accept: Accept, now: Instant) -> Option<Duration> {
        let expiry = self.conns.values().next().map(|c| c.deadline);
        let wake = match accept {
            Accept::Pending => Some(now),
            Accept::RetryAt(at) => Some(expiry.map_or(at, |e| e.min(at))),
            Accept::Drained => expiry,
        };
        wake.map(|at| at.saturating_duration_since(now))
    }

    /// Accepts up to [`ACCEPT_BATCH`] connections.
    fn accept(&mut self, now: Instant) -> Accept {
        for _ in 0..ACCEPT_BATCH {
            match self.listener.accept() {
                Ok((stream, _)) => self.admit(stream, now),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Accept::Drained,
                // A client gone before it was accepted, or a signal: take the next one.
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionAborted | io::ErrorKind::Interrupted) => {}
                // Out of descriptors (EMFILE, ENFILE) or buffers: the client waits in the backlog.
                Err(_) => return Accept::RetryAt(now + ACCEPT_RETRY),
            }
        }
        Accept::Pending
    }

    /// Opens `stream` as a connection, making room under the cap first.
    fn admit(&mut self, mut stream: TcpStream, now: Instant) {
        if self.conns.len() >= self.cap {
            let oldest_unanswered = self.conns.iter().find(|(_, c)| !c.answering()).map(|(&id, _)| id);
            match oldest_unanswered {
                Some(id) => drop(self.conns.remove(&id)),
                // Every open connection is being answered: close the newcomer.
                None => return,
            }
        }
        let id = self.next_id;
        self.next_id += 1;
        // Registration reports data that has already arrived, so nothing is missed.
        if self.poll.registry().register(&mut stream, Token(id), Interest::READABLE | Interest::WRITABLE).is_ok() {
            self.conns.insert(id, Conn::new(stream, now + CONNECTION_TIMEOUT));
        }
    }

    /// Moves connection `id` on after an event, closing it when done or failed.
    fn advance(&mut self, id: usize) {
        if let Some(conn) = self.conns.get_mut(&id) {
            if !matches!(conn.advance(&self.metrics), Ok(true)) {
                self.conns.remove(&id);
            }
        }
    }

    /// Closes the connections whose time is up.
    fn expire(&mut self, now: Instant) {
        while let Some(oldest) = self.conns.first_entry() {
            if oldest.get().deadline > now {
                break;
            }
            oldest.remove();
        }
    }
}

/// Where a connection is in its one exchange.
enum Phase {
    /// Reading the request head, received so far.
    Head(Vec<u8>),
    /// Writing the answer, `sent` bytes of it done.
    Answer { bytes: Vec<u8>, sent: usize },
    /// Answer sent and write side shut: discarding input, `read` bytes so far.
    Drain { read: usize },
}

/// One client connection (closed when dropped).
struct Conn {
    stream: TcpStream,
    deadline: Instant,
    phase: Phase,
}

impl Conn {
    fn new(stream: TcpStream, deadline: Instant) -> Conn {
        Conn { stream, deadline, phase: Phase::Head(Vec::new()) }
    }

    /// Whether its answer is being written.
    fn answering(&self) -> bool {
        matches!(self.phase, Phase::Answer { .. })
    }

    /// Reads, answers and drains as far as the socket allows without blocking.
    /// `Ok(true)`: waiting for the socket; `Ok(false)`: done, close it.
    fn advance(&mut self, metrics: &SharedMetrics) -> io::Result<bool> {
        let mut chunk = [0u8; READ_CHUNK];
        loop {
            match &mut self.phase {
                Phase::Head(head) => {
                    let Some(n) = now(|| self.stream.read(&mut chunk))? else { return Ok(true) };
                    let response = if n == 0 {
                        if head.is_empty() {
                            return Ok(false);
                        }
                        Response::error(400, "Bad Request", "the request ended before its head did\n")
                    } else {
                        head.extend_from_slice(&chunk[..n]);
                        match answer(head, metrics) {
                            Some(response) => response,
                            None => continue,
                        }
                    };
                    self.phase = Phase::Answer { bytes: response.bytes(), sent: 0 };
                }
                Phase::Answer { bytes, sent } => {
                    if *sent == bytes.len() {
                        self.stream.shutdown(Shutdown::Write)?;
                        self.phase = Phase::Drain { read: 0 };
                        continue;
                    }
                    match now(|| self.stream.write(&bytes[*sent..]))? {
                        None => return Ok(true),
                        Some(0) => return Ok(false),
                        Some(n) => *sent += n,
                    }
                }
                Phase::Drain { read } => match now(|| self.stream.read(&mut chunk))? {
                    None => return Ok(true),
                    Some(0) => return Ok(false),
                    Some(n) => {
                        *read += n;
                        if *read > MAX_DRAIN_BYTES {
                            return Ok(false);
                        }
                    }
                },
            }
        }
    }
}

/// Runs a non-blocking read or write, again when a signal interrupts it; `None` when it
/// would block.
fn now(mut op: impl FnMut() -> io::Result<usize>) -> io::Result<Option<usize>> {
    loop {
        match op() {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The answer to a request whose head starts with `head`, or `None` while `head` is a
/// valid beginning within the limits (so `None` only for heads of at most
/// [`MAX_HEAD_BYTES`]). Each connection calls it with the bytes received so far.
pub fn answer(head: &[u8], metrics: &SharedMetrics) -> Option<Response> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let too_large = || Response::error(431, "Request Header Fields Too Large", "the request head is too large\n");
    match request.parse(head) {
        Ok(httparse::Status::Complete(len)) if len <= MAX_HEAD_BYTES => match (request.method, request.path) {
            (Some(method), Some(target)) => Some(respond(method, target, metrics)),
            _ => Some(Response::error(400, "Bad Request", "expected METHOD /PATH HTTP/1.x\n")),
        },
        Ok(httparse::Status::Partial) if head.len() <= MAX_HEAD_BYTES => None,
        Ok(_) | Err(httparse::Error::TooManyHeaders) => Some(too_large()),
        Err(_) => Some(Response::error(400, "Bad Request", "expected METHOD /PATH HTTP/1.x\n")),
    }
}

/// One answer, sent whole and followed by closing the connection.
pub struct Response {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    extra_header: Option<&'static str>,
    body: String,
    send_body: bool,
}

impl Response {
    fn error(status: u16, reason: &'static str, body: &str) -> Response {
        Response {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            extra_header: None,
            body: body.to_string(),
            send_body: true,
        }
    }

    /// The status line, headers and body as sent.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.status,
            self.reason,
            self.content_type,
            self.body.len()
        );
        if let Some(h) = self.extra_header {
            out.push_str(h);
            out.push_str("\r\n");
        }
        out.push_str("\r\n");
        if self.send_body {
            out.push_str(&self.body);
        }
        out.into_bytes()
    }
}

/// The response to a well-formed request for `target` with `method`.
fn respond(method: &str, target: &str, metrics: &SharedMetrics) -> Response {
    if !target.starts_with('/') {
        return Response::error(400, "Bad Request", "expected METHOD /PATH HTTP/1.x\n");
    }
    let path = target.split_once('?').map_or(target, |(p, _)| p);
    let head_only = match method {
        "GET" => false,
        "HEAD" => true,
        _ => {
            let mut r = Response::error(405, "Method Not Allowed", "only GET and HEAD are supported\n");
            r.extra_header = Some("Allow: GET, HEAD");
            return r;
        }
    };
    let mut response = if path == "/metrics" {
        Response {
            status: 200,
            reason: "OK",
            content_type: CONTENT_TYPE,
            extra_header: None,
            body: metrics.render(),
            send_body: true,
        }
    } else {
        Response::error(404, "Not Found", "tierkit serves metrics at /metrics\n")
    };
    response.send_body = !head_only;
    response
}
