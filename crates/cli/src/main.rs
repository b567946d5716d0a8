//! The `tierkit` command.

mod advise_cmd;
mod args;
mod bench_cmd;
mod compare_cmd;
mod damos_args;
mod list_cmd;
mod live_cmd;
mod machine_args;
mod move_cmd;
mod profile_cmd;
mod record_cmd;
mod report_cmd;
mod result_csv;
mod sketches_cmd;
mod topology_cmd;
mod trace_cmd;
mod trace_compare_cmd;

use clap::{Parser, Subcommand};

/// tierkit: memory tiering for CXL. Keeps a process's hot pages in fast DRAM and its
/// cold pages in slower CXL memory; runs the same policies live and in a simulator.
#[derive(Parser)]
#[command(name = "tierkit", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compare policies side by side on the simulator (default: the built-in suite).
    Compare(compare_cmd::CompareArgs),
    /// For one program (its trace, or the program recorded first): the smallest DRAM share within a target slowdown, and the best policy per size.
    Advise(advise_cmd::AdviseArgs),
    /// Simulate one policy on one workload at one ratio.
    Sim(compare_cmd::SimArgs),
    /// List workloads, policies, references and machine presets.
    List {
        /// Print POLICY's parameters instead: each with its default and where the default
        /// comes from (set them as `POLICY:KEY=VALUE` wherever a policy is named).
        #[arg(long, value_name = "POLICY")]
        params: Option<String>,
    },
    /// Measure the simulator's speed (generated accesses per second, one thread).
    Bench(bench_cmd::BenchArgs),
    /// Start a command and tier its memory until it exits; exit with its exit status.
    Run(live_cmd::RunArgs),
    /// Tier a running process until it exits or tierkit gets SIGINT/SIGTERM.
    Attach(live_cmd::AttachArgs),
    /// Move a running process's pages to the fast or slow tier once, with tierkit's mover.
    Move(move_cmd::MoveArgs),
    /// Heat report of a process: hot/warm/cold fractions per mapping over time (moves nothing).
    Profile(profile_cmd::ProfileArgs),
    /// Render `compare --json` results (and timelines) as one self-contained HTML page.
    Report(report_cmd::ReportArgs),
    /// Show NUMA nodes, memory tiers and which nodes tierkit treats as fast or slow.
    Topology(topology_cmd::TopologyArgs),
    /// Record a program's page-access trace (Valgrind with a simulated LLC, perf mem, or DAMON).
    Record(record_cmd::RecordArgs),
    /// Work with trace files.
    #[command(subcommand)]
    Trace(trace_cmd::TraceCommand),
    /// Tracking memory of each hotness structure at the papers' default sizing.
    Sketches {
        /// Fast-tier (DRAM) size, e.g. 16GiB.
        #[arg(long, default_value = "16GiB", value_parser = args::parse_size)]
        fast: u64,
        /// Fast:slow capacity ratio, e.g. 1:16.
        #[arg(long, default_value = "1:16", value_parser = args::parse_ratio)]
        ratio: (u64, u64),
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> std::process::ExitCode {
    let command = Cli::parse().command;
    if command.only_prints() {
        restore_sigpipe();
    }
    match dispatch(command) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", error_text(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

impl Command {
    /// Whether the command only reads files and prints: it holds nothing a sudden end
    /// would leave behind (no target process, kdamond, moved pages or recording).
    fn only_prints(&self) -> bool {
        match self {
            Command::Compare(_)
            | Command::Sim(_)
            | Command::List { .. }
            | Command::Bench(_)
            | Command::Report(_)
            | Command::Topology(_)
            | Command::Trace(_)
            | Command::Sketches { .. } => true,
            Command::Advise(_)
            | Command::Run(_)
            | Command::Attach(_)
            | Command::Move(_)
            | Command::Profile(_)
            | Command::Record(_) => false,
        }
    }
}

/// Lets a closed stdout (`tierkit list --params tierkit | head`) end the process as it
/// ends any Unix filter, by SIGPIPE, instead of a panic in `println!`. Rust's runtime
/// ignores SIGPIPE so that writes fail with EPIPE; the commands that must clean up on
/// exit (live tiering, recording) keep that, as their output is a terminal or a log.
fn restore_sigpipe() {
    // SAFETY: signal(2) with SIG_DFL installs no handler; it runs before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// `Error: ` and the error, then each cause its message does not already state (an I/O
/// error is often both a file's message and its source).
fn error_text(e: &anyhow::Error) -> String {
    let mut text = format!("Error: {e}");
    let mut said = e.to_string();
    let mut causes = Vec::new();
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !said.contains(&c) {
            causes.push(c.clone());
        }
        said = c;
    }
    if !causes.is_empty() {
        text += "\n\nCaused by:";
        for c in causes {
            text += &format!("\n    {c}");
        }
    }
    text
}

fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Compare(a) => compare_cmd::run(a),
        Command::Advise(a) => advise_cmd::run(a),
        Command::Sim(a) => compare_cmd::sim(a),
        Command::Bench(a) => bench_cmd::run_bench(a),
        Command::Trace(c) => trace_cmd::run(c),
        Command::Record(a) => record_cmd::run(a),
        Command::Topology(a) => topology_cmd::run(a),
        Command::Run(a) => live_cmd::run(a),
        Command::Attach(a) => live_cmd::attach(a),
        Command::Move(a) => move_cmd::run(a),
        Command::Profile(a) => profile_cmd::run(a),
        Command::Report(a) => report_cmd::run(a),
        Command::List { params: None } => {
            list_cmd::run();
            Ok(())
        }
        Command::List { params: Some(policy) } => list_cmd::params(&policy),
        Command::Sketches { fast, ratio, json } => sketches_cmd::run(fast, ratio, json),
    }
}

#[cfg(test)]
mod tests {
    use super::error_text;
    use anyhow::Context;

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory");
        let e = tierkit_sim::SimError::Io { file: "t.tkt".into(), source: io };
        assert_eq!(error_text(&anyhow::Error::new(e)), "Error: t.tkt: No such file or directory");
    }

    #[test]
    fn a_cause_that_adds_something_is_kept() {
        let e = Err::<(), _>(std::io::Error::other("disk on fire")).context("cannot read r.json").unwrap_err();
        assert_eq!(error_text(&e), "Error: cannot read r.json\n\nCaused by:\n    disk on fire");
    }
}
