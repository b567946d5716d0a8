//! Figures as inline SVG: line charts with axes, ticks and a legend, and heat maps as a
//! grid of rects. Sizes are in CSS pixels; every figure has a fixed width and height so
//! it can be rasterised at that size.

use std::fmt::Write;

use super::html::esc;

/// Width of every figure.
pub const WIDTH: u32 = 760;
/// Height of every figure.
pub const HEIGHT: u32 = 380;
const LEFT: f64 = 70.0;
const TOP: f64 = 40.0;
const RIGHT: f64 = 170.0;
const BOTTOM: f64 = 50.0;

const COLOURS: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

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

fn open(out: &mut String, title: &str, class: &str) {
    let _ = write!(
        out,
        r#"<svg class="{class}" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="{WIDTH}" height="{HEIGHT}" fill="white"/><text x="{x}" y="22" text-anchor="middle" font-size="14" font-weight="bold">{t}</text>"#,
        t = esc(title),
        x = WIDTH as f64 / 2.0,
    );
}

impl LineChart {
    /// The chart as one `<svg>` element.
    pub fn render(&self) -> String {
        let (pw, ph) = (WIDTH as f64 - LEFT - RIGHT, HEIGHT as f64 - TOP - BOTTOM);
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
        let px = |x: f64| LEFT + (x - xlo) / (xhi - xlo) * pw;
        let py = |y: f64| TOP + ph - (y - ylo) / (yhi - ylo) * ph;
        let mut out = String::new();
        open(&mut out, &self.title, "figure line-chart");
        // Y grid and ticks.
        let (yt, ystep) = ticks(ylo, yhi, 6);
        for y in yt {
            let _ = write!(
                out,
                r##"<line x1="{LEFT}" x2="{r:.1}" y1="{v:.1}" y2="{v:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
                r = LEFT + pw,
                v = py(y),
                tx = LEFT - 6.0,
                ty = py(y) + 4.0,
                l = tick_label(y, ystep),
            );
        }
        // X ticks.
        let xticks: Vec<(f64, String)> = match &self.x_axis {
            XAxis::Categories(c) => c.iter().enumerate().map(|(i, l)| (i as f64, l.clone())).collect(),
            XAxis::Numeric => {
                let (t, step) = ticks(xlo, xhi, 8);
                t.into_iter().map(|x| (x, tick_label(x, step))).collect()
            }
        };
        for (x, l) in xticks {
            let _ = write!(
                out,
                r##"<line x1="{v:.1}" x2="{v:.1}" y1="{b:.1}" y2="{b2:.1}" stroke="#333"/><text x="{v:.1}" y="{ty:.1}" text-anchor="middle">{l}</text>"##,
                v = px(x),
                b = TOP + ph,
                b2 = TOP + ph + 5.0,
                ty = TOP + ph + 18.0,
                l = esc(&l),
            );
        }
        // Frame and axis labels.
        let _ = write!(
            out,
            r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#333"/><text x="{cx:.1}" y="{xy:.1}" text-anchor="middle">{xl}</text><text transform="translate(16 {cy:.1}) rotate(-90)" text-anchor="middle">{yl}</text>"##,
            cx = LEFT + pw / 2.0,
            xy = HEIGHT as f64 - 10.0,
            xl = esc(&self.x_label),
            cy = TOP + ph / 2.0,
            yl = esc(&self.y_label),
        );
        for (i, s) in self.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let dash = if i >= COLOURS.len() { r#" stroke-dasharray="6 3""# } else { "" };
            // Split at gaps into separate polylines.
            for run in s.points.split(|p| p.1.is_none()).filter(|r| !r.is_empty()) {
                let pts: Vec<String> =
                    run.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y.unwrap_or(0.0)))).collect();
                let _ = write!(
                    out,
                    r#"<polyline class="series" fill="none" stroke="{colour}" stroke-width="2"{dash} points="{}"/>"#,
                    pts.join(" ")
                );
            }
            if self.markers {
                for &(x, y) in &s.points {
                    if let Some(y) = y {
                        let _ = write!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#, px(x), py(y));
                    }
                }
            }
            let ly = TOP + 8.0 + i as f64 * 16.0;
            let lx = LEFT + pw + 12.0;
            let _ = write!(
                out,
                r#"<line x1="{lx}" x2="{x2}" y1="{ly}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{tx}" y="{ty}">{n}</text>"#,
                x2 = lx + 20.0,
                tx = lx + 26.0,
                ty = ly + 4.0,
                n = esc(&s.name),
            );
        }
        out.push_str("</svg>");
        out
    }
}

/// Colour of `v` in 0..=1 on a purple (0), teal (0.5), yellow (1) scale.
/// Colour levels of a heat map: few enough that neighbouring cells of nearly equal
/// values share one element (and the report stays small), enough to read a log scale.
const COLOUR_LEVELS: u32 = 12;

/// The colour level of a value in [0, 1] (clamped).
fn colour_level(v: f64) -> u32 {
    (v.clamp(0.0, 1.0) * f64::from(COLOUR_LEVELS)).round() as u32
}

fn heat_colour(v: f64) -> String {
    const STOPS: [[f64; 3]; 3] = [[68.0, 1.0, 84.0], [33.0, 145.0, 140.0], [253.0, 231.0, 37.0]];
    let v = v.clamp(0.0, 1.0) * 2.0;
    let (a, b, t) = if v <= 1.0 { (STOPS[0], STOPS[1], v) } else { (STOPS[1], STOPS[2], v - 1.0) };
    let c: Vec<u8> = (0..3).map(|i| (a[i] + (b[i] - a[i]) * t).round() as u8).collect();
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

impl HeatMap {
    /// The heat map as one `<svg>` element.
    pub fn render(&self) -> String {
        let (pw, ph) = (WIDTH as f64 - LEFT - RIGHT - 40.0, HEIGHT as f64 - TOP - BOTTOM);
        let left = LEFT + 40.0;
        let cols = self.rows.iter().map(|r| r.cells.len()).max().unwrap_or(0).max(1);
        let (cw, rh) = (pw / cols as f64, ph / self.rows.len().max(1) as f64);
        let mut out = String::new();
        open(&mut out, &self.title, "figure heat-map");
        for (r, row) in self.rows.iter().enumerate() {
            let y = TOP + r as f64 * rh;
            if !row.label.is_empty() {
                let _ = write!(
                    out,
                    r#"<text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"#,
                    tx = left - 6.0,
                    ty = y + rh / 2.0 + 4.0,
                    l = esc(&row.label),
                );
            }
            // Neighbouring cells of one colour level are one rectangle: a map of thousands
            // of cells, each with its own element and tooltip, made reports megabytes.
            let mut c = 0;
            while c < row.cells.len() {
                let level = colour_level(row.cells[c].0);
                let run = row.cells[c..].iter().take_while(|(w, _)| colour_level(*w) == level).count();
                let column = |i: usize| self.columns.get(i).cloned().unwrap_or_default();
                let values: Vec<&str> = row.cells[c..c + run].iter().map(|(_, t)| t.as_str()).collect();
                let tip = format!(
                    "{}, {} {}-{}: {} {}",
                    row.what,
                    self.column_noun,
                    column(c).0,
                    column(c + run - 1).1,
                    values.join(", "),
                    self.unit
                );
                let _ = write!(
                    out,
                    r#"<rect class="cell" x="{:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                    left + c as f64 * cw,
                    cw * run as f64 + 0.3,
                    rh + 0.3,
                    heat_colour(f64::from(level) / f64::from(COLOUR_LEVELS)),
                    esc(&tip),
                );
                c += run;
            }
        }
        let (xt, step) = ticks(0.0, 100.0, 5);
        for x in xt {
            let _ = write!(
                out,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                left + x / 100.0 * pw,
                TOP + ph + 18.0,
                tick_label(x, step)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            left + pw / 2.0,
            HEIGHT as f64 - 10.0,
            esc(&self.x_label)
        );
        if !self.y_label.is_empty() {
            let _ = write!(
                out,
                r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
                TOP + ph / 2.0,
                esc(&self.y_label)
            );
        }
        // Colour scale.
        let sx = left + pw + 20.0;
        for i in 0..20 {
            let v = 1.0 - i as f64 / 19.0;
            let _ = write!(
                out,
                r#"<rect x="{sx}" y="{:.1}" width="16" height="{:.1}" fill="{}"/>"#,
                TOP + i as f64 * ph / 20.0,
                ph / 20.0 + 0.3,
                heat_colour(v)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{tx}" y="{t:.1}">{top}</text><text x="{tx}" y="{b:.1}">{bottom}</text><text transform="translate({lx} {cy:.1}) rotate(90)" text-anchor="middle">{l}</text></svg>"#,
            tx = sx + 20.0,
            t = TOP + 10.0,
            b = TOP + ph,
            top = esc(&self.scale[0]),
            bottom = esc(&self.scale[1]),
            lx = sx + 44.0,
            cy = TOP + ph / 2.0,
            l = esc(&self.value_label),
        );
        out
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

    #[test]
    fn line_chart_draws_one_polyline_per_unbroken_run_and_a_legend_entry_per_series() {
        let chart = LineChart {
            title: "t <&>".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_axis: XAxis::Categories(vec!["1:16".into(), "1:8".into(), "1:4".into()]),
            markers: true,
            series: vec![
                Series { name: "a".into(), points: vec![(0.0, Some(1.0)), (1.0, None), (2.0, Some(3.0))] },
                Series { name: "b".into(), points: vec![(0.0, Some(2.0)), (1.0, Some(2.5)), (2.0, Some(4.0))] },
            ],
        };
        let svg = chart.render();
        assert_eq!(svg.matches("<polyline").count(), 3, "{svg}");
        assert_eq!(svg.matches("<circle").count(), 5);
        assert!(svg.contains("t &lt;&amp;&gt;") && svg.contains(">1:8</text>"));
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
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
        let svg = map.render();
        assert_eq!(svg.matches(r#"class="cell""#).count(), 3);
        assert!(svg.contains(&format!(r#"fill="{}""#, heat_colour(0.0))));
        assert!(
            svg.contains("<title>row p, t 1-2: 1&lt; u</title>")
                && svg.contains(">max 9</text>")
                && svg.contains(">pages<")
        );
        assert_eq!(svg.matches(r#"text-anchor="end""#).count(), 1, "an empty label draws nothing");
        // Neighbours of one colour level are one rectangle whose hover text lists each value.
        let merged = HeatMap { rows: vec![row("q", &[0.5, 0.52, 0.9])], ..map }.render();
        assert_eq!(merged.matches(r#"class="cell""#).count(), 2, "{merged}");
        assert!(merged.contains("<title>row q, t 0-2: 0.5&lt;, 0.52&lt; u</title>"), "{merged}");
        assert_eq!(heat_colour(0.0), "#440154");
        assert_eq!(heat_colour(0.5), "#21918c");
        assert_eq!(heat_colour(1.0), "#fde725");
        assert_eq!(heat_colour(1.7), heat_colour(1.0), "values clamp to the scale");
    }
}
