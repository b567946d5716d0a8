//! The report's figures, drawn by plotters: line charts with axes, ticks and a legend, and
//! heat maps as a grid of cells with a colour scale. One drawing serves both outputs: SVG
//! (inline in the page, and `--png`'s .svg files) and an RGB bitmap (`--png`'s .png files,
//! see [`super::png`]). Every figure is [`WIDTH`] x [`HEIGHT`] pixels.
//!
//! The SVG needs no font: plotters lays text out only for the bitmap (the browser sets
//! the SVG's text), so nothing here asks for text sizes.

use std::fmt::Write;
use std::ops::Range;

use anyhow::anyhow;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontTransform;

use super::html::esc;

/// Width of every figure.
pub const WIDTH: u32 = 760;
/// Height of every figure.
pub const HEIGHT: u32 = 380;
const LEFT: u32 = 70;
const TOP: u32 = 40;
const RIGHT: u32 = 170;
const BOTTOM: u32 = 50;

const COLOURS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];
const INK: RGBColor = RGBColor(0x33, 0x33, 0x33);
const GRID: RGBColor = RGBColor(0xdd, 0xdd, 0xdd);
/// Stroke width of a series' line (axes and grid lines are 1).
pub const SERIES_STROKE: u32 = 2;

/// One line of a chart; a `None` point leaves a gap.
pub struct Series {
    /// Legend name.
    pub name: String,
    /// `(x, y)` points in x order.
    pub points: Vec<(f64, Option<f64>)>,
}

/// How the x axis is labelled.
pub enum XAxis {
    /// Numeric ticks over the data's range.
    Numeric,
    /// One labelled tick per category at x = 0, 1, 2, ...
    Categories(Vec<String>),
}

/// A line chart.
pub struct LineChart {
    /// Title above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// X axis kind.
    pub x_axis: XAxis,
    /// Whether to mark each point with a dot.
    pub markers: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// A heat map: rows of cells coloured by a value in 0..=1.
pub struct HeatMap {
    /// Title above the grid.
    pub title: String,
    /// X axis label (the columns span 0..100 of it).
    pub x_label: String,
    /// Y axis label, left of the row labels (empty: none).
    pub y_label: String,
    /// What the colour means, shown beside the scale.
    pub value_label: String,
    /// Labels of the scale's top (value 1) and bottom (value 0).
    pub scale: [String; 2],
    /// The rows, top first; rows may differ in length.
    pub rows: Vec<HeatRow>,
    /// Per column, the labels of its start and end, for hover text ("2.0%", "4.0%").
    pub columns: Vec<(String, String)>,
    /// What the columns are, and the unit of the cells' values, for hover text.
    pub column_noun: String,
    pub unit: String,
}

/// One row of a [`HeatMap`].
pub struct HeatRow {
    /// Label left of the row (empty: none, for dense rows labelled every few).
    pub label: String,
    /// What the row is, for hover text.
    pub what: String,
    /// `(value in 0..=1, value as shown in hover text)` per cell.
    pub cells: Vec<(f64, String)>,
}

/// A figure to draw.
pub enum Chart {
    Line(LineChart),
    Heat(HeatMap),
}

/// What a drawing leaves for the SVG: the hover text of each heat-map cell, cells being
/// the last rectangles drawn (plotters draws no hover text; [`Chart::svg`] adds it).
type Drawn<DB> = Result<Vec<String>, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Tick positions covering `lo..=hi` at a 1-2-5 step, about `want` of them.
fn ticks(lo: f64, hi: f64, want: usize) -> (Vec<f64>, f64) {
    let span = (hi - lo).max(f64::EPSILON);
    let raw = span / want as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    ((first..=last).map(|i| i as f64 * step).collect(), step)
}

fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 { 0 } else { (-step.log10().floor()) as usize };
    let a = v.abs();
    if a >= 1e6 && step >= 1.0 {
        format!("{v:.1e}")
    } else {
        format!("{v:.decimals$}")
    }
}

/// Rounds `hi` up and `lo` down to whole ticks so lines do not touch the frame.
fn padded(lo: f64, hi: f64) -> (f64, f64) {
    if (hi - lo).abs() < 1e-12 {
        return if hi == 0.0 { (0.0, 1.0) } else { (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1) };
    }
    let (_, step) = ticks(lo, hi, 5);
    ((lo / step).floor() * step, (hi / step).ceil() * step)
}

/// A linear axis over `range` with ticks (and grid lines) exactly at `ticks`.
struct Axis {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range.clone()).map(v, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        // Bold points only: no light grid lines between the ticks.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// Text of `px` CSS pixels (plotters writes an SVG font-size of size / 1.24).
fn text(px: f64) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", px * 1.24).into_font()).color(&BLACK)
}

/// White background and the bold title centred above the plot.
fn frame<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, title: &str) -> Drawn<DB> {
    root.fill(&WHITE)?;
    let style = ("sans-serif", 14.0 * 1.24, FontStyle::Bold)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(title.to_string(), ((WIDTH / 2) as i32, 17), style))?;
    Ok(Vec::new())
}

/// `label` rotated to read upwards, centred on `(x, y)` (plotters' own y_desc sits at the
/// very edge, where a bitmap's glyphs are cut off).
fn upwards<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, label: &str, (x, y): (i32, i32)) -> Drawn<DB> {
    let style = ("sans-serif", 12.0 * 1.24)
        .into_font()
        .transform(FontTransform::Rotate270)
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(label.to_string(), (x, y), style))?;
    Ok(Vec::new())
}

impl Chart {
    /// The title, for the SVG's `<title>`.
    fn title(&self) -> &str {
        match self {
            Chart::Line(c) => &c.title,
            Chart::Heat(h) => &h.title,
        }
    }

    /// Draws the figure on `root` (of [`WIDTH`] x [`HEIGHT`]).
    pub fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        match self {
            Chart::Line(c) => c.draw(root),
            Chart::Heat(h) => h.draw(root),
        }
    }

    /// The figure as one `<svg>` element for an HTML page (no namespace; add
    /// [`svg_file`] for a file of its own).
    pub fn svg(&self) -> anyhow::Result<String> {
        let mut drawn = String::new();
        let tips = {
            let root = SVGBackend::with_string(&mut drawn, (WIDTH, HEIGHT)).into_drawing_area();
            let tips = self.draw(&root).map_err(|e| anyhow!("drawing {}: {e}", self.title()))?;
            root.present().map_err(|e| anyhow!("drawing {}: {e}", self.title()))?;
            tips
        };
        // plotters' own opening tag carries a namespace that inline SVG takes for granted;
        // the page's tag names the figure's kind and title instead.
        let body = drawn.split_once(">\n").map_or("", |(_, b)| b).trim_end();
        let body = body.strip_suffix("</svg>").unwrap_or(body);
        let kind = if matches!(self, Chart::Line(_)) { "line-chart" } else { "heat-map" };
        let mut out = format!(
            r#"<svg class="figure {kind}" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"><title>{}</title>"#,
            esc(self.title())
        );
        // plotters writes a line per element (and a text's content on a line of its own);
        // the cells are the last lines, one `<rect .../>` each, and take their hover text
        // as a `<title>` child.
        let lines: Vec<&str> = body.lines().collect();
        let (drawing, cells) = lines.split_at(lines.len().saturating_sub(tips.len()));
        // One line for the whole element: text as `<text ...>label</text>`, and a page
        // whose figures are easy to find line by line.
        for line in drawing {
            out.push_str(line);
        }
        for (line, tip) in cells.iter().zip(&tips) {
            let attrs = line
                .strip_prefix("<rect ")
                .and_then(|l| l.strip_suffix("/>"))
                .ok_or_else(|| anyhow!("drawing {}: a heat-map cell is no <rect/> but {line}", self.title()))?;
            let attrs = attrs.replace(r#" opacity="1""#, "").replace(r#" stroke="none""#, "");
            let _ = write!(out, r#"<rect class="cell" {attrs}><title>{}</title></rect>"#, esc(tip));
        }
        out.push_str("</svg>");
        Ok(out)
    }
}

/// An `<svg>` element of [`Chart::svg`] as a standalone SVG file.
pub fn svg_file(svg: &str) -> String {
    let svg = svg.replacen("<svg ", "<svg xmlns=\"http://www.w3.org/2000/svg\" ", 1);
    format!("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n{svg}\n")
}

impl LineChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        frame(root, &self.title)?;
        let ys: Vec<f64> = self.series.iter().flat_map(|s| s.points.iter().filter_map(|p| p.1)).collect();
        let (ylo, yhi) = padded(
            ys.iter().copied().fold(f64::INFINITY, f64::min).min(0.0),
            ys.iter().copied().fold(f64::NEG_INFINITY, f64::max).max(0.0),
        );
        let (xlo, xhi) = match &self.x_axis {
            XAxis::Categories(c) => (-0.5, c.len() as f64 - 0.5),
            XAxis::Numeric => {
                let xs = self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
                let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
                if lo.is_finite() && hi > lo {
                    (lo.min(0.0), hi)
                } else {
                    (0.0, 1.0)
                }
            }
        };
        let (yticks, ystep) = ticks(ylo, yhi, 6);
        let (xticks, xstep) = match &self.x_axis {
            XAxis::Categories(c) => ((0..c.len()).map(|i| i as f64).collect(), 1.0),
            XAxis::Numeric => ticks(xlo, xhi, 8),
        };
        let x_label = |x: &f64| match &self.x_axis {
            XAxis::Categories(c) => c.get(x.round().max(0.0) as usize).cloned().unwrap_or_default(),
            XAxis::Numeric => tick_label(*x, xstep),
        };
        let y_label = |y: &f64| tick_label(*y, ystep);
        let (plot, legend) = root.split_horizontally(WIDTH - RIGHT);
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(TOP)
            .set_label_area_size(LabelAreaPosition::Left, LEFT)
            .set_label_area_size(LabelAreaPosition::Bottom, BOTTOM)
            .build_cartesian_2d(Axis { range: xlo..xhi, ticks: xticks }, Axis { range: ylo..yhi, ticks: yticks })?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .bold_line_style(GRID)
            .axis_style(INK)
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .label_style(text(12.0))
            .axis_desc_style(text(12.0))
            .x_desc(self.x_label.as_str())
            .draw()?;
        upwards(root, &self.y_label, (16, (TOP + (HEIGHT - TOP - BOTTOM) / 2) as i32))?;
        chart.plotting_area().draw(&Rectangle::new([(xlo, ylo), (xhi, yhi)], INK))?;
        for (i, s) in self.series.iter().enumerate() {
            // Past ten series the colours repeat on thin lines (plotters draws dashes as a
            // line per dash: too many elements for the page).
            let width = if i < COLOURS.len() { SERIES_STROKE } else { 1 };
            let style = COLOURS[i % COLOURS.len()].stroke_width(width);
            // Split at gaps into separate lines.
            for run in s.points.split(|p| p.1.is_none()).filter(|r| !r.is_empty()) {
                let pts: Vec<(f64, f64)> = run.iter().map(|&(x, y)| (x, y.unwrap_or(0.0))).collect();
                chart.draw_series(std::iter::once(PathElement::new(pts, style)))?;
            }
            if self.markers {
                let dots = s.points.iter().filter_map(|&(x, y)| Some(Circle::new((x, y?), 3, style.filled())));
                chart.draw_series(dots)?;
            }
            let ly = (TOP + 8 + i as u32 * 16) as i32;
            legend.draw(&PathElement::new([(12, ly), (32, ly)], style))?;
            legend.draw(&Text::new(s.name.clone(), (38, ly), text(12.0).pos(Pos::new(HPos::Left, VPos::Center))))?;
        }
        Ok(Vec::new())
    }
}

/// Colour levels of a heat map: few enough that neighbouring cells of nearly equal
/// values share one element (and the report stays small), enough to read a log scale.
const COLOUR_LEVELS: u32 = 12;

/// The colour level of a value in [0, 1] (clamped).
fn colour_level(v: f64) -> u32 {
    (v.clamp(0.0, 1.0) * f64::from(COLOUR_LEVELS)).round() as u32
}

/// Colour of `v` in 0..=1 on a purple (0), teal (0.5), yellow (1) scale.
fn heat_colour(v: f64) -> RGBColor {
    const STOPS: [[f64; 3]; 3] = [[68.0, 1.0, 84.0], [33.0, 145.0, 140.0], [253.0, 231.0, 37.0]];
    let v = v.clamp(0.0, 1.0) * 2.0;
    let (a, b, t) = if v <= 1.0 { (STOPS[0], STOPS[1], v) } else { (STOPS[1], STOPS[2], v - 1.0) };
    let c = |i: usize| (a[i] + (b[i] - a[i]) * t).round() as u8;
    RGBColor(c(0), c(1), c(2))
}

impl HeatMap {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        frame(root, &self.title)?;
        let left = LEFT + 40;
        let pw = WIDTH - LEFT - RIGHT - 40;
        let ph = (HEIGHT - TOP - BOTTOM) as i32;
        let cols = self.rows.iter().map(|r| r.cells.len()).max().unwrap_or(0).max(1);
        let n = self.rows.len().max(1);
        // Row r spans n - r - 1 .. n - r on the y axis, so the first row is on top.
        let labelled: Vec<f64> =
            (0..self.rows.len()).filter(|&r| !self.rows[r].label.is_empty()).map(|r| (n - r) as f64 - 0.5).collect();
        let row_label =
            |y: &f64| self.rows.get(n - (y + 0.5).round() as usize).map(|r| r.label.clone()).unwrap_or_default();
        let (xticks, xstep) = ticks(0.0, 100.0, 5);
        let x_label = |x: &f64| tick_label(*x, xstep);
        let (plot, scale) = root.split_horizontally(left + pw);
        let mut chart = ChartBuilder::on(&plot)
            .margin_top(TOP)
            .set_label_area_size(LabelAreaPosition::Left, left)
            .set_label_area_size(LabelAreaPosition::Bottom, BOTTOM)
            .build_cartesian_2d(
                Axis { range: 0.0..100.0, ticks: xticks },
                Axis { range: 0.0..n as f64, ticks: labelled },
            )?;
        chart
            .configure_mesh()
            .disable_mesh()
            .axis_style(WHITE)
            .x_label_formatter(&x_label)
            .y_label_formatter(&row_label)
            .label_style(text(12.0))
            .axis_desc_style(text(12.0))
            .x_desc(self.x_label.as_str())
            .draw()?;
        if !self.y_label.is_empty() {
            upwards(root, &self.y_label, (16, TOP as i32 + ph / 2))?;
        }
        // Colour scale: 20 steps from 1 (top) to 0, labelled at both ends.
        let (sx, top) = (20, TOP as i32);
        for i in 0..20 {
            let (y0, y1) = (top + i * ph / 20, top + (i + 1) * ph / 20);
            scale.draw(&Rectangle::new([(sx, y0), (sx + 16, y1)], heat_colour(1.0 - f64::from(i) / 19.0).filled()))?;
        }
        let label = text(12.0).pos(Pos::new(HPos::Left, VPos::Center));
        scale.draw(&Text::new(self.scale[0].clone(), (sx + 20, top + 6), label.clone()))?;
        scale.draw(&Text::new(self.scale[1].clone(), (sx + 20, top + ph - 4), label))?;
        let side = ("sans-serif", 12.0 * 1.24)
            .into_font()
            .transform(FontTransform::Rotate90)
            .color(&BLACK)
            .pos(Pos::new(HPos::Center, VPos::Center));
        scale.draw(&Text::new(self.value_label.clone(), (sx + 44, top + ph / 2), side))?;
        // The cells, last (see [`Drawn`]).
        let x = |c: usize| c as f64 * 100.0 / cols as f64;
        let mut tips = Vec::new();
        for (r, row) in self.rows.iter().enumerate() {
            let (top, bottom) = ((n - r) as f64, (n - r - 1) as f64);
            // Neighbouring cells of one colour level are one rectangle: a map of thousands
            // of cells, each with its own element and hover text, made reports megabytes.
            let mut c = 0;
            while c < row.cells.len() {
                let level = colour_level(row.cells[c].0);
                let run = row.cells[c..].iter().take_while(|(w, _)| colour_level(*w) == level).count();
                let colour = heat_colour(f64::from(level) / f64::from(COLOUR_LEVELS));
                chart.plotting_area().draw(&Rectangle::new([(x(c), top), (x(c + run), bottom)], colour.filled()))?;
                let column = |i: usize| self.columns.get(i).cloned().unwrap_or_default();
                let values: Vec<&str> = row.cells[c..c + run].iter().map(|(_, t)| t.as_str()).collect();
                tips.push(format!(
                    "{}, {} {}-{}: {} {}",
                    row.what,
                    self.column_noun,
                    column(c).0,
                    column(c + run - 1).1,
                    values.join(", "),
                    self.unit
                ));
                c += run;
            }
        }
        Ok(tips)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_use_round_steps_inside_the_range() {
        let (t, step) = ticks(0.0, 100.0, 5);
        assert_eq!(step, 20.0);
        assert_eq!(t, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let (t, step) = ticks(0.13, 0.87, 4);
        assert_eq!(step, 0.2);
        assert!((t[0] - 0.2).abs() < 1e-9 && t.len() == 4, "{t:?}");
        assert_eq!(tick_label(0.4, 0.2), "0.4");
    }

    /// `<polyline>`s drawn with a series' stroke (axes and grid lines are thinner).
    fn series_lines(svg: &str) -> usize {
        svg.matches(&format!(r#"stroke-width="{SERIES_STROKE}" points="#)).count()
    }

    #[test]
    fn line_chart_draws_one_line_per_unbroken_run_and_a_legend_entry_per_series() {
        let chart = Chart::Line(LineChart {
            title: "t <&>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: XAxis::Categories(vec!["1:16".into(), "1:8".into(), "1:4".into()]),
            markers: true,
            series: vec![
                Series { name: "a".into(), points: vec![(0.0, Some(1.0)), (1.0, None), (2.0, Some(3.0))] },
                Series { name: "b".into(), points: vec![(0.0, Some(2.0)), (1.0, Some(2.5)), (2.0, Some(4.0))] },
            ],
        });
        let svg = chart.svg().unwrap();
        // a: two single-point runs; b: one run; each series a line in the legend.
        assert_eq!(series_lines(&svg), 3 + 2, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 5);
        for label in ["t &lt;&amp;&gt;", ">1:8</text>", ">a</text>", ">b</text>"] {
            assert!(svg.contains(label), "{label} missing: {svg}");
        }
        assert!(svg.starts_with(r#"<svg class="figure line-chart" width="760" height="380""#), "{svg}");
        assert!(svg.ends_with("</svg>") && !svg.contains("xmlns"));
        let file = svg_file(&svg);
        assert!(file.starts_with("<?xml") && file.contains(r#"<svg xmlns="http://www.w3.org/2000/svg" class="#));
    }

    #[test]
    fn line_chart_beyond_ten_series_repeats_the_colours_on_thin_lines() {
        let series = (0..11)
            .map(|i| Series { name: format!("s{i}"), points: vec![(0.0, Some(1.0)), (50.0, Some(i as f64))] })
            .collect();
        let chart = Chart::Line(LineChart {
            title: "many".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: XAxis::Numeric,
            markers: false,
            series,
        });
        let svg = chart.svg().unwrap();
        assert_eq!(series_lines(&svg), 2 * 10, "{svg}");
        assert_eq!(svg.matches(r##"stroke="#1F77B4" stroke-width="1" points="##).count(), 2, "{svg}");
        assert!(svg.contains(">s10</text>") && svg.contains(">50</text>"));
    }

    #[test]
    fn heat_map_has_a_cell_per_value_coloured_by_value() {
        let row = |label: &str, values: &[f64]| HeatRow {
            label: label.into(),
            what: format!("row {label}"),
            cells: values.iter().map(|v| (*v, format!("{v}<"))).collect(),
        };
        let map = HeatMap {
            title: "h".into(),
            x_label: "x".into(),
            y_label: "pages".into(),
            value_label: "v".into(),
            scale: ["max 9".into(), "0".into()],
            rows: vec![row("p", &[0.0, 1.0]), row("", &[0.5])],
            columns: vec![("0".into(), "1".into()), ("1".into(), "2".into())],
            column_noun: "t".into(),
            unit: "u".into(),
        };
        let render = |m: HeatMap| Chart::Heat(m).svg().unwrap();
        let colour = |v: f64| {
            let RGBColor(r, g, b) = heat_colour(v);
            format!(r##"fill="#{r:02X}{g:02X}{b:02X}""##)
        };
        let svg = render(map);
        assert_eq!(svg.matches(r#"class="cell""#).count(), 3);
        assert!(svg.starts_with(r#"<svg class="figure heat-map""#));
        for colour in [colour(0.0), colour(0.5), colour(1.0)] {
            assert!(svg.contains(&colour), "{colour}: {svg}");
        }
        assert!(
            svg.contains("<title>row p, t 1-2: 1&lt; u</title>")
                && svg.contains(">max 9</text>")
                && svg.contains(">pages</text>")
                && svg.contains(">p</text>"),
            "{svg}"
        );
        // Neighbours of one colour level are one rectangle whose hover text lists each value.
        let merged = render(HeatMap {
            title: "h".into(),
            x_label: "x".into(),
            y_label: String::new(),
            value_label: "v".into(),
            scale: ["1".into(), "0".into()],
            rows: vec![row("q", &[0.5, 0.52, 0.9])],
            columns: vec![("0".into(), "1".into()), ("1".into(), "2".into()), ("2".into(), "3".into())],
            column_noun: "t".into(),
            unit: "u".into(),
        });
        assert_eq!(merged.matches(r#"class="cell""#).count(), 2, "{merged}");
        assert!(merged.contains("<title>row q, t 0-2: 0.5&lt;, 0.52&lt; u</title>"), "{merged}");
        assert_eq!(heat_colour(0.0), RGBColor(0x44, 0x01, 0x54));
        assert_eq!(heat_colour(0.5), RGBColor(0x21, 0x91, 0x8c));
        assert_eq!(heat_colour(1.0), RGBColor(0xfd, 0xe7, 0x25));
        assert_eq!(heat_colour(1.7), heat_colour(1.0), "values clamp to the scale");
    }
}
