//! `tierkit run`/`attach`'s options of `--source damos`: the quota tuner's ceiling and hit
//! goal, the free-memory watermarks of the migration schemes and the memory cgroup they
//! are kept to (docs/LIVE.md, DAMOS). Each applies to `--source damos` only.

use anyhow::{bail, Context, Result};
use clap::Args;
use tierkit_linux::run::{DamosSettings, SourceChoice, SourceKind};

use crate::args::parse_size;

/// The DAMOS options; `None`: not given (the defaults of [`DamosSettings`]).
#[derive(Args, Clone, Debug, Default)]
pub struct DamosArgs {
    /// With --source damos: most bytes a migration scheme may move per second, e.g. 200MiB or 64MiB/s (default 200MiB, the quota of the kernel's DAMON tiering sample).
    #[arg(long, value_name = "SIZE", value_parser = parse_rate)]
    damos_max_rate: Option<u64>,
    /// With --source damos: the share of DAMON's hot bytes on the fast node (percent) below which cold fast memory is exchanged for hot slow memory (default 95).
    #[arg(long, value_name = "PCT", value_parser = parse_hit_goal)]
    damos_hit_goal: Option<f64>,
    /// With --source damos: the migrations stand still while less than PCT percent of the machine's memory is free (the low watermark; default 2).
    #[arg(long, value_name = "PCT", value_parser = parse_min_free)]
    damos_min_free: Option<u64>,
    /// With --source damos: the migrations stand still while more than PCT percent of the machine's memory is free (the high watermark; default 100: never).
    #[arg(long, value_name = "PCT", value_parser = parse_max_free)]
    damos_max_free: Option<u64>,
    /// With --source damos: migrate only pages charged to this memory cgroup (a cgroup2 path relative to its mount, e.g. tierkit/app); needs Linux 6.3+ DAMOS filters.
    #[arg(long, value_name = "PATH")]
    damos_memcg: Option<String>,
}

impl DamosArgs {
    /// The settings for `source`; refuses the options with any other source, and
    /// watermarks that leave no room between them.
    pub fn settings(&self, source: SourceChoice) -> Result<DamosSettings> {
        let given = [
            ("--damos-max-rate", self.damos_max_rate.is_some()),
            ("--damos-hit-goal", self.damos_hit_goal.is_some()),
            ("--damos-min-free", self.damos_min_free.is_some()),
            ("--damos-max-free", self.damos_max_free.is_some()),
            ("--damos-memcg", self.damos_memcg.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, set)| *set) {
            if source != SourceChoice::Only(SourceKind::Damos) {
                bail!("{name} applies to --source damos only (the source here is {})", source_name(source));
            }
        }
        let mut s = DamosSettings::default();
        s.tuner.max_bytes_per_sec = self.damos_max_rate.unwrap_or(s.tuner.max_bytes_per_sec);
        s.tuner.hit_goal = self.damos_hit_goal.unwrap_or(s.tuner.hit_goal);
        s.min_free_permil = self.damos_min_free.unwrap_or(s.min_free_permil);
        s.max_free_permil = self.damos_max_free.unwrap_or(s.max_free_permil);
        if s.min_free_permil >= s.max_free_permil {
            bail!(
                "--damos-min-free ({}%) must be below --damos-max-free ({}%): the migrations would never run",
                s.min_free_permil as f64 / 10.0,
                s.max_free_permil as f64 / 10.0
            );
        }
        if let Some(path) = &self.damos_memcg {
            if path.trim_matches('/').is_empty() {
                bail!("--damos-memcg {path:?}: expected a cgroup below the cgroup2 root, like tierkit/app");
            }
            s.memcg = Some(path.clone());
        }
        Ok(s)
    }
}

fn source_name(source: SourceChoice) -> &'static str {
    match source {
        SourceChoice::Auto => "auto",
        SourceChoice::Only(kind) => kind.name(),
    }
}

/// Bytes per second: a size (`200MiB`), optionally ending in `/s`; at least one page.
fn parse_rate(text: &str) -> Result<u64> {
    let size = text.trim().strip_suffix("/s").unwrap_or(text);
    let bytes = parse_size(size)?;
    if bytes < 4096 {
        bail!("{text:?}: expected at least 4KiB per second (one page)");
    }
    Ok(bytes)
}

/// A percentage (`2`, `0.5`) in thousandths, the unit of DAMOS watermarks, within `lo..=hi` thousandths.
fn percent_permil(text: &str, (lo, hi): (u64, u64)) -> Result<u64> {
    let pct: f64 = text.trim().parse().with_context(|| format!("{text:?}: expected a percentage, like 2 or 0.5"))?;
    let permil = (pct * 10.0).round();
    if !(lo as f64..=hi as f64).contains(&permil) {
        bail!("{text:?}: expected a percentage from {} to {} (in steps of 0.1)", lo as f64 / 10.0, hi as f64 / 10.0);
    }
    Ok(permil as u64)
}

fn parse_min_free(text: &str) -> Result<u64> {
    percent_permil(text, (0, 999))
}

fn parse_max_free(text: &str) -> Result<u64> {
    percent_permil(text, (1, 1000))
}

/// A percentage above 0 and at most 100, as a ratio.
fn parse_hit_goal(text: &str) -> Result<f64> {
    let pct: f64 = text.trim().parse().with_context(|| format!("{text:?}: expected a percentage, like 95"))?;
    if !(pct > 0.0 && pct <= 100.0) {
        bail!("{text:?}: expected a percentage above 0 and at most 100");
    }
    Ok(pct / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        damos: DamosArgs,
    }

    fn parse(args: &[&str]) -> Result<DamosArgs, String> {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied()))
            .map(|c| c.damos)
            .map_err(|e| e.to_string())
    }

    const DAMOS: SourceChoice = SourceChoice::Only(SourceKind::Damos);

    #[test]
    fn given_values_replace_the_defaults() {
        let args = parse(&[
            "--damos-max-rate",
            "64MiB/s",
            "--damos-hit-goal",
            "90",
            "--damos-min-free",
            "0.5",
            "--damos-max-free",
            "80",
            "--damos-memcg",
            "tk/app",
        ])
        .unwrap();
        let s = args.settings(DAMOS).unwrap();
        assert_eq!(s.tuner.max_bytes_per_sec, 64 << 20);
        assert!((s.tuner.hit_goal - 0.9).abs() < 1e-12);
        assert_eq!((s.min_free_permil, s.max_free_permil), (5, 800));
        assert_eq!(s.memcg.as_deref(), Some("tk/app"));
        assert_eq!(parse(&[]).unwrap().settings(DAMOS).unwrap(), DamosSettings::default());
        assert_eq!(parse(&["--damos-max-rate", "1GB"]).unwrap().damos_max_rate, Some(1_000_000_000));
    }

    #[test]
    fn values_out_of_range_are_refused_naming_the_option() {
        for (option, bad) in [
            ("--damos-max-rate", "4095"),
            ("--damos-max-rate", "fast"),
            ("--damos-hit-goal", "0"),
            ("--damos-hit-goal", "101"),
            ("--damos-min-free", "100"),
            ("--damos-min-free", "-1"),
            ("--damos-max-free", "0"),
            ("--damos-max-free", "100.1"),
        ] {
            let err = parse(&[&format!("{option}={bad}")]).unwrap_err();
            assert!(err.contains(option) && err.contains(bad), "{option} {bad}: {err}");
        }
        let crossed = parse(&["--damos-min-free", "10", "--damos-max-free", "10"]).unwrap();
        let err = crossed.settings(DAMOS).unwrap_err().to_string();
        assert!(err.contains("--damos-min-free (10%)") && err.contains("--damos-max-free (10%)"), "{err}");
        let err = parse(&["--damos-memcg", "/"]).unwrap().settings(DAMOS).unwrap_err().to_string();
        assert!(err.contains("--damos-memcg \"/\""), "{err}");
    }

    #[test]
    fn the_options_are_refused_with_any_other_source() {
        let args = parse(&["--damos-memcg", "tk"]).unwrap();
        let err = args.settings(SourceChoice::Only(SourceKind::Damon)).unwrap_err().to_string();
        assert_eq!(err, "--damos-memcg applies to --source damos only (the source here is damon)");
        let err = parse(&["--damos-min-free", "5"]).unwrap().settings(SourceChoice::Auto).unwrap_err().to_string();
        assert!(err.starts_with("--damos-min-free applies to --source damos only"), "{err}");
        assert!(parse(&[]).unwrap().settings(SourceChoice::Auto).is_ok(), "nothing given, nothing refused");
    }
}
