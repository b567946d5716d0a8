//! `tierkit list`: the workloads, policies and machine presets that exist.

use tierkit_core::policies::REGISTRY as POLICIES;
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
    println!("machine presets: {}", PRESETS.join(", "));
}
