//! A minimal HTTP/1.x server for Prometheus scrapes (`--metrics 127.0.0.1:PORT`).
//!
//! One background thread accepts connections and answers one request per connection:
//! `GET /metrics` (or `HEAD`) gets `200` with the registry rendered as
//! `text/plain; version=0.0.4`; other paths get `404`, other methods `405`, malformed
//! requests `400`. Every read and write has a timeout and each connection a deadline,
//! so a stuck client cannot stall the daemon, which never waits for the server. The
//! listener is non-blocking and the thread polls a stop flag between accepts; dropping
//! the [`MetricsServer`] stops and joins it.
//!
//! The server binds whatever address it is given; a non-loopback address exposes the
//! metrics to the network, which is the user's choice.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::metrics::{SharedMetrics, CONTENT_TYPE};

/// How often the accept loop checks the stop flag when idle.
const POLL: Duration = Duration::from_millis(50);
/// Timeout of each read or write on a connection.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// Longest time one connection may take in total.
const DEADLINE: Duration = Duration::from_secs(5);
/// Longest request head accepted.
const MAX_HEAD: usize = 8 * 1024;

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
        let listener = TcpListener::bind(&candidates[..])
            .map_err(|source| ServerError::Bind { addr: addr.to_string(), source })?;
        let start_err = |source| ServerError::Start { addr: addr.to_string(), source };
        let local_addr = listener.local_addr().map_err(start_err)?;
        listener.set_nonblocking(true).map_err(start_err)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("tierkit-metrics".to_string())
            .spawn(move || serve(listener, &metrics, &flag))
            .map_err(start_err)?;
        Ok(MetricsServer { local_addr, stop, thread: Some(thread) })
    }

    /// The address actually bound (with the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(listener: TcpListener, metrics: &SharedMetrics, stop: &AtomicBool) {
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            // A failed connection concerns only that client.
            Ok((stream, _)) => {
                let _ = handle(stream, metrics);
            }
            // Idle, or out of descriptors for a moment (EMFILE): wait, never spin.
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

fn handle(mut stream: TcpStream, metrics: &SharedMetrics) -> io::Result<()> {
    let deadline = Instant::now() + DEADLINE;
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let response = match read_head(&mut stream, deadline)? {
        Some(head) => respond(&head, metrics),
        None => Response::error(400, "Bad Request", "request head too long or incomplete\n"),
    };
    stream.write_all(&response.bytes())?;
    stream.flush()?;
    let _ = stream.shutdown(std::net::Shutdown::Write);
    Ok(())
}

/// Reads up to the blank line ending the request head. `None` when the client closed
/// early, the deadline passed or the head exceeds [`MAX_HEAD`].
fn read_head(stream: &mut TcpStream, deadline: Instant) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while Instant::now() < deadline && head.len() <= MAX_HEAD {
        let n = match stream.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&buf[..n]);
        if let Some(end) = find_end_of_head(&head) {
            head.truncate(end);
            return Ok(Some(head));
        }
    }
    Ok(None)
}

fn find_end_of_head(buf: &[u8]) -> Option<usize> {
    let crlf = buf.windows(4).position(|w| w == b"\r\n\r\n");
    let lf = buf.windows(2).position(|w| w == b"\n\n");
    crlf.into_iter().chain(lf).min()
}

struct Response {
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

    fn bytes(&self) -> Vec<u8> {
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

/// The response to a complete request head.
fn respond(head: &[u8], metrics: &SharedMetrics) -> Response {
    let Some(line) = std::str::from_utf8(head).ok().and_then(|h| h.lines().next()) else {
        return Response::error(400, "Bad Request", "request line is not UTF-8\n");
    };
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Response::error(400, "Bad Request", "expected METHOD TARGET HTTP/VERSION\n");
    };
    if !version.starts_with("HTTP/1.") || !target.starts_with('/') {
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
