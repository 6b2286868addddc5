//! The CSV: read back, columns checked, one row per point and placement, rank 0 only.
mod common;
use common::*;

const COLUMNS: &[&str] = &[
    "timestamp",
    "coll_bench_version",
    "backend",
    "collective",
    "dtype",
    "op",
    "root",
    "placement",
    "size_bytes",
    "count_elements",
    "elem_bytes",
    "warmup_iters",
    "iters",
    "time_us",
    "algbw_gbps",
    "busbw_gbps",
    "bus_factor",
    "median_us",
    "p99_us",
    "min_us",
    "max_us",
    "stddev_us",
    "wrong",
    "out_of_bounds_bytes",
    "ranks",
    "hosts",
    "host_names",
    "aggregation",
    "batch_iters",
    "p95_us",
    "ci95_lo_us",
    "ci95_hi_us",
    "outlier_samples",
    "first_call_us",
    "slow_ranks",
    "warnings",
    "rank",
    "mpi_library",
    "groups",
    "group_size",
    "group_count",
    "group",
    "malloc",
    "minor_faults_per_call",
    "algorithm",
    "algorithm_source",
];

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
    assert_eq!(header, COLUMNS);
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    // all-reduce: 2 types × 2 ops × 4 sizes × 2 placements; broadcast: 2 types × 4 sizes × 2.
    assert_eq!(rows.len(), 32 + 16);
    let col = |name: &str| COLUMNS.iter().position(|c| *c == name).unwrap();
    for r in &rows {
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
