//! Algorithms: which ones a library offers for a collective, as it reports them through the MPI
//! tool interface (Open MPI's `coll_tuned_<coll>_algorithm` enumerations, MPICH's
//! `MPIR_CVAR_<COLL>_INTRA_ALGORITHM`, plain integers whose names MPICH lists only in the
//! variable's description), which `tune` forces one at a time; and which one the library ran
//! for a sweep's point, and how that is known (the `algorithm` and `algorithm_source` columns,
//! docs/output.md): never a guess. Only the mapping from our collectives to the MPI function
//! each one calls is ours; the algorithms, their numbers and names are the library's.

use super::{ompi_fixed, ompi_rules};
use crate::collective::Kind;
use std::collections::BTreeMap;

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
        if !TUNABLE.contains(&kind) {
            return None;
        }
        let open_mpi = open_mpi_name(kind)?;
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

/// What the library's variables say, read once through the tool interface before the first
/// point's name is needed (never inside a timed batch): each variable's value and, where the
/// library attaches one, its enumeration.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// `MPI_Get_library_version`'s first line.
    pub version: String,
    pub vars: BTreeMap<String, Var>,
    /// Open MPI: the dynamic rules file the variables name (`coll_tuned_use_dynamic_rules` on),
    /// as read when the variables were: its rules, or why it could not be read as Open MPI
    /// reads it.
    pub rules: Option<Result<Vec<ompi_rules::Collective>, String>>,
}

/// One control variable's value: an integer, or text (a string variable).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Var {
    pub int: Option<i32>,
    pub text: Option<String>,
    /// (value, name): Open MPI's enumeration, or the items of MPICH's description.
    pub items: Vec<(i32, String)>,
}

impl Settings {
    /// Read the variables [`wanted`] names through the tool interface (collective-free; an
    /// interface that fails gives none, so every name is `unknown`).
    pub fn read(version: &str) -> Settings {
        let mut vars = BTreeMap::new();
        if let Ok(tool) = super::mpit::Tool::init() {
            for c in tool.cvars(&wanted) {
                let items = match (&c.items, Library::of(version)) {
                    (Some(items), _) => items.clone(),
                    (None, Library::Mpich) => parse_mpich_description(&c.description),
                    (None, _) => vec![],
                };
                let (int, text) = if c.is_int {
                    (tool.read(&c).ok(), None)
                } else if c.is_bool {
                    (tool.read_bool(&c).map(i32::from), None)
                } else {
                    (None, tool.read_text(&c))
                };
                vars.insert(c.name.clone(), Var { int, text, items });
            }
        }
        let mut settings = Settings { version: version.to_string(), vars, rules: None };
        if let Some(path) = settings.rules_file().map(str::to_string) {
            settings.rules = Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read it: {e}"))
                    .and_then(|t| ompi_rules::parse(&t)),
            );
        }
        settings
    }

    /// The dynamic rules file Open MPI reads: named, with dynamic rules on (the one case in
    /// which `coll_tuned` reads it, `coll_tuned_component.c`).
    fn rules_file(&self) -> Option<&str> {
        if Library::of(&self.version) != Library::OpenMpi || self.int("coll_tuned_use_dynamic_rules").unwrap_or(0) == 0
        {
            return None;
        }
        let file = self.vars.get("coll_tuned_dynamic_rules_filename").and_then(|v| v.text.as_deref())?;
        Some(file).filter(|f| !f.trim().is_empty())
    }
}

/// The variables [`Settings::decide`] looks at (by name).
pub fn wanted(name: &str) -> bool {
    name == "coll"
        || (name.starts_with("coll_")
            && (name.ends_with("_priority")
                || name.ends_with("_algorithm")
                || name == "coll_tuned_use_dynamic_rules"
                || name == "coll_tuned_dynamic_rules_filename"))
        || (name.starts_with("MPIR_CVAR_") && name.ends_with("_INTRA_ALGORITHM"))
}

/// Open MPI's name of `kind`'s function in `coll_tuned` (`coll_tuned_<name>_algorithm`).
fn open_mpi_name(kind: Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::AllReduce => "allreduce",
        Kind::AllGather => "allgather",
        Kind::ReduceScatter => "reduce_scatter_block",
        Kind::Broadcast => "bcast",
        Kind::AllToAll => "alltoall",
        Kind::Reduce => "reduce",
        Kind::Gather => "gather",
        Kind::Scatter => "scatter",
        Kind::Barrier => "barrier",
        // Its counts are not one size, which the library's choice keys on: not reported.
        Kind::AllToAllV | Kind::SendRecv | Kind::PingPong => return None,
    })
}

/// Whether a component list of the `coll` variable (`a,b` selects, `^a,b` leaves out; empty:
/// every component) lets `component` in.
fn selected(list: &str, component: &str) -> bool {
    let list = list.trim();
    if list.is_empty() {
        return true;
    }
    let (exclude, names) = match list.strip_prefix('^') {
        Some(rest) => (true, rest),
        None => (false, list),
    };
    names.split(',').any(|n| n.trim() == component) != exclude
}

/// Components whose priority does not decide who serves an intra-communicator of 2 ranks or
/// more: `self` (1 rank), `inter` (inter-communicators), `libnbc` (non-blocking calls only),
/// `sync` (a wrapper that calls the component below it).
const NOT_COMPETING: [&str; 4] = ["self", "inter", "libnbc", "sync"];

impl Settings {
    fn int(&self, name: &str) -> Option<i32> {
        self.vars.get(name).and_then(|v| v.int)
    }

    fn name_of(&self, var: &str, value: i32) -> String {
        self.vars
            .get(var)
            .and_then(|v| v.items.iter().find(|(n, _)| *n == value))
            .map(|(_, name)| name.clone())
            .unwrap_or_else(|| format!("algorithm {value}"))
    }

    /// The algorithm the library runs for one call of `kind` on `n` ranks whose count argument
    /// is `bytes` (type size × count, as the library computes it) with a commutative operation
    /// (every one coll-bench runs), and how that is known (one of
    /// [`crate::record::ALGORITHM_SOURCES`]).
    pub fn decide(&self, kind: Kind, n: usize, bytes: u64) -> (String, &'static str) {
        match Library::of(&self.version) {
            Library::OpenMpi => self.open_mpi(kind, n, bytes),
            Library::Mpich => self.mpich(kind),
            Library::Other => unknown("not reported"),
        }
    }

    /// Open MPI: `coll_tuned`'s decision (`coll_tuned_decision_dynamic.c`: a rules file's rule,
    /// else the forced algorithm, else the fixed rules; only with `coll_tuned_use_dynamic_rules`
    /// on), where `coll_tuned` serves the communicator.
    fn open_mpi(&self, kind: Kind, n: usize, bytes: u64) -> (String, &'static str) {
        let Some(coll) = open_mpi_name(kind) else { return unknown("not reported") };
        let list = self.vars.get("coll").and_then(|v| v.text.clone()).unwrap_or_default();
        let Some(tuned) = self.int("coll_tuned_priority") else { return unknown("other component") };
        // 1 rank: coll/self; a component left out, or one at tuned's priority or above, may
        // take the communicator (each decides for itself): not ours to say.
        let rival = self.vars.iter().any(|(name, v)| {
            let Some(c) = name.strip_prefix("coll_").and_then(|r| r.strip_suffix("_priority")) else { return false };
            c != "tuned" && !NOT_COMPETING.contains(&c) && selected(&list, c) && v.int.is_some_and(|p| p >= tuned)
        });
        if n < 2 || !selected(&list, "tuned") || rival {
            return unknown("other component");
        }
        let var = format!("coll_tuned_{coll}_algorithm");
        if self.int("coll_tuned_use_dynamic_rules").unwrap_or(0) != 0 {
            if self.rules_file().is_some() {
                // A rule of the file decides first; its 0 (or no rule) leaves it to the next.
                let Some(Ok(rules)) = &self.rules else { return unknown("rules file") };
                let id = ompi_rules::collective_id(kind).expect("collectives of coll_tuned have an id");
                let alg = ompi_rules::choose(rules, id, n as u64, ompi_rules::message_bytes(kind, n as u64, bytes));
                if alg != 0 {
                    return (self.name_of(&var, alg), "rules file");
                }
            }
            if let Some(v) = self.int(&var).filter(|v| *v != 0) {
                return (self.name_of(&var, v), "forced");
            }
        }
        if !self.version.contains("Open MPI v4.1.") {
            return unknown("auto");
        }
        let (n, b) = (n as u64, bytes);
        let alg = match kind {
            Kind::AllReduce => ompi_fixed::allreduce(n, b, true),
            Kind::AllGather => ompi_fixed::allgather(n, b, true),
            Kind::ReduceScatter => ompi_fixed::reduce_scatter_block(n, b, true),
            Kind::Broadcast => ompi_fixed::bcast(n, b, true),
            Kind::AllToAll => ompi_fixed::alltoall(n, b, true),
            Kind::Reduce => ompi_fixed::reduce(n, b, true),
            Kind::Gather => ompi_fixed::gather(n, b, true),
            Kind::Scatter => ompi_fixed::scatter(n, b, true),
            Kind::Barrier => ompi_fixed::barrier(n, b, true),
            Kind::AllToAllV | Kind::SendRecv | Kind::PingPong => return unknown("not reported"),
        };
        (self.name_of(&var, alg), "fixed rules")
    }

    /// MPICH: `MPIR_CVAR_<COLL>_INTRA_ALGORITHM` when set (0 is `auto`); its own selection (the
    /// ch4 tuning JSON) is not replicated.
    fn mpich(&self, kind: Kind) -> (String, &'static str) {
        let Some(coll) = open_mpi_name(kind) else { return unknown("not reported") };
        let var = format!("MPIR_CVAR_{}_INTRA_ALGORITHM", coll.to_uppercase());
        match self.int(&var) {
            Some(0) => unknown("auto"),
            Some(v) => (self.name_of(&var, v), "forced"),
            None => unknown("not reported"),
        }
    }
}

fn unknown(source: &'static str) -> (String, &'static str) {
    (crate::record::UNKNOWN_ALGORITHM.to_string(), source)
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

    /// Thresholds of Open MPI 4.1's `coll_tuned_decision_fixed.c`, read off the C source by
    /// hand (not through the generator): (n, total_dsize, algorithm) at each side of a switch.
    #[test]
    fn open_mpi_fixed_rules_switch_where_the_c_source_does() {
        // allreduce, commutative, communicator_size < 4: < 8 ring(4), < 4096 recursive
        // doubling(3), < 8192 4, < 16384 3, < 65536 4, < 262144 segmented ring(5), else
        // rabenseifner(6).
        for (b, alg) in [(7, 4), (8, 3), (4095, 3), (4096, 4), (8191, 4), (8192, 3), (16383, 3), (16384, 4)] {
            assert_eq!(ompi_fixed::allreduce(2, b, true), alg, "allreduce 2 ranks {b} B");
        }
        for (b, alg) in [(65535, 4), (65536, 5), (262143, 5), (262144, 6), (1 << 26, 6)] {
            assert_eq!(ompi_fixed::allreduce(3, b, true), alg, "allreduce 3 ranks {b} B");
        }
        // communicator_size < 8: < 16 ring, < 8192 recursive doubling, else rabenseifner.
        for (n, b, alg) in [(4, 15, 4), (4, 16, 3), (4, 8191, 3), (7, 8192, 6), (4, 1 << 20, 6)] {
            assert_eq!(ompi_fixed::allreduce(n, b, true), alg, "allreduce {n} ranks {b} B");
        }
        // communicator_size < 16: < 8192 3, else 6; < 32: < 64 5.
        assert_eq!((ompi_fixed::allreduce(8, 8191, true), ompi_fixed::allreduce(15, 8192, true)), (3, 6));
        assert_eq!((ompi_fixed::allreduce(16, 63, true), ompi_fixed::allreduce(31, 64, true)), (5, 3));
        // Non-commutative, < 4 ranks: < 131072 3, else basic linear(1).
        assert_eq!((ompi_fixed::allreduce(2, 131071, false), ompi_fixed::allreduce(2, 131072, false)), (3, 1));
        // barrier: by size only.
        for (n, alg) in
            [(2, 3), (3, 3), (4, 1), (7, 1), (8, 3), (63, 3), (64, 4), (256, 6), (512, 4), (1024, 6), (4096, 4)]
        {
            assert_eq!(ompi_fixed::barrier(n, 0, true), alg, "barrier {n} ranks");
        }
        // bcast, < 4 ranks: < 32 3, < 256 5, < 512 3, < 1024 7, < 32768 1, < 131072 5,
        // < 262144 2, < 524288 1, < 1048576 6, else 5.
        for (b, alg) in [
            (31, 3),
            (32, 5),
            (256, 3),
            (512, 7),
            (1024, 1),
            (32768, 5),
            (131072, 2),
            (262144, 1),
            (524288, 6),
            (1048576, 5),
        ] {
            assert_eq!(ompi_fixed::bcast(2, b, true), alg, "bcast 2 ranks {b} B");
        }
        // bcast, < 8 ranks: < 64 5, < 128 6, < 2048 5, < 8192 6, < 1048576 1, else 2.
        for (b, alg) in [(63, 5), (64, 6), (128, 5), (2048, 6), (8192, 1), (1048576, 2)] {
            assert_eq!(ompi_fixed::bcast(4, b, true), alg, "bcast 4 ranks {b} B");
        }
        // allgather: 2 ranks two_proc(6); < 32 ranks recursive doubling(3); < 64: < 1024 3,
        // < 65536 neighbor(5), else ring(4).
        assert_eq!((ompi_fixed::allgather(2, 1 << 20, true), ompi_fixed::allgather(31, 1 << 20, true)), (6, 3));
        assert_eq!([1023, 1024, 65536].map(|b| ompi_fixed::allgather(32, b, true)), [3, 5, 4]);
        // reduce_scatter_block, < 4 ranks: < 4 2, < 8 4, < 16 3, < 128 4, < 256 3, < 4096 4,
        // < 8192 3, < 131072 4, else basic linear(1); non-commutative: 1.
        for (b, alg) in [(3, 2), (4, 4), (8, 3), (16, 4), (128, 3), (256, 4), (4096, 3), (8192, 4), (131072, 1)] {
            assert_eq!(ompi_fixed::reduce_scatter_block(2, b, true), alg, "reduce_scatter_block {b} B");
        }
        assert_eq!(ompi_fixed::reduce_scatter_block(2, 8, false), 1);
        // gather, < 4 ranks: < 2 3, < 4 1, < 32768 2, < 65536 1, < 131072 2, else 3.
        for (b, alg) in [(1, 3), (2, 1), (4, 2), (32768, 1), (65536, 2), (131072, 3)] {
            assert_eq!(ompi_fixed::gather(2, b, true), alg, "gather {b} B");
        }
        // scatter, < 8 ranks: < 2048 2, < 4096 1, < 8192 2, < 32768 1, < 1048576 3, else 1.
        for (b, alg) in [(2047, 2), (2048, 1), (4096, 2), (8192, 1), (32768, 3), (1048576, 1)] {
            assert_eq!(ompi_fixed::scatter(4, b, true), alg, "scatter {b} B");
        }
        // reduce, non-commutative, < 4 ranks: < 8 in-order binary(6), else linear(1).
        assert_eq!((ompi_fixed::reduce(2, 7, false), ompi_fixed::reduce(2, 8, false)), (6, 1));
    }

    fn settings(version: &str, vars: &[(&str, Var)]) -> Settings {
        Settings {
            version: version.into(),
            vars: vars.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            rules: None,
        }
    }

    fn int(v: i32) -> Var {
        Var { int: Some(v), ..Var::default() }
    }

    const OMPI: &str = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";

    #[test]
    fn open_mpi_names_forced_then_fixed_and_says_unknown_where_another_decides() {
        let names: Vec<(i32, String)> = [
            "ignore",
            "basic_linear",
            "nonoverlapping",
            "recursive_doubling",
            "ring",
            "segmented_ring",
            "rabenseifner",
        ]
        .iter()
        .enumerate()
        .map(|(i, n)| (i as i32, n.to_string()))
        .collect();
        let alg = |v: i32| Var { int: Some(v), text: None, items: names.clone() };
        let base = |dynamic: i32, forced: i32| {
            vec![
                ("coll_tuned_priority", int(30)),
                ("coll_basic_priority", int(10)),
                ("coll_han_priority", int(0)),
                ("coll_self_priority", int(75)),
                ("coll_sync_priority", int(50)),
                ("coll_tuned_use_dynamic_rules", int(dynamic)),
                ("coll_tuned_allreduce_algorithm", alg(forced)),
            ]
        };
        let decide = |vars: &[(&str, Var)], n: usize, b: u64| settings(OMPI, vars).decide(Kind::AllReduce, n, b);
        let named = |a: &str, s: &'static str| (a.to_string(), s);
        // Fixed rules on 4 ranks, both sides of 8192 B; forced only with dynamic rules on.
        assert_eq!(decide(&base(0, 0), 4, 8191), named("recursive_doubling", "fixed rules"));
        assert_eq!(decide(&base(0, 0), 4, 8192), named("rabenseifner", "fixed rules"));
        assert_eq!(decide(&base(0, 1), 4, 8192), named("rabenseifner", "fixed rules"));
        assert_eq!(decide(&base(1, 0), 4, 8192), named("rabenseifner", "fixed rules"));
        assert_eq!(decide(&base(1, 1), 4, 8192), named("basic_linear", "forced"));
        // A rules file decides before the forced value, as Open MPI reads and applies it; one
        // that cannot be read as Open MPI reads it is not guessed at; a rule of 0 (or none for
        // the collective) leaves it to the forced value, then the fixed rules.
        let mut v = base(1, 1);
        v.push(("coll_tuned_dynamic_rules_filename", Var { text: Some("/x/rules".into()), ..Var::default() }));
        let with =
            |vars: &[(&str, Var)], rules: Option<Result<Vec<ompi_rules::Collective>, String>>, n: usize, b: u64| {
                Settings { rules, ..settings(OMPI, vars) }.decide(Kind::AllReduce, n, b)
            };
        assert_eq!(with(&v, None, 4, 8), named("unknown", "rules file"));
        assert_eq!(with(&v, Some(Err("line 1: 'x'".into())), 4, 8), named("unknown", "rules file"));
        let file = ompi_rules::parse("1  2 1  4 3  0 4 0 0  1024 0 0 0  65536 6 0 0").unwrap();
        assert_eq!(with(&v, Some(Ok(file.clone())), 4, 8), named("ring", "rules file"));
        assert_eq!(with(&v, Some(Ok(file.clone())), 4, 1024), named("basic_linear", "forced"));
        assert_eq!(with(&v, Some(Ok(file.clone())), 4, 1 << 20), named("rabenseifner", "rules file"));
        let mut unforced = base(1, 0);
        unforced.push(v.last().unwrap().clone());
        assert_eq!(with(&unforced, Some(Ok(file.clone())), 4, 1024), named("recursive_doubling", "fixed rules"));
        // Dynamic rules off: Open MPI does not read the file.
        let mut off = base(0, 0);
        off.push(v.last().unwrap().clone());
        assert_eq!(with(&off, Some(Ok(file)), 4, 64), named("recursive_doubling", "fixed rules"));
        // Who serves the communicator: 1 rank (coll/self), tuned left out, a rival at or above
        // tuned's priority; sync and self's priorities do not compete.
        assert_eq!(decide(&base(0, 0), 1, 8), named("unknown", "other component"));
        let mut v = base(0, 0);
        v.push(("coll", Var { text: Some("^tuned".into()), ..Var::default() }));
        assert_eq!(decide(&v, 4, 8), named("unknown", "other component"));
        let mut v = base(0, 0);
        v[2].1 = int(30);
        assert_eq!(decide(&v, 4, 8), named("unknown", "other component"));
        v.push(("coll", Var { text: Some("^han".into()), ..Var::default() }));
        assert_eq!(decide(&v, 4, 8), named("ring", "fixed rules"));
        assert_eq!(decide(&base(0, 0)[1..], 4, 8), named("unknown", "other component"), "no coll_tuned at all");
        // Another version's fixed rules are not these; point-to-point has none.
        let other = settings("Open MPI v5.0.3", &base(0, 0)).decide(Kind::AllReduce, 4, 8);
        assert_eq!(other, named("unknown", "auto"));
        assert_eq!(settings(OMPI, &base(0, 0)).decide(Kind::SendRecv, 4, 8), named("unknown", "not reported"));
    }

    #[test]
    fn mpich_names_a_forced_algorithm_and_leaves_auto_unknown() {
        let items = parse_mpich_description(MPICH_4_0[0].0);
        let var = |v: i32| Var { int: Some(v), text: None, items: items.clone() };
        let m = |v: i32| settings("MPICH Version: 4.0.2", &[("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", var(v))]);
        assert_eq!(m(3).decide(Kind::AllReduce, 4, 8), ("recursive_doubling".to_string(), "forced"));
        assert_eq!(m(0).decide(Kind::AllReduce, 4, 8), ("unknown".to_string(), "auto"));
        assert_eq!(m(3).decide(Kind::Broadcast, 4, 8), ("unknown".to_string(), "not reported"));
        assert_eq!(settings("Intel(R) MPI", &[]).decide(Kind::AllReduce, 4, 8).1, "not reported");
    }

    #[test]
    fn the_coll_list_selects_or_leaves_out() {
        assert!(selected("", "tuned") && selected("basic,tuned", "tuned") && selected("^han", "tuned"));
        assert!(
            !selected("basic,self", "tuned") && !selected("^tuned,han", "tuned") && !selected("^han, tuned", "tuned")
        );
    }
}
