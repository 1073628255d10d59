//! SVG charts (plotters) of the papers' kind: one line per strategy.

use std::path::Path;

use plotters::prelude::*;

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("plotting {}: {message}", path.display())]
pub struct PlotError {
    /// The chart's file.
    pub path: std::path::PathBuf,
    /// What went wrong.
    pub message: String,
}

impl PlotError {
    /// The chart at `path` failed with `e`.
    pub fn at(path: &Path, e: impl std::fmt::Display) -> Self {
        PlotError {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }
}

/// One named line of (x, y) points.
pub struct Series {
    /// Legend label.
    pub name: String,
    /// Points, in x order.
    pub points: Vec<(f64, f64)>,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// The colour of series `i` of `n`: the papers' six when they suffice, else
/// plotters' 99-colour palette (a run may have dozens of sites).
pub fn colour(i: usize, n: usize) -> RGBColor {
    if n <= COLOURS.len() {
        COLOURS[i]
    } else {
        let c = Palette99::pick(i).to_rgba();
        RGBColor(c.0, c.1, c.2)
    }
}

/// The area a chart `size` big is drawn in, in a new SVG at `path`, with
/// `notes` written one a line under it (what a chart's short labels stand
/// for).
fn canvas<'b>(
    path: &'b Path,
    size: (u32, u32),
    notes: &[String],
) -> Result<DrawingArea<SVGBackend<'b>, plotters::coord::Shift>, PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    let foot = if notes.is_empty() {
        0
    } else {
        10 + 18 * notes.len() as u32
    };
    let root = SVGBackend::new(path, (size.0, size.1 + foot)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    if notes.is_empty() {
        return Ok(root);
    }
    let (chart, under) = root.split_vertically(size.1);
    for (i, note) in notes.iter().enumerate() {
        under
            .draw_text(note, &("sans-serif", 13).into(), (14, 18 * i as i32))
            .map_err(|e| err(&e))?;
    }
    Ok(chart)
}

/// Draws `series` as lines into an SVG file at `path`, with a marker on
/// every point when the series are short enough for markers to be read,
/// and `notes` under it.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    notes: &[String],
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    let pts = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let y1 = pts().fold(0.0_f64, |m, p| m.max(p.1));
    if !x0.is_finite() {
        return Err(PlotError::at(path, "no data"));
    }
    let (x0, x1) = if x0 == x1 {
        (x0 - 1.0, x1 + 1.0)
    } else {
        (x0, x1)
    };
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
    let root = canvas(path, (800, 500), notes)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .draw()
        .map_err(|e| err(&e))?;
    let markers = series.iter().all(|s| s.points.len() <= 40);
    for (i, s) in series.iter().enumerate() {
        let colour = colour(i, series.len());
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                colour.stroke_width(2),
            ))
            .map_err(|e| err(&e))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
            });
        if markers {
            chart
                .draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                .map_err(|e| err(&e))?;
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", if series.len() > 8 { 10 } else { 14 }))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_an_svg_with_every_series() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.svg");
        let series = vec![
            Series {
                name: "random".into(),
                points: vec![(5.0, 10.0), (10.0, 7.0)],
            },
            Series {
                name: "clustered".into(),
                points: vec![(5.0, 4.0), (10.0, 2.0)],
            },
        ];
        line_chart(&path, "t", "sites", "hours", &series, &[]).unwrap();
        let groups = [
            Marked {
                name: "fitted".into(),
                points: vec![("a".into(), 100.0, 104.0)],
                intervals: vec![],
            },
            Marked {
                name: "predicted".into(),
                points: vec![("b".into(), 300.0, 250.0)],
                intervals: vec![Some([220.0, 290.0])],
            },
        ];
        let parity = dir.path().join("p.svg");
        parity_chart(&parity, "t", "s", &groups, 0.1).unwrap();
        let svg = std::fs::read_to_string(&parity).unwrap();
        assert!(svg.contains("fitted") && svg.contains("predicted") && svg.contains("±10%"));
        // The interval's bar: one polyline more than without it.
        let lines = svg.matches("<polyline").count();
        let mut bare = groups;
        bare[1].intervals.clear();
        parity_chart(&parity, "t", "s", &bare, 0.1).unwrap();
        let without = std::fs::read_to_string(&parity).unwrap();
        assert_eq!(lines, without.matches("<polyline").count() + 1);
        assert!(parity_chart(&parity, "t", "s", &[], 0.1).is_err());
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("clustered") && svg.contains("random"));
        assert!(line_chart(&path, "t", "x", "y", &[], &[]).is_err());
    }
}

/// One panel of a stacked chart.
pub struct Panel {
    /// Its caption.
    pub title: String,
    /// The y axis label.
    pub y_label: String,
    /// Its lines.
    pub series: Vec<Series>,
}

/// Panels stacked top to bottom over one x axis, into an SVG at `path` (the
/// summary views of seed 001's figures 4–10).
pub fn stacked(path: &Path, title: &str, x_label: &str, panels: &[Panel]) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    let pts = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter().flat_map(|s| s.points.iter()))
    };
    let x1 = pts().fold(0.0_f64, |m, p| m.max(p.0)).max(1.0);
    let root =
        SVGBackend::new(path, (1000, 260 * panels.len().max(1) as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| err(&e))?;
    for (area, panel) in root
        .split_evenly((panels.len().max(1), 1))
        .iter()
        .zip(panels)
    {
        let y1 = panel
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .fold(0.0_f64, |m, p| m.max(p.1));
        let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..x1, 0.0..y1)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(&panel.y_label)
            .draw()
            .map_err(|e| err(&e))?;
        for (i, s) in panel.series.iter().enumerate() {
            let c = colour(i, panel.series.len());
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))
}

/// The label of the bar at `x` (bars sit at whole numbers; other ticks
/// get none).
fn label_at(labels: &[String], x: f64) -> String {
    let i = x.round();
    if (x - i).abs() < 1e-6 && i >= 0.0 {
        labels.get(i as usize).cloned().unwrap_or_default()
    } else {
        String::new()
    }
}

/// A chart on `root` with one x position per label (bars sit at whole
/// numbers) and y from 0 to `top`, its mesh drawn.
fn category_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    path: &Path,
    title: &str,
    y_label: &str,
    labels: &[String],
    top: f64,
    label_size: u32,
) -> Result<
    ChartContext<
        'a,
        SVGBackend<'b>,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    PlotError,
> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let n = labels.len();
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..top)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|x| label_at(labels, *x))
        .x_label_style(("sans-serif", label_size))
        .y_desc(y_label)
        .draw()
        .map_err(|e| err(&e))?;
    Ok(chart)
}

/// One bar: a label, a mean and the half-width of its confidence interval.
pub struct Bar {
    /// Label under the bar.
    pub label: String,
    /// Height.
    pub mean: f64,
    /// Whisker half-width (0 for none).
    pub ci: f64,
}

/// Draws `bars` with confidence whiskers into an SVG file at `path`, and
/// `notes` under it.
pub fn bar_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    bars: &[Bar],
    notes: &[String],
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    if bars.is_empty() {
        return Err(PlotError::at(path, "no data"));
    }
    let top = bars.iter().map(|b| b.mean + b.ci).fold(0.0_f64, f64::max);
    let top = if top <= 0.0 { 1.0 } else { top * 1.1 };
    let root = canvas(path, (800, 500), notes)?;
    let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
    let mut chart = category_chart(&root, path, title, y_label, &labels, top, 12)?;
    for (i, b) in bars.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let x = i as f64;
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x - 0.35, 0.0), (x + 0.35, b.mean)],
                colour.filled(),
            )))
            .map_err(|e| err(&e))?;
        if b.ci > 0.0 {
            let (lo, hi) = ((b.mean - b.ci).max(0.0), b.mean + b.ci);
            let whisker = vec![
                PathElement::new(vec![(x, lo), (x, hi)], BLACK.stroke_width(2)),
                PathElement::new(vec![(x - 0.1, lo), (x + 0.1, lo)], BLACK.stroke_width(2)),
                PathElement::new(vec![(x - 0.1, hi), (x + 0.1, hi)], BLACK.stroke_width(2)),
            ];
            chart.draw_series(whisker).map_err(|e| err(&e))?;
        }
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// One group's values in a grouped bar chart (one value per category).
pub struct Group {
    /// Legend label.
    pub name: String,
    /// One height per category.
    pub values: Vec<f64>,
}

/// Draws, for each of `categories`, one bar per group side by side (seed
/// 001's figures 12 and 13), into an SVG file at `path`.
pub fn grouped_bars(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    groups: &[Group],
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    if categories.is_empty() || groups.is_empty() {
        return Err(PlotError::at(path, "no data"));
    }
    let top = groups
        .iter()
        .flat_map(|g| g.values.iter().copied())
        .fold(0.0_f64, f64::max);
    let top = if top <= 0.0 { 1.0 } else { top * 1.15 };
    let root = SVGBackend::new(path, (1000, 520)).into_drawing_area();
    let mut chart = category_chart(&root, path, title, y_label, categories, top, 11)?;
    let width = 0.8 / groups.len() as f64;
    for (g, group) in groups.iter().enumerate() {
        let c = colour(g, groups.len());
        chart
            .draw_series(group.values.iter().enumerate().map(|(i, &v)| {
                let x0 = i as f64 - 0.4 + g as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.9, v)], c.filled())
            }))
            .map_err(|e| err(&e))?
            .label(group.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))
}

#[cfg(test)]
mod bar_tests {
    use super::*;

    #[test]
    fn writes_a_bar_per_label() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.svg");
        let bars = vec![
            Bar {
                label: "opportunistic".into(),
                mean: 10.0,
                ci: 1.0,
            },
            Bar {
                label: "round-robin".into(),
                mean: 14.0,
                ci: 0.0,
            },
        ];
        bar_chart(&path, "t", "hours", &bars, &["a = b".into()]).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("opportunistic") && svg.contains("round-robin"));
    }

    #[test]
    fn writes_a_bar_per_category_and_group() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.svg");
        let groups = vec![
            Group {
                name: "speedup".into(),
                values: vec![1.0, 3.5],
            },
            Group {
                name: "performance index".into(),
                values: vec![0.1, 1.0],
            },
        ];
        let cats = vec!["first-available".to_string(), "gcc-4GB".to_string()];
        grouped_bars(&path, "t", "x", &cats, &groups).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("gcc-4GB") && svg.contains("performance index"));
        assert!(grouped_bars(&path, "t", "x", &[], &groups).is_err());
    }
}

/// Labelled points drawn with one marker (a group of a parity chart).
pub struct Marked {
    /// Legend label.
    pub name: String,
    /// (label, recorded, predicted) points.
    pub points: Vec<(String, f64, f64)>,
    /// Per point, the recorded values its prediction allows (an interval),
    /// drawn as a bar across it; empty: none.
    pub intervals: Vec<Option<[f64; 2]>>,
}

/// Predicted against recorded: each group's points with their labels, the
/// diagonal where the two agree and the band of ±`band` (a fraction) about
/// it, into an SVG at `path`. The first group is drawn filled, the others
/// hollow, so fitted and predicted points read apart.
pub fn parity_chart(
    path: &Path,
    title: &str,
    unit: &str,
    groups: &[Marked],
    band: f64,
) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError::at(path, e);
    let top = groups
        .iter()
        .flat_map(|g| g.points.iter())
        .fold(0.0_f64, |m, p| m.max(p.1).max(p.2));
    let widest = groups
        .iter()
        .flat_map(|g| g.intervals.iter().flatten())
        .fold(0.0_f64, |m, i| m.max(i[1]));
    let top = top.max(widest.min(2.0 * top));
    if top <= 0.0 || !top.is_finite() {
        return Err(PlotError::at(path, "no data"));
    }
    let top = top * 1.12;
    let root = SVGBackend::new(path, (760, 720)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..top, 0.0..top)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(format!("recorded ({unit})"))
        .y_desc(format!("predicted ({unit})"))
        .draw()
        .map_err(|e| err(&e))?;
    let grey = RGBColor(120, 120, 120);
    chart
        .draw_series(std::iter::once(Polygon::new(
            vec![
                (0.0, 0.0),
                (top, top * (1.0 + band)),
                (top, top * (1.0 - band)),
            ],
            grey.mix(0.15).filled(),
        )))
        .map_err(|e| err(&e))?
        .label(format!("±{:.0}%", 100.0 * band))
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 5), (x + 18, y + 5)], grey.mix(0.3).filled())
        });
    chart
        .draw_series(LineSeries::new(
            vec![(0.0, 0.0), (top, top)],
            grey.stroke_width(1),
        ))
        .map_err(|e| err(&e))?;
    for (i, g) in groups.iter().enumerate() {
        let colour = colour(i, groups.len());
        let style = if i == 0 {
            colour.filled()
        } else {
            colour.stroke_width(2)
        };
        chart
            .draw_series(g.points.iter().zip(&g.intervals).filter_map(|(p, i)| {
                let [lo, hi] = (*i)?;
                Some(PathElement::new(
                    vec![(lo.max(0.0), p.2), (hi.min(top), p.2)],
                    colour.stroke_width(2),
                ))
            }))
            .map_err(|e| err(&e))?;
        chart
            .draw_series(g.points.iter().map(|p| Circle::new((p.1, p.2), 5, style)))
            .map_err(|e| err(&e))?
            .label(g.name.clone())
            .legend(move |(x, y)| Circle::new((x + 9, y), 5, style));
        chart
            .draw_series(g.points.iter().map(|p| {
                Text::new(
                    p.0.clone(),
                    (p.1, p.2),
                    ("sans-serif", 11).into_font().color(&colour),
                )
            }))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
