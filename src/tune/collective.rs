//! One collective of `coll-bench tune`: its candidates and their communicators, the sizes
//! measured in interleaved rounds under the skip rule, the CSV rows, the table, and the choice
//! the rules file takes from it (or, with `--verify`, the file's choice against the default).
//!
//! Every `world.agree` here runs on every rank in the same order (forcing a candidate, making
//! its communicator, restoring the variable): the candidates, sizes and skip decisions are the
//! same everywhere, as they come from agreed values.

use super::algorithms::Library;
use super::choose::{self, Outcome, Source, SKIP_FACTOR};
use super::discover::{discover, Candidate, Discovered};
use super::measure::{self, Bench, Cell, Spent};
use super::model::{MedianFastest, OtherCall, TuneOptions, SKIP_RULE};
use super::rules;
use super::table::{print_table, print_verify, say};
use crate::backend::mpi::{DupComm, Implementation};
use crate::backend::mpit::{Cvar, Tool};
use crate::collective::Kind;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::record::{Measurement, RunInfo};
use crate::report::csv::CsvReport;
use crate::world::World;
use std::time::Instant;

/// What a tune run shares across its collectives.
pub(super) struct Job<'a> {
    pub world: &'a World,
    pub o: &'a TuneOptions,
    /// The sweep's options as tune runs them (with `--verify`: the file's collectives and sizes).
    pub opts: &'a Options,
    pub tool: &'a Tool,
    pub library: Library,
    pub verify: Option<&'a rules::RulesFile>,
    pub info: &'a RunInfo,
    /// Print nothing but WRONG lines (`doctor`, which reports the choice in its own page).
    pub quiet: bool,
}

/// What the collectives found, for the rules file and the exit code.
#[derive(Default)]
pub(super) struct Found {
    pub any_wrong: bool,
    /// `--verify`: some size missed (rank 0's verdict).
    pub missed: bool,
    pub collective_rules: Vec<rules::CollectiveRules>,
    pub environment: Vec<(String, String)>,
    pub measured: Vec<rules::Measured>,
    /// The library's other function against the default one, per size (`doctor`).
    pub calls: Vec<OtherCall>,
    /// The library's algorithm of lowest median against the default, per size (`doctor`).
    pub median_fastest: Vec<MedianFastest>,
}

/// A collective's algorithm variable and the value found at start: what each candidate sets.
struct Forcing<'a> {
    tool: &'a Tool,
    var: Option<&'a Cvar>,
    original: Option<i32>,
}

impl Forcing<'_> {
    /// Set candidate `c`'s algorithm (the value found at start for the default and coll-bench's
    /// own) and read it back.
    fn force(&self, c: &Candidate) -> Result<()> {
        let value = match &c.source {
            Source::Library(v) => Some(*v),
            _ => self.original,
        };
        let (Some(var), Some(value)) = (self.var, value) else { return Ok(()) };
        self.tool.write(var, value).and_then(|_| self.tool.read(var)).and_then(|back| {
            if back == value {
                Ok(())
            } else {
                Err(Error::setup(format!("{}: wrote {value}, the library reports {back}", var.name)))
            }
        })
    }

    /// Put back the value found at start.
    fn restore(&self) -> Result<()> {
        match (self.var, self.original) {
            (Some(var), Some(orig)) => self.tool.write(var, orig),
            _ => Ok(()),
        }
    }
}

/// The skip rule's state per candidate: left out (failed or skipped, with the reason), and
/// the size at which it was last clearly slower.
struct Skip {
    out: Vec<Option<Cell>>,
    slow_before: Vec<Option<u64>>,
}

impl Skip {
    fn new(n: usize) -> Skip {
        Skip { out: vec![None; n], slow_before: vec![None; n] }
    }

    fn live(&self) -> Vec<usize> {
        (0..self.out.len()).filter(|&c| self.out[c].is_none()).collect()
    }

    /// A size's row: what was measured, and the cell of each candidate left out before.
    fn row(&self, measured: Vec<(usize, Cell)>) -> Vec<Cell> {
        let mut row: Vec<Cell> = self.out.iter().map(|o| o.clone().unwrap_or(Cell::Failed)).collect();
        for (c, cell) in measured {
            row[c] = cell;
        }
        row
    }

    /// After a size: a failed candidate stays out; one clearly slower than the fastest at two
    /// consecutive sizes is skipped from here on. The fastest is the fastest correct time among
    /// what the library can select for its algorithms (coll-bench's own, which no file selects,
    /// must not push them out), among all for coll-bench's own. Never the default.
    fn update(&mut self, row: &[Cell], size: u64, sources: &[Source], no_skip: bool) {
        let fastest_of = |keep: &dyn Fn(usize) -> bool| {
            (0..row.len())
                .filter(|&c| keep(c))
                .filter_map(|c| match row[c].outcome() {
                    Outcome::Time(t) if t.is_finite() => Some(t),
                    _ => None,
                })
                .fold(f64::INFINITY, f64::min)
        };
        let fastest_selectable = fastest_of(&|c| sources[c].selectable());
        let fastest_any = fastest_of(&|_| true);
        for c in 0..row.len() {
            if matches!(row[c], Cell::Failed) && self.out[c].is_none() {
                self.out[c] = Some(Cell::Failed);
            }
            if self.out[c].is_some() || no_skip || matches!(sources[c], Source::Default) {
                continue;
            }
            // Its fastest round, against the fastest candidate's time: a candidate slowed by a
            // burst of load in some rounds is not taken for a slow algorithm.
            let slow = match row[c].outcome() {
                Outcome::Time(_) => {
                    let own_best = row[c].rounds().iter().copied().fold(f64::INFINITY, f64::min);
                    let fastest = if sources[c].selectable() { fastest_selectable } else { fastest_any };
                    choose::clearly_slower(own_best, fastest, size)
                }
                _ => false,
            };
            match (slow, self.slow_before[c]) {
                (true, Some(prev)) => {
                    self.out[c] =
                        Some(Cell::Skipped(format!("more than {SKIP_FACTOR}x the fastest at {prev} B and {size} B")))
                }
                (true, None) => self.slow_before[c] = Some(size),
                (false, _) => self.slow_before[c] = None,
            }
        }
    }
}

/// Per size, the library's algorithm of lowest median ([`choose::fastest_algorithm`]), with its
/// slowest round and the default's (candidate 0's) fastest ([`choose::band`]).
fn median_fastest(kind: Kind, d: &Discovered, sizes: &[u64], cells: &[Vec<Cell>], found: &mut Found) {
    let sources: Vec<Source> = d.candidates.iter().map(|c| c.source.clone()).collect();
    for (i, &size) in sizes.iter().enumerate() {
        let Some(default_lo) = cells[0].get(i).and_then(|c| choose::band(c.rounds())).map(|b| b.0) else { continue };
        let outcomes: Vec<Outcome> =
            cells.iter().map(|r| r.get(i).map(Cell::outcome).unwrap_or(Outcome::Absent)).collect();
        let Some((c, us)) = choose::fastest_algorithm(&sources, &outcomes) else { continue };
        found.median_fastest.push(MedianFastest {
            collective: kind,
            size_bytes: size,
            algorithm: d.candidates[c].name.clone(),
            us,
            slowest_round_us: choose::band(cells[c][i].rounds()).map(|b| b.1).unwrap_or(us),
            default_fastest_round_us: default_lo,
        });
    }
}

/// One collective's measurements: per candidate, a cell per size.
struct Measured {
    sizes: Vec<u64>,
    cells: Vec<Vec<Cell>>,
    spent: Spent,
    /// Seconds per size (rank 0's clock), for the slowest sizes in the time line.
    size_s: Vec<(u64, f64)>,
    /// From the start of the communicators to the last size (before the buffers are freed).
    total_s: f64,
}

impl Job<'_> {
    /// Tune (or verify) one collective: announce its candidates, measure, print its table and
    /// add its choice to `found`; its rows go to `csv` as each size ends.
    pub(super) fn tune(
        &self,
        kind: Kind,
        all_vars: &[Cvar],
        csv: &mut Option<CsvReport>,
        found: &mut Found,
    ) -> Result<()> {
        let world = self.world;
        let mut d = discover(self.tool, self.library, kind, world.size, all_vars);
        let sizes = self.sizes(kind);
        let original = match &d.var {
            Some(v) => Some(world.agree(self.tool.read(v))?),
            None => None,
        };
        let plan = match self.verify {
            Some(file) => Some(world.agree(self.verify_plan(kind, &mut d, file, &sizes, original))?),
            None => {
                if !self.quiet {
                    announce(world, kind, &d);
                }
                None
            }
        };
        let forcing = Forcing { tool: self.tool, var: d.var.as_ref(), original };
        // One communicator per candidate, made with its algorithm forced: Open MPI reads the
        // variable when a communicator is created, so each keeps its algorithm for the whole
        // collective (no communicator per size). MPICH reads it at each call: it is set again
        // before each of a candidate's rounds.
        let started = Instant::now();
        let mut comms = vec![];
        for cand in &d.candidates {
            world.agree(forcing.force(cand))?;
            comms.push(DupComm::of_world(world));
        }
        // (A value was read only where the collective has a variable.)
        if original.is_some() {
            world.agree(forcing.restore())?;
        }
        let comm_s = started.elapsed().as_secs_f64();
        let m = self.measure(kind, &d, &forcing, &comms, (&sizes, plan.as_deref()), csv, found, started)?;
        if !self.quiet {
            self.say_time(kind, &m, comm_s);
        }
        drop(comms);
        if let (Some(v), Some(plan)) = (self.verify, &plan) {
            let names: Vec<&str> = d.candidates.iter().map(|c| c.name.as_str()).collect();
            found.missed |= print_verify(world, kind, &m.sizes, plan, &m.cells, &names, v);
            return Ok(());
        }
        self.choose(kind, &d, &m.sizes, &m.cells, found);
        Ok(())
    }

    /// Open MPI: the rules file applied to this job (`coll_tuned_dynamic_rules_filename`, read
    /// only with dynamic rules on, as tune runs), whose rules then are the `default` candidate.
    pub(super) fn applied_rules_file(&self) -> Option<String> {
        if self.library != Library::OpenMpi {
            return None;
        }
        let var = self.tool.cvars(&|n| n == "coll_tuned_dynamic_rules_filename");
        var.first().and_then(|c| self.tool.read_text(c)).filter(|p| !p.trim().is_empty())
    }

    /// `--verify`: each collective's plan ([`Job::verify_plan`]) before anything is printed or
    /// measured, so that a file this job cannot verify is refused first.
    pub(super) fn check_verify(&self, all_vars: &[Cvar]) -> Result<()> {
        let Some(file) = self.verify else { return Ok(()) };
        for &kind in &self.opts.collectives {
            let mut d = discover(self.tool, self.library, kind, self.world.size, all_vars);
            let sizes = self.sizes(kind);
            let original = match &d.var {
                Some(v) => Some(self.world.agree(self.tool.read(v))?),
                None => None,
            };
            self.world.agree(self.verify_plan(kind, &mut d, file, &sizes, original))?;
        }
        Ok(())
    }

    /// The sizes of `kind` to measure: the sweep's; with `--verify`, those the file records for
    /// it (each as the sweep makes it on this world), not the steps between them.
    fn sizes(&self, kind: Kind) -> Vec<u64> {
        let Some(file) = self.verify else { return crate::sweep::sizes_for(kind.spec(), &self.one(kind)) };
        let mut recorded: Vec<u64> = file.measured.iter().filter(|m| m.kind == kind).map(|m| m.size_bytes).collect();
        recorded.sort_unstable();
        recorded.dedup();
        let mut out: Vec<u64> = vec![];
        for size in recorded {
            let mut one = self.one(kind);
            (one.min_bytes, one.max_bytes) = (size, size);
            out.extend(crate::sweep::sizes_for(kind.spec(), &one));
        }
        out.dedup();
        out
    }

    /// The sweep's options for `kind` alone.
    fn one(&self, kind: Kind) -> Options {
        let mut one = self.opts.clone();
        one.collectives = vec![kind];
        one
    }

    /// `--verify`: which candidates each size runs, the default (index 0) and the file's choice
    /// where it is another; `d`'s candidates are cut to those. Refused where the job already
    /// runs something else than the library's default (an algorithm forced or a rules file
    /// applied: the comparison would be the file against itself), and where the file names an
    /// algorithm this library does not list or cannot be made to run.
    fn verify_plan(
        &self,
        kind: Kind,
        d: &mut Discovered,
        file: &rules::RulesFile,
        sizes: &[u64],
        original: Option<i32>,
    ) -> Result<Vec<Vec<usize>>> {
        let var_name = d.var.as_ref().map(|v| v.name.clone());
        if let (Some(name), Some(value)) = (&var_name, original) {
            let is_default = match self.library {
                Library::OpenMpi => value == 0,
                _ => d
                    .var
                    .as_ref()
                    .and_then(|v| v.items.as_ref())
                    .map_or(value == 0, |items| items.iter().any(|(v, n)| *v == value && n == "auto")),
            };
            if !is_default {
                return Err(Error::usage(format!(
                    "tune --verify: {name} is set to {value} in this job: --verify times the library's default against the file's choices, so run it without that setting"
                )));
            }
        }
        if let Some(path) = self.applied_rules_file() {
            return Err(Error::usage(format!(
                "tune --verify: a rules file is applied to this job (coll_tuned_dynamic_rules_filename={path}): --verify times the library's default against the file's choices, so run it without one"
            )));
        }
        let mut keep = vec![0usize];
        let mut plan = vec![];
        for &size in sizes {
            let choice = file.choice(kind, self.world.size, size, var_name.as_deref());
            let found = match &choice {
                rules::Choice::Default => Some(0),
                rules::Choice::Id(v) => d.candidates.iter().position(|c| c.source == Source::Library(*v)),
                rules::Choice::Name(n) => {
                    d.candidates.iter().position(|c| c.name == *n && matches!(c.source, Source::Library(_)))
                }
            };
            let Some(c) = found else {
                let what = match &choice {
                    rules::Choice::Id(v) => format!("algorithm {v}"),
                    rules::Choice::Name(n) => format!("'{n}'"),
                    rules::Choice::Default => unreachable!("the default is candidate 0"),
                };
                let why = match (&d.var, &d.note) {
                    (None, Some(note)) => format!("{note}, so it cannot be set"),
                    _ => "this library does not list it".to_string(),
                };
                return Err(Error::usage(format!(
                    "tune --verify: the file selects {what} for {kind} at {size} B on {} ranks: {why}",
                    self.world.size
                )));
            };
            if !keep.contains(&c) {
                keep.push(c);
            }
            let at = keep.iter().position(|k| *k == c).unwrap_or(0);
            plan.push(if at == 0 { vec![0] } else { vec![0, at] });
        }
        let mut all = std::mem::take(&mut d.candidates).into_iter().map(Some).collect::<Vec<_>>();
        d.candidates = keep.iter().filter_map(|&k| all[k].take()).collect();
        Ok(plan)
    }

    /// Every size of `kind` in interleaved rounds of the live candidates, the skip rule after
    /// each size, each size's rows written as it ends. With `plan` (`--verify`), each size
    /// runs the candidates its entry names, and no skip rule.
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        kind: Kind,
        d: &Discovered,
        forcing: &Forcing,
        comms: &[DupComm],
        (sizes, plan): (&[u64], Option<&[Vec<usize>]>),
        csv: &mut Option<CsvReport>,
        found: &mut Found,
        started: Instant,
    ) -> Result<Measured> {
        let world = self.world;
        let one = self.one(kind);
        let per_call = self.library != Library::OpenMpi && d.var.is_some();
        let implementations: Vec<Implementation> = d
            .candidates
            .iter()
            .map(|c| match &c.source {
                Source::Own(imp) => *imp,
                _ => Implementation::Native,
            })
            .collect();
        let mut bench = Bench::new(world, &one, &implementations, self.o.in_place)?;
        let sources: Vec<Source> = d.candidates.iter().map(|c| c.source.clone()).collect();
        let n = d.candidates.len();
        let mut cells: Vec<Vec<Cell>> = vec![vec![]; n];
        let mut skip = Skip::new(n);
        let mut size_s = vec![];
        if self.verify.is_none() && !self.o.no_skip && n > 1 && !self.quiet {
            say(world, &format!("# {kind}: {SKIP_RULE}"));
        }
        for (i, &size) in sizes.iter().enumerate() {
            let size_started = Instant::now();
            let mut select = |c: usize| if per_call { world.agree(forcing.force(&d.candidates[c])) } else { Ok(()) };
            let mut failed = |c: usize, e: &Error| {
                if !self.quiet {
                    say(world, &format!("# {kind}: {} failed at {size} B and is left out: {e}", d.candidates[c].name));
                }
            };
            let look = |seen: &[measure::Seen]| -> Vec<usize> {
                if self.verify.is_some() {
                    return vec![];
                }
                let mut outcomes = vec![Outcome::Absent; n];
                let mut bands = vec![None; n];
                for (c, oc, rounds) in seen {
                    outcomes[*c] = *oc;
                    bands[*c] = choose::band(rounds);
                }
                choose::second_look(&sources, &outcomes, &bands)
            };
            let live = match plan {
                Some(p) => p[i].clone(),
                None => skip.live(),
            };
            let measured = bench.size(size, &live, comms, &implementations, &mut select, &mut failed, &look);
            if per_call && forcing.original.is_some() {
                world.agree(forcing.restore())?;
            }
            if plan.is_some() {
                // Only what ran: the candidates this size does not run have no cell to show.
                let mut row = vec![Cell::Skipped("not the file's choice at this size".into()); n];
                for (c, cell) in measured {
                    self.record(kind, size, &d.candidates[c], &cell, &bench, csv, found)?;
                    row[c] = cell;
                }
                for (c, cell) in row.into_iter().enumerate() {
                    cells[c].push(cell);
                }
                size_s.push((size, size_started.elapsed().as_secs_f64()));
                continue;
            }
            let row = skip.row(measured);
            skip.update(&row, size, &sources, self.o.no_skip);
            for (c, cell) in row.into_iter().enumerate() {
                self.record(kind, size, &d.candidates[c], &cell, &bench, csv, found)?;
                cells[c].push(cell);
            }
            size_s.push((size, size_started.elapsed().as_secs_f64()));
        }
        Ok(Measured {
            sizes: sizes.to_vec(),
            cells,
            spent: bench.spent,
            size_s,
            total_s: started.elapsed().as_secs_f64(),
        })
    }

    /// A cell as it ends: WRONG said at once, its row(s) in the CSV.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        kind: Kind,
        size: u64,
        cand: &Candidate,
        cell: &Cell,
        bench: &Bench,
        csv: &mut Option<CsvReport>,
        found: &mut Found,
    ) -> Result<()> {
        if let Outcome::Wrong(k) = cell.outcome() {
            found.any_wrong = true;
            say(
                self.world,
                &format!(
                    "WRONG: {kind} {} at {size} B: {k} wrong elements (or bytes out of bounds): disqualified at this size",
                    cand.name
                ),
            );
        }
        let Some(csvw) = csv.as_mut() else { return Ok(()) };
        let (point, skipped) = match cell {
            Cell::Timed { point, .. } => ((**point).clone(), String::new()),
            Cell::Skipped(why) => (bench.skipped_point(size), format!("skipped: {why}")),
            Cell::Failed => return Ok(()),
        };
        let mut p = point;
        // The sweep's algorithm column names the candidate: the library's own choice
        // (`default`), one it was forced to, or coll-bench's own.
        p.algorithm = cand.name.clone();
        p.algorithm_source = match cand.source {
            Source::Default => "auto",
            Source::Library(_) => "forced",
            Source::Own(imp) if !imp.own() => "other call",
            Source::Own(_) => "coll-bench",
        }
        .to_string();
        let default = matches!(cand.source, Source::Default);
        csvw.set_extra(vec![cand.id(), default.to_string(), skipped]);
        let placements: &[&Measurement] =
            if self.o.in_place { &[&p.out_of_place, &p.in_place] } else { &[&p.out_of_place] };
        for m in placements {
            csvw.measurement(self.info, &p, m)?;
        }
        Ok(())
    }

    /// Where the collective's time went, on one line.
    fn say_time(&self, kind: Kind, m: &Measured, comm_s: f64) {
        let sp = m.spent;
        let mut slowest = m.size_s.clone();
        slowest.sort_by(|a, b| b.1.total_cmp(&a.1));
        let slowest: Vec<String> = slowest.iter().take(3).map(|(b, t)| format!("{b} B {t:.1} s")).collect();
        say(
            self.world,
            &format!(
                "# {kind}: {:.1} s in all (rank 0's clock): timed calls {:.1} s, warm-up {:.1} s, check (fill and compare) {:.1} s, \
                 exchanges after each round {:.1} s{}, communicators {:.2} s; slowest sizes: {}",
                m.total_s,
                sp.timed,
                sp.warm_up,
                sp.check,
                sp.exchange,
                if self.o.in_place { format!(", in place {:.1} s", sp.in_place) } else { String::new() },
                comm_s,
                slowest.join(", ")
            ),
        );
    }

    /// The table, and what the rules file takes from it: Open MPI a rule per size range, MPICH
    /// one algorithm for every size (its variables take one value).
    fn choose(&self, kind: Kind, d: &Discovered, sizes: &[u64], cells: &[Vec<Cell>], found: &mut Found) {
        let mut choices = vec![];
        let first_measured = found.measured.len();
        print_table(self.world, self.quiet, kind, &d.candidates, sizes, cells, &mut |i, size, c| {
            let Some(r) = c.rule else { return };
            let cand = &d.candidates[r];
            let alg = match cand.source {
                Source::Library(v) => v,
                _ => 0,
            };
            let name = if alg == 0 { "default".to_string() } else { cand.name.clone() };
            choices.push((size, alg, name.clone()));
            let t = |j: usize| match cells[j][i].outcome() {
                Outcome::Time(t) => t,
                _ => f64::NAN,
            };
            let hi = choose::band(cells[r][i].rounds()).map(|b| b.1).unwrap_or(t(r));
            found.measured.push(rules::Measured {
                kind,
                size_bytes: size,
                algorithm: name,
                default_us: t(0),
                chosen_us: t(r),
                chosen_hi_us: if t(r).is_finite() { hi } else { f64::NAN },
            });
        });
        self.other_call(kind, d, sizes, cells, found);
        median_fastest(kind, d, sizes, cells, found);
        let Some(var) = &d.var else { return };
        if self.library == Library::OpenMpi {
            found.collective_rules.push(rules::CollectiveRules {
                kind,
                comm_size: self.world.size,
                rules: rules::size_rules(&choices),
            });
            return;
        }
        // One algorithm for every size (choose::one_for_all: never skipped, wrong or slower
        // beyond noise at any size; the default when none qualifies).
        let seen: Vec<choose::SizeSeen> = (0..sizes.len())
            .map(|i| {
                let outcomes = cells.iter().map(|r| r[i].outcome()).collect();
                let bands = cells.iter().map(|r| choose::band(r[i].rounds())).collect();
                (outcomes, bands)
            })
            .collect();
        let sources: Vec<Source> = d.candidates.iter().map(|c| c.source.clone()).collect();
        let Some(j) = choose::one_for_all(&sources, &seen) else { return };
        let cand = &d.candidates[j];
        let name = if j == 0 { "default".to_string() } else { cand.name.clone() };
        if j != 0 {
            found.environment.push((var.name.clone(), cand.name.clone()));
        }
        // What the file applies at every size is this one algorithm: its times.
        for m in &mut found.measured[first_measured..] {
            let Some(at) = sizes.iter().position(|s| *s == m.size_bytes) else { continue };
            m.algorithm = name.clone();
            (m.chosen_us, m.chosen_hi_us) = match cells[j][at].outcome() {
                Outcome::Time(t) => (t, choose::band(cells[j][at].rounds()).map(|b| b.1).unwrap_or(t)),
                _ => (f64::NAN, f64::NAN),
            };
        }
    }
}

impl Job<'_> {
    /// The library's other function for `kind` (`--impl counts`) against its default, per size:
    /// kept for doctor, and one line when it is faster beyond noise (by more than
    /// [`choose::MIN_GAIN`], its slowest round under the default's time) at some size.
    fn other_call(&self, kind: Kind, d: &Discovered, sizes: &[u64], cells: &[Vec<Cell>], found: &mut Found) {
        let Some(j) = d.candidates.iter().position(|c| c.source == Source::Own(Implementation::Counts)) else { return };
        let Some((function, other)) = Implementation::counts_functions(kind) else { return };
        let mut faster: Vec<(u64, f64)> = vec![];
        for (i, &size) in sizes.iter().enumerate() {
            let time = |c: usize| cells[c].get(i).map(Cell::outcome);
            let (Some(Outcome::Time(default_us)), Some(Outcome::Time(other_us))) = (time(0), time(j)) else { continue };
            let hi = choose::band(cells[j][i].rounds()).map(|b| b.1).unwrap_or(other_us);
            found.calls.push(OtherCall {
                collective: kind,
                size_bytes: size,
                function,
                function_us: default_us,
                other_function: other,
                other_us,
                other_slowest_round_us: hi,
            });
            if other_us * choose::MIN_GAIN < default_us && hi < default_us {
                faster.push((size, default_us / other_us));
            }
        }
        if faster.is_empty() || self.quiet {
            return;
        }
        let most = faster.iter().map(|f| f.1).fold(0.0, f64::max);
        say(
            self.world,
            &format!(
                "# {kind}: {other} (the library's other function, equal counts) beat {function}, which coll-bench times, by more than {:.0}% at {} of {} sizes ({}..{} B), up to {most:.2}x: an application that calls {other} gets that (coll-bench --impl counts sweeps it)",
                (choose::MIN_GAIN - 1.0) * 100.0,
                faster.len(),
                sizes.len(),
                faster[0].0,
                faster[faster.len() - 1].0
            ),
        );
    }
}

/// The candidates, and why the library's own cannot be forced where they cannot.
fn announce(world: &World, kind: Kind, d: &Discovered) {
    let names: Vec<String> = d
        .candidates
        .iter()
        .map(|c| match &c.source {
            Source::Default => "default".to_string(),
            Source::Library(v) => format!("{v}:{}", c.name),
            Source::Own(_) => c.name.clone(),
        })
        .collect();
    say(world, &format!("# {kind}: {} candidates: {}", names.len(), names.join(", ")));
    if let Some(n) = &d.note {
        say(
            world,
            &format!(
                "# {kind}: cannot force the library's algorithms: {n}; measuring its default and coll-bench's own only"
            ),
        );
    }
}
