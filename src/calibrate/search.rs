//! The search over the knobs' space (log space, each knob within its
//! range): the grid or Halton sequence that ranks basins, Nelder–Mead that
//! walks a makespan's staircase without derivatives, and
//! Levenberg–Marquardt on the traces' errors (their slopes by central
//! differences over a step wide enough to span the stairs) that polishes a
//! fit on many traces and linearises the left-out fits
//! ([`super::cross`]).

use serde::Serialize;

use super::knob::Knob;
use super::trace::TraceError;

/// Traces up to which the search is [`Method::Simplex`] by default: on
/// the eight 1000genome runs it fits 4.4% where Newton's fits 6.2%, in
/// about a minute.
pub const SIMPLEX_UP_TO: usize = 8;

/// How the knobs are searched once the grid has ranked the basins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Nelder–Mead from the grid's three best points, restarted while that
    /// helps, over a spread of the traces and then over all of them; each
    /// left-out fit a Nelder–Mead on the other traces. It walks a
    /// makespan's staircase into the deepest basins, at hundreds of points
    /// a simplex.
    Simplex,
    /// Levenberg–Marquardt ([`Space::polish`]) from the grid's three best
    /// points over the spread, then over all traces; each left-out fit one
    /// Gauss–Newton step from the fit on all, the traces' errors
    /// linearised there. A few steps of `2·knobs + 1` simulations a trace,
    /// for many traces: it can stop on a stair a simplex would step down.
    Newton,
}

impl Method {
    /// Simplex up to [`SIMPLEX_UP_TO`] traces, Newton beyond.
    pub fn auto(traces: usize) -> Method {
        if traces <= SIMPLEX_UP_TO {
            Method::Simplex
        } else {
            Method::Newton
        }
    }

    /// As the command line names it.
    pub fn name(self) -> &'static str {
        match self {
            Method::Simplex => "simplex",
            Method::Newton => "newton",
        }
    }
}

/// The knobs' search space: each knob's range in log space and the grid's
/// step along it.
pub(super) struct Space {
    ranges: Vec<(f64, f64)>,
    step: Vec<f64>,
}

/// A cost at a point in log space, or any sum above the bound once it is
/// certain to end above it.
pub(super) type Cost<'a> = dyn FnMut(&[f64], f64) -> Result<f64, TraceError> + 'a;

/// Grid points per axis when `d` axes are searched.
fn per_axis(d: usize) -> usize {
    match d {
        0 => 1,
        1 => 32,
        2 => 16,
        3 => 7,
        _ => 4,
    }
}

impl Space {
    pub(super) fn of(knobs: &[Knob]) -> Space {
        let per_axis = per_axis(knobs.len());
        let ranges: Vec<(f64, f64)> = knobs
            .iter()
            .map(|k: &Knob| {
                let (lo, hi) = k.range();
                (lo.ln(), hi.ln())
            })
            .collect();
        let step = ranges
            .iter()
            .map(|(lo, hi)| (hi - lo) / (per_axis - 1) as f64)
            .collect();
        Space { ranges, step }
    }

    /// The grid's step along each axis (log space).
    pub(super) fn steps(&self) -> &[f64] {
        &self.step
    }

    pub(super) fn clamp(&self, y: &mut [f64]) {
        for (v, (lo, hi)) in y.iter_mut().zip(&self.ranges) {
            *v = v.clamp(*lo, *hi);
        }
    }

    /// The grid over the axes `fixed` leaves free (the others at their
    /// values), then Nelder–Mead from its three best points over every
    /// axis, or Levenberg–Marquardt on the traces' `errors` where given
    /// ([`Method::Newton`]); returns the best point.
    pub(super) fn search(
        &self,
        fixed: &[Option<f64>],
        cost: &mut Cost,
        mut errors: Option<&mut Errors>,
    ) -> Result<Vec<f64>, TraceError> {
        let ranges = &self.ranges;
        let free: Vec<usize> = (0..ranges.len()).filter(|&i| fixed[i].is_none()).collect();
        let (d, per_axis) = (free.len(), per_axis(free.len()));
        let step: Vec<f64> = free
            .iter()
            .map(|&i| (ranges[i].1 - ranges[i].0) / (per_axis.max(2) - 1) as f64)
            .collect();
        let point = |free_values: &[f64]| -> Vec<f64> {
            let mut y: Vec<f64> = fixed.iter().map(|v| v.unwrap_or(0.0)).collect();
            for (k, &i) in free.iter().enumerate() {
                y[i] = free_values[k];
            }
            self.clamp(&mut y);
            y
        };
        let mut grid: Vec<(f64, Vec<f64>)> = Vec::new();
        if d <= 2 {
            let mut index = vec![0usize; d];
            loop {
                let y = point(
                    &(0..d)
                        .map(|k| ranges[free[k]].0 + step[k] * index[k] as f64)
                        .collect::<Vec<_>>(),
                );
                grid.push((cost(&y, third(&grid))?, y));
                // Next grid point (odometer order).
                let mut i = 0;
                while i < d {
                    index[i] += 1;
                    if index[i] < per_axis {
                        break;
                    }
                    index[i] = 0;
                    i += 1;
                }
                if i == d {
                    break;
                }
            }
        } else {
            // A grid of three or more axes sees few values of each (7 for
            // 343 points): a Halton sequence of the same budget sees as many
            // values of each knob as it has points, so a narrow basin along
            // one axis (a rate whose makespans turn within a factor of two) is
            // not stepped over.
            for n in 1..=per_axis.pow(d as u32).max(400) {
                let y = point(
                    &(0..d)
                        .map(|k| {
                            let (lo, hi) = ranges[free[k]];
                            lo + (hi - lo) * halton(n, PRIMES[k % PRIMES.len()])
                        })
                        .collect::<Vec<_>>(),
                );
                grid.push((cost(&y, third(&grid))?, y));
            }
        }
        // Nelder–Mead from each of the grid's three best points (a makespan's
        // landscape has many shallow basins); the best end wins.
        grid.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut best = grid[0].clone();
        for start in grid.into_iter().take(3) {
            let end = match errors.as_deref_mut() {
                Some(errors) => self.polish(start.1, errors)?,
                None => self.descend(start, 1.0, cost)?,
            };
            if end.0 < best.0 {
                best = end;
            }
        }
        Ok(best.1)
    }

    /// Nelder–Mead from `y` alone, a first simplex of half the grid's: the
    /// best of a search over some of the traces, refined over all.
    pub(super) fn refine(&self, y: Vec<f64>, cost: &mut Cost) -> Result<Vec<f64>, TraceError> {
        let c = cost(&y, f64::INFINITY)?;
        Ok(self.descend((c, y), 2.0, cost)?.1)
    }

    /// One short Nelder–Mead from `y`, a first simplex of an eighth of the
    /// grid's, stopped at a percent: the fit of all traces moved to the
    /// least cost of all but one.
    pub(super) fn nudge(&self, y: Vec<f64>, cost: &mut Cost) -> Result<Vec<f64>, TraceError> {
        let c = cost(&y, f64::INFINITY)?;
        let step: Vec<f64> = self.step.iter().map(|s| s / 8.0).collect();
        let clamp = |y: &mut Vec<f64>| self.clamp(y);
        Ok(nelder_mead((c, y), &step, 1e-2, &clamp, cost)?.1)
    }

    /// Nelder–Mead from `start`, again from its end while that still takes
    /// a percent off the cost: a simplex shrunk onto one step of a
    /// makespan's staircase stops there.
    fn descend(
        &self,
        start: (f64, Vec<f64>),
        shrink: f64,
        cost: &mut Cost,
    ) -> Result<(f64, Vec<f64>), TraceError> {
        let step: Vec<f64> = self.step.iter().map(|s| s / shrink).collect();
        let clamp = |y: &mut Vec<f64>| self.clamp(y);
        let mut end = nelder_mead(start, &step, 1e-3, &clamp, cost)?;
        for _ in 0..4 {
            let again = nelder_mead(end.clone(), &step, 1e-3, &clamp, cost)?;
            if again.0 >= end.0 * (1.0 - 1e-2) {
                break;
            }
            end = again;
        }
        Ok(end)
    }
}

/// The third least cost of `points` (∞ while there are fewer): a point
/// above it is not among the three the simplex starts from.
fn third(points: &[(f64, Vec<f64>)]) -> f64 {
    let mut least = [f64::INFINITY; 3];
    for (c, _) in points {
        if *c < least[2] {
            least[2] = *c;
            least.sort_by(f64::total_cmp);
        }
    }
    least[2]
}

const PRIMES: [usize; 8] = [2, 3, 5, 7, 11, 13, 17, 19];

/// The `n`th term of the van der Corput sequence in `base`, in [0, 1).
fn halton(mut n: usize, base: usize) -> f64 {
    let (mut x, mut f) = (0.0, 1.0 / base as f64);
    while n > 0 {
        x += f * (n % base) as f64;
        n /= base;
        f /= base as f64;
    }
    x
}

/// Nelder–Mead from `best`, a first simplex of half `step` per axis,
/// until the vertices' costs agree to `tolerance` of the best.
fn nelder_mead(
    best: (f64, Vec<f64>),
    step: &[f64],
    tolerance: f64,
    clamp: &impl Fn(&mut Vec<f64>),
    cost: &mut Cost,
) -> Result<(f64, Vec<f64>), TraceError> {
    let d = step.len();
    let mut simplex: Vec<(f64, Vec<f64>)> = vec![best.clone()];
    for i in 0..d {
        let mut y = best.1.clone();
        y[i] += step[i] / 2.0;
        clamp(&mut y);
        let c = cost(&y, f64::INFINITY)?;
        simplex.push((c, y));
    }
    for _ in 0..40 * d {
        simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
        let worst = simplex[d].clone();
        let centroid: Vec<f64> = (0..d)
            .map(|i| simplex[..d].iter().map(|p| p.1[i]).sum::<f64>() / d as f64)
            .collect();
        let towards = |t: f64| -> Vec<f64> {
            centroid
                .iter()
                .zip(&worst.1)
                .map(|(c, w)| c + t * (c - w))
                .collect()
        };
        let mut r = towards(1.0);
        clamp(&mut r);
        // Above the worst, a point is only ever compared with the worst.
        let cr = cost(&r, worst.0)?;
        if cr < simplex[0].0 {
            let mut e = towards(2.0);
            clamp(&mut e);
            let ce = cost(&e, cr)?;
            simplex[d] = if ce < cr { (ce, e) } else { (cr, r) };
        } else if cr < simplex[d - 1].0 {
            simplex[d] = (cr, r);
        } else {
            let mut c = towards(-0.5);
            clamp(&mut c);
            let cc = cost(&c, worst.0)?;
            if cc < worst.0 {
                simplex[d] = (cc, c);
            } else {
                // Shrink towards the best.
                let b = simplex[0].1.clone();
                for p in simplex.iter_mut().skip(1) {
                    let y: Vec<f64> = p.1.iter().zip(&b).map(|(v, b)| b + (v - b) / 2.0).collect();
                    *p = (cost(&y, f64::INFINITY)?, y);
                }
            }
        }
        let spread = simplex
            .iter()
            .map(|p| p.0)
            .fold(f64::NEG_INFINITY, f64::max)
            - simplex.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        // Converged: the vertices' costs agree to a thousandth of the best
        // (a tenth of a percent of a makespan's error, at most).
        if spread < (tolerance * simplex[0].0).max(1e-9) {
            break;
        }
    }
    simplex.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(simplex.swap_remove(0))
}

/// The traces' errors at a point in log space: each trace's makespan
/// error and task-time error (0 where it has no task times).
pub(super) type Errors<'a> = dyn FnMut(&[f64]) -> Result<Vec<[f64; 2]>, TraceError> + 'a;

/// Each trace's errors' slopes along each knob: `slopes[i][r][j]`, trace
/// `i`'s error `r` along knob `j`.
pub(super) type Slopes = Vec<[Vec<f64>; 2]>;

impl Space {
    /// The slopes of the traces' errors at `y`, by central differences a
    /// sixteenth of the grid's step each way (the edge of the nudge's first
    /// simplex), cut at the range's ends; zero along an axis with no width.
    pub(super) fn slopes(&self, y: &[f64], errors: &mut Errors) -> Result<Slopes, TraceError> {
        let d = y.len();
        let mut slopes: Slopes = Vec::new();
        for j in 0..d {
            let h = self.step[j] / 16.0;
            let (mut up, mut down) = (y.to_vec(), y.to_vec());
            up[j] += h;
            down[j] -= h;
            self.clamp(&mut up);
            self.clamp(&mut down);
            let width = up[j] - down[j];
            if width <= 0.0 {
                continue;
            }
            let (u, w) = (errors(&up)?, errors(&down)?);
            slopes.resize_with(u.len(), || [vec![0.0; d], vec![0.0; d]]);
            for (i, (u, w)) in u.iter().zip(&w).enumerate() {
                for r in 0..2 {
                    slopes[i][r][j] = (u[r] - w[r]) / width;
                }
            }
        }
        Ok(slopes)
    }

    /// Levenberg–Marquardt on the traces' errors from `y`: a Gauss–Newton
    /// step damped until it lowers the sum of squares, the slopes taken
    /// again where it lands, until a step takes less than a thousandth off
    /// or none lowers it. From the best point of a search over a few
    /// traces, in the right basin, it reaches the least cost over all of
    /// them in a few steps of `2·knobs + 1` simulations a trace each, where
    /// a simplex takes hundreds.
    pub(super) fn polish(
        &self,
        mut y: Vec<f64>,
        errors: &mut Errors,
    ) -> Result<(f64, Vec<f64>), TraceError> {
        let total = |e: &[[f64; 2]]| -> f64 { e.iter().map(|r| r[0] * r[0] + r[1] * r[1]).sum() };
        let mut here = errors(&y)?;
        let mut cost = total(&here);
        let mut damping = 1e-3;
        for _ in 0..20 {
            let slopes = self.slopes(&y, errors)?;
            let (a, g) = normal(&slopes, &here, None);
            let before = cost;
            while damping < 1e4 {
                let shift = gauss_newton(&a, &g, damping);
                let mut next: Vec<f64> = y.iter().zip(&shift).map(|(v, s)| v + s).collect();
                self.clamp(&mut next);
                if next == y {
                    break;
                }
                let e = errors(&next)?;
                let c = total(&e);
                if c < cost {
                    (y, here, cost) = (next, e, c);
                    damping = (damping / 4.0).max(1e-6);
                    break;
                }
                damping *= 4.0;
            }
            if cost >= before * (1.0 - 1e-3) {
                break;
            }
        }
        Ok((cost, y))
    }
}

/// The normal equations `JᵀJ`, `Jᵀr` of the traces' errors and slopes,
/// summed over every trace but `skip`.
pub(super) fn normal(
    slopes: &Slopes,
    errors: &[[f64; 2]],
    skip: Option<usize>,
) -> (Vec<Vec<f64>>, Vec<f64>) {
    let d = slopes.first().map_or(0, |s| s[0].len());
    let (mut a, mut g) = (vec![vec![0.0; d]; d], vec![0.0; d]);
    for (i, (jac, r)) in slopes.iter().zip(errors).enumerate() {
        if Some(i) == skip {
            continue;
        }
        for p in 0..d {
            for k in 0..2 {
                g[p] += jac[k][p] * r[k];
                for q in 0..d {
                    a[p][q] += jac[k][p] * jac[k][q];
                }
            }
        }
    }
    (a, g)
}

/// The Gauss–Newton step `−(A + λ·diag A + ε)⁻¹ g` of normal equations
/// `A`, `g` (Levenberg–Marquardt's damping `λ`; `ε` a millionth of the
/// largest diagonal, so that an axis no error moves along does not move),
/// by Gaussian elimination with partial pivoting.
pub(super) fn gauss_newton(a: &[Vec<f64>], g: &[f64], damping: f64) -> Vec<f64> {
    let d = g.len();
    let largest = (0..d).map(|p| a[p][p]).fold(0.0, f64::max);
    if largest <= 0.0 {
        return vec![0.0; d];
    }
    let mut m: Vec<Vec<f64>> = (0..d)
        .map(|p| {
            let mut row = a[p].clone();
            row[p] += damping * a[p][p] + 1e-6 * largest;
            row.push(-g[p]);
            row
        })
        .collect();
    for col in 0..d {
        let pivot = (col..d)
            .max_by(|&x, &y| m[x][col].abs().total_cmp(&m[y][col].abs()))
            .unwrap_or(col);
        m.swap(col, pivot);
        let p = m[col][col];
        if p.abs() < f64::MIN_POSITIVE {
            return vec![0.0; d];
        }
        let pivot_row = m[col].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / p;
                for (v, q) in row.iter_mut().zip(&pivot_row).skip(col) {
                    *v -= f * q;
                }
            }
        }
    }
    (0..d).map(|p| m[p][d] / m[p][p]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn space(d: usize) -> Space {
        Space {
            ranges: vec![(-10.0, 10.0); d],
            step: vec![1.0; d],
        }
    }

    proptest! {
        /// Levenberg–Marquardt on a straight line's residuals `a + b·t − o`
        /// reaches least squares' closed form (the slope the covariance over
        /// the variance), from anywhere in the range, ties of `t` included.
        #[test]
        fn newton_finds_the_least_squares_line(
            points in prop::collection::vec((0..5i32, -50.0..50.0f64), 3..12),
            from in (-9.0..9.0f64, -9.0..9.0f64),
        ) {
            let n = points.len() as f64;
            let mean_t = points.iter().map(|p| p.0 as f64).sum::<f64>() / n;
            let mean_o = points.iter().map(|p| p.1).sum::<f64>() / n;
            let var: f64 = points.iter().map(|p| (p.0 as f64 - mean_t).powi(2)).sum();
            prop_assume!(var > 0.5);
            let cov: f64 = points
                .iter()
                .map(|p| (p.0 as f64 - mean_t) * (p.1 - mean_o))
                .sum();
            let b = cov / var;
            let a = mean_o - b * mean_t;
            prop_assume!(a.abs() < 9.0 && b.abs() < 9.0);
            // Scaled so that the range's edge is not where the least is.
            let scale = 10.0;
            let mut errors = |y: &[f64]| -> Result<Vec<[f64; 2]>, TraceError> {
                Ok(points
                    .iter()
                    .map(|&(t, o)| [(y[0] + y[1] * t as f64 - o / scale) , 0.0])
                    .collect())
            };
            let (cost, y) = space(2).polish(vec![from.0, from.1], &mut errors).unwrap();
            let least: f64 = errors(&[a / scale, b / scale])
                .unwrap()
                .iter()
                .map(|r| r[0] * r[0])
                .sum();
            // Within a thousandth of the least sum of squares, where it
            // stops (a step that takes less off is not taken).
            prop_assert!(cost <= least * 1.002 + 1e-12, "{y:?} {cost} against {a} {b} {least}");
        }
    }

    /// Undamped, the step solves the normal equations; an axis no error
    /// moves along (a zero row and column) does not move.
    #[test]
    fn a_gauss_newton_step_solves_the_normal_equations() {
        let a = vec![vec![4.0, 1.0], vec![1.0, 3.0]];
        let g = vec![1.0, 2.0];
        let x = gauss_newton(&a, &g, 0.0);
        // (4 1; 1 3) x = −(1, 2): x = (−1/11, −7/11).
        assert!(
            (x[0] + 1.0 / 11.0).abs() < 1e-5 && (x[1] + 7.0 / 11.0).abs() < 1e-5,
            "{x:?}"
        );
        let flat = vec![vec![2.0, 0.0], vec![0.0, 0.0]];
        assert_eq!(gauss_newton(&flat, &[4.0, 0.0], 0.0)[1], 0.0);
        assert_eq!(gauss_newton(&[vec![0.0]], &[1.0], 0.0), vec![0.0]);
    }
}
