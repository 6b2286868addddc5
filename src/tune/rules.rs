//! The library's own tuning file, written from tune's choices and read back for `--verify`.
//!
//! Open MPI: the dynamic rules file `coll_tuned_dynamic_rules_filename` reads (the classic
//! format of `coll_tuned_dynamic_file.c`: whitespace-separated integers, `#` to the end of a
//! line is a comment): the number of collectives; per collective its id (`COLLTYPE_T`), the
//! number of communicator sizes, and per communicator size the size, the number of message-size
//! rules and per rule `from_bytes algorithm fan-in/out segment-size` (the first from 0). The
//! message size is the whole buffer, as coll-bench's size column. Open MPI 4.1 applies a
//! communicator-size rule to that size and larger.
//!
//! MPICH: `MPIR_CVAR_<COLL>_INTRA_ALGORITHM=name` lines (one algorithm for every size: MPICH's
//! per-size selection lives in its JSON tuning file, which tune does not write).
//!
//! Both carry tune's measurements as `# coll-bench-measured` comment lines: `--verify` shows
//! the speed-up they record beside the one it measures.

use super::algorithms::Library;
use crate::collective::Kind;
use crate::error::{Error, Result};

/// One message-size rule: from this size (bytes) on, this algorithm (0: the library's default).
#[derive(Clone, Debug, PartialEq)]
pub struct SizeRule {
    pub from_bytes: u64,
    pub algorithm: i32,
    pub name: String,
}

/// A collective's rules for one communicator size.
#[derive(Clone, Debug, PartialEq)]
pub struct CollectiveRules {
    pub kind: Kind,
    pub comm_size: usize,
    pub rules: Vec<SizeRule>,
}

/// What tune measured at one size: the library's default and the algorithm the file selects.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub kind: Kind,
    pub size_bytes: u64,
    pub algorithm: String,
    pub default_us: f64,
    pub chosen_us: f64,
    /// The chosen one's slowest round (the top of its noise band in tune's run), which
    /// `--verify` judges against; files of 5 fields read it as `chosen_us`.
    pub chosen_hi_us: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RulesFile {
    pub library: Library,
    pub collectives: Vec<CollectiveRules>,
    /// MPICH: the environment lines (variable, algorithm name).
    pub environment: Vec<(String, String)>,
    pub measured: Vec<Measured>,
}

/// What a file selects for one collective at one size, as the library reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum Choice {
    /// The library's own decision: Open MPI's algorithm 0 (or no rule), MPICH's `auto` (or no
    /// line for the collective's variable).
    Default,
    /// Open MPI: a value of the collective's algorithm variable.
    Id(i32),
    /// MPICH: the algorithm the variable's line names.
    Name(String),
}

impl RulesFile {
    /// The file's choice for `kind` at `size_bytes` (the sweep's size column, the message size
    /// the rules are written in) on `n` ranks: Open MPI's rule as `coll_tuned` picks it
    /// ([`crate::backend::ompi_rules::choose`]); MPICH's line for `variable`, every size alike.
    pub fn choice(&self, kind: Kind, n: usize, size_bytes: u64, variable: Option<&str>) -> Choice {
        use crate::backend::ompi_rules::{choose, Collective, CommRules, MessageRule};
        match self.library {
            Library::OpenMpi => {
                let Some(id) = open_mpi_id(kind) else { return Choice::Default };
                let comm_sizes = self
                    .collectives
                    .iter()
                    .filter(|c| c.kind == kind)
                    .map(|c| CommRules {
                        comm_size: c.comm_size as u64,
                        rules: c
                            .rules
                            .iter()
                            .map(|r| MessageRule { from_bytes: r.from_bytes, algorithm: r.algorithm })
                            .collect(),
                    })
                    .collect();
                match choose(&[Collective { id, comm_sizes }], id, n as u64, size_bytes) {
                    0 => Choice::Default,
                    alg => Choice::Id(alg),
                }
            }
            _ => match variable.and_then(|v| self.environment.iter().find(|(k, _)| k == v)) {
                Some((_, name)) if name != "auto" => Choice::Name(name.clone()),
                _ => Choice::Default,
            },
        }
    }
}

/// Open MPI's collective ids (`COLLTYPE_T`), as the library's reader has them.
pub fn open_mpi_id(kind: Kind) -> Option<u32> {
    crate::backend::ompi_rules::collective_id(kind)
}

fn kind_of_id(id: u32) -> Option<Kind> {
    super::algorithms::TUNABLE.into_iter().find(|k| open_mpi_id(*k) == Some(id))
}

/// Rules from the choice at each measured size (ascending): one rule from 0, then one where
/// the choice changes.
pub fn size_rules(choices: &[(u64, i32, String)]) -> Vec<SizeRule> {
    let mut out: Vec<SizeRule> = vec![];
    for (size, alg, name) in choices {
        match out.last() {
            Some(last) if last.algorithm == *alg => {}
            Some(_) => out.push(SizeRule { from_bytes: *size, algorithm: *alg, name: name.clone() }),
            None => out.push(SizeRule { from_bytes: 0, algorithm: *alg, name: name.clone() }),
        }
    }
    out
}

impl RulesFile {
    /// The file's text. `path` is where it will live, for the lines that apply it.
    pub fn text(&self, path: &str, header: &[String]) -> String {
        let mut t = String::new();
        let lib = match self.library {
            Library::OpenMpi => "openmpi",
            Library::Mpich => "mpich",
            Library::Other => "other",
        };
        t.push_str(&format!("# coll-bench-rules {lib}\n"));
        for h in header {
            t.push_str(&format!("# {h}\n"));
        }
        match self.library {
            Library::OpenMpi => {
                t.push_str("# Apply (every rank must read this file):\n");
                t.push_str(&format!(
                    "#   mpirun --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_dynamic_rules_filename {path} ...\n"
                ));
                t.push_str("#   or in $HOME/.openmpi/mca-params.conf (or <prefix>/etc/openmpi-mca-params.conf):\n");
                t.push_str(&format!(
                    "#     coll_tuned_use_dynamic_rules = 1\n#     coll_tuned_dynamic_rules_filename = {path}\n"
                ));
                t.push_str(&format!("{}   # collectives\n", self.collectives.len()));
                for c in &self.collectives {
                    let id = open_mpi_id(c.kind).expect("tunable collectives have an id");
                    t.push_str(&format!("{id}   # {}\n1   # communicator sizes\n", c.kind.name()));
                    t.push_str(&format!("{}   # ranks\n{}   # message-size rules\n", c.comm_size, c.rules.len()));
                    for r in &c.rules {
                        t.push_str(&format!(
                            "{} {} 0 0   # from {} B: {}\n",
                            r.from_bytes, r.algorithm, r.from_bytes, r.name
                        ));
                    }
                }
            }
            Library::Mpich | Library::Other => {
                t.push_str("# Apply: export these in the job's environment (or pass them with mpiexec -genv).\n");
                for (var, value) in &self.environment {
                    t.push_str(&format!("{var}={value}\n"));
                }
            }
        }
        for m in &self.measured {
            t.push_str(&format!(
                "# coll-bench-measured {} {} {} {} {} {}\n",
                m.kind.name(),
                m.size_bytes,
                m.algorithm,
                m.default_us,
                m.chosen_us,
                m.chosen_hi_us
            ));
        }
        t
    }

    /// Read a file written by [`RulesFile::text`] (and, for Open MPI, check its rules as Open
    /// MPI's reader would: integers in order, the first rule of each set from 0).
    pub fn parse(text: &str) -> std::result::Result<RulesFile, String> {
        let first = text.lines().next().unwrap_or("");
        let library =
            match first.strip_prefix("# coll-bench-rules ").map(str::trim) {
                Some("openmpi") => Library::OpenMpi,
                Some("mpich") => Library::Mpich,
                Some("other") => Library::Other,
                _ => return Err(
                    "not a rules file written by coll-bench tune --write-rules (no '# coll-bench-rules' first line)"
                        .into(),
                ),
            };
        let mut measured = vec![];
        let mut environment = vec![];
        for (i, line) in text.lines().enumerate() {
            if let Some(rest) = line.strip_prefix("# coll-bench-measured ") {
                let f: Vec<&str> = rest.split_whitespace().collect();
                let bad = || {
                    format!(
                        "line {}: a measured line needs: collective size algorithm default_us chosen_us [chosen_slowest_round_us]",
                        i + 1
                    )
                };
                if f.len() != 5 && f.len() != 6 {
                    return Err(bad());
                }
                let chosen_us: f64 = f[4].parse().map_err(|_| bad())?;
                measured.push(Measured {
                    kind: Kind::parse(f[0]).ok_or_else(bad)?,
                    size_bytes: f[1].parse().map_err(|_| bad())?,
                    algorithm: f[2].to_string(),
                    default_us: f[3].parse().map_err(|_| bad())?,
                    chosen_us,
                    chosen_hi_us: match f.get(5) {
                        Some(v) => v.parse().map_err(|_| bad())?,
                        None => chosen_us,
                    },
                });
                continue;
            }
            let body = line.split('#').next().unwrap_or("").trim();
            if body.is_empty() {
                continue;
            }
            if library != Library::OpenMpi {
                let (var, value) =
                    body.split_once('=').ok_or_else(|| format!("line {}: expected VARIABLE=value", i + 1))?;
                environment.push((var.trim().to_string(), value.trim().to_string()));
            }
        }
        let collectives = if library == Library::OpenMpi { open_mpi_rules(text)? } else { vec![] };
        Ok(RulesFile { library, collectives, environment, measured })
    }
}

/// The rules, read as Open MPI reads them (`backend::ompi_rules`), and only what tune writes:
/// tunable collectives, nothing left over, sizes that increase.
fn open_mpi_rules(text: &str) -> std::result::Result<Vec<CollectiveRules>, String> {
    let mut out = vec![];
    for c in crate::backend::ompi_rules::parse_strict(text)? {
        let kind = kind_of_id(c.id).ok_or_else(|| format!("collective id {} is not one tune writes", c.id))?;
        for s in c.comm_sizes {
            let rules = s.rules.iter().map(|r| SizeRule {
                from_bytes: r.from_bytes,
                algorithm: r.algorithm,
                name: String::new(),
            });
            out.push(CollectiveRules { kind, comm_size: s.comm_size as usize, rules: rules.collect() });
        }
    }
    Ok(out)
}

/// Read `path` for `--verify`, with the flag in the error.
pub fn read(path: &std::path::Path) -> Result<RulesFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::usage(format!("tune --verify: cannot read '{}': {e}", crate::error::shown(path))))?;
    RulesFile::parse(&text)
        .map_err(|why| Error::usage(format!("tune --verify: '{}': {why}", crate::error::shown(path))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RulesFile {
        let choices = vec![
            (65536, 0, "default".to_string()),
            (131072, 0, "default".to_string()),
            (262144, 2, "recursive_doubling".to_string()),
            (524288, 2, "recursive_doubling".to_string()),
            (1048576, 3, "recursive_halving".to_string()),
        ];
        RulesFile {
            library: Library::OpenMpi,
            collectives: vec![
                CollectiveRules { kind: Kind::ReduceScatter, comm_size: 4, rules: size_rules(&choices) },
                CollectiveRules {
                    kind: Kind::AllReduce,
                    comm_size: 4,
                    rules: size_rules(&[(8, 4, "ring".to_string())]),
                },
            ],
            environment: vec![],
            measured: vec![Measured {
                kind: Kind::ReduceScatter,
                size_bytes: 1048576,
                algorithm: "recursive_halving".into(),
                default_us: 594.5,
                chosen_us: 169.25,
                chosen_hi_us: 175.5,
            }],
        }
    }

    #[test]
    fn size_rules_start_at_zero_and_change_only_where_the_choice_does() {
        let r = &sample().collectives[0].rules;
        let got: Vec<(u64, i32)> = r.iter().map(|r| (r.from_bytes, r.algorithm)).collect();
        assert_eq!(got, [(0, 0), (262144, 2), (1048576, 3)]);
    }

    #[test]
    fn the_choice_at_a_size_is_the_rule_the_library_picks() {
        let f = sample();
        let at = |kind, n, size| f.choice(kind, n, size, None);
        assert_eq!(at(Kind::ReduceScatter, 4, 65536), Choice::Default);
        assert_eq!(at(Kind::ReduceScatter, 4, 262144), Choice::Id(2));
        assert_eq!(at(Kind::ReduceScatter, 4, 524288), Choice::Id(2));
        assert_eq!(at(Kind::ReduceScatter, 4, 4 << 20), Choice::Id(3));
        // Open MPI 4.1 applies a communicator size's rules to larger ones, and its first to smaller.
        assert_eq!(at(Kind::ReduceScatter, 8, 1 << 20), Choice::Id(3));
        assert_eq!(at(Kind::ReduceScatter, 2, 1 << 20), Choice::Id(3));
        assert_eq!(at(Kind::AllGather, 4, 1 << 20), Choice::Default);
        let mpich = RulesFile {
            library: Library::Mpich,
            collectives: vec![],
            environment: vec![("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM".into(), "ring".into())],
            measured: vec![],
        };
        let var = |v| mpich.choice(Kind::AllReduce, 4, 8, Some(v));
        assert_eq!(var("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"), Choice::Name("ring".into()));
        assert_eq!(var("MPIR_CVAR_BCAST_INTRA_ALGORITHM"), Choice::Default);
    }

    #[test]
    fn open_mpi_rules_read_back_as_written() {
        let f = sample();
        let text = f.text("/shared/rules.conf", &["tuned on 4 ranks".to_string()]);
        assert!(text.contains("coll_tuned_dynamic_rules_filename = /shared/rules.conf"), "{text}");
        // The integers Open MPI reads, in its order: 2 collectives; id 13, 1 comm size, 4 ranks, 3 rules …
        let numbers: Vec<&str> =
            text.lines().map(|l| l.split('#').next().unwrap().trim()).filter(|l| !l.is_empty()).collect();
        assert_eq!(numbers[..8], ["2", "13", "1", "4", "3", "0 0 0 0", "262144 2 0 0", "1048576 3 0 0"]);
        let back = RulesFile::parse(&text).unwrap();
        assert_eq!(back.library, Library::OpenMpi);
        assert_eq!(back.collectives.len(), 2);
        assert_eq!(back.collectives[0].kind, Kind::ReduceScatter);
        assert_eq!(back.collectives[0].comm_size, 4);
        let got: Vec<(u64, i32)> = back.collectives[0].rules.iter().map(|r| (r.from_bytes, r.algorithm)).collect();
        assert_eq!(got, [(0, 0), (262144, 2), (1048576, 3)]);
        assert_eq!(back.collectives[1].kind, Kind::AllReduce);
        assert_eq!(back.measured, f.measured);
    }

    #[test]
    fn bad_files_are_refused_with_the_reason() {
        assert!(RulesFile::parse("1\n13\n").unwrap_err().contains("coll-bench-rules"));
        let e = RulesFile::parse("# coll-bench-rules openmpi\n1\n13\n1\n2\n1\n64 2 0 0\n").unwrap_err();
        assert!(e.contains("must start at 0"), "{e}");
        let e = RulesFile::parse("# coll-bench-rules openmpi\n1\n13\n1\n2\n2\n0 2 0 0\n0 1 0 0\n").unwrap_err();
        assert!(e.contains("increase"), "{e}");
        let e = RulesFile::parse("# coll-bench-rules openmpi\n1\n13\n1\n2\n").unwrap_err();
        assert!(e.contains("missing"), "{e}");
        let e = RulesFile::parse("# coll-bench-rules openmpi\n1\n9\n1\n2\n1\n0 1 0 0\n").unwrap_err();
        assert!(e.contains("id 9"), "{e}");
        let e = RulesFile::parse("# coll-bench-rules mpich\nMPIR_CVAR_X\n").unwrap_err();
        assert!(e.contains("VARIABLE=value"), "{e}");
    }

    #[test]
    fn mpich_environment_lines_read_back() {
        let f = RulesFile {
            library: Library::Mpich,
            collectives: vec![],
            environment: vec![("MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM".into(), "pairwise".into())],
            measured: vec![],
        };
        let back = RulesFile::parse(&f.text("x", &[])).unwrap();
        assert_eq!(back, f);
    }

    #[test]
    fn measured_lines_of_five_fields_and_cells_not_run_read_back() {
        let text = "# coll-bench-rules mpich\n# coll-bench-measured reduce-scatter 1024 pairwise 10.5 9.25\n# coll-bench-measured reduce-scatter 4194304 pairwise 700 NaN NaN\n";
        let m = RulesFile::parse(text).unwrap().measured;
        assert_eq!((m[0].chosen_us, m[0].chosen_hi_us), (9.25, 9.25));
        assert!(m[1].chosen_us.is_nan() && m[1].chosen_hi_us.is_nan());
        assert_eq!(m[1].default_us, 700.0);
    }
}
