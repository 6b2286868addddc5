//! Which algorithms a library offers for a collective, as it reports them through the MPI tool
//! interface: Open MPI's `coll_tuned_<coll>_algorithm` enumerations, MPICH's
//! `MPIR_CVAR_<COLL>_INTRA_ALGORITHM` (plain integers whose names MPICH lists only in the
//! variable's description). Only the mapping from our collectives to the MPI function each one
//! calls is ours; the algorithms, their numbers and names are the library's.

use crate::collective::Kind;

/// The MPI library family, from its version string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Library {
    OpenMpi,
    Mpich,
    Other,
}

impl Library {
    pub fn of(version: &str) -> Library {
        if version.contains("Open MPI") {
            Library::OpenMpi
        } else if version.contains("MPICH") {
            Library::Mpich
        } else {
            Library::Other
        }
    }

    /// The control variable that picks `kind`'s algorithm, if the library has one we can tune
    /// (the MPI function coll-bench calls: reduce-scatter is `MPI_Reduce_scatter_block`).
    pub fn variable(self, kind: Kind) -> Option<String> {
        let open_mpi = match kind {
            Kind::AllReduce => "allreduce",
            Kind::AllGather => "allgather",
            Kind::ReduceScatter => "reduce_scatter_block",
            Kind::Broadcast => "bcast",
            Kind::AllToAll => "alltoall",
            Kind::Reduce => "reduce",
            _ => return None,
        };
        match self {
            Library::OpenMpi => Some(format!("coll_tuned_{open_mpi}_algorithm")),
            Library::Mpich => Some(format!("MPIR_CVAR_{}_INTRA_ALGORITHM", open_mpi.to_uppercase())),
            Library::Other => None,
        }
    }
}

/// The collectives `tune` can tune: those whose size decides the library's choice.
pub const TUNABLE: [Kind; 6] =
    [Kind::AllReduce, Kind::AllGather, Kind::ReduceScatter, Kind::Broadcast, Kind::AllToAll, Kind::Reduce];

/// The algorithms (value, name) named in an MPICH description: "… algorithmauto - Internal
/// algorithm selection (…)noncommutative     - Force noncommutative algorithmrecursive_doubling - …".
/// MPICH joins the lines of its list without a separator, so each item is the run of
/// `[a-z0-9_]` before a " - ", less the word "algorithm" that ended the line before; items are
/// numbered in order, as MPICH's enumeration numbers them (auto = 0).
pub fn parse_mpich_description(desc: &str) -> Vec<(i32, String)> {
    let mut out = vec![];
    let bytes = desc.as_bytes();
    let mut search = 0;
    while let Some(pos) = desc[search..].find(" - ").map(|p| p + search) {
        search = pos + 3;
        // Back over the padding, then over the name.
        let mut end = pos;
        while end > 0 && bytes[end - 1] == b' ' {
            end -= 1;
        }
        let mut start = end;
        while start > 0 && (bytes[start - 1].is_ascii_lowercase() || bytes[start - 1].is_ascii_digit() || bytes[start - 1] == b'_') {
            start -= 1;
        }
        let mut name = &desc[start..end];
        // "algorithmauto": the previous line ended in "algorithm".
        if start > 0 && bytes[start - 1].is_ascii_uppercase() {
            continue;
        }
        for glue in ["algorithms", "algorithm"] {
            if let Some(rest) = name.strip_prefix(glue) {
                if !rest.is_empty() {
                    name = rest;
                    break;
                }
            }
        }
        if !name.is_empty() {
            out.push((out.len() as i32, name.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpich_descriptions_give_their_items_in_order() {
        let d = "Variable to select reduce_scatter_block algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)noncommutative     - Force noncommutative algorithmrecursive_doubling - Force recursive doubling algorithmpairwise           - Force pairwise algorithmrecursive_halving  - Force recursive halving algorithmnb                 - Force nonblocking algorithm";
        let items = parse_mpich_description(d);
        let names: Vec<&str> = items.iter().map(|(_, n)| n.as_str()).collect();
        assert_eq!(names, ["auto", "noncommutative", "recursive_doubling", "pairwise", "recursive_halving", "nb"]);
        assert_eq!(items[3].0, 3);
        let d = "Variable to select allreduce algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)nb                       - Force nonblocking algorithmsmp                      - Force smp algorithmrecursive_doubling       - Force recursive doubling algorithmreduce_scatter_allgather - Force reduce scatter allgather algorithm";
        let names: Vec<String> = parse_mpich_description(d).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather"]);
        assert!(parse_mpich_description("Variable with no list").is_empty());
    }

    #[test]
    fn variables_follow_the_function_coll_bench_calls() {
        assert_eq!(
            Library::OpenMpi.variable(Kind::ReduceScatter).as_deref(),
            Some("coll_tuned_reduce_scatter_block_algorithm")
        );
        assert_eq!(Library::Mpich.variable(Kind::AllReduce).as_deref(), Some("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM"));
        assert_eq!(
            Library::Mpich.variable(Kind::ReduceScatter).as_deref(),
            Some("MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM")
        );
        assert_eq!(Library::Mpich.variable(Kind::Broadcast).as_deref(), Some("MPIR_CVAR_BCAST_INTRA_ALGORITHM"));
        assert_eq!(Library::OpenMpi.variable(Kind::Gather), None);
        assert_eq!(Library::of("Open MPI v4.1.4, package: Debian"), Library::OpenMpi);
        assert_eq!(Library::of("MPICH Version: 4.0.2"), Library::Mpich);
    }
}
