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
    /// Through the library's tuning file: the default and the library's algorithms.
    pub fn selectable(&self) -> bool {
        !matches!(self, Source::Own(_))
    }

    /// By an application: what its file selects, or the library's other function, which it
    /// selects by calling it (`--impl counts`); never coll-bench's own implementations.
    pub fn application_selects(&self) -> bool {
        self.selectable() || matches!(self, Source::Own(crate::options::Implementation::Counts))
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

/// A rule switches away from the library's default only when the algorithm beats it by more
/// than this factor, and beyond the noise tune saw: where both [`band`]s are known, the
/// algorithm's slowest round times this factor must still be faster than the default's fastest
/// round (every round of the one beats every round of the other by more than 10%). Otherwise
/// the default is kept: keeping it cannot make a size slower.
pub const MIN_GAIN: f64 = 1.10;

/// The skip rule: a candidate more than this many times slower than the fastest at a size…
pub const SKIP_FACTOR: f64 = 3.0;
/// …at two consecutive sizes, both at least this large, is not run at larger sizes. Below it a
/// cell costs its time budget whatever the algorithm's speed, so skipping would save nothing.
pub const SKIP_FROM_BYTES: u64 = 64 * 1024;

/// A candidate's time at one size: the median of its rounds' medians (a burst of load that
/// lands on one round does not move it).
pub fn median_of_rounds(rounds: &[f64]) -> f64 {
    let mut v: Vec<f64> = rounds.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The noise band of a candidate at one size: the lowest and highest of its rounds' medians,
/// or, from 5 rounds on (after a second look), without the single lowest and highest.
pub fn band(rounds: &[f64]) -> Option<(f64, f64)> {
    let mut v: Vec<f64> = rounds.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n >= 5 { (v[1], v[n - 2]) } else { (v[0], v[n - 1]) })
}

/// Whether a candidate is clearly slower at a size (the skip rule's half): `time` (its fastest
/// round) over [`SKIP_FACTOR`] × the fastest candidate's time, at a size of at least
/// [`SKIP_FROM_BYTES`].
pub fn clearly_slower(time: f64, fastest: f64, size: u64) -> bool {
    size >= SKIP_FROM_BYTES && fastest > 0.0 && time > SKIP_FACTOR * fastest
}

/// A second look: when the fastest selectable candidate seems faster than the default by more
/// than [`MIN_GAIN`] but their bands overlap, both get more rounds before the choice. Returns
/// the two, or nothing.
pub fn second_look(sources: &[Source], outcomes: &[Outcome], bands: &[Option<(f64, f64)>]) -> Vec<usize> {
    let c = choose(sources, outcomes, bands);
    let Some(d) = sources.iter().position(|s| *s == Source::Default) else { return vec![] };
    let dt = match outcomes[d] {
        Outcome::Time(t) if t.is_finite() => Some(t),
        _ => None,
    };
    match (dt, fastest_algorithm(sources, outcomes), c.rule) {
        (Some(dt), Some((l, lt)), Some(r)) if r == d && lt * MIN_GAIN < dt => vec![d, l],
        _ => vec![],
    }
}

/// The fastest of the library's own algorithms at one size (the default and coll-bench's
/// implementations aside), with its time; ties go to the earlier. `None` where none has a time.
pub fn fastest_algorithm(sources: &[Source], outcomes: &[Outcome]) -> Option<(usize, f64)> {
    (0..outcomes.len())
        .filter(|&i| matches!(sources[i], Source::Library(_)))
        .filter_map(|i| match outcomes[i] {
            Outcome::Time(t) if t.is_finite() => Some((i, t)),
            _ => None,
        })
        .fold(None, |acc, (i, t)| match acc {
            Some((_, bt)) if bt <= t => acc,
            _ => Some((i, t)),
        })
}

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
    /// The fastest correct candidate an application can select (the default, the library's
    /// algorithms through its file, the library's other call by calling it); `None` when none is
    /// correct.
    pub selectable_best: Option<usize>,
    /// Default's time / `selectable_best`'s time: what an application can get.
    pub selectable_speedup: Option<f64>,
}

/// Choose at one size. Ties go to the earlier candidate (the default comes first, then the
/// library's algorithms in its order, then ours). `intervals`: each candidate's noise [`band`]
/// over its rounds (lo, hi), where known.
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
                (Some((_, l_hi)), Some((d_lo, _))) => l_hi * MIN_GAIN < d_lo,
                _ => true,
            };
            Some(if lt * MIN_GAIN < dt && apart { l } else { d })
        }
        (None, Some((l, _))) => Some(l),
        (d, None) => d.map(|(d, _)| d),
    };
    let ratio = |b: Option<(usize, f64)>| match (default, b) {
        (Some((_, dt)), Some((_, bt))) if bt > 0.0 => Some(dt / bt),
        _ => None,
    };
    let selectable_best = fastest(&|i| sources[i].application_selects());
    Choice {
        best: best.map(|(i, _)| i),
        rule,
        speedup: ratio(best),
        selectable_best: selectable_best.map(|(i, _)| i),
        selectable_speedup: ratio(selectable_best),
    }
}

/// One size's outcomes and bands, per candidate (for [`one_for_all`]).
pub type SizeSeen = (Vec<Outcome>, Vec<Option<(f64, f64)>>);

/// MPICH's file selects one algorithm for every size: which one (an index into `sources`, the
/// default's when nothing qualifies). A library algorithm qualifies only when it has a correct
/// time at every size and is slower than the default beyond noise at none (its fastest round
/// not above the default's slowest); a size where it was not run (the skip rule: over 3x the
/// fastest), wrong or failed disqualifies it, as it would be applied there too. Of those that
/// qualify, the one [`choose`] picks at the most sizes (at least one); the earlier on a tie.
pub fn one_for_all(sources: &[Source], sizes: &[SizeSeen]) -> Option<usize> {
    let d = sources.iter().position(|s| *s == Source::Default)?;
    let qualifies = |c: usize| {
        sizes.iter().all(|(outcomes, bands)| match (outcomes.get(c), outcomes.get(d)) {
            (Some(Outcome::Time(t)), Some(Outcome::Time(dt))) if t.is_finite() => {
                match (bands.get(c).copied().flatten(), bands.get(d).copied().flatten()) {
                    (Some((lo, _)), Some((_, d_hi))) => lo <= d_hi,
                    _ => t <= dt,
                }
            }
            // The default wrong or absent here: nothing to be slower than.
            (Some(Outcome::Time(t)), _) => t.is_finite(),
            _ => false,
        })
    };
    let mut wins = vec![0usize; sources.len()];
    for (outcomes, bands) in sizes {
        if let Some(r) = choose(sources, outcomes, bands).rule {
            wins[r] += 1;
        }
    }
    let best = (0..sources.len()).filter(|&c| c != d && sources[c].selectable() && wins[c] > 0 && qualifies(c)).fold(
        None,
        |acc: Option<usize>, c| match acc {
            Some(b) if wins[b] >= wins[c] => acc,
            _ => Some(c),
        },
    );
    Some(best.unwrap_or(d))
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
        // What an application can have: the library's algorithm, not coll-bench's own ring.
        assert_eq!(c.selectable_best, Some(2));
        assert!((c.selectable_speedup.unwrap() - 600.0 / 170.0).abs() < 1e-9);
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
        // Apart by more than MIN_GAIN: switch.
        let ci = [Some((95.0, 105.0)), Some((78.0, 82.0)), None, None];
        assert_eq!(choose(&sources(), &o, &ci).rule, Some(1));
        // Apart, but its slowest round (90) is not 10% under the default's fastest (95): keep.
        let ci = [Some((95.0, 105.0)), Some((78.0, 90.0)), None, None];
        assert_eq!(choose(&sources(), &o, &ci).rule, Some(0));
    }

    #[test]
    fn a_stray_slow_round_does_not_move_the_time_and_bands_need_all_rounds_apart() {
        assert_eq!(median_of_rounds(&[169.0, 4000.0, 171.0]), 171.0);
        assert_eq!(median_of_rounds(&[1.0, 2.0]), 1.5);
        assert!(median_of_rounds(&[]).is_nan());
        assert_eq!(band(&[3.0, 1.0, 2.0]), Some((1.0, 3.0)));
        // Five rounds and more: the single extremes are dropped.
        assert_eq!(band(&[5.0, 1.0, 2.0, 3.0, 4.0, 100.0]), Some((2.0, 5.0)));
        assert_eq!(band(&[]), None);
        // 169 us against 594 us in every round: switch. A default round as fast as the winner's
        // slowest round: within the noise, keep the default.
        let s = [Source::Default, Source::Library(2)];
        let o = [Outcome::Time(594.0), Outcome::Time(169.0)];
        let apart = [band(&[590.0, 594.0, 601.0]), band(&[168.0, 169.0, 175.0])];
        assert_eq!(choose(&s, &o, &apart).rule, Some(1));
        assert!(second_look(&s, &o, &apart).is_empty());
        let overlap = [band(&[170.0, 594.0, 601.0]), band(&[168.0, 169.0, 175.0])];
        assert_eq!(choose(&s, &o, &overlap).rule, Some(0));
        assert_eq!(second_look(&s, &o, &overlap), vec![0, 1]);
        // Not faster by MIN_GAIN: no second look either.
        let o = [Outcome::Time(100.0), Outcome::Time(95.0)];
        assert!(second_look(&s, &o, &[band(&[90.0, 100.0, 110.0]), band(&[94.0, 95.0, 96.0])]).is_empty());
    }

    #[test]
    fn the_skip_rule_needs_three_times_the_fastest_from_64_kib() {
        assert!(clearly_slower(301.0, 100.0, 64 * 1024));
        assert!(!clearly_slower(299.0, 100.0, 1 << 20));
        assert!(!clearly_slower(10_000.0, 1.0, 32 * 1024), "small sizes cost the budget whatever: never skipped");
        assert!(!clearly_slower(1.0, 0.0, 1 << 20));
    }

    #[test]
    fn one_algorithm_for_every_size_is_never_skipped_wrong_or_slower_anywhere() {
        let s = [Source::Default, Source::Library(1), Source::Library(2)];
        let t = |d: f64, a: f64, b: f64| -> SizeSeen {
            let o = vec![Outcome::Time(d), Outcome::Time(a), Outcome::Time(b)];
            let bands = vec![Some((d * 0.98, d * 1.02)), Some((a * 0.98, a * 1.02)), Some((b * 0.98, b * 1.02))];
            (o, bands)
        };
        // 1 wins at two sizes, 2 at one: 1.
        let sizes = vec![t(100.0, 50.0, 100.0), t(100.0, 50.0, 100.0), t(100.0, 100.0, 50.0)];
        assert_eq!(one_for_all(&s, &sizes), Some(1));
        // 1 wins at most sizes but was skipped at the largest (over 3x the fastest there): applied
        // everywhere it would make that size slower; 2 wins once and is never slower: 2.
        let mut skipped = t(100.0, 0.0, 100.0);
        skipped.0[1] = Outcome::Absent;
        skipped.1[1] = None;
        let sizes = vec![t(100.0, 50.0, 100.0), t(100.0, 50.0, 100.0), t(100.0, 60.0, 50.0), skipped];
        assert_eq!(one_for_all(&s, &sizes), Some(2));
        // Slower than the default beyond noise at one size, or wrong at one: not chosen.
        let sizes = vec![t(100.0, 50.0, 100.0), t(100.0, 200.0, 100.0)];
        assert_eq!(one_for_all(&s, &sizes), Some(0));
        let mut wrong = t(100.0, 50.0, 100.0);
        wrong.0[1] = Outcome::Wrong(3);
        assert_eq!(one_for_all(&s, &[t(100.0, 50.0, 100.0), wrong]), Some(0));
        // Within the default's noise at one size (a band reaching into the default's): allowed.
        let mut close = t(100.0, 101.0, 100.0);
        close.1[1] = Some((99.0, 104.0));
        assert_eq!(one_for_all(&s, &[t(100.0, 50.0, 100.0), close]), Some(1));
        // No win anywhere: the default.
        assert_eq!(one_for_all(&s, &[t(100.0, 100.0, 100.0)]), Some(0));
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
        assert_eq!(
            choose(&sources(), &o, &[]),
            Choice { best: None, rule: None, speedup: None, selectable_best: None, selectable_speedup: None }
        );
    }
}
