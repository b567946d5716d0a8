//! A workload resized and given options by the user: the CLI's `--pages`, `--footprint`,
//! `--accesses` and `--opt KEY=VALUE`, and the same keyword arguments in Python.

use super::WorkloadSpec;
use crate::SimError;

impl WorkloadSpec {
    /// This spec with `pages` (4 KiB pages) or `footprint_bytes` (rounded up to whole
    /// pages; not both), `accesses` and each `KEY=VALUE` of `options` applied in order;
    /// an absent size keeps the spec's.
    pub fn resized(
        mut self,
        pages: Option<u64>,
        footprint_bytes: Option<u64>,
        accesses: Option<u64>,
        options: &[impl AsRef<str>],
    ) -> Result<Self, SimError> {
        match (pages, footprint_bytes) {
            (Some(p), Some(_)) => {
                return Err(SimError::bad_option(self.owner(), "pages", p, "either pages or a footprint, not both"))
            }
            (Some(p), None) => self.pages = p,
            (None, Some(bytes)) => self.pages = bytes.div_ceil(tierkit_core::PAGE_SIZE),
            (None, None) => {}
        }
        if let Some(a) = accesses {
            self.accesses = a;
        }
        for o in options {
            let o = o.as_ref();
            let (k, v) = o
                .split_once('=')
                .ok_or_else(|| SimError::bad_option(self.owner(), o, o, "KEY=VALUE, like alpha=0.8"))?;
            self = self.with(k.trim(), v.trim());
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&str; 0] = [];

    #[test]
    fn sizes_and_options() {
        let base = WorkloadSpec::new("zipf", 100, 1000, 1);
        let s = base.clone().resized(None, Some(3 * 4096 + 1), Some(7), &[" alpha = 0.8", "x=a=b"]).unwrap();
        assert_eq!((s.pages, s.accesses), (4, 7));
        assert_eq!(s.options["alpha"], "0.8");
        assert_eq!(s.options["x"], "a=b");
        assert_eq!(base.clone().resized(Some(9), None, None, &NONE).unwrap().pages, 9);
        assert_eq!(base.clone().resized(None, None, None, &NONE).unwrap(), base);
    }

    #[test]
    fn errors_name_the_input() {
        let base = WorkloadSpec::new("zipf", 100, 1000, 1);
        let e = base.clone().resized(Some(1), Some(4096), None, &NONE).unwrap_err().to_string();
        assert_eq!(e, "workload zipf: option pages = \"1\": expected either pages or a footprint, not both");
        let e = base.resized(None, None, None, &["alpha0.8"]).unwrap_err().to_string();
        assert_eq!(e, "workload zipf: option alpha0.8 = \"alpha0.8\": expected KEY=VALUE, like alpha=0.8");
    }
}
