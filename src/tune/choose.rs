//! Choosing per size: the fastest correct candidate overall, and the one the library's own file
//! can select (the default or one of its algorithms; coll-bench's own implementations cannot be
//! selected through it). Pure: fed times, returns indices.

/// What a candidate is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The library's own choice (algorithm 0: Open MPI's "ignore", MPICH's "auto").
    Default,
    /// One of the library's algorithms, by its number.
    Library(i32),
    /// coll-bench's own implementation (`--impl NAME`), not selectable through the library.
    Own(crate::options::Implementation),
}

impl Source {
    pub fn selectable(&self) -> bool {
        !matches!(self, Source::Own(_))
    }
}

/// A candidate's result at one size: its time (µs) or why it has none.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    Time(f64),
    /// Wrong elements in the check: disqualified at this size.
    Wrong(u64),
    /// Not run at this size (not applicable).
    Absent,
}

/// A rule switches away from the library's default only when the gain is larger than this
/// factor and significant (the 95% intervals of the two medians do not overlap, where both are
/// known): otherwise the difference is noise, and keeping the default cannot make a size slower.
pub const MIN_GAIN: f64 = 1.05;

/// The choice at one size.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The fastest correct candidate (any source); `None` when none is correct.
    pub best: Option<usize>,
    /// What the library's file should select: the default unless a library algorithm beats it
    /// by more than [`MIN_GAIN`]; `None` when the default is absent or wrong and no library
    /// algorithm is correct.
    pub rule: Option<usize>,
    /// Default's time / best's time (1.0 when the default is the best).
    pub speedup: Option<f64>,
}

/// Choose at one size. Ties go to the earlier candidate (the default comes first, then the
/// library's algorithms in its order, then ours). `intervals`: each candidate's 95% interval of
/// its median (lo, hi), where known.
pub fn choose(sources: &[Source], outcomes: &[Outcome], intervals: &[Option<(f64, f64)>]) -> Choice {
    let time = |i: usize| match outcomes[i] {
        Outcome::Time(t) if t.is_finite() => Some(t),
        _ => None,
    };
    let fastest = |keep: &dyn Fn(usize) -> bool| {
        (0..outcomes.len()).filter(|&i| keep(i)).filter_map(|i| time(i).map(|t| (i, t))).fold(
            None,
            |acc: Option<(usize, f64)>, (i, t)| match acc {
                Some((_, bt)) if bt <= t => acc,
                _ => Some((i, t)),
            },
        )
    };
    let best = fastest(&|_| true);
    let default = sources.iter().position(|s| *s == Source::Default).and_then(|i| time(i).map(|t| (i, t)));
    let lib_best = fastest(&|i| sources[i].selectable());
    let rule = match (default, lib_best) {
        (Some((d, dt)), Some((l, lt))) => {
            let apart = match (intervals.get(l).copied().flatten(), intervals.get(d).copied().flatten()) {
                (Some((_, l_hi)), Some((d_lo, _))) => l_hi < d_lo,
                _ => true,
            };
            Some(if lt * MIN_GAIN < dt && apart { l } else { d })
        }
        (None, Some((l, _))) => Some(l),
        (d, None) => d.map(|(d, _)| d),
    };
    let speedup = match (default, best) {
        (Some((_, dt)), Some((_, bt))) if bt > 0.0 => Some(dt / bt),
        _ => None,
    };
    Choice { best: best.map(|(i, _)| i), rule, speedup }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Vec<Source> {
        vec![Source::Default, Source::Library(1), Source::Library(2), Source::Own(crate::options::Implementation::Ring)]
    }

    #[test]
    fn the_fastest_wins_and_the_rule_takes_the_fastest_selectable() {
        let o = [Outcome::Time(600.0), Outcome::Time(500.0), Outcome::Time(170.0), Outcome::Time(100.0)];
        let c = choose(&sources(), &o, &[]);
        assert_eq!(c.best, Some(3));
        assert_eq!(c.rule, Some(2));
        assert!((c.speedup.unwrap() - 6.0).abs() < 1e-9);
    }

    #[test]
    fn ties_and_small_gains_keep_the_default() {
        let o = [Outcome::Time(100.0), Outcome::Time(100.0), Outcome::Time(99.0), Outcome::Absent];
        let c = choose(&sources(), &o, &[]);
        assert_eq!(c.best, Some(2));
        assert_eq!(c.rule, Some(0), "1% is noise: keep the default");
        let o = [Outcome::Time(100.0), Outcome::Time(100.0), Outcome::Time(100.0), Outcome::Time(100.0)];
        let c = choose(&sources(), &o, &[]);
        assert_eq!((c.best, c.rule), (Some(0), Some(0)));
        assert_eq!(c.speedup, Some(1.0));
        // A tie between two library algorithms goes to the first.
        let o = [Outcome::Time(300.0), Outcome::Time(100.0), Outcome::Time(100.0), Outcome::Absent];
        assert_eq!(choose(&sources(), &o, &[]).rule, Some(1));
    }

    #[test]
    fn a_gain_within_the_noise_keeps_the_default() {
        let o = [Outcome::Time(100.0), Outcome::Time(80.0), Outcome::Time(90.0), Outcome::Absent];
        // 80 against 100, but the intervals overlap: noise.
        let ci = [Some((70.0, 130.0)), Some((60.0, 110.0)), None, None];
        let c = choose(&sources(), &o, &ci);
        assert_eq!((c.best, c.rule), (Some(1), Some(0)));
        // Apart: switch.
        let ci = [Some((95.0, 105.0)), Some((78.0, 82.0)), None, None];
        assert_eq!(choose(&sources(), &o, &ci).rule, Some(1));
    }

    #[test]
    fn wrong_results_are_never_chosen() {
        let o = [Outcome::Time(600.0), Outcome::Wrong(3), Outcome::Time(400.0), Outcome::Wrong(1)];
        let c = choose(&sources(), &o, &[]);
        assert_eq!((c.best, c.rule), (Some(2), Some(2)));
        // A wrong default: the rule must name a correct library algorithm.
        let o = [Outcome::Wrong(5), Outcome::Time(500.0), Outcome::Wrong(1), Outcome::Time(10.0)];
        let c = choose(&sources(), &o, &[]);
        assert_eq!((c.best, c.rule, c.speedup), (Some(3), Some(1), None));
        // Nothing correct.
        let o = [Outcome::Wrong(5), Outcome::Wrong(1), Outcome::Absent, Outcome::Wrong(2)];
        assert_eq!(choose(&sources(), &o, &[]), Choice { best: None, rule: None, speedup: None });
    }
}
