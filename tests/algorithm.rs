//! The `algorithm` and `algorithm_source` columns against the library itself: a forced
//! algorithm is named as forced, Open MPI's unforced choice follows its 4.1 fixed rules at each
//! size, and the CSV, the JSON and the table say the same (real launches of this build's MPI).
mod common;
use common::*;
use std::collections::BTreeMap;

/// (size, placement) → (algorithm, source).
type Named = BTreeMap<(u64, String), (String, String)>;

/// (size, placement) → (algorithm, source) from the CSV, after checking the JSON says the same
/// for every point; and the table's algorithm lines.
fn run(n: usize, args: &[&str], env: &[(&str, &str)]) -> (Named, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec!["--budget", "2ms", "-w", "2", "--csv", "a.csv", "--json", "a.json"];
    all.extend_from_slice(args);
    let o = mpirun_env(dir.path(), n, &all, env, 300);
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let mut r = csv::Reader::from_path(dir.path().join("a.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|c| c == name).unwrap_or_else(|| panic!("no {name} in {h:?}"));
    let mut csv = BTreeMap::new();
    for rec in r.records() {
        let rec = rec.unwrap();
        let key = (rec[col("size_bytes")].parse::<u64>().unwrap(), rec[col("placement")].to_string());
        csv.insert(key, (rec[col("algorithm")].to_string(), rec[col("algorithm_source")].to_string()));
    }
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.path().join("a.json")).unwrap()).unwrap();
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len() * 2, csv.len(), "two placements of every point");
    for p in points {
        let size = p["size_bytes"].as_u64().unwrap();
        let named = (p["algorithm"].as_str().unwrap().to_string(), p["algorithm_source"].as_str().unwrap().to_string());
        for placement in ["out-of-place", "in-place"] {
            assert_eq!(
                csv.get(&(size, placement.to_string())),
                Some(&named),
                "{size} B {placement}: CSV and JSON differ"
            );
        }
    }
    let lines = stdout(&o).lines().filter(|l| l.starts_with("#  algorithm: ")).map(str::to_string).collect();
    (csv, lines)
}

fn only(csv: &Named) -> BTreeMap<u64, (String, String)> {
    csv.iter().map(|((s, _), v)| (*s, v.clone())).collect()
}

fn named(a: &str, s: &str) -> (String, String) {
    (a.to_string(), s.to_string())
}

const SIZES: &[&str] = &["all-reduce", "-b", "8", "-e", "32K", "-f", "8"];

#[test]
fn open_mpi_forced_all_reduce_is_named_forced_and_the_default_follows_the_fixed_rules() {
    if FAMILY != "openmpi" {
        return;
    }
    // Forced to the linear algorithm as a user forces it (MCA variables in the environment,
    // what `mpirun --mca` passes), on 4 ranks: every size says so.
    let forced = [("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"), ("OMPI_MCA_coll_tuned_allreduce_algorithm", "1")];
    let (csv, lines) = run(4, SIZES, &forced);
    let by_size = only(&csv);
    assert_eq!(by_size.keys().copied().collect::<Vec<_>>(), [8, 64, 512, 4096, 32768]);
    assert!(by_size.values().all(|v| *v == named("basic_linear", "forced")), "{by_size:?}");
    assert_eq!(lines, ["#  algorithm: basic_linear (forced) from 8 B"]);

    // The algorithm variable without dynamic rules does nothing in Open MPI: the fixed rules
    // of coll_tuned_decision_fixed.c for 4 ranks (4 to 7: < 16 B ring, < 8192 B recursive
    // doubling, else rabenseifner).
    let (csv, lines) = run(4, SIZES, &[("OMPI_MCA_coll_tuned_allreduce_algorithm", "1")]);
    let want: BTreeMap<u64, (String, String)> = [
        (8, "ring"),
        (64, "recursive_doubling"),
        (512, "recursive_doubling"),
        (4096, "recursive_doubling"),
        (32768, "rabenseifner"),
    ]
    .into_iter()
    .map(|(s, a)| (s, named(a, "fixed rules")))
    .collect();
    assert_eq!(only(&csv), want);
    assert_eq!(
        lines,
        [
            "#  algorithm: ring (fixed rules) from 8 B",
            "#  algorithm: recursive_doubling (fixed rules) from 64 B",
            "#  algorithm: rabenseifner (fixed rules) from 32768 B"
        ]
    );

    // Another component may take the communicator: not ours to say.
    let (csv, _) = run(2, &["all-reduce", "-b", "8", "-e", "8"], &[("OMPI_MCA_coll_han_priority", "40")]);
    assert!(only(&csv).values().all(|v| *v == named("unknown", "other component")), "{csv:?}");
}

/// A dynamic rules file, as a user (or `tune --write-rules`) writes it, decides before the
/// forced value; its rule of 0 leaves the size to the forced value, then to the fixed rules
/// (Open MPI 4.1's `coll_tuned_decision_dynamic.c`); a file Open MPI's reader would not read
/// the same way is `unknown`, never a guess.
#[test]
fn open_mpi_rules_file_names_its_choice_at_each_size() {
    if FAMILY != "openmpi" {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.rules");
    // all-reduce (id 2), communicators of 4 ranks on: ring from 0, the next rule from 512 B
    // (0: not the file's), basic_linear from 4096 B.
    std::fs::write(&file, "1 # collectives\n2 # all-reduce\n1\n4 3\n0 4 0 0\n512 0 0 0\n4096 1 0 0\n").unwrap();
    let path = file.to_str().unwrap();
    let env = [("OMPI_MCA_coll_tuned_use_dynamic_rules", "1"), ("OMPI_MCA_coll_tuned_dynamic_rules_filename", path)];
    let (csv, lines) = run(4, SIZES, &env);
    let want: BTreeMap<u64, (String, String)> = [
        (8, named("ring", "rules file")),
        (64, named("ring", "rules file")),
        (512, named("recursive_doubling", "fixed rules")),
        (4096, named("basic_linear", "rules file")),
        (32768, named("basic_linear", "rules file")),
    ]
    .into_iter()
    .collect();
    assert_eq!(only(&csv), want);
    assert_eq!(
        lines,
        [
            "#  algorithm: ring (rules file) from 8 B",
            "#  algorithm: recursive_doubling (fixed rules) from 512 B",
            "#  algorithm: basic_linear (rules file) from 4096 B"
        ]
    );
    // The rule of 0 at 512 B gives way to a forced algorithm first.
    let forced = [env[0], env[1], ("OMPI_MCA_coll_tuned_allreduce_algorithm", "6")];
    let (csv, _) = run(4, SIZES, &forced);
    assert_eq!(only(&csv)[&512], named("rabenseifner", "forced"));
    assert_eq!(only(&csv)[&8], named("ring", "rules file"));
    // Octal by Open MPI's `%li`: not read the same way here, so not guessed at.
    std::fs::write(&file, "1 2 1 4 1 0 04 0 0\n").unwrap();
    let (csv, _) = run(4, SIZES, &env);
    assert!(only(&csv).values().all(|v| *v == named("unknown", "rules file")), "{csv:?}");
}

#[test]
fn mpich_forced_all_reduce_is_named_forced_and_its_own_choice_unknown() {
    if FAMILY != "mpich" {
        return;
    }
    let small = ["all-reduce", "-b", "8", "-e", "4K", "-f", "8"];
    let (csv, _) = run(2, &small, &[("MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM", "recursive_doubling")]);
    assert!(only(&csv).values().all(|v| *v == named("recursive_doubling", "forced")), "{csv:?}");
    let (csv, _) = run(2, &small, &[]);
    assert!(only(&csv).values().all(|v| *v == named("unknown", "auto")), "{csv:?}");
}
