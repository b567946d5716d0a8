//! The metrics endpoint's request path: the input arrives in chunks (the first byte sets
//! their size) and each connection's head so far goes to `metrics_server::answer`, as
//! the server does, until it answers. Checked: an answer comes by the time the head
//! exceeds `MAX_HEAD_BYTES`, and it is a whole HTTP/1.1 response that closes.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
// Links the bounded allocator (and nothing else of the crate's library).
use tierkit_fuzz as _;
use tierkit_linux::metrics::{SharedMetrics, TierkitMetrics};
use tierkit_linux::metrics_server::{answer, MAX_HEAD_BYTES};

fn metrics() -> &'static SharedMetrics {
    static METRICS: OnceLock<SharedMetrics> = OnceLock::new();
    METRICS.get_or_init(|| TierkitMetrics::new().shared())
}

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, request)) = data.split_first() else { return };
    let chunk = usize::from(chunk).max(1);
    let mut head = Vec::new();
    for part in request.chunks(chunk) {
        head.extend_from_slice(part);
        if let Some(response) = answer(&head, metrics()) {
            let bytes = response.bytes();
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.starts_with("HTTP/1.1 ") && text.contains("\r\nConnection: close\r\n"), "{text}");
            return;
        }
        assert!(head.len() <= MAX_HEAD_BYTES, "no answer after {} bytes of head", head.len());
    }
});
