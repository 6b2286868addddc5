//! The CSV: read back, columns checked, one row per point and placement, rank 0 only.
mod common;
use common::*;

#[test]
fn csv_reads_back_with_stable_columns() {
    let (o, dir) = mpirun(
        2,
        &[
            "all-reduce",
            "broadcast",
            "-d",
            "int32,float",
            "-o",
            "sum,max",
            "-b",
            "1K",
            "-e",
            "64K",
            "-f",
            "4",
            "-a",
            "3",
            "--csv",
            "out/run.csv",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let path = dir.path().join("out/run.csv");
    let mut rd = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = rd.headers().unwrap().iter().map(str::to_string).collect();
    // The columns as docs/output.md lists them (the contract; tests/vocabulary.rs holds every
    // writer to the same list).
    let columns = documented("## CSV columns");
    assert_eq!(header, columns);
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    // all-reduce: 2 types × 2 ops × 4 sizes × 2 placements; broadcast: 2 types × 4 sizes × 2.
    assert_eq!(rows.len(), 32 + 16);
    let col = |name: &str| columns.iter().position(|c| c == name).unwrap();
    for r in &rows {
        assert_eq!(&r[col("budget_s")], "0.05", "the run's --budget, seconds: {r:?}");
        assert_eq!(&r[col("backend")], "mpi");
        assert_eq!(&r[col("ranks")], "2");
        assert_eq!(&r[col("hosts")], "1");
        assert_eq!(&r[col("aggregation")], "max");
        assert_eq!(&r[col("wrong")], "0");
        assert_eq!(&r[col("out_of_bounds_bytes")], "0");
        // The library the binary was built against and launched with, named as it names itself.
        let lib = &r[col("mpi_library")];
        let family_word = if FAMILY == "mpich" { "MPICH" } else { "Open MPI" };
        assert!(lib.contains(family_word) && !lib.contains('\n'), "mpi_library {lib:?} for {FAMILY}");
        assert!(["out-of-place", "in-place"].contains(&&r[col("placement")]));
        let time: f64 = r[col("time_us")].parse().unwrap();
        let median: f64 = r[col("median_us")].parse().unwrap();
        let min: f64 = r[col("min_us")].parse().unwrap();
        let p99: f64 = r[col("p99_us")].parse().unwrap();
        let iters: u64 = r[col("iters")].parse().unwrap();
        assert!(time > 0.0 && min <= median && median <= p99, "{r:?}");
        assert!(iters >= 5, "budget gives at least 5 iterations: {r:?}");
        let size: f64 = r[col("size_bytes")].parse().unwrap();
        let algbw: f64 = r[col("algbw_gbps")].parse().unwrap();
        assert!((algbw - size / (time * 1e-6) / 1e9).abs() < 1e-6 * algbw.max(1.0), "{r:?}");
    }
    let colls: Vec<&str> = rows.iter().map(|r| r.get(col("collective")).unwrap()).collect();
    assert!(colls.contains(&"all-reduce") && colls.contains(&"broadcast"));
    assert_eq!(&rows[0][col("root")], "-1", "all-reduce has no root: -1, as in the table");
    assert_eq!(&rows.last().unwrap()[col("root")], "0");
    // Only rank 0 writes: exactly one file.
    assert_eq!(files(dir.path()).len(), 1);
}

#[test]
fn default_csv_goes_to_results() {
    let (o, dir) = mpirun(2, &["all-gather", "-b", "64", "-e", "64", "-n", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let f = files(&dir.path().join("results"));
    assert_eq!(f.len(), 1, "{f:?}");
    let name = f[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with("coll-bench-") && name.ends_with(".csv"), "{name}");
    let text = std::fs::read_to_string(&f[0]).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
}

#[test]
fn no_csv_writes_nothing() {
    let (o, dir) = mpirun(1, &["barrier", "--no-csv"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(files(dir.path()).is_empty());
}

/// `--order size`: the CSV's rows come round by round (every collective at one size, then the
/// next size), the table still prints each collective's block whole and in size order, the
/// header says so, and the CSV holds the same points as the default order's.
#[test]
fn order_size_measures_round_by_round_and_prints_each_collective_whole() {
    let args = ["all-reduce", "all-gather", "barrier", "-b", "64", "-e", "1K", "--budget", "2ms", "--csv", "r.csv"];
    let (o, dir) = mpirun(2, &[&args[..], &["--order", "size"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("# order: size (every collective at one size"), "{out}");
    // The table: one block per collective, in the order given, sizes ascending within each.
    let blocks: Vec<&str> = out.lines().filter_map(|l| l.strip_prefix("# Collective: ")).collect();
    assert_eq!(blocks, ["all-reduce", "all-gather", "barrier"], "{out}");
    let sizes: Vec<u64> = rows(&o).iter().map(|r| r[0].parse().unwrap()).collect();
    assert_eq!(sizes, [64, 128, 256, 512, 1024, 64, 128, 256, 512, 1024, 0], "{out}");
    // The CSV: as measured, round by round (barrier, one size, in the first round).
    let text = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let h = rd.headers().unwrap().clone();
    let (c, p, s) = (
        h.iter().position(|x| x == "collective").unwrap(),
        h.iter().position(|x| x == "placement").unwrap(),
        h.iter().position(|x| x == "size_bytes").unwrap(),
    );
    let got: Vec<(String, u64)> = rd
        .records()
        .map(|r| r.unwrap())
        .filter(|r| &r[p] == "out-of-place")
        .map(|r| (r[c].to_string(), r[s].parse().unwrap()))
        .collect();
    let mut want = vec![];
    for (i, size) in [64u64, 128, 256, 512, 1024].into_iter().enumerate() {
        want.push(("all-reduce".to_string(), size));
        want.push(("all-gather".to_string(), size));
        if i == 0 {
            want.push(("barrier".to_string(), 0));
        }
    }
    assert_eq!(got, want, "{text}");
    let order = h.iter().position(|x| x == "order").unwrap();
    let records: Vec<csv::StringRecord> =
        csv::Reader::from_reader(text.as_bytes()).records().map(|r| r.unwrap()).collect();
    assert!(records.iter().all(|r| &r[order] == "size"), "{text}");
    // The default order measures the same points, each collective's sizes in turn.
    let (d, ddir) = mpirun(2, &args);
    assert_eq!(d.status.code(), Some(0), "{}", stderr(&d));
    assert!(!stdout(&d).contains("# order:"), "{}", stdout(&d));
    let text = std::fs::read_to_string(ddir.path().join("r.csv")).unwrap();
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let records: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert!(records.iter().all(|r| &r[order] == "collective"), "{text}");
    let mut default: Vec<(String, u64)> = records
        .into_iter()
        .filter(|r| &r[p] == "out-of-place")
        .map(|r| (r[c].to_string(), r[s].parse().unwrap()))
        .collect();
    let mut sorted = want.clone();
    assert_ne!(default, sorted, "the default order is not round by round");
    default.sort();
    sorted.sort();
    assert_eq!(default, sorted);
}

#[test]
fn order_accepts_collective_or_size_only() {
    let (o, _dir) = mpirun(2, &["--order", "sizes", "--no-csv"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.lines().any(|l| l.starts_with("coll-bench: error: --order: unknown order 'sizes'; expected collective")),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}
