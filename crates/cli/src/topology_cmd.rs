//! `tierkit topology`: the NUMA nodes, memory tiers and fast/slow classification.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use tierkit_linux::topology::{parse_list, Topology, TopologyOverrides};

/// Environment variable naming a root directory to read `sys/` from instead of `/`
/// (fixture trees in tests; the same as the hidden `--root` option).
pub const ROOT_ENV: &str = "TIERKIT_SYSFS_ROOT";

/// Options of `tierkit topology`.
#[derive(Args)]
pub struct TopologyArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Nodes to treat as fast, e.g. 0,1 (default: nodes with CPUs in the fastest memory tier).
    #[arg(long, value_parser = parse_nodes)]
    fast: Option<NodeList>,
    /// Nodes to treat as slow, e.g. 2-3 (default: CPU-less nodes and slower memory tiers).
    #[arg(long, value_parser = parse_nodes)]
    slow: Option<NodeList>,
    /// Read sysfs under this directory instead of / (for fixture trees; also TIERKIT_SYSFS_ROOT).
    #[arg(long, hide = true)]
    root: Option<PathBuf>,
}

/// NUMA node numbers given on the command line.
#[derive(Clone, Debug)]
struct NodeList(Vec<u32>);

/// A node list as the kernel writes them: `0,1`, `2-3`, `0-1,4`.
fn parse_nodes(text: &str) -> Result<NodeList> {
    let nodes =
        parse_list(text).with_context(|| format!("node list {text:?}: expected node numbers like 0,1 or 2-3"))?;
    Ok(NodeList(nodes))
}

/// Runs `tierkit topology`.
pub fn run(args: TopologyArgs) -> Result<()> {
    let root = args.root.or_else(|| std::env::var_os(ROOT_ENV).map(PathBuf::from)).unwrap_or_else(|| "/".into());
    let overrides = TopologyOverrides { fast: args.fast.map(|l| l.0), slow: args.slow.map(|l| l.0) };
    let topology = Topology::discover_with(&root, &overrides)?;
    if args.json {
        let mut json = serde_json::to_value(&topology)?;
        json["has_tiering"] = topology.has_tiering().into();
        json["nothing_to_tier"] = topology.nothing_to_tier().into();
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        print!("{topology}");
    }
    Ok(())
}
