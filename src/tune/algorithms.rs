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

/// The algorithms (value, name) named in an MPICH description: "Variable to select allreduce
/// algorithmauto - Internal algorithm selection (…FILE)nb                       - Force
/// nonblocking algorithmsmp                      - Force smp algorithm…". MPICH joins the lines
/// of its list without a separator, but pads every name after the first ("auto") to one width:
/// the second name follows a ')' and gives the width, which then cuts each later name off the
/// end of the text before its " - ". Items are numbered in order, as MPICH's enumeration numbers
/// them (auto = 0). Anything else gives an empty list (nothing to set).
pub fn parse_mpich_description(desc: &str) -> Vec<(i32, String)> {
    let name_char = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_';
    let bytes = desc.as_bytes();
    // (end of the name, spaces before the " - "): one per item.
    let mut items: Vec<(usize, usize)> = vec![];
    let mut from = 0;
    while let Some(pos) = desc[from..].find(" - ").map(|p| p + from) {
        from = pos + 3;
        let mut end = pos;
        while end > 0 && bytes[end - 1] == b' ' {
            end -= 1;
        }
        items.push((end, pos + 1 - end));
    }
    let run_start = |end: usize| {
        let mut s = end;
        while s > 0 && name_char(bytes[s - 1]) {
            s -= 1;
        }
        s
    };
    let mut out = vec![];
    let Some(&(first_end, _)) = items.first() else { return out };
    let first = &desc[run_start(first_end)..first_end];
    let first = first.strip_prefix("algorithm").filter(|r| !r.is_empty()).unwrap_or(first);
    out.push((0, first.to_string()));
    let Some(&(second_end, second_pad)) = items.get(1) else { return out };
    let second_start = run_start(second_end);
    if second_start == 0 || bytes[second_start - 1] != b')' || second_start == second_end {
        return vec![];
    }
    let width = second_end - second_start + second_pad;
    for (k, &(end, pad)) in items.iter().enumerate().skip(1) {
        let len = width.saturating_sub(pad);
        let name = end.checked_sub(len).map(|s| &desc[s..end]).unwrap_or("");
        if name.is_empty() || !name.bytes().all(name_char) {
            return vec![];
        }
        out.push((k as i32, name.to_string()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MPICH 4.0.2's own descriptions (MPI_T_cvar_get_info), byte for byte.
    const MPICH_4_0: [(&str, &str); 4] = [
        ("Variable to select allreduce algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)nb                       - Force nonblocking algorithmsmp                      - Force smp algorithmrecursive_doubling       - Force recursive doubling algorithmreduce_scatter_allgather - Force reduce scatter allgather algorithm",
         "auto nb smp recursive_doubling reduce_scatter_allgather"),
        ("Variable to select reduce_scatter_block algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)noncommutative     - Force noncommutative algorithmrecursive_doubling - Force recursive doubling algorithmpairwise           - Force pairwise algorithmrecursive_halving  - Force recursive halving algorithmnb                 - Force nonblocking algorithm",
         "auto noncommutative recursive_doubling pairwise recursive_halving nb"),
        ("Variable to select bcast algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)binomial                                - Force Binomial Treenb                                      - Force nonblocking algorithmsmp                                     - Force smp algorithmscatter_recursive_doubling_allgather    - Force Scatter Recursive-Doubling Allgatherscatter_ring_allgather                  - Force Scatter Ring",
         "auto binomial nb smp scatter_recursive_doubling_allgather scatter_ring_allgather"),
        ("Variable to select alltoall algorithmauto - Internal algorithm selection (can be overridden with MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE)brucks                    - Force brucks algorithmnb                        - Force nonblocking algorithmpairwise                  - Force pairwise algorithmpairwise_sendrecv_replace - Force pairwise sendrecv replace algorithmscattered                 - Force scattered algorithm",
         "auto brucks nb pairwise pairwise_sendrecv_replace scattered"),
    ];

    #[test]
    fn mpich_descriptions_give_their_items_in_order() {
        for (desc, want) in MPICH_4_0 {
            let items = parse_mpich_description(desc);
            let names: Vec<&str> = items.iter().map(|(_, n)| n.as_str()).collect();
            assert_eq!(names.join(" "), want);
            assert!(items.iter().enumerate().all(|(i, (v, _))| *v == i as i32));
        }
        assert!(parse_mpich_description("Variable with no list").is_empty());
        // Not the layout MPICH writes: nothing rather than wrong numbers.
        assert!(parse_mpich_description("select algorithmauto - x; nb - y").is_empty());
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
