//! Who am I: the launcher's view of this process (from its environment), to cross-check against
//! MPI's. The classic failure is a binary linked against another MPI than the `mpirun` that
//! started it: every process then sees a world of one and the job silently becomes N one-rank
//! runs printing N tables.

use std::collections::HashMap;
use std::fmt;

/// Rank, world size and node-local placement of one process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// Where the numbers came from ("MPI", "Open MPI environment", …).
    pub source: String,
    pub rank: usize,
    pub size: Option<usize>,
    pub local_rank: Option<usize>,
    pub local_size: Option<usize>,
    /// The variables read, for the error message.
    pub vars: Vec<(String, String)>,
}

impl fmt::Display for View {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {}", self.rank)?;
        if let Some(s) = self.size {
            write!(f, " of {s}")?;
        }
        if let Some(l) = self.local_rank {
            write!(f, ", local rank {l}")?;
            if let Some(ls) = self.local_size {
                write!(f, " of {ls}")?;
            }
        }
        Ok(())
    }
}

/// The launchers we know, in the order they are tried; the first whose rank variable is set wins,
/// so an `mpirun` inside a Slurm allocation is judged by Open MPI's variables, not Slurm's.
const LAUNCHERS: &[(&str, [&str; 4])] = &[
    (
        "Open MPI",
        ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"],
    ),
    ("PMIx", ["PMIX_RANK", "", "", ""]),
    ("MPICH Hydra", ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"]),
    ("Slurm", ["SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", ""]),
    ("torchrun", ["RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"]),
];

/// The launcher's view from an environment map, if any launcher left its variables.
/// A variable that is set but not a number is an error.
pub fn from_env(env: &HashMap<String, String>) -> Result<Option<View>, String> {
    for (name, [rank, size, local_rank, local_size]) in LAUNCHERS {
        let Some(rank_val) = env.get(*rank) else { continue };
        let mut vars = vec![];
        let mut num = |key: &str| -> Result<Option<usize>, String> {
            if key.is_empty() {
                return Ok(None);
            }
            match env.get(key) {
                None => Ok(None),
                Some(v) => {
                    vars.push((key.to_string(), v.clone()));
                    v.trim()
                        .parse::<usize>()
                        .map(Some)
                        .map_err(|_| format!("the {name} launcher variable {key}={v:?} is not a number"))
                }
            }
        };
        let _ = rank_val;
        // srun --mpi=pmi2 sets PMI_RANK and PMI_SIZE as Hydra does, and PMI_JOBID (`12.0`), which
        // Hydra does not; Hydra's local-rank variables it does not.
        let name = match *name {
            "MPICH Hydra" if env.contains_key("PMI_JOBID") && !env.contains_key("MPI_LOCALRANKID") => "Slurm PMI-2",
            "PMIx" if env.get("SLURM_MPI_TYPE").is_some_and(|t| t.starts_with("pmix")) => "Slurm PMIx",
            n => n,
        };
        let view = View {
            source: format!("{name} environment"),
            rank: num(rank)?.expect("present"),
            size: num(size)?,
            local_rank: num(local_rank)?,
            local_size: num(local_size)?,
            vars,
        };
        return Ok(Some(view));
    }
    Ok(None)
}

/// The view's source when only Slurm's variables were found.
const SLURM: &str = "Slurm environment";

/// What srun needs to be told when its tasks got no process-management interface.
const SRUN_ADD_MPI: &str =
    "add --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH, Intel MPI) to srun; `srun --mpi=list` shows what this Slurm offers";

/// Tasks of one srun step, more than one, that no PMI was given to (`srun` without `--mpi` where
/// Slurm's `MpiDefault` is none): an Open MPI build cannot start there (its `MPI_Init` aborts
/// with a banner on every task), so this is said before `MPI_Init`, in one line. `s1_s2`: the
/// Open MPI installation has its components for Slurm's own PMI-1/PMI-2 libraries (built
/// `--with-pmi`), with which it can start without `--mpi`; then MPI decides. Other families start
/// as N one-rank jobs, which [`cross_check`] names after `MPI_Init`.
pub fn srun_without_pmi(env: &HashMap<String, String>, family: &str, s1_s2: bool) -> Option<String> {
    if family != "openmpi" || s1_s2 {
        return None;
    }
    let view = from_env(env).ok()??;
    let tasks = env.get("SLURM_STEP_NUM_TASKS").or(env.get("SLURM_NTASKS"))?.trim().parse::<usize>().ok()?;
    if view.source != SLURM || tasks < 2 || !env.contains_key("SLURM_STEP_ID") || env.contains_key("PMI_FD") {
        return None;
    }
    Some(format!(
        "srun started {tasks} tasks (SLURM_STEP_NUM_TASKS={tasks}) without a PMI (no PMIX_RANK or PMI_RANK), and \
         this Open MPI build cannot join them into one job without one: {SRUN_ADD_MPI}"
    ))
}

/// The flag that says a one-rank run is meant (see [`alone`]).
pub const ONE_RANK_FLAG: &str = "--one-rank";

/// A world of one that no MPI launcher started: torchrun's variables without an MPI launcher's,
/// or no launcher at all (one rank measures no communication), refused in one line unless
/// `one_rank` (`--one-rank`) says it is meant. `launcher` is [`from_env`]'s view.
pub fn alone(mpi_size: usize, launcher: Option<&View>, one_rank: bool) -> Result<(), String> {
    if mpi_size != 1 {
        return Ok(());
    }
    match launcher {
        Some(v) if v.source.starts_with("torchrun") && (v.size != Some(1) || !one_rank) => {
            let vars: Vec<String> = v.vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
            Err(format!(
                "torchrun's variables are set ({}) but no MPI launcher started this process: coll-bench's ranks are \
                 MPI processes; start them with an MPI launcher (mpirun -n N coll-bench ..., or srun --mpi=pmix ...), \
                 not torchrun",
                vars.join(" ")
            ))
        }
        None if !one_rank => Err(format!(
            "started without an MPI launcher: 1 rank measures no communication; start with mpirun -n N coll-bench ... \
             (or add {ONE_RANK_FLAG} to measure one rank alone)"
        )),
        _ => Ok(()),
    }
}

/// Compare MPI's view with the launcher's; the error names both.
pub fn cross_check(mpi: &View, launcher: &View) -> Result<(), String> {
    let differs = |a: Option<usize>, b: Option<usize>| matches!((a, b), (Some(x), Some(y)) if x != y);
    if mpi.rank != launcher.rank
        || differs(mpi.size, launcher.size)
        || differs(mpi.local_rank, launcher.local_rank)
        || differs(mpi.local_size, launcher.local_size)
    {
        let vars: Vec<String> = launcher.vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let hint = if mpi.size == Some(1) && launcher.size.is_some_and(|s| s > 1) {
            if launcher.source == SLURM {
                // Slurm's view is read only when no PMI's rank variable is set (LAUNCHERS' order).
                format!(
                    " — srun started the tasks without a PMI for MPI to join them into one job (no PMI_RANK or \
                     PMIX_RANK): {SRUN_ADD_MPI}"
                )
            } else {
                " — MPI sees a world of one while the launcher started more: coll-bench is probably linked \
                 against a different MPI than the launcher (compare `ldd $(which coll-bench) | grep libmpi` \
                 with `which mpirun`)"
                    .to_string()
            }
        } else {
            String::new()
        };
        return Err(format!(
            "launcher and MPI disagree: the {} ({}) says {}, but {} says {}{hint}",
            launcher.source,
            vars.join(" "),
            launcher,
            mpi.source,
            mpi
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn mpi(rank: usize, size: usize, lr: usize, ls: usize) -> View {
        View { source: "MPI".into(), rank, size: Some(size), local_rank: Some(lr), local_size: Some(ls), vars: vec![] }
    }

    #[test]
    fn no_launcher_means_no_view() {
        assert_eq!(from_env(&env(&[("HOME", "/root")])), Ok(None));
    }

    #[test]
    fn open_mpi_variables() {
        let v = from_env(&env(&[
            ("OMPI_COMM_WORLD_RANK", "3"),
            ("OMPI_COMM_WORLD_SIZE", "8"),
            ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
            ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
            ("SLURM_PROCID", "0"),
            ("SLURM_NTASKS", "1"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(v.source, "Open MPI environment");
        assert_eq!((v.rank, v.size, v.local_rank, v.local_size), (3, Some(8), Some(1), Some(2)));
        assert!(cross_check(&mpi(3, 8, 1, 2), &v).is_ok());
    }

    #[test]
    fn each_launcher_is_read() {
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, usize, Option<usize>, Option<usize>);
        let cases: &[Case] = &[
            (&[("PMIX_RANK", "2")], "PMIx environment", 2, None, None),
            (
                &[("PMI_RANK", "1"), ("PMI_SIZE", "4"), ("MPI_LOCALRANKID", "1")],
                "MPICH Hydra environment",
                1,
                Some(4),
                Some(1),
            ),
            (
                &[("SLURM_PROCID", "5"), ("SLURM_NTASKS", "16"), ("SLURM_LOCALID", "1")],
                "Slurm environment",
                5,
                Some(16),
                Some(1),
            ),
            (&[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")], "torchrun environment", 0, Some(2), Some(0)),
        ];
        for (vars, source, rank, size, local) in cases {
            let v = from_env(&env(vars)).unwrap().unwrap();
            assert_eq!(&v.source, source);
            assert_eq!((v.rank, v.size, v.local_rank), (*rank, *size, *local));
        }
    }

    #[test]
    fn a_world_of_one_without_an_mpi_launcher_is_refused_unless_meant() {
        let e = alone(1, None, false).unwrap_err();
        assert!(e.contains("1 rank measures no communication; start with mpirun -n N"), "{e}");
        assert_eq!(alone(1, None, true), Ok(()));
        assert_eq!(alone(2, None, false), Ok(()));
        let ompi = from_env(&env(&[("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "1")])).unwrap();
        assert_eq!(alone(1, ompi.as_ref(), false), Ok(()), "mpirun -n 1 is meant");
        let torch = from_env(&env(&[("RANK", "0"), ("WORLD_SIZE", "2"), ("LOCAL_RANK", "0")])).unwrap();
        for one_rank in [false, true] {
            let e = alone(1, torch.as_ref(), one_rank).unwrap_err();
            assert!(e.contains("torchrun's variables are set (RANK=0 WORLD_SIZE=2 LOCAL_RANK=0)"), "{e}");
            assert!(e.contains("start them with an MPI launcher"), "{e}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        let e = from_env(&env(&[("PMI_RANK", "x1")])).unwrap_err();
        assert!(e.contains("PMI_RANK") && e.contains("not a number"), "{e}");
    }

    #[test]
    fn world_of_one_under_a_launcher_of_eight_names_both_views() {
        let launcher =
            from_env(&env(&[("OMPI_COMM_WORLD_RANK", "5"), ("OMPI_COMM_WORLD_SIZE", "8")])).unwrap().unwrap();
        let e = cross_check(&mpi(0, 1, 0, 1), &launcher).unwrap_err();
        assert!(e.contains("OMPI_COMM_WORLD_SIZE=8"), "{e}");
        assert!(e.contains("says rank 5 of 8"), "{e}");
        assert!(e.contains("MPI says rank 0 of 1"), "{e}");
        assert!(e.contains("different MPI"), "{e}");
    }

    #[test]
    fn local_rank_disagreement_is_caught() {
        let launcher =
            from_env(&env(&[("SLURM_PROCID", "1"), ("SLURM_NTASKS", "2"), ("SLURM_LOCALID", "0")])).unwrap().unwrap();
        assert!(cross_check(&mpi(1, 2, 1, 2), &launcher).is_err());
        assert!(cross_check(&mpi(1, 2, 0, 1), &launcher).is_ok());
    }

    #[test]
    fn srun_without_a_pmi_is_named_before_mpi_init_for_open_mpi() {
        let step =
            [("SLURM_PROCID", "1"), ("SLURM_NTASKS", "4"), ("SLURM_STEP_NUM_TASKS", "4"), ("SLURM_STEP_ID", "0")];
        let line = srun_without_pmi(&env(&step), "openmpi", false).expect("named");
        assert!(line.starts_with("srun started 4 tasks (SLURM_STEP_NUM_TASKS=4) without a PMI"), "{line}");
        assert!(line.contains("add --mpi=pmix (Open MPI) or --mpi=pmi2"), "{line}");
        // A PMI given (srun --mpi=pmix / pmi2), Open MPI's mpirun inside an allocation, one task,
        // an MPICH build (N one-rank jobs, named after MPI_Init), Slurm's PMI-1/2 components: no.
        for extra in [("PMIX_RANK", "1"), ("PMI_RANK", "1"), ("OMPI_COMM_WORLD_RANK", "1"), ("PMI_FD", "9")] {
            let with: Vec<(&str, &str)> = step.iter().copied().chain([extra]).collect();
            assert_eq!(srun_without_pmi(&env(&with), "openmpi", false), None, "{extra:?}");
        }
        let one = [("SLURM_PROCID", "0"), ("SLURM_NTASKS", "1"), ("SLURM_STEP_NUM_TASKS", "1"), ("SLURM_STEP_ID", "0")];
        assert_eq!(srun_without_pmi(&env(&one), "openmpi", false), None);
        assert_eq!(srun_without_pmi(&env(&step), "mpich", false), None);
        assert_eq!(srun_without_pmi(&env(&step), "openmpi", true), None);
        // The batch script's own environment (no step): not srun's tasks.
        assert_eq!(srun_without_pmi(&env(&step[..3]), "openmpi", false), None);
    }

    #[test]
    fn a_world_of_one_under_srun_says_which_mpi_flag_to_add() {
        let v =
            from_env(&env(&[("SLURM_PROCID", "2"), ("SLURM_NTASKS", "4"), ("SLURM_LOCALID", "0")])).unwrap().unwrap();
        let e = cross_check(&mpi(0, 1, 0, 1), &v).unwrap_err();
        assert!(e.contains("add --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH, Intel MPI) to srun"), "{e}");
        assert!(!e.contains("different MPI"), "{e}");
    }

    #[test]
    fn sruns_pmis_are_named_as_slurms() {
        let pmi2 =
            [("PMI_RANK", "1"), ("PMI_SIZE", "4"), ("PMI_FD", "11"), ("PMI_JOBID", "6.0"), ("SLURM_MPI_TYPE", "pmi2")];
        let v = from_env(&env(&pmi2)).unwrap().unwrap();
        assert_eq!((v.source.as_str(), v.rank, v.size), ("Slurm PMI-2 environment", 1, Some(4)));
        let hydra = [("PMI_RANK", "1"), ("PMI_SIZE", "4"), ("PMI_FD", "11"), ("MPI_LOCALRANKID", "1")];
        assert_eq!(from_env(&env(&hydra)).unwrap().unwrap().source, "MPICH Hydra environment");
        let pmix = [("PMIX_RANK", "2"), ("SLURM_MPI_TYPE", "pmix")];
        assert_eq!(from_env(&env(&pmix)).unwrap().unwrap().source, "Slurm PMIx environment");
    }
}
