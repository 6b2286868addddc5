//! Every collective × int32, float32, float64 × every op, in and out of place, with the check on,
//! under mpirun with 1, 2, 3 and 4 ranks: zero wrong, exit 0.
mod common;
use common::*;

fn all_correct(n: usize) {
    let dir = tempfile::tempdir().unwrap();
    // MPICH 4.0 crashes in an in-place reduce at a root other than 0 unless its device
    // collectives are off; coll-bench refuses that case up front (mpich_reduce_fault_is_refused).
    let env: &[(&str, &str)] = if FAMILY == "mpich" { &[("MPIR_CVAR_DEVICE_COLLECTIVES", "none")] } else { &[] };
    // Under MPICH with more ranks than cores, one integer and one float type (see
    // `oversubscribed_mpich`); every type on 1 and 2 ranks.
    let types = if oversubscribed_mpich(n) { "int32,float64" } else { "int32,float32,float64" };
    let ntypes = types.split(',').count();
    let o = mpirun_env(
        dir.path(),
        n,
        &[
            "all",
            "-d",
            types,
            "-o",
            "all",
            "-b",
            "8",
            "-e",
            "96K",
            "-f",
            "7",
            "-n",
            "3",
            "-w",
            "1",
            "-r",
            &(n - 1).to_string(),
            "--no-csv",
        ],
        env,
        600,
    );
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "n={n}\n{out}\n{}", stderr(&o));
    let rows = rows(&o);
    // 12 collectives: 3 reducing × 3 types × 5 ops, 8 moving × 3 types, barrier once; sizes
    // 8, 56, 392, 2744, 19208.
    assert_eq!(rows.len(), (3 * ntypes * 5 + 8 * ntypes) * 5 + 1, "n={n}\n{out}");
    // nccl-tests' 13 columns, then %ceil where there is a ring to measure (2 ranks or more).
    let columns = if n > 1 { 14 } else { 13 };
    for r in &rows {
        assert_eq!(r.len(), columns, "{r:?}");
        // all-to-all-v (the only collective whose root column is -1 and whose in-place side is
        // "-") is measured out of place only.
        let in_place = if r[9] == "-" { "-" } else { "0" };
        assert_eq!((r[8].as_str(), r[12].as_str()), ("0", in_place), "wrong elements in {r:?}");
    }
    assert!(out.contains("# Out of bounds values : 0 OK"), "{out}");
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    assert!(out.contains(&format!("# ranks: {n} on 1 host(s)")), "{out}");
    for coll in [
        "all-reduce",
        "all-gather",
        "reduce-scatter",
        "broadcast",
        "reduce",
        "gather",
        "scatter",
        "all-to-all",
        "all-to-all-v",
        "sendrecv",
        "ping-pong",
        "barrier",
    ] {
        assert!(out.contains(&format!("# Collective: {coll}\n")), "{coll} missing");
    }
    // The root column shows the root for rooted collectives only.
    let roots: Vec<&str> = rows.iter().map(|r| r[4].as_str()).collect();
    assert!(roots.contains(&"-1") && roots.contains(&(n - 1).to_string().as_str()));
}

#[test]
fn one_rank() {
    all_correct(1);
}

#[test]
fn two_ranks() {
    all_correct(2);
}

#[test]
fn three_ranks() {
    all_correct(3);
}

#[test]
fn four_ranks() {
    all_correct(4);
}

#[test]
fn every_type_the_mpi_backend_has() {
    let (o, _d) = mpirun(
        2,
        &[
            "all-reduce",
            "all-gather",
            "reduce",
            "-d",
            "int8,uint8,int32,uint32,int64,uint64,float32,float64",
            "-o",
            "all",
            "-e",
            "4K",
            "-f",
            "8",
            "-n",
            "2",
            "-w",
            "0",
            "--no-csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}\n{}", stdout(&o), stderr(&o));
    assert!(rows(&o).iter().all(|r| r[8] == "0" && r[12] == "0"));
}

#[test]
fn wrong_data_is_counted_and_exits_1() {
    let (o, _d) = mpirun(
        3,
        &[
            "all-reduce",
            "all-gather",
            "-b",
            "64",
            "-e",
            "1K",
            "-f",
            "4",
            "-n",
            "2",
            "--no-csv",
            "--debug-corrupt-rank",
            "1",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    for r in rows(&o) {
        assert_eq!((r[8].as_str(), r[12].as_str()), ("1", "1"), "{r:?}");
    }
    assert!(stdout(&o).contains("# Wrong elements       : 12 FAILED"), "{}", stdout(&o));
}

#[test]
fn table_numbers_are_consistent() {
    // busbw = algbw × 2(n-1)/n for all-reduce, algbw = bytes / time.
    let (o, _d) = mpirun(4, &["all-reduce", "-b", "1M", "-e", "1M", "-n", "5", "--no-csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = &rows(&o)[0];
    let (size, time_us, algbw, busbw): (f64, f64, f64, f64) =
        (r[0].parse().unwrap(), r[5].parse().unwrap(), r[6].parse().unwrap(), r[7].parse().unwrap());
    assert_eq!(r[1], "262144");
    assert!((algbw - size / time_us / 1e3).abs() <= 0.011 + algbw * 0.01, "{r:?}");
    assert!((busbw - algbw * 1.5).abs() <= 0.011 + busbw * 0.01, "{r:?}");
}

/// coll-bench's own reduce-scatter and all-gather rings and recursive-doubling all-reduce, and the
/// library's other functions for reduce-scatter and all-gather (`--impl counts`; all tune's
/// candidates) are exact in both placements on 1 to 4 ranks; recursive doubling refuses a rank
/// count that is not a power of two.
#[test]
fn own_rings_and_recursive_doubling_are_exact() {
    for n in 1..=4 {
        // Under MPICH with more ranks than cores one type (MPICH moves the bytes; the arithmetic
        // per type is ours and runs in full under Open MPI and on fewer ranks).
        let types = if oversubscribed_mpich(n) { "double" } else { "int8,int32,uint64,float,double" };
        let common = ["-d", types, "-o", "all", "-b", "8", "-e", "96K", "-f", "49", "-n", "3", "--no-csv"];
        let mut runs: Vec<(Vec<&str>, &str)> = vec![
            (vec!["reduce-scatter", "all-gather", "--impl", "ring"], "ring"),
            (vec!["reduce-scatter", "all-gather", "--impl", "counts"], "counts"),
        ];
        if n != 3 {
            runs.push((vec!["all-reduce", "--impl", "recursive-doubling"], "recursive-doubling"));
        }
        for (args, name) in runs {
            let mut full = args.clone();
            full.extend(common);
            let (o, _d) = mpirun(n, &full);
            let out = stdout(&o);
            assert_eq!(o.status.code(), Some(0), "n={n} {name}\n{out}{}", stderr(&o));
            assert!(out.contains(&format!("# implementation: {name}")), "{out}");
            let rows = rows(&o);
            assert!(!rows.is_empty(), "{out}");
            assert!(rows.iter().all(|r| r[8] == "0" && r[12] == "0"), "n={n} {name}\n{out}");
        }
    }
    let (o, _d) = mpirun(3, &["all-reduce", "--impl", "recursive-doubling", "--no-csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("power-of-two"), "{}", stderr(&o));
}

#[test]
fn ring_all_reduce_beside_the_library_s_own() {
    for n in 1..=4 {
        // Under MPICH with more ranks than cores one type (MPICH moves the bytes; the arithmetic
        // per type is ours and runs in full under Open MPI and on fewer ranks).
        let types = if oversubscribed_mpich(n) { "double" } else { "int8,int32,uint64,float,double" };
        let (o, _d) = mpirun(
            n,
            &[
                "all-reduce",
                "--impl",
                "ring",
                "-d",
                types,
                "-o",
                "all",
                "-b",
                "8",
                "-e",
                "96K",
                "-f",
                "7",
                "-n",
                "3",
                "--no-csv",
            ],
        );
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(0), "n={n}\n{out}{}", stderr(&o));
        assert!(
            out.contains("# implementation: ring (all-reduce, reduce-scatter, all-gather over MPI_Sendrecv)"),
            "{out}"
        );
        let rows = rows(&o);
        assert_eq!(rows.len(), types.split(',').count() * 5 * 5, "n={n}");
        assert!(rows.iter().all(|r| r[8] == "0" && r[12] == "0"), "n={n}\n{out}");
    }
    // The check still bites on the ring's output.
    let (o, _d) = mpirun(
        3,
        &["all-reduce", "--impl", "ring", "-b", "1K", "-e", "1K", "-n", "2", "--no-csv", "--debug-corrupt-rank", "2"],
    );
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
}

#[test]
fn mpich_reduce_fault_is_refused() {
    if FAMILY != "mpich" {
        return;
    }
    let (o, dir) = mpirun(2, &["reduce", "-r", "1", "-b", "4K", "-e", "4K", "--csv", "r.csv"]);
    let (out, err) = (stdout(&o), stderr(&o));
    if o.status.code() == Some(0) {
        // Not MPICH 4.0: the case runs, and must be right.
        assert!(!out.contains("MPICH Version:\t4.0"), "{out}");
        assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
        return;
    }
    assert_eq!(o.status.code(), Some(2), "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("-r/--root 1") && err.contains("MPIR_CVAR_DEVICE_COLLECTIVES=none"), "{err}");
    assert!(files(dir.path()).is_empty());
}

/// A verdict of wrong data reaches the user whole: only rank 0 ends with exit 1, after the table
/// and the verdict are out, so no launcher can end the job on another rank's code before it has
/// forwarded rank 0's output (on a brand-new machine a corrupted-phase test once got exit 1 with
/// an empty stdout). Every rank runs under ci/netns/record-rank.sh, which leaves its exit code.
#[test]
fn wrong_data_leaves_the_verdict_to_rank_0() {
    let dir = tempfile::tempdir().unwrap();
    let wrapper = concat!(env!("CARGO_MANIFEST_DIR"), "/ci/netns/record-rank.sh");
    let d = dir.path().to_str().unwrap();
    for args in [
        &["all-reduce", "-b", "1K", "-e", "1K", "-n", "1", "-w", "0", "--no-csv", "--debug-corrupt-rank", "2"][..],
        CORRUPTED_STEP,
    ] {
        let o = launch_cmd(120).args(["-n", "4", wrapper, d, BIN]).args(args).current_dir(d).output().unwrap();
        let out = stdout(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}\n{out}{}", stderr(&o));
        assert!(out.contains("WRONG") || out.contains("FAILED"), "{args:?}\n{out}");
        // Rank 0 chooses 1; every other rank chooses 0. One still finishing when rank 0 has
        // ended may be ended by the launcher's tear-down (143 recorded, or no code after
        // SIGKILL): never 1 of its own.
        let codes: Vec<String> = (0..4)
            .map(|r| {
                std::fs::read_to_string(dir.path().join(format!("rank{r}.rc"))).unwrap_or_default().trim().to_string()
            })
            .collect();
        assert_eq!(codes[0], "1", "{args:?}: rank 0's exit code\n{out}");
        assert!(codes[1..].iter().all(|c| ["0", "143", ""].contains(&c.as_str())), "{args:?}: {codes:?}\n{out}");
    }
}

/// 7 ranks (more than the cores: oversubscribed): every row's size and count are nccl-tests'
/// for the same request, the per-rank count rounded down to whole 16 bytes (100 B of int8 on 7
/// ranks is 0 a rank, not 14; 400 B is 48, not 57), and the data is right at those counts, in
/// place too.
#[test]
fn seven_ranks_share_sizes_out_as_nccl_tests() {
    let dir = tempfile::tempdir().unwrap();
    // Under MPICH with more ranks than cores one type: int8, whose counts nccl-tests aligns the
    // most (16 elements); the wider types' alignment runs under Open MPI.
    let types = if oversubscribed_mpich(7) { "int8" } else { "int8,int32,double" };
    let sizes = [100u64, 400, 1600, 6400, 25_600];
    let colls = "all-gather reduce-scatter all-to-all gather scatter all-reduce broadcast sendrecv ping-pong";
    let mut args: Vec<&str> = colls.split(' ').collect();
    args.extend(["-d", types, "-o", "sum", "-b", "100", "-e", "25600", "-f", "4", "-n", "1", "-w", "0"]);
    args.extend(["--csv", "run.csv"]);
    let o = mpirun_in(dir.path(), 7, &args, 600);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{}", stderr(&o));
    assert!(out.contains("# Wrong elements       : 0 OK"), "{out}");
    let csv = std::fs::read_to_string(dir.path().join("run.csv")).unwrap();
    let seen = assert_nccl_tests_geometry(&csv, 7, &sizes);
    assert_eq!(seen.len(), 9, "{seen:?}");
}
