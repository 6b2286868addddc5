//! `coll-bench step [OPTIONS]`: one training step's communication.

use super::common::Clap;
use super::values::{count_flag, size_flag};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Dim, Grid, Layout};
use crate::step::model::{DpStyle, Model};
use crate::step::{LayoutChoice, StepOptions};

/// One training step's communication: TP, EP, PP and DP calls with real buffers, all groups at once.
#[derive(clap::Parser, Debug)]
#[command(
    name = "coll-bench step",
    bin_name = "coll-bench step",
    version,
    allow_negative_numbers = true,
    after_help = "\
Launch with MPI: mpirun -n 8 -H node1:4,node2:4 coll-bench step --layout tp=4,dp=* [OPTIONS]
Runs what one step of the layout sends (TP collectives per layer and micro-batch, EP dispatch and
combine all-to-all-v's with --experts, PP activations and gradients in 1F1B order, DP gradients at
the end), every group of a dimension at the same time, then each dimension alone. Compute is not
modelled and overlap is not assumed.
Ranks: tp fastest-varying, then ep, then dp, then pp (Megatron's order), so a TP group sits on one host.
Examples:
  mpirun -n 4 coll-bench step --layout tp=2,dp=*
  mpirun -n 8 coll-bench step --layout ep=8 --experts 8 --topk 2 --skew 1.2
  mpirun -n 8 -H node1:4,node2:4 coll-bench step --layout all --layers 8 --hidden 2048
  mpirun -n 8 -H gpu1:4,gpu2:4 coll-bench step --backend nccl --layout all
Exit codes: 0 ok, 1 wrong data, 2 usage or setup error, or a call that outlived -T."
)]
pub struct StepArgs {
    /// Layout: tp=T,ep=E,pp=P,dp=D, any of them (a missing one is 1), one may be * (filled from
    /// the world size); ep needs --experts; or all: every valid tp × pp × dp factorization of
    /// the world (with --experts, each dp split into ep × dp too), ranked by time per step
    /// (--layouts all before)
    #[arg(long = "layout", value_name = "LAYOUT|all", default_value = "dp=*")]
    pub layout: String,
    /// Communication backend: mpi (CPU buffers) or nccl (GPU buffers, one GPU per rank)
    #[arg(long = "backend", value_name = "NAME", default_value = "mpi")]
    pub backend: String,
    /// With --layout all: allow TP groups that span hosts (by default tp divides the ranks per host)
    #[arg(long = "tp-across-hosts")]
    pub tp_across_hosts: bool,
    /// Transformer layers
    #[arg(long = "layers", value_name = "L", default_value = "4")]
    pub layers: String,
    /// Hidden size
    #[arg(long = "hidden", value_name = "H", default_value = "512")]
    pub hidden: String,
    /// Parameter count (K/M/G are decimal here: 7G = 7e9) [default: 12 · layers · hidden²]
    #[arg(long = "params", value_name = "N")]
    pub params: Option<String>,
    /// Sequence length (tokens)
    #[arg(long = "seq", value_name = "S", default_value = "512")]
    pub seq: String,
    /// Micro-batch size (sequences)
    #[arg(long = "micro-batch", value_name = "B", default_value = "1")]
    pub micro_batch: String,
    /// Micro-batches per step
    #[arg(long = "micro-batches", value_name = "M", default_value = "4")]
    pub micro_batches: String,
    /// The model's data type: bfloat16, half or float (bf16, fp16 accepted) (--dtype before)
    #[arg(short = 'd', long = "datatype", value_name = "TYPE", default_value = "bfloat16")]
    pub dtype: String,
    /// Data-parallel style: ddp (all-reduce AVG of gradients in buckets) or zero (reduce-scatter
    /// of gradients + all-gather of parameters)
    #[arg(long = "dp", value_name = "ddp|zero", default_value = "ddp")]
    pub dp: String,
    /// DP bucket size (binary: 25M = 25 MiB, as PyTorch DDP's bucket_cap_mb)
    #[arg(long = "bucket", value_name = "SIZE", default_value = "25M")]
    pub bucket: String,
    /// TP all-gather + reduce-scatter instead of all-reduce (Megatron-LM sequence parallelism)
    #[arg(long = "sequence-parallel")]
    pub sequence_parallel: bool,
    /// Mixture of experts: experts per layer, spread over the ep group (which ep must divide);
    /// each layer's dispatch and combine are all-to-all-v's over it
    #[arg(long = "experts", value_name = "E")]
    pub experts: Option<String>,
    /// With --experts: experts each token goes to [default: 2]
    #[arg(long = "topk", value_name = "K")]
    pub topk: Option<String>,
    /// With --experts: the router's skew, the Zipf exponent of the experts' popularity (0:
    /// balanced) [default: 0]
    #[arg(long = "skew", value_name = "Z")]
    pub skew: Option<String>,
    /// With --experts: capacity factor; tokens past C × the mean per expert are dropped [default: no cap]
    #[arg(long = "capacity", value_name = "C")]
    pub capacity: Option<String>,
    /// Timed steps per layout (and per dimension alone)
    #[arg(short = 'n', long = "iters", value_name = "N", default_value = "5")]
    pub iters: String,
    /// Warm-up steps before the timed ones
    #[arg(short = 'w', long = "warmup-iters", value_name = "N", default_value = "1")]
    pub warmup: String,
    /// Check the data of every phase of one step (0 or 1)
    #[arg(short = 'c', long = "check", value_name = "0|1", default_value = "1")]
    pub check: String,
    #[command(flatten)]
    pub csv: super::common::CsvFlags,
    #[command(flatten)]
    pub json: super::common::JsonFlag,
    #[command(flatten)]
    pub timeout: super::common::TimeoutFlag,
    #[command(flatten)]
    pub files: super::common::FileFlags,
    #[command(flatten)]
    pub launch: super::sweep::LaunchFlags,
    /// Testing only: flip a bit of every output this rank receives in the check pass
    #[arg(long = "debug-corrupt-rank", value_name = "RANK", hide = true)]
    pub debug_corrupt_rank: Option<usize>,
    /// Testing only: RANK stops itself (SIGSTOP) before its first DIM call of the first timed step
    #[arg(long = "debug-stop-rank", value_name = "RANK:DIM", hide = true)]
    pub debug_stop_rank: Option<String>,
}

/// `RANK:DIM` of the hidden `--debug-stop-rank` flag (DIM: tp, ep, pp or dp).
fn stop_rank(v: &str) -> Result<(usize, Dim)> {
    let dim = |d: &str| [Dim::Tp, Dim::Ep, Dim::Pp, Dim::Dp].into_iter().find(|x| x.name() == d);
    v.split_once(':')
        .and_then(|(r, d)| Some((r.parse().ok()?, dim(d)?)))
        .ok_or_else(|| Error::usage(format!("step --debug-stop-rank: '{v}' is not RANK:DIM (DIM: tp, ep, pp or dp)")))
}

/// A positive whole number for `flag`.
fn positive(flag: &str, v: &str) -> Result<u64> {
    match v.trim().parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Error::usage(format!("step {flag}: '{v}' is not allowed; expected a whole number above 0"))),
    }
}

/// `--params`: a whole number, K/M/G/T decimal (7G = 7 000 000 000), above 0.
fn params(v: &str) -> Result<u64> {
    let t = v.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1_000u64,
                'M' => 1_000_000,
                'G' | 'B' => 1_000_000_000,
                'T' => 1_000_000_000_000,
                _ => 0,
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    // Past 2^64 the cast would saturate: refused as not a count rather than made 2^64 − 1.
    let n = num
        .parse::<f64>()
        .ok()
        .map(|x| (x * mult as f64).round())
        .filter(|x| x.is_finite() && *x > 0.0 && *x < u64::MAX as f64)
        .map(|x| x as u64);
    match n {
        Some(n) if n > 0 && mult > 0 => Ok(n),
        _ => Err(Error::usage(format!(
            "step --params: '{v}' is not allowed; expected a parameter count above 0, e.g. 350M or 7G (decimal)"
        ))),
    }
}

/// What `step --layout` accepts (a subset of `crate::layout`'s forms).
const LAYOUT_FORM: &str =
    "tp=T,ep=E,pp=P,dp=D (each a whole number above 0, one may be *, a missing one is 1), e.g. tp=2,dp=*";

/// `--layout tp=T,ep=E,pp=P,dp=D`, parsed by `crate::layout`: a named layout of tp, ep, pp and
/// dp only, in the default rank order, without `:DIM` (a step runs every dimension).
pub fn layout(v: &str) -> Result<Grid> {
    let flag = "step --layout";
    let bad = |why: &str| Error::usage(format!("{flag} {v:?}: {why}; accepted: {LAYOUT_FORM}"));
    match Layout::parse_accepting(flag, v, LAYOUT_FORM)? {
        Layout::Named(g, None) => {
            if g.has(Dim::Cp) {
                Err(bad("step has no dimension cp (tp, ep, pp, dp)"))
            } else if g.order() != Dim::DEFAULT_ORDER {
                Err(bad("step has no order= (its ranks are tp fastest-varying, then ep, then dp, then pp)"))
            } else {
                Ok(g)
            }
        }
        Layout::Named(_, Some(d)) => Err(bad(&format!(":{d} is for --groups (a step runs every dimension)"))),
        other => Err(bad(&format!("{other} is a --groups layout, not a tp × ep × pp × dp grid"))),
    }
}

/// Parse `step …` (`argv[0]` is "step").
pub fn parse(argv: &[String]) -> Result<Clap<StepOptions>> {
    let cmd = <StepArgs as clap::CommandFactory>::command();
    let cmd = super::common::with_help(
        cmd,
        "csv",
        "Write one row per layout and dimension as CSV to PATH [default: results/coll-bench-step-<UTC time>.csv]",
    );
    let cmd = super::common::with_help(cmd, "json", "Write the results as JSON to PATH");
    let cmd = super::common::with_help(
        cmd,
        "timeout",
        "Stop the whole job (exit 2) when a call has not finished SECONDS after it was expected to, e.g. a host or \
         link gone or a rank stopped (5, 2.5, 30s); 0: never [default: max(30 s, 20x the longest step so far)]",
    );
    // -C is the sweep's (refused below): not in step's help.
    let cmd = cmd.mut_arg("cpu_time", |a| a.hide(true));
    let a: StepArgs = match super::common::clap_parse_with(cmd, argv)? {
        Clap::Args(a) => a,
        Clap::Info(t) => return Ok(Clap::Info(t)),
    };
    let choice = match a.layout.trim() {
        "all" => LayoutChoice::All,
        one => LayoutChoice::One(layout(one)?),
    };
    let dtype = match DType::parse(a.dtype.trim()) {
        Some(d @ (DType::Bfloat16 | DType::Float16 | DType::Float32)) => d,
        _ => {
            return Err(Error::usage(format!(
                "step -d/--datatype: '{}' is not allowed; expected bfloat16, half or float",
                a.dtype
            )))
        }
    };
    let dp_style = match a.dp.trim() {
        "ddp" => DpStyle::Ddp,
        "zero" => DpStyle::Zero,
        other => return Err(Error::usage(format!("step --dp: '{other}' is not allowed; expected ddp or zero"))),
    };
    let bucket = size_flag("step --bucket", &a.bucket)?;
    if bucket == 0 {
        return Err(Error::usage("step --bucket: 0 is not allowed; expected a size above 0, e.g. 25M"));
    }
    let moe = match &a.experts {
        None => {
            for (flag, given) in
                [("--topk", a.topk.is_some()), ("--skew", a.skew.is_some()), ("--capacity", a.capacity.is_some())]
            {
                if given {
                    return Err(Error::usage(format!(
                        "step {flag}: only with --experts E (a mixture-of-experts model); expected --experts too"
                    )));
                }
            }
            None
        }
        Some(e) => {
            let experts = positive("--experts", e)? as usize;
            let topk = positive("--topk", a.topk.as_deref().unwrap_or("2"))? as usize;
            if topk > experts {
                return Err(Error::usage(format!(
                    "step --topk: {topk} is more than --experts {experts}; expected at most the experts"
                )));
            }
            let skew_text = a.skew.as_deref().unwrap_or("0");
            let skew = match skew_text.trim().parse::<f64>() {
                Ok(z) if z.is_finite() && z >= 0.0 => z,
                _ => {
                    return Err(Error::usage(format!(
                        "step --skew: '{skew_text}' is not allowed; expected a Zipf exponent, 0 or more (0: a balanced router)"
                    )))
                }
            };
            let capacity = match &a.capacity {
                None => None,
                Some(c) => match c.trim().parse::<f64>() {
                    Ok(c) if c.is_finite() && c > 0.0 => Some(c),
                    _ => {
                        return Err(Error::usage(format!(
                            "step --capacity: '{c}' is not allowed; expected a capacity factor above 0, e.g. 1.25"
                        )))
                    }
                },
            };
            Some(crate::step::model::Experts { experts, topk, skew, capacity })
        }
    };
    let model = Model {
        layers: positive("--layers", &a.layers)?,
        hidden: positive("--hidden", &a.hidden)?,
        params: a.params.as_deref().map(params).transpose()?,
        seq: positive("--seq", &a.seq)?,
        micro_batch: positive("--micro-batch", &a.micro_batch)?,
        micro_batches: positive("--micro-batches", &a.micro_batches)?,
        elem_bytes: dtype.size() as u64,
        dp_style,
        bucket,
        sequence_parallel: a.sequence_parallel,
        moe,
    };
    model.check()?;
    let backend = super::values::backend_kind(&a.backend)?;
    let launch = a.launch.modes(backend, false, &[])?;
    if launch.cpu_time {
        return Err(Error::usage(
            "step -C/--cpu-time: the sweep's; a step's rows are per dimension, not per call, and carry no launch time; expected no -C (the sweep of the same collective gives cpu_time_us)",
        ));
    }
    Ok(Clap::Args(StepOptions {
        model,
        dtype,
        layout: choice,
        tp_across_hosts: a.tp_across_hosts,
        backend,
        launch,
        iters: count_flag("step -n/--iters", &a.iters, 1)?,
        warmup: count_flag("step -w/--warmup-iters", &a.warmup, 0)?,
        check: super::values::bool_flag("step -c/--check", &a.check)?,
        csv: a.csv.target("step --csv")?,
        json: a.json.path,
        files: a.files.policy(),
        timeout: a.timeout.limit("step -T/--timeout")?,
        debug_corrupt_rank: a.debug_corrupt_rank,
        debug_stop_rank: a.debug_stop_rank.as_deref().map(stop_rank).transpose()?,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Timeout;

    #[test]
    fn layouts_parse_and_refuse() {
        let sizes = |g: Grid| (g.size_of(Dim::Tp), g.size_of(Dim::Pp), g.size_of(Dim::Dp));
        assert_eq!(sizes(layout("tp=2,dp=*").unwrap()), (Some(2), Some(1), None));
        assert_eq!(sizes(layout("pp=2, dp=2").unwrap()), (Some(1), Some(2), Some(2)));
        assert_eq!(layout("tp=2,pp=2,dp=1").unwrap().resolve(4).unwrap().world(), Some(4));
        assert_eq!(layout("tp=1,ep=4").unwrap().resolve(4).unwrap().size(Dim::Ep), 4);
        for (bad, says) in [
            ("xp=2", "no dimension \"xp\""),
            ("tp=0", "tp=0: the size must be a whole number"),
            ("tp=*,dp=*", "only one *"),
            ("tp=2,tp=2", "tp given twice"),
            ("tp2", "\"tp2\" is not KEY=VALUE"),
            ("cp=1,dp=*", "step has no dimension cp"),
            ("tp=2,dp=2,order=dp-tp", "step has no order="),
            ("tp=2,dp=*:dp", ":dp is for --groups"),
            ("node", "node is a --groups layout"),
            ("split=mod:2", "split=mod:2 is a --groups layout"),
        ] {
            let e = layout(bad).unwrap_err().to_string();
            assert!(e.starts_with("step --layout ") && e.contains(says), "{bad}: {e}");
            assert!(e.ends_with(&format!("; accepted: {LAYOUT_FORM}")), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }

    fn run(args: &[&str]) -> std::result::Result<StepOptions, String> {
        let argv: Vec<String> = std::iter::once("step").chain(args.iter().copied()).map(String::from).collect();
        match parse(&argv) {
            Ok(Clap::Args(o)) => Ok(o),
            Ok(Clap::Info(t)) => Err(format!("info: {t}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// `-T` as the sweep's: every form gives what the sweep's gives (whose own test pins the
    /// values); errors name step's flag.
    #[test]
    fn timeout_as_the_sweeps() {
        let sweep = |args: &[&str]| {
            let argv: Vec<String> =
                std::iter::once("coll-bench").chain(args.iter().copied()).map(String::from).collect();
            match crate::cli::sweep::parse(&argv) {
                Ok(Clap::Args(o)) => o.timeout,
                _ => panic!("the sweep refused {args:?}"),
            }
        };
        for form in [&[][..], &["-T", "0"], &["-T", "5"], &["--timeout", "2.5"], &["--timeout=30s"], &["-T", "1500ms"]]
        {
            assert_eq!(run(form).unwrap().timeout, sweep(form), "{form:?}");
        }
        assert_eq!(run(&[]).unwrap().timeout, Timeout::Auto, "a generous limit by default");
        for bad in ["-1", "x", "1e9", "", "1ns"] {
            let e = run(&["-T", bad]).unwrap_err();
            assert!(e.starts_with("step -T/--timeout: ") && e.contains("expected seconds"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn debug_stop_rank_is_rank_and_dimension() {
        assert_eq!(run(&[]).unwrap().debug_stop_rank, None);
        assert_eq!(run(&["--debug-stop-rank", "3:pp"]).unwrap().debug_stop_rank, Some((3, Dim::Pp)));
        for bad in ["3", "x:tp", "1:cp", "1:"] {
            let e = run(&["--debug-stop-rank", bad]).unwrap_err();
            assert!(e.starts_with("step --debug-stop-rank: ") && e.contains("RANK:DIM"), "{bad}: {e}");
        }
    }

    #[test]
    fn backend_is_the_sweeps_flag() {
        let args = |more: &[&str]| -> Vec<String> { ["step"].iter().chain(more).map(|s| s.to_string()).collect() };
        let backend = |more: &[&str]| match parse(&args(more)) {
            Ok(Clap::Args(o)) => Ok(o.backend),
            Ok(Clap::Info(_)) => panic!("help"),
            Err(e) => Err(e.to_string()),
        };
        use crate::options::BackendKind;
        assert_eq!(backend(&[]), Ok(BackendKind::Mpi));
        assert_eq!(backend(&["--backend", "nccl"]), Ok(BackendKind::Nccl));
        assert_eq!(backend(&["--backend", "NCCL"]), Ok(BackendKind::Nccl));
        assert_eq!(backend(&["--backend", "mpi"]), Ok(BackendKind::Mpi));
        let e = backend(&["--backend", "gloo"]).unwrap_err();
        assert_eq!(e, crate::cli::values::backend_kind("gloo").unwrap_err().to_string());
        assert!(e.contains("--backend: unknown backend 'gloo'; expected mpi or nccl"), "{e}");
    }

    /// One spelling per concept (issue 26): the sweep's `-d/--datatype` with the canonical
    /// names (default `bfloat16`, not `bf16`), `--warmup-iters`, and `--layout all`.
    #[test]
    fn flags_are_the_sweeps_spellings() {
        let o = run(&[]).unwrap();
        assert_eq!((o.dtype, o.dtype.name()), (DType::Bfloat16, "bfloat16"));
        assert_eq!(run(&["-d", "half"]).unwrap().dtype, DType::Float16);
        assert_eq!(run(&["--datatype", "bf16"]).unwrap().dtype, DType::Bfloat16);
        assert_eq!(run(&["--warmup-iters", "3"]).unwrap().warmup, 3);
        assert_eq!(run(&["--layout", "all"]).unwrap().layout, LayoutChoice::All);
        let e = run(&["-d", "int8"]).unwrap_err();
        assert!(e.starts_with("step -d/--datatype: 'int8'") && e.ends_with("expected bfloat16, half or float"), "{e}");
        let e = run(&["-w", "x"]).unwrap_err();
        assert!(e.starts_with("step -w/--warmup-iters"), "{e}");
        let help = run(&["--help"]).unwrap_err();
        assert!(
            help.contains("--datatype") && help.contains("[default: bfloat16]") && help.contains("--warmup-iters"),
            "{help}"
        );
        assert!(help.contains("coll-bench-step-<UTC time>.csv"), "{help}");
    }

    #[test]
    fn params_are_decimal() {
        assert_eq!(params("350M").unwrap(), 350_000_000);
        assert_eq!(params("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(params("1000").unwrap(), 1000);
        assert!(params("0").is_err() && params("7X").is_err() && params("-1").is_err());
    }
}
