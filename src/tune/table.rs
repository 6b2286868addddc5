//! What `tune` prints on rank 0: its lines, and per collective its table (the time of every
//! candidate at every size, the choice and its speed-up) or, with `--verify`, the file's choices
//! against the default.

use super::choose::{self, choose, Outcome, Source};
use super::discover::Candidate;
use super::measure::{self, Cell};
use super::model::VERIFY_TOLERANCE;
use super::rules;
use crate::collective::Kind;
use crate::world::World;
use std::io::Write;

/// Print on rank 0 and flush.
pub fn say(world: &World, line: &str) {
    if world.rank == 0 {
        let mut out = crate::report::stdout::out();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// A time (µs) to three significant digits, so the speed-up beside it can be read from it
/// (0.0412, 1.38, 9.12, 91.1, 635, 12345).
pub(crate) fn shown_us(t: f64) -> String {
    let a = t.abs();
    if !t.is_finite() {
        "-".into()
    } else if a == 0.0 {
        "0".into()
    } else if a >= 100.0 {
        format!("{t:.0}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(1, 6) as usize;
        format!("{t:.decimals$}")
    }
}

pub fn fmt_outcome(o: Outcome) -> String {
    match o {
        Outcome::Time(t) => shown_us(t),
        Outcome::Wrong(_) => "WRONG".into(),
        Outcome::Absent => "-".into(),
    }
}

/// How a cell reads in the table.
pub fn label(cell: &Cell) -> String {
    match cell {
        Cell::Skipped(_) => "skip".into(),
        Cell::Failed => "failed".into(),
        c => fmt_outcome(c.outcome()),
    }
}

/// The table of one collective: size × candidate, the fastest marked `*`, the rule's choice
/// and the speed-up of the fastest over the default. `each(index, size, choice)` per size.
pub fn print_table(
    world: &World,
    quiet: bool,
    kind: Kind,
    cands: &[Candidate],
    sizes: &[u64],
    cells: &[Vec<Cell>],
    each: &mut dyn FnMut(usize, u64, &choose::Choice),
) {
    let say = |world: &World, line: &str| {
        if !quiet {
            say(world, line)
        }
    };
    let sources: Vec<Source> = cands.iter().map(|c| c.source.clone()).collect();
    let width = |c: &Candidate| c.name.len().max(9);
    let mut head = format!("# {kind:>11}");
    for c in cands {
        head.push_str(&format!("  {:>w$}", c.name, w = width(c)));
    }
    head.push_str("  fastest an application can select / library file's choice / its speed-up over default");
    say(world, &format!("# {kind}: time per call (us): the median over {} interleaved rounds of each round's median, three significant digits; * fastest an application can select (the default, the library's algorithms, (call)); + coll-bench's own, faster still (an application cannot have it: it is listed after the speed-up, apart); skip: not run (the skip rule); (coll-bench) implementations cannot be selected through the library; (call): the library's other function for the collective, which the application selects by calling it", measure::ROUNDS));
    say(world, &format!("# {:>11}", "size (B)"));
    say(world, &head);
    for (i, &size) in sizes.iter().enumerate() {
        let outcomes: Vec<Outcome> =
            cells.iter().map(|r| r.get(i).map(Cell::outcome).unwrap_or(Outcome::Absent)).collect();
        let bands: Vec<Option<(f64, f64)>> =
            cells.iter().map(|r| r.get(i).and_then(|c| choose::band(c.rounds()))).collect();
        let c = choose(&sources, &outcomes, &bands);
        let mut line = format!("  {size:>11}");
        for (j, cand) in cands.iter().enumerate() {
            let mark = if c.selectable_best == Some(j) {
                "*"
            } else if c.best == Some(j) {
                "+"
            } else {
                ""
            };
            let text = cells[j].get(i).map(label).unwrap_or_else(|| "-".into());
            line.push_str(&format!("  {:>w$}", format!("{text}{mark}"), w = width(cand)));
        }
        let name = |x: Option<usize>| x.map(|k| cands[k].name.as_str()).unwrap_or("none correct");
        let speed = c.selectable_speedup.map(|s| format!("{s:.2}x")).unwrap_or_else(|| "-".into());
        line.push_str(&format!("  {} / {} / {speed}", name(c.selectable_best), name(c.rule)));
        if c.best != c.selectable_best {
            let own = c.speedup.map(|s| format!("{s:.2}x")).unwrap_or_else(|| "-".into());
            line.push_str(&format!("; coll-bench's own {}: {own}", name(c.best)));
        }
        say(world, &line);
        each(i, size, &c);
    }
}

/// One size of `--verify` where the file selects `name`: the speed-up of `ours` over the
/// default `d` (medians) and the verdict ([`print_verify`]).
pub fn judge(d: &Cell, ours: &Cell, name: &str) -> (String, String) {
    match (d.outcome(), ours) {
        (_, Cell::Failed) => ("-".into(), format!("FAILED ({name}: the library refused it)")),
        (_, o) if matches!(o.outcome(), Outcome::Wrong(_)) => ("-".into(), format!("WRONG ({name})")),
        (Outcome::Time(dt), o) => {
            let Outcome::Time(ot) = o.outcome() else { return ("-".into(), "-".into()) };
            let (Some(db), Some(ob)) = (choose::band(d.rounds()), choose::band(o.rounds())) else {
                return ("-".into(), "-".into());
            };
            let speed = format!("{:.2}x", dt / ot);
            if ob.0 > db.1 * (1.0 + VERIFY_TOLERANCE) {
                (speed, format!("MISSED ({name} slower than the default)"))
            } else if ob.1 < db.0 {
                (speed, format!("ok ({name}: faster)"))
            } else {
                (speed, format!("ok ({name}: within noise of the default)"))
            }
        }
        _ => ("-".into(), "-".into()),
    }
}

/// The verify table, from one run: per size the library's default and, where the file selects
/// another algorithm, that algorithm, timed in the same interleaved rounds; the speed-up now
/// beside the one tune recorded. A size is MISSED when the file's algorithm is slower than the
/// default beyond noise: its fastest round over the default's slowest by more than
/// [`VERIFY_TOLERANCE`]; FAILED when the library refused it; WRONG on a wrong result. Where the
/// file keeps the default there is nothing to compare: the application runs what it ran.
/// Returns whether any size missed (or failed).
pub fn print_verify(
    world: &World,
    kind: Kind,
    sizes: &[u64],
    plan: &[Vec<usize>],
    cells: &[Vec<Cell>],
    names: &[&str],
    file: &rules::RulesFile,
) -> bool {
    say(world, &format!("# {kind}: the library's default and the file's choice, timed in the same interleaved rounds (us; median of the rounds); MISSED: the file's choice slower than the default beyond noise (its fastest round over the default's slowest by more than {:.0}%)", VERIFY_TOLERANCE * 100.0));
    say(
        world,
        &format!(
            "# {:>11}  {:>10}  {:>12}  {:>8}  {:>8}  verdict",
            "size (B)", "default", "file's choice", "speed-up", "tune's"
        ),
    );
    let mut missed = false;
    for (i, &size) in sizes.iter().enumerate() {
        let Some(row) = plan.get(i) else { continue };
        let chosen = row.get(1).copied();
        let cell = |c: usize| cells.get(c).and_then(|r| r.get(i));
        let (default, ours) = (cell(0), chosen.and_then(cell));
        let recorded = file.measured.iter().find(|m| m.kind == kind && m.size_bytes == size);
        let tunes = recorded
            .map(|m| m.default_us / m.chosen_us)
            .filter(|x| x.is_finite() && chosen.is_some())
            .map(|x| format!("{x:.2}x"))
            .unwrap_or_else(|| "-".into());
        let time = |c: Option<&Cell>| c.map(|c| fmt_outcome(c.outcome())).unwrap_or_else(|| "-".into());
        let (speed, verdict) = match (default, chosen.zip(ours)) {
            (Some(d), _) if matches!(d.outcome(), Outcome::Wrong(_)) => ("-".into(), "WRONG (default)".to_string()),
            (Some(d), Some((c, ours))) => judge(d, ours, names[c]),
            (None, Some(_)) => ("-".into(), "-".into()),
            (_, None) => ("-".into(), "ok (the file keeps the library's default here)".to_string()),
        };
        missed |= verdict.starts_with("MISSED") || verdict.starts_with("FAILED") || verdict.starts_with("WRONG");
        let theirs = if chosen.is_some() { time(ours) } else { "(default)".into() };
        say(world, &format!("  {size:>11}  {:>10}  {theirs:>12}  {speed:>8}  {tunes:>8}  {verdict}", time(default)));
    }
    missed
}
