//! `--png DIR`: each figure as DIR/NAME.svg and DIR/NAME.png. plotters draws the PNG's
//! pixels itself (the same drawing as the SVG) and `png` encodes them; its text needs a
//! font file, Debian's DejaVu Sans (package fonts-dejavu-core).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::{BitMapBackend, FontStyle, IntoDrawingArea};

use super::chart::{svg_file, Chart, HEIGHT, WIDTH};
use super::Figure;

/// Where fonts-dejavu-core puts its fonts; `$TIERKIT_FONT_DIR` names another directory
/// holding the same two files.
const FONT_DIR: &str = "/usr/share/fonts/truetype/dejavu";
const FONTS: [(&str, FontStyle); 2] = [("DejaVuSans.ttf", FontStyle::Normal), ("DejaVuSans-Bold.ttf", FontStyle::Bold)];

/// Registers DejaVu Sans (regular and bold) as plotters' sans-serif, once per process.
fn load_fonts() -> Result<()> {
    static LOADED: OnceLock<Result<(), String>> = OnceLock::new();
    let loaded = LOADED.get_or_init(|| {
        let dir = std::env::var_os("TIERKIT_FONT_DIR").map_or_else(|| PathBuf::from(FONT_DIR), PathBuf::from);
        for (file, style) in FONTS {
            let path = dir.join(file);
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "--png draws the figures' text with DejaVu Sans, and {} cannot be read ({e}): install it \
                     (Debian: apt-get install fonts-dejavu-core) or set TIERKIT_FONT_DIR to a directory holding {}",
                    path.display(),
                    FONTS.map(|f| f.0).join(" and ")
                )
            })?;
            // plotters keeps the font for the rest of the process.
            plotters::style::register_font("sans-serif", style, Box::leak(bytes.into_boxed_slice()))
                .map_err(|_| format!("--png: {} is not a font file plotters can read", path.display()))?;
        }
        Ok(())
    });
    loaded.clone().map_err(|e| anyhow!(e))
}

/// The figure as a PNG of [`WIDTH`] x [`HEIGHT`] pixels.
fn png(chart: &Chart) -> Result<Vec<u8>> {
    load_fonts()?;
    let mut rgb = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (WIDTH, HEIGHT)).into_drawing_area();
        chart.draw(&root).map_err(|e| anyhow!("{e}"))?;
        root.present().map_err(|e| anyhow!("{e}"))?;
    }
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&rgb)?;
    writer.finish()?;
    Ok(out)
}

/// Writes every figure into `dir` as SVG and PNG.
pub fn write_all(dir: &Path, figures: &[&Figure]) -> Result<()> {
    load_fonts()?;
    std::fs::create_dir_all(dir).with_context(|| format!("--png {}: cannot create the directory", dir.display()))?;
    for f in figures {
        let svg = dir.join(format!("{}.svg", f.name));
        std::fs::write(&svg, svg_file(&f.chart.svg()?)).with_context(|| format!("writing {}", svg.display()))?;
        let path = dir.join(format!("{}.png", f.name));
        let bytes = png(&f.chart).with_context(|| format!("drawing {}", path.display()))?;
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::chart::{LineChart, Series, XAxis};
    use super::*;

    #[test]
    fn png_is_a_png_of_the_figure_size_with_more_than_a_background() {
        if !Path::new(FONT_DIR).join(FONTS[0].0).is_file() && std::env::var_os("TIERKIT_FONT_DIR").is_none() {
            panic!("{FONT_DIR} lacks DejaVu Sans: apt-get install fonts-dejavu-core (make deps does)");
        }
        let chart = Chart::Line(LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: XAxis::Numeric,
            markers: true,
            series: vec![Series { name: "a".into(), points: vec![(0.0, Some(1.0)), (1.0, Some(3.0))] }],
        });
        let bytes = png(&chart).unwrap();
        let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut pixels).unwrap();
        assert_eq!((info.width, info.height, info.color_type), (WIDTH, HEIGHT, png::ColorType::Rgb));
        // Text (the title) in the top rows and the series' colour in the plot.
        let dark = pixels[..(24 * WIDTH * 3) as usize].chunks(3).filter(|p| p.iter().all(|c| *c < 100)).count();
        assert!(dark > 30, "no title drawn: {dark} dark pixels");
        assert!(pixels.chunks(3).any(|p| p == [0x1f, 0x77, 0xb4]), "no series drawn");
    }
}
