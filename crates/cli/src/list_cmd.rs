//! `tierkit list`: the workloads, policies and machine presets that exist.

use anyhow::{bail, Result};
use tierkit_core::policies::{param_docs, COLLOID_SUFFIX, REGISTRY as POLICIES};
use tierkit_sim::model::config::PRESETS;
use tierkit_sim::reference::Reference;
use tierkit_sim::workload::REGISTRY as WORKLOADS;

/// Prints every name with a line about it.
pub fn run() {
    println!("workloads:");
    for w in WORKLOADS {
        println!("  {:<16} {}", w.name, w.about);
    }
    println!("references:");
    for (name, r) in Reference::ALL {
        let about = match r {
            Reference::AllLocal => "every page in the fast tier (upper bound)",
            Reference::None => "first touch, never migrate",
            Reference::StaticOracle => "best fixed placement by total accesses",
            Reference::Oracle => "epoch-by-epoch best placement net of migration cost (knows the future)",
        };
        println!("  {name:<16} {about}");
    }
    println!("policies:");
    for p in POLICIES {
        println!("  {:<16} {}", p.name, p.about);
    }
    println!("  <policy>+colloid  any policy above with Colloid's latency balancing (e.g. hemem+colloid)");
    println!("  <policy>:KEY=VALUE  a policy with a parameter changed (e.g. hemem:hot_threshold=8); see --params");
    println!("machine presets: {}", PRESETS.join(", "));
}

/// Prints `policy`'s parameters (with Colloid's under `colloid.` for a `+colloid` name).
pub fn params(policy: &str) -> Result<()> {
    let Some(docs) = param_docs(policy) else {
        let known: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
        bail!("unknown policy {policy:?}: expected one of {} (or one of them with {COLLOID_SUFFIX})", known.join(", "));
    };
    if docs.is_empty() {
        println!("{policy} has no parameters.");
        return Ok(());
    }
    println!("{policy}'s parameters, with their defaults. Set any of them where a policy is named,");
    println!("e.g. `tierkit sim --policy '{policy}:{}={}'`.", docs[0].key, docs[0].default);
    for d in docs {
        println!("\n  {} = {}", d.key, d.default);
        for line in textwrap::wrap(&d.about, 84) {
            println!("      {line}");
        }
    }
    Ok(())
}
