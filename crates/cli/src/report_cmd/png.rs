//! `--png DIR`: each figure as DIR/NAME.svg and DIR/NAME.png. tierkit has no rasteriser
//! of its own; headless Chromium renders the SVG at the figure's size.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::svg::{HEIGHT, WIDTH};
use super::Figure;

/// Chromium from `$TIERKIT_CHROMIUM`, else `chromium` or `chromium-browser` on PATH.
fn chromium() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("TIERKIT_CHROMIUM") {
        return Ok(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    bail!("--png needs headless Chromium to rasterise the figures: install it (Debian: apt-get install chromium) or set TIERKIT_CHROMIUM")
}

/// Writes every figure into `dir` as SVG and PNG.
pub fn write_all(dir: &Path, figures: &[&Figure]) -> Result<()> {
    let browser = chromium()?;
    std::fs::create_dir_all(dir).with_context(|| format!("--png {}: cannot create the directory", dir.display()))?;
    let dir = dir.canonicalize().with_context(|| format!("--png {}", dir.display()))?;
    for f in figures {
        let svg = dir.join(format!("{}.svg", f.name));
        let png = dir.join(format!("{}.png", f.name));
        // Standalone SVG needs the namespace that inline SVG in HTML takes for granted.
        let text = f.svg.replacen("<svg ", "<svg xmlns=\"http://www.w3.org/2000/svg\" ", 1);
        std::fs::write(&svg, format!("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n{text}\n"))
            .with_context(|| format!("writing {}", svg.display()))?;
        let _ = std::fs::remove_file(&png);
        let out = Command::new(&browser)
            .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
            .arg(format!("--window-size={WIDTH},{HEIGHT}"))
            .arg(format!("--screenshot={}", png.display()))
            .arg(format!("file://{}", svg.display()))
            .output()
            .with_context(|| format!("--png: cannot run {}", browser.display()))?;
        if !png.is_file() {
            bail!(
                "--png: {} did not write {} (exit {}): {}",
                browser.display(),
                png.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).lines().last().unwrap_or("")
            );
        }
    }
    Ok(())
}
