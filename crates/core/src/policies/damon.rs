//! `damon`: DAMON-based tiering, the kernel's region-granular alternative M5 compares
//! against (M5 §3, §7: "DAMON", Linux 6.11's DAMOS `migrate_hot` / `migrate_cold`).
//!
//! The policy asks for DAMON-style adaptive-region monitoring (sampling every 5 ms,
//! aggregating every 100 ms, 10 to 1000 regions: DAMON's defaults). At each
//! aggregation, a region whose sampled page was found accessed in at least `hot_min`
//! of the checks is hot: its slow-tier pages are promoted (DAMOS `migrate_hot`); when
//! the fast tier's free pages are below the watermark, regions found idle are cold and
//! their fast pages are demoted (DAMOS `migrate_cold`), idlest and largest first. Both
//! actions are bounded by a quota of pages per aggregation, as DAMOS quotas are.

use crate::memory::MoveStatus;
use crate::policy::{AccessedScan, Ctx, Migration, Policy, SourceRequest};
use crate::telemetry::Telemetry;
use crate::types::{Page, TierId, MILLISECOND};
use crate::{Event, ParamError};

/// Parameters of [`DamonPolicy`].
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct DamonParams {
    /// DAMON's sampling and aggregation intervals and region bounds (DAMON defaults:
    /// 5 ms, 100 ms, 10 to 1000 regions).
    pub scan: AccessedScan,
    /// Checks (out of aggregation / sampling = 20) that make a region hot.
    pub hot_min: u32,
    /// Pages moved per aggregation and direction (the DAMOS quota).
    pub quota_pages: u64,
    /// Demote while the fast tier's free pages are below this fraction of it.
    pub free_watermark: f64,
}

impl Default for DamonParams {
    fn default() -> Self {
        Self {
            scan: AccessedScan {
                sample_interval: 5 * MILLISECOND,
                aggregation_interval: 100 * MILLISECOND,
                regions: Some((10, 1000)),
            },
            hot_min: 5,
            quota_pages: 4096,
            free_watermark: 0.02,
        }
    }
}

/// DAMON-based tiering; see the module documentation.
#[derive(Clone, Debug)]
pub struct DamonPolicy {
    params: DamonParams,
    /// The last aggregation's regions: (first page, pages, checks found accessed).
    regions: Vec<(Page, u64, u32)>,
    /// Promotions minus demotions queued and not yet executed.
    inflight: i64,
}

impl DamonPolicy {
    /// A DAMON policy.
    pub fn new(params: DamonParams) -> Result<Self, ParamError> {
        let s = &params.scan;
        if s.sample_interval == 0 || s.aggregation_interval < s.sample_interval {
            return Err(ParamError::new("scan", s.aggregation_interval, "0 < sample_interval <= aggregation_interval"));
        }
        if !matches!(s.regions, Some((lo, hi)) if lo >= 1 && lo <= hi) {
            return Err(ParamError::new(
                "scan",
                format!("{:?}", s.regions),
                "region bounds (min, max) with 1 <= min <= max",
            ));
        }
        if params.quota_pages == 0 {
            return Err(ParamError::new("quota_pages", 0, "at least 1 page"));
        }
        if !(0.0..0.5).contains(&params.free_watermark) {
            return Err(ParamError::new("free_watermark", params.free_watermark, "a fraction in [0, 0.5)"));
        }
        Ok(Self { params, regions: Vec::new(), inflight: 0 })
    }

    /// Applies the schemes to the regions of the aggregation just reported: the hot
    /// regions' slow pages are wanted in the fast tier; idle regions' fast pages are
    /// demoted to make room for them and keep the watermark; then the wanted pages are
    /// promoted (the mover runs demotions first).
    fn act(&mut self, ctx: &mut Ctx<'_>) {
        let quota = self.params.quota_pages as usize;
        self.regions.sort_unstable_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        let mut wanted: Vec<Page> = Vec::new();
        'hot: for &(first, pages, hits) in &self.regions {
            if hits < self.params.hot_min {
                break;
            }
            for page in first..first + pages {
                if wanted.len() >= quota {
                    break 'hot;
                }
                if ctx.mem.tier_of(page).is_some_and(|t| t != TierId::FAST) {
                    wanted.push(page);
                }
            }
        }
        let cap = ctx.mem.tiers()[0].capacity_pages as f64;
        let free = ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight;
        let mut short = (self.params.free_watermark * cap).ceil() as i64 + wanted.len() as i64 - free;
        let mut demoted = 0;
        // Idlest first, then largest.
        self.regions.sort_unstable_by(|a, b| a.2.cmp(&b.2).then(b.1.cmp(&a.1)).then(a.0.cmp(&b.0)));
        'cold: for &(first, pages, hits) in &self.regions {
            if hits >= self.params.hot_min {
                break;
            }
            for page in first..first + pages {
                if short <= 0 || demoted >= quota {
                    break 'cold;
                }
                if ctx.mem.tier_of(page) == Some(TierId::FAST) {
                    ctx.demote(page);
                    self.inflight -= 1;
                    demoted += 1;
                    short -= 1;
                }
            }
        }
        let room = (ctx.mem.free_pages(TierId::FAST) as i64 - self.inflight).max(0) as usize;
        for &page in wanted.iter().take(room) {
            ctx.promote(page);
            self.inflight += 1;
        }
        self.regions.clear();
    }
}

impl Policy for DamonPolicy {
    fn name(&self) -> &str {
        "damon"
    }

    fn sources(&self) -> SourceRequest {
        SourceRequest { accessed: Some(self.params.scan), ..Default::default() }
    }

    fn on_events(&mut self, events: &[Event], ctx: &mut Ctx<'_>) {
        for e in events {
            if let Event::Accessed { first, pages, count } = *e {
                // A region that starts at or before the previous one begins a new report.
                if self.regions.last().is_some_and(|&(prev, _, _)| first <= prev) {
                    self.act(ctx);
                }
                self.regions.push((first, pages, count));
            }
        }
        if !self.regions.is_empty() {
            self.act(ctx);
        }
    }

    fn on_tick(&mut self, _telemetry: &Telemetry, _ctx: &mut Ctx<'_>) {}

    fn on_moved(&mut self, results: &[(Migration, MoveStatus)]) {
        for (m, _) in results {
            self.inflight += if m.to == TierId::FAST { -1 } else { 1 };
        }
    }

    fn metadata_bytes(&self) -> usize {
        self.regions.capacity() * std::mem::size_of::<(Page, u64, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{InMemory, Memory, Mover, Plan};

    #[test]
    fn hot_regions_come_in_and_idle_regions_go_out_under_pressure() {
        // 100 fast pages full of pages 0..100; pages 100..300 slow.
        let mut mem = InMemory::new(&[100, 1000]).unwrap();
        for p in 0..300 {
            mem.touch(p);
        }
        let params = DamonParams { quota_pages: 50, ..Default::default() };
        let mut d = DamonPolicy::new(params).unwrap();
        let mut sources = d.sources();
        let report = [
            Event::Accessed { first: 0, pages: 100, count: 0 }, // idle fast region
            Event::Accessed { first: 100, pages: 40, count: 18 }, // hot slow region
            Event::Accessed { first: 140, pages: 160, count: 1 }, // lukewarm
        ];
        let mut plan = Plan::default();
        d.on_events(&report, &mut Ctx { mem: &mem, plan: &mut plan, sources: &mut sources });
        let mut results = Vec::new();
        Mover::default().execute(&mut plan, &mut mem, &mut results);
        d.on_moved(&results);
        // Demotions of the idle region made room for the whole hot region.
        assert!((100..140).all(|p| mem.tier_of(p) == Some(TierId::FAST)));
        assert!((140..300).all(|p| mem.tier_of(p) == Some(TierId(1))), "lukewarm pages stay");
        assert!(mem.free_pages(TierId::FAST) >= 2, "the watermark is kept");
        assert_eq!(
            DamonPolicy::new(DamonParams { quota_pages: 0, ..Default::default() }).unwrap_err().param,
            "quota_pages"
        );
    }
}
