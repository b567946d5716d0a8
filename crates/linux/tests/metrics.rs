//! The Prometheus registry, tierkit's families and the HTTP server, scraped over a real
//! loopback socket.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tierkit_linux::metrics::{errno_name, Direction, SharedMetrics, TierkitMetrics};
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

/// Every family tierkit declares at start: name, type and help, in this order.
const FAMILIES: [(&str, &str, &str); 12] = [
    ("tierkit_samples_total", "counter", "Access samples received, by source."),
    (
        "tierkit_lost_samples_total",
        "counter",
        "Access samples the source reported lost (ring-buffer overflow, throttling).",
    ),
    ("tierkit_promoted_pages_total", "counter", "Base pages moved to a faster tier."),
    ("tierkit_demoted_pages_total", "counter", "Base pages moved to a slower tier."),
    ("tierkit_promoted_bytes_total", "counter", "Bytes moved to a faster tier."),
    ("tierkit_demoted_bytes_total", "counter", "Bytes moved to a slower tier."),
    ("tierkit_move_errors_total", "counter", "Pages move_pages(2) failed to move, by errno."),
    (
        "tierkit_moves_held_back_pages_total",
        "counter",
        "Pages tierkit did not ask the kernel to move, by reason: no_room (no node of the destination tier had \
         room above its watermarks), cooling_down (refused earlier for a lasting reason, within its 30 s cool-down).",
    ),
    ("tierkit_fast_tier_residency_ratio", "gauge", "Fraction of the target's resident pages in the fast tier."),
    ("tierkit_hit_ratio", "gauge", "Fraction of sampled accesses the fast tier served (absent when unknown)."),
    ("tierkit_cpu_seconds_total", "counter", "CPU time tierkit itself used, user plus system, in seconds."),
    ("tierkit_rss_bytes", "gauge", "tierkit's own resident set size in bytes."),
];

/// The `# HELP` and `# TYPE` lines of `body`, as (name, type, help) in order.
fn families(body: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut help = None;
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            help = Some(rest.split_once(' ').unwrap());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            let (help_name, text) = help.take().unwrap_or_else(|| panic!("TYPE without HELP: {line}"));
            assert_eq!(help_name, name, "HELP and TYPE of different families");
            out.push((name.to_string(), kind.to_string(), text.to_string()));
        }
    }
    out
}

#[test]
fn tierkit_families_have_their_names_types_and_help() {
    let m = TierkitMetrics::new();
    // As in Prometheus's Go client, a family without a series is left out, its HELP and
    // TYPE too: at start, the labelled families and the gauges not yet known.
    let at_start: Vec<_> = families(&m.render()).into_iter().map(|(name, _, _)| name).collect();
    let unlabelled = [
        "tierkit_lost_samples_total",
        "tierkit_promoted_pages_total",
        "tierkit_demoted_pages_total",
        "tierkit_promoted_bytes_total",
        "tierkit_demoted_bytes_total",
        "tierkit_cpu_seconds_total",
        "tierkit_rss_bytes",
    ];
    assert_eq!(at_start, unlabelled);

    m.add_samples("perf", 1);
    m.add_move_errors(libc::EPERM, 1);
    m.add_held_back(1, 0);
    m.set_fast_tier_residency(Some(0.5));
    m.set_hit_ratio(Some(0.5));
    let expected: Vec<_> = FAMILIES.iter().map(|(n, k, h)| (n.to_string(), k.to_string(), h.to_string())).collect();
    assert_eq!(families(&m.render()), expected);

    // The DAMON-only families come after, once each however often they are added.
    m.add_kdamond_cpu();
    m.add_poll_stretch();
    m.add_kdamond_cpu();
    m.add_poll_stretch();
    let body = m.render();
    let late: Vec<_> = families(&body).into_iter().skip(FAMILIES.len()).map(|(n, k, _)| (n, k)).collect();
    let kinds = [("tierkit_kdamond_cpu_seconds_total", "counter"), ("tierkit_poll_stretch", "gauge")];
    assert_eq!(late, kinds.map(|(n, k)| (n.to_string(), k.to_string())));
    let samples = parse(&body);
    assert_eq!(samples.get("tierkit_kdamond_cpu_seconds_total"), Some(&0.0));
    assert_eq!(samples.get("tierkit_poll_stretch"), Some(&1.0));

    m.set_kdamond_cpu(Duration::from_millis(2500));
    m.set_kdamond_cpu(Duration::from_millis(2000));
    m.set_poll_stretch(4);
    let samples = parse(&m.render());
    assert_eq!(samples.get("tierkit_kdamond_cpu_seconds_total"), Some(&2.5), "a lower reading is ignored");
    assert_eq!(samples.get("tierkit_poll_stretch"), Some(&4.0));
}

#[test]
fn label_values_are_escaped() {
    let m = TierkitMetrics::new();
    m.add_samples("a\"b\\c\nd", 3);
    let body = m.render();
    assert!(body.contains("\ntierkit_samples_total{source=\"a\\\"b\\\\c\\nd\"} 3\n"), "{body}");
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
    m.add_held_back(5, 0);
    m.add_held_back(1, 2);
    m.set_fast_tier_residency(Some(0.75));
    m.set_hit_ratio(Some(0.5));
    m.set_self_usage(&SelfUsage { cpu: Duration::from_millis(1250), rss_bytes: 10 << 20 });
    m.set_self_usage(&SelfUsage { cpu: Duration::from_millis(1000), rss_bytes: 10 << 20 });
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
    assert_eq!(get("tierkit_moves_held_back_pages_total{reason=\"no_room\"}"), 6.0);
    assert_eq!(get("tierkit_moves_held_back_pages_total{reason=\"cooling_down\"}"), 2.0);
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
    assert!(body.contains("# HELP tierkit_promoted_pages_total Base pages moved to a faster tier.\n"), "{body}");

    m.add_moved(Direction::Promote, 64, 64 * 4096);
    m.add_move_errors(libc::EPERM, 2);
    let (_, _, body) = get(addr, "/metrics?x=1");
    let samples = parse(&body);
    assert!(body.contains("# TYPE tierkit_move_errors_total counter\n"), "{body}");
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
