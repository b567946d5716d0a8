//! `tierkit trace`: write a workload's stream as a trace, describe a trace, convert
//! between formats.

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use std::path::Path;

use tierkit_sim::model::MlpClass;
use tierkit_sim::trace::info::{stats_with_top, TraceStats};
use tierkit_sim::trace::oracle_general::{Convention, RecordReader};
use tierkit_sim::trace::round_gaps::round_trace;
use tierkit_sim::trace::write_workload::write_native;
use tierkit_sim::trace::{self, write_oracle_general, Format, PAGE_SHIFT};
use tierkit_sim::workload::{self, Access, WorkloadSpec};

use crate::machine_args::SizeArgs;

/// `tierkit trace ...`
#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Write a workload's page stream as a trace (oracleGeneral: one object per page;
    /// native: with store flags, and MLP classes when the workload sets any).
    Write(WriteArgs),
    /// Describe a trace: accesses, pages, reuse, hot fractions, fitted Zipf alpha.
    Info(InfoArgs),
    /// Convert a trace to tierkit's native format or to oracleGeneral.
    Convert(ConvertArgs),
    /// Two workloads side by side (a recorded program and its built-in stand-in): hot
    /// shares, LRU miss-ratio curve, and how they rank the policies (Spearman's rho).
    Compare(crate::trace_compare_cmd::CompareTracesArgs),
}

/// Flags of `tierkit trace write`.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// The workload. See `tierkit list`.
    #[arg(long)]
    pub workload: String,
    #[command(flatten)]
    pub size: SizeArgs,
    /// Seed of the workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Output file.
    #[arg(short, long)]
    pub output: String,
    /// Output format: oracle-general or native.
    #[arg(long, default_value = "oracle-general")]
    pub format: String,
}

/// Flags of `tierkit trace info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The trace file.
    pub file: String,
    /// Its format (default: detected): native, oracle-general, csv, lackey, perf-script,
    /// pinatrace, damo.
    #[arg(long)]
    pub format: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also list the N most accessed pages (address and accesses).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub top: usize,
}

/// Flags of `tierkit trace convert`.
#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The input trace.
    pub input: String,
    /// The output file.
    pub output: String,
    /// Input format (default: detected).
    #[arg(long)]
    pub from: Option<String>,
    /// Output format: native or oracle-general.
    #[arg(long, default_value = "native")]
    pub to: String,
    /// Round the instruction gaps of a native trace with a clock to multiples of N
    /// instructions (`auto`: the largest power of two not above the mean gap), carrying
    /// the remainder: every prefix stays within N of its exact count, the total exact.
    /// Shrinks a recorded trace by a third or more.
    #[arg(long, value_name = "auto|N", value_parser = parse_unit)]
    pub round_gaps: Option<Unit>,
}

/// A gap unit: `auto` or a number of instructions.
#[derive(Clone, Copy, Debug)]
pub enum Unit {
    /// The largest power of two not above the mean gap.
    Auto,
    /// This many instructions.
    Instructions(u64),
}

fn parse_unit(s: &str) -> Result<Unit, String> {
    match s {
        "auto" => Ok(Unit::Auto),
        n => match n.parse::<u64>() {
            Ok(v) if v >= 1 => Ok(Unit::Instructions(v)),
            _ => Err(format!("expected auto or a number of instructions >= 1, not {n:?}")),
        },
    }
}

/// A format named on the command line, if one is.
fn format(name: Option<&str>) -> Result<Option<Format>> {
    Ok(name.map(Format::parse).transpose()?)
}

/// An output format: native or oracle-general.
fn writable(name: &str) -> Result<Format> {
    match Format::parse(name)? {
        f @ (Format::Native | Format::OracleGeneral) => Ok(f),
        f => bail!("cannot write {} traces: the output formats are native and oracle-general", f.name()),
    }
}

/// `info`'s text report; `next_access` is the convention of an oracleGeneral trace's
/// `next_access_vtime`.
fn text(file: &str, format: Format, s: &TraceStats, next_access: Option<Convention>) -> String {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "n/a".into());
    format!(
        "{file} ({})\n\
         accesses              {}\n\
         writes                {}\n\
         distinct pages        {}\n\
         footprint             {:.1} MiB\n\
         reuse                 {:.4} of accesses go to pages seen before\n\
         median reuse distance {}\n\
         top 1% of pages       {:.4} of accesses\n\
         top 10% of pages      {:.4} of accesses\n\
         fitted Zipf alpha     {}\n\
         mlp classes           {}{}{}",
        format.name(),
        s.accesses,
        s.writes,
        s.pages,
        s.footprint_bytes as f64 / (1 << 20) as f64,
        s.reuse_fraction,
        opt(s.median_reuse_distance.map(|d| format!("{d} pages"))),
        s.top1_share,
        s.top10_share,
        opt(s.zipf_alpha.map(|a| format!("{a:.3}"))),
        classes_text(s),
        next_access.map_or_else(String::new, |c| format!("\nnext_access_vtime     {c}")),
        clock_text(s),
    ) + &hottest_text(s)
}

/// `info`'s MLP class line: the accesses of each class, or that the records carry none.
fn classes_text(s: &TraceStats) -> String {
    match s.classes {
        Some(counts) => {
            let each = MlpClass::ALL.iter().zip(counts).map(|(c, n)| format!("{} {n}", c.name()));
            each.collect::<Vec<_>>().join(", ")
        }
        None => "none (every access takes app.mlp)".into(),
    }
}

/// `info`'s clock lines, when the trace has a clock: the instructions retired, the
/// sample rate and the mean instructions per record.
fn clock_text(s: &TraceStats) -> String {
    let Some(c) = s.clock else { return String::new() };
    format!(
        "\ninstructions          {}\n\
         sampled               1 in {} memory-level accesses\n\
         instructions/record   {:.1}",
        c.instructions,
        c.sample_every,
        c.instructions as f64 / s.accesses as f64
    )
}

/// The `--top` lines of `info`'s text report: one per page, its address, accesses and
/// share.
fn hottest_text(s: &TraceStats) -> String {
    let mut out = String::new();
    if !s.hottest.is_empty() {
        out.push_str(&format!("\nhottest {} pages (address, accesses, share):", s.hottest.len()));
    }
    for &(page, n) in &s.hottest {
        out.push_str(&format!("\n  {:#x} {n} {:.4}", page << PAGE_SHIFT, n as f64 / s.accesses as f64));
    }
    out
}

/// `info`'s JSON report (`next_access` as in [`text`]).
fn json(file: &str, format: Format, s: &TraceStats, next_access: Option<Convention>) -> serde_json::Value {
    serde_json::json!({
        "file": file,
        "format": format.name(),
        "next_access_vtime": next_access.map(|c| c.to_string()),
        "accesses": s.accesses,
        "writes": s.writes,
        "pages": s.pages,
        "footprint_bytes": s.footprint_bytes,
        "reuse_fraction": s.reuse_fraction,
        "median_reuse_distance": s.median_reuse_distance,
        "top1_share": s.top1_share,
        "top10_share": s.top10_share,
        "zipf_alpha": s.zipf_alpha,
        "mlp_classes": s.classes.map(|counts| {
            let each = MlpClass::ALL.iter().zip(counts).map(|(c, n)| (c.name().to_string(), n.into()));
            each.collect::<serde_json::Map<_, _>>()
        }),
        "instructions": s.clock.map(|c| c.instructions),
        "sample_every": s.clock.map(|c| c.sample_every),
        "instructions_per_record": s.clock.map(|c| c.instructions as f64 / s.accesses as f64),
        "hottest": s.hottest.iter().map(|&(page, n)| serde_json::json!({
            "page": page,
            "address": format!("{:#x}", page << PAGE_SHIFT),
            "accesses": n,
        })).collect::<Vec<_>>(),
    })
}

/// Runs a `tierkit trace` command.
pub fn run(cmd: TraceCommand) -> Result<()> {
    match cmd {
        TraceCommand::Write(a) => {
            let to = writable(&a.format)?;
            let spec = a.size.apply(WorkloadSpec::new(&a.workload, 65_536, 3_000_000, a.seed))?;
            if to == Format::Native {
                let (header, pages) = write_native(&spec, Path::new(&a.output))?;
                let classes = if header.classes { ", with MLP classes" } else { "" };
                eprintln!("wrote {} requests over {pages} pages to {} (native{classes})", header.accesses, a.output);
                return Ok(());
            }
            let mut wl = workload::build(&spec)?;
            let mut buf: Vec<Access> = Vec::with_capacity(1 << 16);
            // The requests and then their next-access times: 16 bytes per request.
            let input = || format!("workload {}: accesses = {}", spec.name, wl.len());
            tierkit_sim::budget::check(u128::from(wl.len()) * 16, input, "writing it as oracle-general")?;
            let mut ids = Vec::new();
            ids.try_reserve_exact(wl.len() as usize).map_err(|e| anyhow!("{}: {e}", input()))?;
            loop {
                buf.clear();
                if wl.try_fill(&mut buf, 1 << 16)? == 0 {
                    break;
                }
                ids.extend(buf.iter().map(|x| x.page));
            }
            let n = ids.len() as u64;
            write_oracle_general(&a.output, ids)?;
            eprintln!("wrote {n} requests over {} pages to {} ({})", wl.pages(), a.output, to.name());
            Ok(())
        }
        TraceCommand::Info(a) => {
            let format = match format(a.format.as_deref())? {
                Some(f) => f,
                None => trace::detect(&a.file)?,
            };
            let (s, next_access) = if format == Format::OracleGeneral {
                let mut reader = RecordReader::open(Path::new(&a.file))?;
                (stats_with_top(&mut reader, &a.file, a.top)?, Some(reader.convention()))
            } else {
                (stats_with_top(trace::open(&a.file, Some(format))?.as_mut(), &a.file, a.top)?, None)
            };
            if a.json {
                println!("{}", serde_json::to_string_pretty(&json(&a.file, format, &s, next_access))?);
            } else {
                println!("{}", text(&a.file, format, &s, next_access));
            }
            Ok(())
        }
        TraceCommand::Compare(a) => crate::trace_compare_cmd::run(a),
        TraceCommand::Convert(a) => {
            let to = writable(&a.to)?;
            if let Some(unit) = a.round_gaps {
                let from = format(a.from.as_deref())?.map_or_else(|| trace::detect(&a.input), Ok)?;
                if to != Format::Native || from != Format::Native {
                    bail!(
                        "--round-gaps rounds a native trace's clock into a native trace (not {} to {})",
                        from.name(),
                        to.name()
                    );
                }
                let unit = match unit {
                    Unit::Auto => None,
                    Unit::Instructions(n) => Some(n),
                };
                let (n, unit) = round_trace(Path::new(&a.input), Path::new(&a.output), unit)?;
                eprintln!("wrote {n} accesses to {} (native, gaps rounded to {unit} instructions)", a.output);
                return Ok(());
            }
            let mut reader = trace::open(&a.input, format(a.from.as_deref())?)?;
            let n = trace::convert(reader.as_mut(), &a.output, to)?;
            eprintln!("wrote {n} accesses to {} ({})", a.output, to.name());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(test: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("tierkit-cli-trace-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn pages_of(path: &std::path::Path) -> Vec<u64> {
        let mut r = trace::open(path, None).unwrap();
        let mut out = Vec::new();
        while let Some(a) = r.next_access().unwrap() {
            out.push(a.page);
        }
        out
    }

    #[test]
    fn trace_write_native_and_oracle_general_hold_the_same_pages() {
        let dir = scratch("write");
        let size = || SizeArgs { pages: Some(500), footprint: None, accesses: Some(20_000), options: vec![] };
        for (format, name) in [("native", "t.tkt"), ("oracle-general", "t.og")] {
            let output = dir.join(name).display().to_string();
            let a = WriteArgs { workload: "zipf".into(), size: size(), seed: 4, output, format: format.into() };
            run(TraceCommand::Write(a)).unwrap();
        }
        let native = pages_of(&dir.join("t.tkt"));
        assert_eq!(native.len(), 20_000);
        assert!(native.iter().all(|&p| p < 500));
        assert_eq!(native, pages_of(&dir.join("t.og")));
        assert_eq!(trace::detect(dir.join("t.tkt")).unwrap(), Format::Native);
        let bad =
            WriteArgs { workload: "zipf".into(), size: size(), seed: 4, output: "x".into(), format: "csv".into() };
        let e = run(TraceCommand::Write(bad)).err().unwrap().to_string();
        assert!(e.contains("cannot write csv"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn trace_convert_and_info_report_the_input() {
        let dir = scratch("convert");
        let csv = dir.join("t.csv");
        std::fs::write(&csv, "page,op\n3,r\n9,w\n3,r\n3,r\n").unwrap();
        let out = dir.join("t.tkt");
        let a = ConvertArgs {
            input: csv.display().to_string(),
            output: out.display().to_string(),
            from: Some("csv".into()),
            to: "native".into(),
            round_gaps: None,
        };
        run(TraceCommand::Convert(a)).unwrap();
        assert_eq!(pages_of(&out), [3, 9, 3, 3]);
        let s = stats_with_top(trace::open(&out, None).unwrap().as_mut(), "t", 1).unwrap();
        let j = json("t.tkt", Format::Native, &s, None);
        assert_eq!(j["hottest"], serde_json::json!([{"page": 3, "address": "0x3000", "accesses": 3}]));
        assert_eq!(j["accesses"], 4);
        assert_eq!(j["writes"], 1);
        assert_eq!(j["pages"], 2);
        assert_eq!(j["reuse_fraction"], 0.5);
        assert_eq!(j["zipf_alpha"], serde_json::Value::Null);
        let t = text("t.tkt", Format::Native, &s, None);
        assert!(t.contains("t.tkt (native)") && t.contains("distinct pages        2"), "{t}");
        assert!(t.ends_with("hottest 1 pages (address, accesses, share):\n  0x3000 3 0.7500"), "{t}");
        let e = run(TraceCommand::Info(InfoArgs {
            file: csv.display().to_string(),
            format: Some("pin".into()),
            json: true,
            top: 0,
        }))
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("pin") && e.contains("pinatrace"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
