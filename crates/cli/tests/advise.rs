//! `tierkit advise`: the smallest DRAM share within the target slowdown, the best policy
//! per size, the corpus program the trace is shaped like, and clear answers when no size
//! meets the target or the input is bad.

mod common;

use common::tierkit;

/// A trace of `workload` (seed `seed`) small enough for a CLI test, at `path`.
fn write_trace(path: &std::path::Path, workload: &str, seed: u64) -> String {
    let p = path.to_str().unwrap().to_string();
    let seed = seed.to_string();
    let (code, _, err) = tierkit(&[
        "trace",
        "write",
        "--workload",
        workload,
        "--pages",
        "8000",
        "--accesses",
        "400000",
        "--seed",
        &seed,
        "-o",
        &p,
    ]);
    assert_eq!(code, Some(0), "{err}");
    p
}

/// A Zipf trace small enough for a CLI test.
fn trace(dir: &std::path::Path) -> String {
    write_trace(&dir.join("zipf.tkt"), "zipf", 1)
}

/// A corpus of two recorded "programs" in `dir/corpus`: `kv` (a Zipf stream of another
/// seed), for which standins.toml names a validated stand-in, and `sweep` (a scan), for
/// which it names none.
fn small_corpus(dir: &std::path::Path) -> String {
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    write_trace(&corpus.join("kv.tktrace"), "zipf", 2);
    write_trace(&corpus.join("sweep.tktrace"), "scan", 2);
    let pair = "[[standin]]\nprogram = \"kv\"\nworkload = \"zipf\"\npages = 8000\naccesses = 400000\noptions = {}\n";
    std::fs::write(corpus.join("standins.toml"), pair).unwrap();
    corpus.to_str().unwrap().to_string()
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
    let c = small_corpus(&dir);
    let base =
        ["advise", "--trace", &t, "--corpus", &c, "--policies", "tierkit,lru", "--ratios", "1:2,1:16,1:4", "--json"];
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
    let (code, text, err) = tierkit(&[
        "advise",
        "--trace",
        &t,
        "--corpus",
        &c,
        "--policies",
        "lru",
        "--ratios",
        "1:16",
        "--target",
        "0.001%",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(text.contains("answer: no size tried keeps it within 0.001% of all-DRAM"), "{text}");
    assert!(text.contains("slowdown vs DRAM share") && text.contains("confidence:"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_trace_is_placed_by_its_shape_among_the_corpus_programs() {
    let dir = std::env::temp_dir().join(format!("tierkit-advise-class-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let c = small_corpus(&dir);
    let args = |t: &str| {
        ["advise", "--trace", t, "--corpus", c.as_str(), "--policies", "lru", "--ratios", "1:8"].map(String::from)
    };
    let run = |t: &str, json: bool| {
        let mut a: Vec<String> = args(t).to_vec();
        if json {
            a.push("--json".into());
        }
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (code, out, err) = tierkit(&a);
        assert_eq!(code, Some(0), "{err}");
        out
    };
    // A Zipf stream of a third seed: nearest kv, whose class has a validated stand-in.
    let zipf = write_trace(&dir.join("z.tkt"), "zipf", 3);
    let answer: serde_json::Value = serde_json::from_str(&run(&zipf, true)).unwrap();
    let class = &answer["class"];
    assert_eq!(class["nearest"], "kv", "{class}");
    assert_eq!(class["runner_up"], "sweep", "{class}");
    assert_eq!((class["validated"].as_bool(), class["fits"].as_bool()), (Some(true), Some(true)), "{class}");
    assert_eq!(class["standins"], serde_json::json!(["zipf"]), "{class}");
    assert!(class["distance"].as_f64().unwrap() < class["runner_up_distance"].as_f64().unwrap(), "{class}");
    // Every policy at every size is in the answer too (the report's figure draws them).
    let runs = answer["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "lru and none at 1:8: {answer}");
    assert!(runs.iter().all(|r| r["ratio"] == "1:8" && r["fast_hit_ratio"].as_f64().is_some()), "{answer}");
    // A scan: nearest sweep, a class no stand-in is validated for, and the text says so.
    let scan = write_trace(&dir.join("s.tkt"), "scan", 3);
    let text = run(&scan, false);
    assert!(text.contains("nearest sweep of"), "{text}");
    assert!(text.contains("No stand-in is validated for sweep (standins.toml)"), "{text}");
    let text = run(&zipf, false);
    assert!(text.contains("kv is a class the corpus validated: stand-in zipf"), "{text}");

    // A corpus without traces, and one whose standins.toml names a program it lacks.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, _, err) =
        tierkit(&["advise", "--trace", &zipf, "--corpus", empty.to_str().unwrap(), "--policies", "lru"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no recorded program in it (no NAME.tktrace)") && err.contains("empty"), "{err}");
    std::fs::write(
        std::path::Path::new(&c).join("standins.toml"),
        "[[standin]]\nprogram = \"db\"\nworkload = \"ycsb-b\"\npages = 1\naccesses = 1\noptions = {}\n",
    )
    .unwrap();
    let (code, _, err) = tierkit(&["advise", "--trace", &zipf, "--corpus", &c, "--policies", "lru"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("standins.toml pairs ycsb-b with program \"db\", which has no trace here"), "{err}");
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
fn deploy_is_refused_before_recording_without_a_slow_tier_or_a_command() {
    let dir = std::env::temp_dir().join(format!("tierkit-advise-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("never.tkt");
    let o = out.to_str().unwrap();
    let (code, _, err) = tierkit(&["advise", "--deploy", "--trace", o]);
    assert_ne!(code, Some(0));
    assert!(err.contains("cannot be used with"), "{err}");
    let (code, _, err) = tierkit(&["advise", "--deploy", "--from", o]);
    assert_ne!(code, Some(0));
    assert!(err.contains("--deploy runs the program after advising: give its command after `--`"), "{err}");
    if std::path::Path::new("/sys/devices/system/node/node1").exists() {
        eprintln!("this machine has a second NUMA node: the refusal of a one-node machine is not checked");
    } else {
        let (code, _, err) = tierkit(&["advise", "--deploy", "--via", "damon", "-o", o, "--", "true"]);
        assert_ne!(code, Some(0));
        assert!(err.contains("--deploy: this machine has no slow tier to deploy on (one NUMA node"), "{err}");
        assert!(!out.exists(), "recorded before the refusal");
    }
    let _ = std::fs::remove_dir_all(&dir);
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
    let c = small_corpus(&dir);
    let (code, stdout, err) = tierkit(&[
        "advise",
        "--policies",
        "lru",
        "--ratios",
        "1:16,1:4",
        "--target",
        "50%",
        "--json",
        "--corpus",
        &c,
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
        &tierkit(&[
            "advise",
            "--policies",
            "lru",
            "--ratios",
            "1:16,1:4",
            "--target",
            "50%",
            "--json",
            "--corpus",
            &c,
            "--trace",
            o,
        ])
        .1,
    )
    .unwrap();
    assert_eq!(again["sizes"], answer["sizes"]);

    // A program that fails gets no advice, and says so.
    let (code, _, err) = tierkit(&["advise", "--corpus", &c, "-o", o, "--", "sh", "-c", "exit 3"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("the program exited with status 3: no advice"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trace_without_a_clock_is_fitted_to_the_program_time_given() {
    let dir = std::env::temp_dir().join(format!("tierkit-advise-span-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = trace(&dir);
    let c = small_corpus(&dir);
    let base = ["advise", "--trace", &t, "--corpus", &c, "--policies", "tierkit", "--ratios", "1:8", "--json"];
    let plain = advise(&base);
    let plain_s = plain["run_seconds"].as_f64().unwrap();
    for span in [plain_s * 20.0, plain_s / 4.0] {
        let given = format!("{span}");
        let fitted = advise(&[&base[..], &["--span", &given]].concat());
        let s = fitted["run_seconds"].as_f64().unwrap();
        // The scale is whole misses a record: within a part in a thousand of the span.
        assert!((s / span - 1.0).abs() < 0.01, "the runs span {s} s, asked for {span} s: {fitted}");
        let base = fitted["time_base"].as_str().unwrap();
        assert!(base.contains(&format!("spans the program's {span:.1} s")), "{base}");
    }
    let (code, _, err) = tierkit(&[&base[..], &["--span", "30", "--scale", "10"]].concat());
    assert_eq!(code, Some(2), "--span and --scale are two time bases: {err}");
    std::fs::remove_dir_all(&dir).ok();
}
