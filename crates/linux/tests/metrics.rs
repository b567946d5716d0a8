//! The Prometheus registry, tierkit's families and the HTTP server, scraped over a real
//! loopback socket.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tierkit_linux::metrics::{errno_name, Direction, Kind, MetricsError, Registry, SharedMetrics, TierkitMetrics};
use tierkit_linux::metrics_server::{MetricsServer, ServerError};
use tierkit_linux::selfstat::SelfUsage;

/// Parses sample lines into `name{labels}` → value, checking each family's HELP and
/// TYPE come once and before its samples.
fn parse(body: &str) -> BTreeMap<String, f64> {
    let mut samples = BTreeMap::new();
    let mut typed = Vec::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap().to_string();
            assert!(!typed.contains(&name), "family {name} appears twice");
            typed.push(name);
        } else if !line.starts_with('#') {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let family = series.split('{').next().unwrap();
            assert!(typed.iter().any(|t| t == family), "sample before its TYPE: {line}");
            samples.insert(series.to_string(), value.parse().unwrap());
        }
    }
    samples
}

#[test]
fn registry_renders_the_text_format() {
    let mut r = Registry::new();
    r.declare("jobs_total", Kind::Counter, "Jobs done.\nSecond line with a \\ backslash.").unwrap();
    r.declare("temperature", Kind::Gauge, "Degrees.").unwrap();
    r.add("jobs_total", &[("queue", "a\"b\\c\nd"), ("host", "x")], 2.0).unwrap();
    r.add("jobs_total", &[("host", "x"), ("queue", "a\"b\\c\nd")], 1.0).unwrap();
    r.set("temperature", &[], -1.5).unwrap();
    let text = r.render();
    assert_eq!(
        text,
        "# HELP jobs_total Jobs done.\\nSecond line with a \\\\ backslash.\n\
         # TYPE jobs_total counter\n\
         jobs_total{host=\"x\",queue=\"a\\\"b\\\\c\\nd\"} 3\n\
         # HELP temperature Degrees.\n\
         # TYPE temperature gauge\n\
         temperature -1.5\n"
    );
    assert_eq!(r.get("jobs_total", &[("queue", "a\"b\\c\nd"), ("host", "x")]), Some(3.0));
}

#[test]
fn registry_refuses_misuse_with_clear_errors() {
    let mut r = Registry::new();
    assert_eq!(r.declare("9lives", Kind::Gauge, ""), Err(MetricsError::InvalidName("9lives".into())));
    r.declare("c_total", Kind::Counter, "c").unwrap();
    let err = r.declare("c_total", Kind::Gauge, "c").unwrap_err();
    assert!(err.to_string().contains("already declared as a counter"), "{err}");
    assert_eq!(r.add("nope", &[], 1.0), Err(MetricsError::Undeclared("nope".into())));
    assert!(matches!(r.add("c_total", &[("__name__", "x")], 1.0), Err(MetricsError::InvalidLabel { .. })));
    assert!(matches!(r.add("c_total", &[("a", "1"), ("a", "2")], 1.0), Err(MetricsError::InvalidLabel { .. })));
    r.set("c_total", &[], 5.0).unwrap();
    assert!(matches!(r.add("c_total", &[], -1.0), Err(MetricsError::CounterDecrease { .. })));
    let err = r.set("c_total", &[], 4.0).unwrap_err();
    assert!(err.to_string().contains("cannot decrease (from 5 to 4)"), "{err}");
    assert_eq!(r.get("c_total", &[]), Some(5.0));
}

#[test]
fn tierkit_families_follow_updates() {
    let m = TierkitMetrics::new();
    let before = parse(&m.render());
    assert_eq!(before.get("tierkit_promoted_pages_total"), Some(&0.0));
    assert_eq!(before.get("tierkit_lost_samples_total"), Some(&0.0));
    assert!(!before.contains_key("tierkit_hit_ratio"), "unknown hit ratio must be absent");

    m.add_samples("damon", 100);
    m.add_samples("damon", 23);
    m.add_samples("perf", 7);
    m.add_lost_samples(2);
    m.add_moved(Direction::Promote, 512, 512 * 4096);
    m.add_moved(Direction::Demote, 3, 3 * 4096);
    m.add_move_errors(libc::ENOMEM, 4);
    m.add_move_errors(libc::EBUSY, 1);
    m.add_move_errors(4242, 1);
    m.set_fast_tier_residency(Some(0.75));
    m.set_hit_ratio(Some(0.5));
    m.set_self_usage(&SelfUsage { cpu: Duration::from_millis(1250), rss_bytes: 10 << 20 });
    let after = parse(&m.render());
    let get = |k: &str| *after.get(k).unwrap_or_else(|| panic!("{k} missing from {after:?}"));
    assert_eq!(get("tierkit_samples_total{source=\"damon\"}"), 123.0);
    assert_eq!(get("tierkit_samples_total{source=\"perf\"}"), 7.0);
    assert_eq!(get("tierkit_lost_samples_total"), 2.0);
    assert_eq!(get("tierkit_promoted_pages_total"), 512.0);
    assert_eq!(get("tierkit_promoted_bytes_total"), 2097152.0);
    assert_eq!(get("tierkit_demoted_pages_total"), 3.0);
    assert_eq!(get("tierkit_demoted_bytes_total"), 12288.0);
    assert_eq!(get("tierkit_move_errors_total{errno=\"ENOMEM\"}"), 4.0);
    assert_eq!(get("tierkit_move_errors_total{errno=\"EBUSY\"}"), 1.0);
    assert_eq!(get("tierkit_move_errors_total{errno=\"4242\"}"), 1.0);
    assert_eq!(get("tierkit_fast_tier_residency_ratio"), 0.75);
    assert_eq!(get("tierkit_hit_ratio"), 0.5);
    assert_eq!(get("tierkit_cpu_seconds_total"), 1.25);
    assert_eq!(get("tierkit_rss_bytes"), 10485760.0);

    m.set_hit_ratio(None);
    assert!(!parse(&m.render()).contains_key("tierkit_hit_ratio"));
}

#[test]
fn errno_names_come_from_the_table_with_a_numeric_fallback() {
    assert_eq!(errno_name(libc::EPERM), "EPERM");
    assert_eq!(errno_name(libc::ENOENT), "ENOENT");
    assert_eq!(errno_name(libc::ESRCH), "ESRCH");
    assert_eq!(errno_name(libc::ENOMEM), "ENOMEM");
    assert_eq!(errno_name(libc::EBUSY), "EBUSY");
    assert_eq!(errno_name(libc::EACCES), "EACCES");
    assert_eq!(errno_name(libc::EFAULT), "EFAULT");
    assert_eq!(errno_name(libc::EINVAL), "EINVAL");
    assert_eq!(errno_name(libc::E2BIG), "E2BIG");
    assert_eq!(errno_name(libc::EAGAIN), "EAGAIN");
    assert_eq!(errno_name(9999), "9999");
}

/// One HTTP exchange: returns (status line, headers, body).
fn request(addr: std::net::SocketAddr, raw: &str) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(raw.as_bytes()).unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_string(), headers.to_string(), body.to_string())
}

fn get(addr: std::net::SocketAddr, path: &str) -> (String, String, String) {
    request(addr, &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n"))
}

#[test]
fn server_serves_metrics_that_change_with_updates() {
    let m = TierkitMetrics::new();
    let server = MetricsServer::start("127.0.0.1:0", m.shared()).unwrap();
    let addr = server.local_addr();
    assert_ne!(addr.port(), 0);

    let (status, headers, body) = get(addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("Content-Type: text/plain; version=0.0.4"), "{headers}");
    assert!(headers.contains(&format!("Content-Length: {}", body.len())), "{headers}");
    assert_eq!(parse(&body).get("tierkit_promoted_pages_total"), Some(&0.0));
    assert!(body.contains("# HELP tierkit_move_errors_total "));

    m.add_moved(Direction::Promote, 64, 64 * 4096);
    m.add_move_errors(libc::EPERM, 2);
    let (_, _, body) = get(addr, "/metrics?x=1");
    let samples = parse(&body);
    assert_eq!(samples.get("tierkit_promoted_pages_total"), Some(&64.0));
    assert_eq!(samples.get("tierkit_move_errors_total{errno=\"EPERM\"}"), Some(&2.0));

    // HEAD: headers only.
    let (status, headers, body) = request(addr, "HEAD /metrics HTTP/1.0\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("Content-Length: "), "{headers}");
    assert!(body.is_empty());
}

#[test]
fn server_answers_other_paths_methods_and_garbage_with_errors() {
    let server = MetricsServer::start("127.0.0.1:0", SharedMetrics::new()).unwrap();
    let addr = server.local_addr();
    assert_eq!(get(addr, "/").0, "HTTP/1.1 404 Not Found");
    assert_eq!(get(addr, "/metricsX").0, "HTTP/1.1 404 Not Found");
    let (status, headers, _) = request(addr, "POST /metrics HTTP/1.1\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
    assert!(headers.contains("Allow: GET, HEAD"));
    assert_eq!(request(addr, "hello\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    assert_eq!(request(addr, "GET metrics HTTP/1.1\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    assert_eq!(request(addr, "GET /metrics SPDY/3\r\n\r\n").0, "HTTP/1.1 400 Bad Request");
    // A client that closes before finishing its request does not break the server.
    drop(TcpStream::connect(addr).unwrap());
    let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n", "y".repeat(20_000));
    let mut s = TcpStream::connect(addr).unwrap();
    let _ = s.write_all(huge.as_bytes());
    drop(s);
    assert_eq!(get(addr, "/metrics").0, "HTTP/1.1 200 OK");
}

#[test]
fn server_stops_on_drop_and_rejects_bad_addresses() {
    let server = MetricsServer::start("localhost:0", SharedMetrics::new()).unwrap();
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback());
    drop(server);
    assert!(TcpStream::connect(addr).is_err(), "the listener must be closed after drop");

    for bad in ["127.0.0.1", "9464", ":9464", "127.0.0.1:http", "127.0.0.1:70000", ""] {
        let err = MetricsServer::start(bad, SharedMetrics::new()).unwrap_err();
        assert!(matches!(err, ServerError::BadAddress { .. }), "{bad}: {err}");
        assert!(err.to_string().contains("expected HOST:PORT"), "{err}");
    }
    // A port already taken.
    let taken = MetricsServer::start("127.0.0.1:0", SharedMetrics::new()).unwrap();
    let err = MetricsServer::start(&taken.local_addr().to_string(), SharedMetrics::new()).unwrap_err();
    assert!(matches!(err, ServerError::Bind { .. }), "{err}");
    assert!(err.to_string().contains("already in use"), "{err}");
}
