//! `coll-bench step` under mpirun on 4 ranks: one training step's communication per layout,
//! every phase's data checked; `--layout all` lists and ranks every valid layout; bad layouts
//! are one line and exit 2 before anything is measured or written.
mod common;
use common::*;

/// The data rows of the step's table: (dim, groups×size, calls, bytes).
fn dims(out: &str) -> Vec<(String, String, u64, String)> {
    out.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 8).then(|| (f[0].to_string(), f[1].to_string(), f[2].parse().unwrap(), f[3].to_string()))
        })
        .collect()
}

#[test]
fn tp_dp_and_pp_dp_zero_wrong() {
    // Default model: 4 layers, hidden 512, seq 512, micro-batch 1, 4 micro-batches, bf16:
    // activations 1·512·512·2 B = 512 KiB; params 12·4·512² = 12 582 912.
    let (o, _d) = mpirun(4, &["step", "--layout", "tp=2,dp=*", "--no-csv", "-n", "2"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# Layout tp=2, pp=1, dp=2"), "{out}");
    assert!(out.contains("tp groups: [0-1] [2-3]") && out.contains("dp groups: [0,2] [1,3]"), "{out}");
    assert!(out.contains("compute is not modelled and overlap is not assumed"), "{out}");
    assert!(out.lines().any(|l| l == "# Backend: mpi") && out.contains("# MPI library: "), "{out}");
    assert!(out.lines().any(|l| l == "# groups by MPI_Comm_split"), "{out}");
    assert!(out.contains("# bfloat16 on the mpi backend: the same bytes are moved as float"), "{out}");
    // TP: 4 all-reduces × 4 layers × 4 micro-batches = 64 × 512 KiB = 32 MiB; DP: the shard,
    // 12 582 912 / 2 params × 2 B = 12 MiB, in one 25 MiB bucket.
    assert_eq!(
        dims(&out),
        [("tp".into(), "2×2".into(), 64, "32M".into()), ("dp".into(), "2×2".into(), 1, "12M".into())]
    );
    assert!(out.contains("; all data correct"), "{out}");

    let (o, dir) =
        mpirun(4, &["step", "--layout", "pp=2,dp=2", "--dp", "zero", "--csv", "s.csv", "--json", "s.json", "-n", "2"]);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("pp groups: [0,2] [1,3]") && out.contains("dp groups: [0-1] [2-3]"), "{out}");
    // PP: 4 forward + 4 backward transfers of 512 KiB; DP zero: a reduce-scatter and an
    // all-gather of the 12 MiB shard (12 582 912 / 2 · 2 B).
    assert_eq!(dims(&out), [("pp".into(), "2×2".into(), 8, "4M".into()), ("dp".into(), "2×2".into(), 2, "24M".into())]);
    assert!(out.contains("; all data correct"), "{out}");
    let mut rd = csv::Reader::from_path(dir.path().join("s.csv")).unwrap();
    let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(&head[..4], ["tp", "pp", "dp", "dim"]);
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 2);
    assert_eq!((&rows[1][3], &rows[1][6], &rows[1][7], &rows[1][13]), ("dp", "2", "25165824", "0"));
    assert_eq!((head.len(), &rows[1][19], &rows[1][20]), (28, "mpi", "1"));
    // The nccl backend's launch modes: empty on mpi.
    assert_eq!(&head[25..], ["cuda_graph", "agg_iters", "register"]);
    assert!(rows.iter().all(|r| (&r[25], &r[26], &r[27]) == ("", "", "")), "{rows:?}");
    for r in &rows {
        let t: f64 = r[8].parse().unwrap();
        assert!(t > 0.0, "{r:?}");
    }
    // The JSON: the run's line while it ran, replaced by the whole document at the end.
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!((&doc["complete"], doc["layouts"].as_array().map(Vec::len)), (&serde_json::json!(true), Some(1)));
    assert!(doc["run"]["options"].as_object().unwrap().keys().all(|k| !k.starts_with("debug_")), "{doc}");
    // One vocabulary (issue 26): a schema, the sweep's skeleton, hosts as objects, times in µs
    // under the CSV's column names, the same numbers in both files.
    assert_eq!(
        (doc["schema"].as_str(), doc["tool"].as_str()),
        (Some("coll-bench-step/1"), Some("coll-bench")),
        "{doc}"
    );
    assert_eq!(doc["run"]["hosts"][0]["ranks"], serde_json::json!([0, 1, 2, 3]), "{doc}");
    assert!(doc["run"]["hosts"][0]["name"].is_string(), "{doc}");
    assert_eq!(doc["run"]["options"]["csv"], serde_json::json!({"path": "s.csv"}), "{doc}");
    let col = |name: &str| head.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}: {head:?}"));
    for gone in ["time_per_step_ms", "alone_time_per_step_ms", "step_ms"] {
        assert!(!head.iter().any(|h| h == gone), "{gone} is in µs now: {head:?}");
    }
    let layout = &doc["layouts"][0];
    assert_eq!((layout["tp"].as_u64(), layout["pp"].as_u64(), layout["dp"].as_u64()), (Some(1), Some(2), Some(2)));
    for (r, d) in rows.iter().zip(layout["dims"].as_array().unwrap()) {
        for key in ["time_per_step_us", "alone_time_per_step_us", "busbw_gbps", "calls_per_step", "bytes_per_step"] {
            let csv: f64 = r[col(key)].parse().unwrap();
            let json = d[key].as_f64().unwrap_or_else(|| panic!("{key}: {d}"));
            assert!((csv - json).abs() <= 1e-9 * csv.abs().max(1.0), "{key}: CSV {csv} JSON {json}");
        }
        let step: f64 = r[col("step_us")].parse().unwrap();
        // serde_json's default float parsing may be one ulp off: the same number, within that.
        assert!((step - layout["step_us"].as_f64().unwrap()).abs() <= 1e-9 * step, "{step} {layout}");
        // µs: a step of this size takes more than 10 µs and less than a minute.
        assert!(step > 10.0 && step < 6e7, "{step}");
    }
}

/// The check can fail: a rank that flips a bit of what it receives makes the run exit 1, in
/// every dimension (TP and DP collectives, PP transfers).
#[test]
fn a_corrupted_phase_is_wrong() {
    let (o, _d) = mpirun(4, CORRUPTED_STEP);
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", stderr(&o));
    assert!(out.contains("elements WRONG"), "{out}");
}

#[test]
fn layouts_all_lists_every_valid_layout_ranked() {
    // A small model (1.5 MiB of gradients, 32 KiB activations): the listing and the
    // ranking are under test, not the sizes (MPICH's busy-polling ranks on 2 cores are slow).
    let small = ["--hidden", "128", "--seq", "128", "-w", "0", "-n", "1", "--no-csv"];
    let (o, _d) = mpirun(4, &[&["step", "--layout", "all"][..], &small].concat());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    // 4 ranks on one host: tp × pp × dp = 4 in 6 ways.
    let ranked = four_rank_layouts_ranked(&out);
    let times: Vec<f64> = ranked
        .iter()
        .map(|l| l.split(": ").nth(1).unwrap().split(" ms/step").next().unwrap().parse().unwrap())
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "not ranked: {times:?}");
    // Why a layout's dimensions need not add up to its step, under the ranking and each layout
    // of several dimensions (pp=2, dp=2; tp=2, dp=2; tp=2, pp=2).
    let why = "the dimensions' times need not add up to the step's: each is its slowest rank's, the step's the \
               slowest rank's whole step (with the barrier before each call), and PP's includes waiting for the neighbouring stage's other calls \
               (the pipeline's bubble)";
    assert_eq!(out.matches(&format!("\n#   ({why})\n")).count(), 3, "{out}");
    assert!(out.contains(&format!("ms per dimension in brackets):\n{}\n# ({why})\n", ranked.join("\n"))), "{out}");
    for name in ["dp=4:", "pp=2, dp=2:", "pp=4:", "tp=2, dp=2:", "tp=2, pp=2:", "tp=4:"] {
        assert_eq!(ranked.iter().filter(|l| l.contains(&format!(". {name}"))).count(), 1, "{name}: {out}");
    }
    // pp=4 must divide --layers: 6 layers leave pp=4 out, with the reason.
    let (o, _d) = mpirun(4, &[&["step", "--layout", "all", "--layers", "6"][..], &small].concat());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# Layouts (5):"), "{out}");
    assert!(out.contains("# Left out: tp=1, pp=4, dp=1: pp=4 does not divide --layers 6"), "{out}");
}

#[test]
fn bad_layouts_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (args, needle) in [
        (
            &["step", "--layout", "tp=3,dp=*"][..],
            "step --layout tp=3,dp=*: the other sizes multiply to 3, which does not divide the 4 ranks",
        ),
        (
            &["step", "--layout", "tp=2,pp=1,dp=1"][..],
            "step --layout tp=2,dp=1,pp=1: the sizes multiply to 2, not to the 4 ranks",
        ),
        (
            &["step", "--layout", "ep=2,dp=*"][..],
            "step --layout: ep=2 needs a mixture-of-experts model (--experts E); expected pp dividing --layers, and ep above 1 only with --experts, dividing them",
        ),
        (&["step", "--layout", "tp=0,dp=*"][..], "step --layout \"tp=0,dp=*\": tp=0: the size must be a whole number"),
        (&["step", "--layout", "tp=*,dp=*"][..], "only one * is allowed; accepted: tp=T,ep=E,pp=P,dp=D"),
        (&["step", "--layout", "ep=4", "--experts", "6"][..], "step --layout: ep=4 does not divide --experts 6"),
        (&["step", "--layout", "cp=2,dp=*"][..], "step has no dimension cp (tp, ep, pp, dp)"),
        (&["step", "--experts", "2", "--topk", "3"][..], "step --topk: 3 is more than --experts 2"),
        (&["step", "--experts", "8", "--skew", "-1"][..], "step --skew: '-1' is not allowed; expected a Zipf exponent"),
        (&["step", "--experts", "8", "--capacity", "0"][..], "step --capacity: '0' is not allowed"),
        (&["step", "--experts", "0"][..], "step --experts: '0' is not allowed"),
        (&["step", "--skew", "1"][..], "step --skew: only with --experts E"),
        (&["step", "--layout", "tp=2,dp=*:dp"][..], "step --layout \"tp=2,dp=*:dp\": :dp is for --groups"),
        (&["step", "--layout", "rail"][..], "step --layout \"rail\": rail is a --groups layout"),
        (&["step", "--layout", "pp=4", "--layers", "6"][..], "pp=4 does not divide --layers 6"),
        (&["step", "--hidden", "0"][..], "step --hidden"),
        (&["step", "--bucket", "0"][..], "step --bucket"),
        (&["step", "-d", "int8"][..], "step -d/--datatype: 'int8' is not allowed; expected bfloat16, half or float"),
        // An old spelling with a bad value: one line, naming the new spelling.
        (&["step", "--dtype", "int8"][..], "step -d/--datatype"),
        (&["step", "--dp", "fsdp"][..], "step --dp"),
        (&["step", "--layout", "some"][..], "step --layout \"some\""),
        (&["step", "--layouts", "some"][..], "step --layout \"some\""),
        (&["step", "-T", "soon"][..], "step -T/--timeout: "),
        (&["step", "--backend", "gloo"][..], "--backend: unknown backend 'gloo'; expected mpi or nccl"),
    ] {
        let args: Vec<&str> = args.iter().copied().chain(["--csv", "never.csv"]).collect();
        let o = mpirun_in(dir.path(), 4, &args, 60);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{needle}: {err}");
        assert!(stdout(&o).is_empty(), "{args:?}: measured before refusing: {}", stdout(&o));
    }
    assert!(files(dir.path()).is_empty());
}

/// Expert parallelism: `--layout tp=1,ep=4` on 4 ranks with 8 experts, top-2, a skewed router:
/// per layer and micro-batch 2 all-to-all-v's forward and 2 backward over the ep group, of
/// micro-batch × seq × top-k × hidden elements; every token back where it came from (the
/// check); the router's imbalance in the header; the CSV's ep columns. `--layout all` with
/// experts ranks layouts with ep among the others.
#[test]
fn expert_parallel_dispatch_and_combine() {
    let moe = ["--experts", "8", "--topk", "2", "--skew", "1.2", "--capacity", "2"];
    let (o, dir) = mpirun(4, &[&["step", "--layout", "tp=1,ep=4", "-n", "2", "--csv", "s.csv"][..], &moe].concat());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# Layout tp=1, ep=4, pp=1, dp=1"), "{out}");
    assert!(out.contains("ep groups: [0-3]"), "{out}");
    assert!(out.contains("# Experts: 8 per layer, top-2, router skew 1.2 (Zipf), capacity factor 2;"), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("#   ep traffic: the dispatch's busiest rank sends "))
        .unwrap_or_else(|| panic!("{out}"));
    let received: f64 = line.split("x and receives ").nth(1).unwrap().split('x').next().unwrap().parse().unwrap();
    assert!(received > 1.3, "a skewed router loads some ranks more: {line}");
    // 4 layers × 4 micro-batches × 4 = 64 calls of 1·512 tokens × 2 × 512 × 2 B = 1 MiB.
    assert_eq!(dims(&out), [("ep".into(), "1×4".into(), 64, "64M".into())]);
    assert!(out.contains("; all data correct"), "{out}");
    let mut rd = csv::Reader::from_path(dir.path().join("s.csv")).unwrap();
    let head: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
    let rows: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (&r[col("dim")], &r[col("ep")], &r[col("experts")], &r[col("topk")], &r[col("skew")], &r[col("capacity")]),
        ("ep", "4", "8", "2", "1.2", "2")
    );

    // A corrupted rank is caught in the dispatch and the combine too.
    let (o, _d) = mpirun(
        4,
        &[&["step", "--layout", "ep=4", "-n", "1", "-w", "0", "--no-csv", "--debug-corrupt-rank", "1"][..], &moe]
            .concat(),
    );
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));

    // --layout all with experts: every tp × pp × dp, and each dp split into ep × dp.
    let small = ["--hidden", "128", "--seq", "128", "-w", "0", "-n", "1", "--no-csv", "--experts", "4"];
    let (o, _d) = mpirun(4, &[&["step", "--layout", "all"][..], &small].concat());
    let out = stdout(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{}", stderr(&o));
    assert!(out.contains("# Layouts (10):"), "{out}");
    for name in ["ep=4:", "ep=2, dp=2:", "ep=2, pp=2:", "tp=2, ep=2:", "dp=4:"] {
        assert!(out.lines().any(|l| l.starts_with("#   ") && l.contains(&format!(". {name}"))), "{name}: {out}");
    }
}
