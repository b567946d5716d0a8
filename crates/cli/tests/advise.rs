//! `tierkit advise`: the smallest DRAM share within the target slowdown, the best policy
//! per size, and clear answers when no size meets the target or the input is bad.

mod common;

use common::tierkit;

/// A Zipf trace small enough for a CLI test.
fn trace(dir: &std::path::Path) -> String {
    let path = dir.join("zipf.tkt");
    let p = path.to_str().unwrap().to_string();
    let (code, _, err) =
        tierkit(&["trace", "write", "--workload", "zipf", "--pages", "8000", "--accesses", "400000", "-o", &p]);
    assert_eq!(code, Some(0), "{err}");
    p
}

fn advise(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = tierkit(args);
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_answer_is_the_smallest_size_whose_best_policy_meets_the_target() {
    let dir = std::env::temp_dir().join(format!("tierkit-advise-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = trace(&dir);
    let base = ["advise", "--trace", &t, "--policies", "tierkit,lru", "--ratios", "1:2,1:16,1:4", "--json"];
    let loose = advise(&[&base[..], &["--target", "30%"]].concat());
    let sizes = loose["sizes"].as_array().unwrap();
    let shares: Vec<f64> = sizes.iter().map(|s| s["dram_share"].as_f64().unwrap()).collect();
    assert_eq!(shares.len(), 3);
    assert!(shares.windows(2).all(|w| w[0] < w[1]), "smallest DRAM share first: {shares:?}");
    for s in sizes {
        // The best of tierkit, lru and none; its margins are over the others.
        assert!(["tierkit", "lru", "none"].contains(&s["best"].as_str().unwrap()), "{s}");
        assert!(s["margin_over_runner_up"].as_f64().unwrap() >= 0.0, "{s}");
        assert!(s["margin_over_none"].as_f64().unwrap() >= 0.0, "{s}");
    }
    let within: Vec<&serde_json::Value> =
        sizes.iter().filter(|s| 100.0 - s["best_pct_of_all_local"].as_f64().unwrap() <= 30.0).collect();
    assert!(!within.is_empty(), "a 30% target is met at 1:2 at least: {loose}");
    assert_eq!(loose["recommended"]["ratio"], within[0]["ratio"], "{loose}");

    // A target no size meets: no recommendation, and the text says so.
    let strict = advise(&[&base[..], &["--target", "0.001"]].concat());
    assert!(strict["recommended"].is_null(), "{strict}");
    let (code, text, err) =
        tierkit(&["advise", "--trace", &t, "--policies", "lru", "--ratios", "1:16", "--target", "0.001%"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(text.contains("answer: no size tried keeps it within 0.001% of all-DRAM"), "{text}");
    assert!(text.contains("slowdown vs DRAM share") && text.contains("confidence:"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_gets_an_answer_naming_it() {
    for (args, want) in [
        (vec!["advise", "--trace", "/nonexistent/t.tkt"], "/nonexistent/t.tkt"),
        (vec!["advise", "--trace", "x", "--target", "120%"], "a slowdown above 0% and below 100%"),
        (vec!["advise", "--trace", "x", "--target", "fast"], "a percentage such as 5%"),
        (vec!["advise", "--trace", "x", "--policies", "magic"], "unknown policy \"magic\""),
        (vec!["advise"], "nothing to advise on: give --trace FILE, or the command to record after `--`"),
        (vec!["advise", "--trace", "x", "--", "ls"], "cannot be used with"),
    ] {
        let (code, _, err) = tierkit(&args);
        assert_ne!(code, Some(0), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_command_is_recorded_first_and_its_output_kept_out_of_the_answer() {
    if std::process::Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("valgrind is not installed: skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("tierkit-advise-rec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("ls.tkt");
    let o = out.to_str().unwrap();
    let (code, stdout, err) = tierkit(&[
        "advise",
        "--policies",
        "lru",
        "--ratios",
        "1:16,1:4",
        "--target",
        "50%",
        "--json",
        "-o",
        o,
        "--",
        "ls",
        "/",
    ]);
    assert_eq!(code, Some(0), "{err}");
    // stdout is the answer alone: ls's listing and the recorder's summary went to stderr.
    let answer: serde_json::Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert!(err.contains("bin") && err.contains(&format!("advise --trace {o}")), "{err}");
    assert_eq!(answer["trace"], o);
    assert_eq!(answer["sizes"].as_array().unwrap().len(), 2, "{answer}");
    // The recorded trace is kept, and advising on it again gives the same answer.
    let again: serde_json::Value = serde_json::from_str(
        &tierkit(&["advise", "--policies", "lru", "--ratios", "1:16,1:4", "--target", "50%", "--json", "--trace", o]).1,
    )
    .unwrap();
    assert_eq!(again["sizes"], answer["sizes"]);

    // A program that fails gets no advice, and says so.
    let (code, _, err) = tierkit(&["advise", "-o", o, "--", "sh", "-c", "exit 3"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("the program exited with status 3: no advice"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
