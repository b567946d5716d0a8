//! One machine from the pieces a user gives: a preset, a TOML file overlaying it,
//! `KEY=VALUE` overrides and background traffic. The CLI's flags and the Python keyword
//! arguments both come here.

use super::MachineConfig;
use crate::SimError;

impl MachineConfig {
    /// The preset `preset`, overlaid by the TOML file `file`, then by each `KEY=VALUE` of
    /// `overrides` in order, with `antagonist` (a fraction of the fast tier's bandwidth in
    /// [0, 1)) taken by background traffic on the fast tier; validated.
    pub fn resolve(
        preset: &str,
        file: Option<&str>,
        overrides: &[impl AsRef<str>],
        antagonist: Option<f64>,
    ) -> Result<Self, SimError> {
        let mut cfg = Self::preset(preset)?;
        if let Some(file) = file {
            let text =
                std::fs::read_to_string(file).map_err(|source| SimError::Io { file: file.to_string(), source })?;
            cfg = cfg.merge_toml(&text, file)?;
        }
        for s in overrides {
            cfg = cfg.set(s.as_ref())?;
        }
        if let Some(f) = antagonist {
            if !(0.0..1.0).contains(&f) {
                return Err(SimError::bad_option(
                    "machine",
                    "antagonist",
                    f,
                    "a fraction of the fast tier's bandwidth in [0, 1)",
                ));
            }
            cfg.tiers[0].background_gbps = f * cfg.tiers[0].bandwidth_gbps;
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: [&str; 0] = [];

    #[test]
    fn layers_apply_in_order() {
        let dir = std::env::temp_dir().join(format!("tierkit-resolve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("m.toml");
        std::fs::write(&file, "[app]\nthreads = 4\n").unwrap();
        let file = file.to_str().unwrap();
        let cfg = MachineConfig::resolve("numa", Some(file), &NONE, None).unwrap();
        assert_eq!((cfg.name.as_str(), cfg.app.threads), ("numa", 4));
        // An override wins over the file.
        let cfg = MachineConfig::resolve("numa", Some(file), &["app.threads=8"], Some(0.5)).unwrap();
        assert_eq!(cfg.app.threads, 8);
        assert_eq!(cfg.tiers[0].background_gbps, 0.5 * cfg.tiers[0].bandwidth_gbps);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn errors_name_the_input() {
        let msg = |r: Result<MachineConfig, SimError>| r.unwrap_err().to_string();
        assert!(msg(MachineConfig::resolve("dram", None, &NONE, None)).starts_with("unknown machine preset \"dram\""));
        let missing = msg(MachineConfig::resolve("cxl", Some("/nonexistent/m.toml"), &NONE, None));
        assert!(missing.starts_with("/nonexistent/m.toml: "), "{missing}");
        assert!(msg(MachineConfig::resolve("cxl", None, &["app.threads=0"], None)).contains("app.threads"));
        for f in [1.0, -0.1, f64::NAN] {
            let e = msg(MachineConfig::resolve("cxl", None, &NONE, Some(f)));
            assert_eq!(
                e,
                format!(
                    "machine: option antagonist = \"{f}\": expected a fraction of the fast tier's bandwidth in [0, 1)"
                )
            );
        }
    }
}
