//! The step model: which calls one training step makes in each parallel dimension, how many, and
//! how many bytes each moves. Pure arithmetic, no MPI.
//!
//! - **TP** (tensor parallel, Megatron-LM): per transformer layer of the rank's pipeline stage
//!   and per micro-batch, 2 all-reduces forward (after self-attention and after the MLP) and 2
//!   backward (the conjugate operators at their inputs), each on the micro-batch's activations,
//!   micro_batch × seq × hidden elements (Shoeybi et al. 2019, "Megatron-LM", § 3: "two
//!   all-reduces in the forward path and two in the backward path" per layer). With sequence
//!   parallelism each all-reduce becomes an all-gather and a reduce-scatter of the same tensor
//!   (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
//!   § 4.2.2): 4 all-gathers and 4 reduce-scatters per layer and micro-batch. Sizes are the whole
//!   tensor (the sweep's convention for all-gather and reduce-scatter).
//! - **PP** (pipeline parallel): per micro-batch, the activations forward from each stage to the
//!   next and their gradients backward, micro_batch × seq × hidden elements (÷ tp with sequence
//!   parallelism, as Megatron-LM sends the sequence shard), in 1F1B order ([`super::schedule`]).
//! - **EP** (expert parallel, mixture of experts): every layer's MLP is `experts` experts spread
//!   evenly over the ep group; per layer of the stage and micro-batch, forward, a dispatch
//!   all-to-all-v sends each token to the ranks of its `topk` experts and a combine
//!   all-to-all-v (the transposed counts) brings them back; backward, the gradients take the
//!   same two ways in reverse (the combine's gradient as a dispatch, the dispatch's as a
//!   combine), as Megatron-core's all-to-all token dispatcher does. Each call moves
//!   micro_batch × seq (÷ tp with sequence parallelism) × topk × hidden elements for the mean
//!   rank; the router's choices follow the `moe` traffic pattern
//!   ([`crate::collective::traffic`]: Zipf(`skew`) popularity, `capacity`), so the busiest rank
//!   moves more. Ranks: tp fastest-varying, then ep, then dp, then pp (Megatron-core's
//!   `tp-cp-ep-dp-pp`).
//! - **DP** (data parallel), at the end of the step, on the gradients of the rank's parameter
//!   shard, params / (tp · pp): `ddp` all-reduces them (AVG) in buckets of `bucket` bytes (PyTorch
//!   DDP, 25 MiB by default); `zero` reduce-scatters the gradients and all-gathers the updated
//!   parameters, bucket by bucket (ZeRO stages 1-2), the shard padded to a multiple of dp.
//!
//! The parameter count is `params` when given, else 12 · layers · hidden² (the attention's 4h²
//! and the MLP's 8h² per layer; embeddings and biases left out). Compute is not modelled and
//! overlap is not assumed.

use crate::collective::Kind;
use crate::layout::{self, Grid};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The dimensions of the layout model ([`crate::layout::Dim`]); a step uses three of them.
pub use crate::layout::Dim;

/// The dimensions of a step, in the order it prints them (the order of `--layout tp=T,ep=E,pp=P,dp=D`).
pub const DIMS: [Dim; 4] = [Dim::Tp, Dim::Ep, Dim::Pp, Dim::Dp];

/// Data-parallel style.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DpStyle {
    /// All-reduce (AVG) of the gradients in buckets.
    Ddp,
    /// Reduce-scatter of the gradients, all-gather of the parameters.
    Zero,
}

impl DpStyle {
    pub fn name(self) -> &'static str {
        match self {
            DpStyle::Ddp => "ddp",
            DpStyle::Zero => "zero",
        }
    }
}

/// The sizes of a resolved tp × pp × dp [`Grid`] as plain numbers, for the model's arithmetic
/// and the outputs (CSV columns, JSON `shape`). Rank order and groups are the grid's
/// ([`Shape::grid`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shape {
    pub tp: usize,
    pub pp: usize,
    pub dp: usize,
    /// Expert parallel (1: the model has no experts on this layout).
    pub ep: usize,
}

impl Shape {
    /// The sizes of a resolved grid (cp is 1 in every grid step accepts).
    pub fn of(grid: &Grid) -> Shape {
        Shape { tp: grid.size(Dim::Tp), pp: grid.size(Dim::Pp), dp: grid.size(Dim::Dp), ep: grid.size(Dim::Ep) }
    }
    /// tp × pp × dp, without experts.
    pub fn dense(tp: usize, pp: usize, dp: usize) -> Shape {
        Shape { tp, pp, dp, ep: 1 }
    }
    /// The grid of these sizes, in Megatron's default rank order (tp, ep, dp, pp).
    pub fn grid(&self) -> Grid {
        Grid::new(&[(Dim::Tp, self.tp), (Dim::Ep, self.ep), (Dim::Pp, self.pp), (Dim::Dp, self.dp)])
    }
    /// The size of `dim` (1 for cp, which a step does not use).
    pub fn size(&self, dim: Dim) -> usize {
        match dim {
            Dim::Tp => self.tp,
            Dim::Pp => self.pp,
            Dim::Dp => self.dp,
            Dim::Ep => self.ep,
            Dim::Cp => 1,
        }
    }
    pub fn world(&self) -> usize {
        self.tp * self.ep * self.pp * self.dp
    }
}

impl fmt::Display for Shape {
    /// `tp=2, pp=1, dp=2` (every dimension, in the order of the flag; ep where above 1:
    /// `tp=1, ep=4, pp=1, dp=1`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ep {
            1 => write!(f, "tp={}, pp={}, dp={}", self.tp, self.pp, self.dp),
            ep => write!(f, "tp={}, ep={ep}, pp={}, dp={}", self.tp, self.pp, self.dp),
        }
    }
}

/// The experts of a mixture-of-experts model (`--experts`, `--topk`, `--skew`, `--capacity`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Experts {
    /// Experts per MoE layer, spread evenly over the ep group.
    pub experts: usize,
    /// Experts each token goes to.
    pub topk: usize,
    /// Zipf exponent of the experts' popularity (0: a balanced router).
    pub skew: f64,
    /// Capacity factor (None: no cap; tokens past it are dropped).
    pub capacity: Option<f64>,
}

impl Experts {
    /// The router's traffic on an ep group: the `moe` pattern of the sweep's all-to-all-v, with
    /// seed 1 (every rank the same matrix).
    pub fn pattern(&self) -> crate::collective::traffic::Pattern {
        crate::collective::traffic::Pattern::Moe(crate::collective::traffic::Moe {
            experts: self.experts,
            topk: self.topk,
            skew: self.skew,
            capacity: self.capacity,
            seed: 1,
        })
    }
}

/// The most bytes of one call, or of a rank's gradient shard (256 TiB): more than any rank can
/// hold, and small enough that the sums over a step's calls and buffers cannot wrap.
pub const MAX_CALL_BYTES: u64 = 1 << 48;

/// The model and the step's shape, as the flags give them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    pub layers: u64,
    pub hidden: u64,
    /// `--params`; None: 12 · layers · hidden².
    pub params: Option<u64>,
    pub seq: u64,
    pub micro_batch: u64,
    pub micro_batches: u64,
    /// Bytes per element of the model's data type (bf16 and fp16: 2, float: 4).
    pub elem_bytes: u64,
    pub dp_style: DpStyle,
    /// DP bucket, bytes.
    pub bucket: u64,
    pub sequence_parallel: bool,
    /// `--experts`…: a mixture-of-experts model, which layouts with ep > 1 need.
    pub moe: Option<Experts>,
}

impl Model {
    /// The parameter count: `--params`, or 12 · L · h².
    pub fn param_count(&self) -> u64 {
        self.params.unwrap_or(12 * self.layers * self.hidden * self.hidden)
    }

    /// micro_batch × seq × hidden, in bytes.
    pub fn activation_bytes(&self) -> u64 {
        self.micro_batch * self.seq * self.hidden * self.elem_bytes
    }

    /// Refuse, naming the flags, a model whose sizes do not fit: every product of the flags
    /// (parameters, a call's bytes, a dimension's bytes per step) checked, so none wraps, and
    /// a call or gradient shard at most [`MAX_CALL_BYTES`]. Before anything runs.
    pub fn check(&self) -> crate::error::Result<()> {
        let human = crate::size::human;
        let product = |xs: &[u64]| xs.iter().try_fold(1u64, |a, x| a.checked_mul(*x));
        let fits = |xs: &[u64]| product(xs).filter(|b| *b <= MAX_CALL_BYTES);
        let too_large = |flags: &str, what: &str| {
            crate::error::Error::usage(format!(
                "step {flags}: {what} is more than a rank can hold (at most {} a call); expected smaller {flags}",
                human(MAX_CALL_BYTES)
            ))
        };
        let elem = self.elem_bytes;
        let (params, params_flags) = match self.params {
            Some(p) => (Some(p), "--params"),
            None => (product(&[12, self.layers, self.hidden, self.hidden]), "--layers/--hidden"),
        };
        let shard = params.and_then(|p| fits(&[p, elem]));
        if shard.is_none() {
            let what = match self.params {
                Some(p) => format!("a gradient of {p} parameters"),
                None => format!("a gradient of 12 × {} layers × {}² hidden parameters", self.layers, self.hidden),
            };
            return Err(too_large(params_flags, &what));
        }
        let act_flags = "--micro-batch/--seq/--hidden";
        let act = fits(&[self.micro_batch, self.seq, self.hidden, elem]).ok_or_else(|| {
            too_large(
                act_flags,
                &format!(
                    "an activation of {} × {} × {} elements of {elem} bytes",
                    self.micro_batch, self.seq, self.hidden
                ),
            )
        })?;
        let mut biggest = act;
        if let Some(m) = self.moe {
            biggest = fits(&[self.micro_batch, self.seq, m.topk as u64, self.hidden, elem]).ok_or_else(|| {
                too_large(
                    "--micro-batch/--seq/--topk/--hidden",
                    &format!(
                        "an expert dispatch of {} × {} tokens × top-{} × {} elements of {elem} bytes",
                        self.micro_batch, self.seq, m.topk, self.hidden
                    ),
                )
            })?;
        }
        // TP's and EP's calls per step, each at most `biggest` bytes: their bytes per step too.
        if product(&[4, self.layers, self.micro_batches, biggest]).is_none() {
            return Err(crate::error::Error::usage(format!(
                "step --layers/--micro-batches: 4 × {} layers × {} micro-batches calls of {} a step overflow a 64-bit byte count; expected fewer --layers or --micro-batches",
                self.layers,
                self.micro_batches,
                human(biggest)
            )));
        }
        Ok(())
    }

    /// Why this shape would make calls of 0 bytes (with sequence parallelism, fewer tokens
    /// than tp), or None: a step of empty calls measures nothing.
    pub fn empty(&self, shape: &Shape) -> Option<String> {
        let empty = plan(self, shape).iter().flat_map(|p| p.groups.clone()).find(|g| g.bytes == 0)?;
        Some(format!(
            "its {} {} calls would be 0 bytes: --micro-batch {} × --seq {} shared by tp={} with --sequence-parallel",
            empty.dim.name(),
            empty.kind.name(),
            self.micro_batch,
            self.seq,
            shape.tp
        ))
    }

    /// Why this shape cannot run this model (pp must divide the layers; ep > 1 needs experts,
    /// and must divide them), or None.
    pub fn refuse(&self, shape: &Shape) -> Option<String> {
        if self.layers % shape.pp as u64 != 0 {
            return Some(format!("pp={} does not divide --layers {}", shape.pp, self.layers));
        }
        match (shape.ep, self.moe) {
            (1, _) => None,
            (ep, None) => Some(format!("ep={ep} needs a mixture-of-experts model (--experts E)")),
            (ep, Some(m)) if m.experts % ep != 0 => Some(format!("ep={ep} does not divide --experts {}", m.experts)),
            _ => None,
        }
    }

    /// Tokens of one micro-batch on a rank of the ep group: micro_batch × seq, ÷ tp with
    /// sequence parallelism (each TP rank holds its shard of the sequence).
    pub fn tokens(&self, shape: &Shape) -> u64 {
        let t = self.micro_batch * self.seq;
        if self.sequence_parallel {
            t / shape.tp as u64
        } else {
            t
        }
    }
}

/// One kind of call of one dimension in one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CallGroup {
    pub dim: Dim,
    /// All-reduce, all-gather, reduce-scatter; sendrecv for PP's point-to-point transfers;
    /// all-to-all-v for EP's dispatch and combine.
    pub kind: Kind,
    /// Calls per step (for PP: transfers across one stage boundary, forward and backward; for
    /// EP: dispatches and combines together, half each).
    #[serde(rename = "calls_per_step")]
    pub calls: u64,
    /// Bytes of one call: the whole buffer, as the sweep's size column (JSON `size_bytes`).
    #[serde(rename = "size_bytes")]
    pub bytes: u64,
}

/// What one dimension sends in one step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DimPlan {
    pub dim: Dim,
    /// The ranks in one group of this dimension.
    pub group_size: usize,
    pub groups: Vec<CallGroup>,
    /// DP only: the rank's gradient shard, bytes (before padding); 0 for TP and PP.
    pub shard_bytes: u64,
}

impl DimPlan {
    pub fn calls(&self) -> u64 {
        self.groups.iter().map(|g| g.calls).sum()
    }
    /// Bytes per step: the sum over calls of each call's size.
    pub fn bytes(&self) -> u64 {
        self.groups.iter().map(|g| g.calls * g.bytes).sum()
    }
}

/// The calls of one step, per dimension of size > 1 (TP, EP, PP, DP in that order).
pub fn plan(model: &Model, shape: &Shape) -> Vec<DimPlan> {
    let mut out = vec![];
    let act = model.activation_bytes();
    let mb = model.micro_batches;
    if shape.tp > 1 {
        let layers_here = model.layers / shape.pp as u64;
        let per = layers_here * mb;
        let groups = if model.sequence_parallel {
            vec![
                CallGroup { dim: Dim::Tp, kind: Kind::AllGather, calls: 4 * per, bytes: act },
                CallGroup { dim: Dim::Tp, kind: Kind::ReduceScatter, calls: 4 * per, bytes: act },
            ]
        } else {
            vec![CallGroup { dim: Dim::Tp, kind: Kind::AllReduce, calls: 4 * per, bytes: act }]
        };
        out.push(DimPlan { dim: Dim::Tp, group_size: shape.tp, groups, shard_bytes: 0 });
    }
    if let (true, Some(m)) = (shape.ep > 1, model.moe) {
        let per = model.layers / shape.pp as u64 * mb;
        let bytes = model.tokens(shape) * m.topk as u64 * model.hidden * model.elem_bytes;
        out.push(DimPlan {
            dim: Dim::Ep,
            group_size: shape.ep,
            groups: vec![CallGroup { dim: Dim::Ep, kind: Kind::AllToAllV, calls: 4 * per, bytes }],
            shard_bytes: 0,
        });
    }
    if shape.pp > 1 {
        let bytes = if model.sequence_parallel { act / shape.tp as u64 } else { act };
        out.push(DimPlan {
            dim: Dim::Pp,
            group_size: shape.pp,
            groups: vec![CallGroup { dim: Dim::Pp, kind: Kind::SendRecv, calls: 2 * mb, bytes }],
            shard_bytes: 0,
        });
    }
    if shape.dp > 1 {
        let shard_params = model.param_count().div_ceil((shape.tp * shape.pp) as u64);
        let shard = shard_params * model.elem_bytes;
        let groups = match model.dp_style {
            DpStyle::Ddp => buckets(shard, model.bucket, model.elem_bytes)
                .into_iter()
                .map(|(calls, bytes)| CallGroup { dim: Dim::Dp, kind: Kind::AllReduce, calls, bytes })
                .collect(),
            DpStyle::Zero => {
                // The flat buffer padded to a multiple of dp elements; each bucket too.
                let unit = model.elem_bytes * shape.dp as u64;
                let padded = shard.div_ceil(unit) * unit;
                let bucket = (model.bucket / unit).max(1) * unit;
                let b = buckets(padded, bucket, unit);
                let rs =
                    b.iter().map(|&(calls, bytes)| CallGroup { dim: Dim::Dp, kind: Kind::ReduceScatter, calls, bytes });
                let ag =
                    b.iter().map(|&(calls, bytes)| CallGroup { dim: Dim::Dp, kind: Kind::AllGather, calls, bytes });
                rs.chain(ag).collect()
            }
        };
        out.push(DimPlan { dim: Dim::Dp, group_size: shape.dp, groups, shard_bytes: shard });
    }
    out
}

/// `total` bytes cut into buckets of `bucket` bytes (rounded down to whole `unit`s, at least one):
/// (count, bytes) of the full buckets and of the last, shorter one (if any).
fn buckets(total: u64, bucket: u64, unit: u64) -> Vec<(u64, u64)> {
    let bucket = (bucket / unit).max(1) * unit;
    let (full, rest) = (total / bucket, total % bucket);
    let mut v = vec![];
    if full > 0 {
        v.push((full, bucket));
    }
    if rest > 0 {
        v.push((1, rest));
    }
    v
}

/// The layouts `--layout all` runs: [`layout::factorizations`] of `world` (tp within a host,
/// i.e. dividing `ranks_per_host`, unless `tp_across_hosts`), less those whose pp does not divide
/// the model's layers; in order of tp, then pp. With experts (`--experts`), each tp × pp × dp
/// also with its data-parallel ranks split into ep × dp for every ep > 1 dividing both dp and
/// the experts, right after it. The second list: every factorization left out, with why.
pub fn layouts(
    world: usize,
    ranks_per_host: usize,
    tp_across_hosts: bool,
    model: &Model,
) -> (Vec<Shape>, Vec<(Shape, String)>) {
    let fit = layout::factorizations(world, ranks_per_host, tp_across_hosts);
    let (mut ok, mut left) = (vec![], vec![]);
    for grid in layout::factorizations(world, ranks_per_host, true) {
        let shape = Shape::of(&grid);
        if !fit.contains(&grid) {
            left.push((
                shape,
                format!("tp={} would span hosts of {ranks_per_host} ranks (--tp-across-hosts)", shape.tp),
            ));
        } else if let Some(why) = model.refuse(&shape).or_else(|| model.empty(&shape)) {
            left.push((shape, why));
        } else {
            ok.push(shape);
            let experts = model.moe.map_or(1, |m| m.experts);
            for ep in (2..=shape.dp).filter(|ep| shape.dp % ep == 0 && experts % ep == 0) {
                let split = Shape { ep, dp: shape.dp / ep, ..shape };
                match model.empty(&split) {
                    Some(why) => left.push((split, why)),
                    None => ok.push(split),
                }
            }
        }
    }
    (ok, left)
}

/// Tests' small model (here and in `exec`): 4 layers, hidden 256, seq 128, micro-batch 2,
/// 3 micro-batches, bf16, 1 MiB buckets.
#[cfg(test)]
pub(crate) fn small_for_tests() -> Model {
    Model {
        layers: 4,
        hidden: 256,
        params: None,
        seq: 128,
        micro_batch: 2,
        micro_batches: 3,
        elem_bytes: 2,
        dp_style: DpStyle::Ddp,
        bucket: 1 << 20,
        sequence_parallel: false,
        moe: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::small_for_tests as small;

    #[test]
    fn params_are_12_l_h_squared_unless_given() {
        // 12 · 4 · 256² = 3 145 728.
        assert_eq!(small().param_count(), 3_145_728);
        assert_eq!(Model { params: Some(7_000_000), ..small() }.param_count(), 7_000_000);
    }

    #[test]
    fn tp_dp_ddp_by_hand() {
        let p = plan(&small(), &Shape::dense(2, 1, 2));
        assert_eq!(p.len(), 2);
        // TP: 4 all-reduces × 4 layers × 3 micro-batches = 48 calls of 2·128·256·2 = 131 072 B.
        assert_eq!(p[0].dim, Dim::Tp);
        assert_eq!(p[0].groups, vec![CallGroup { dim: Dim::Tp, kind: Kind::AllReduce, calls: 48, bytes: 131_072 }]);
        assert_eq!(p[0].bytes(), 6_291_456);
        // DP: 3 145 728 / 2 = 1 572 864 params × 2 B = 3 145 728 B = 3 MiB: three 1 MiB buckets.
        assert_eq!(p[1].dim, Dim::Dp);
        assert_eq!(p[1].shard_bytes, 3_145_728);
        assert_eq!(p[1].groups, vec![CallGroup { dim: Dim::Dp, kind: Kind::AllReduce, calls: 3, bytes: 1 << 20 }]);
        assert_eq!((p[1].calls(), p[1].bytes()), (3, 3_145_728));
    }

    #[test]
    fn pp_dp_zero_by_hand() {
        let m = Model { dp_style: DpStyle::Zero, bucket: 1_000_000, ..small() };
        let p = plan(&m, &Shape::dense(1, 2, 2));
        // PP: 3 forward + 3 backward transfers of 131 072 B per stage boundary.
        assert_eq!(p[0].groups, vec![CallGroup { dim: Dim::Pp, kind: Kind::SendRecv, calls: 6, bytes: 131_072 }]);
        // DP: shard 3 MiB (1 572 864 params × 2 B); bucket 1 000 000 B rounded down to a
        // multiple of 2 B × 2 ranks = 1 000 000; 3 full buckets + 145 728 B.
        let rs = |calls, bytes| CallGroup { dim: Dim::Dp, kind: Kind::ReduceScatter, calls, bytes };
        let ag = |calls, bytes| CallGroup { dim: Dim::Dp, kind: Kind::AllGather, calls, bytes };
        assert_eq!(p[1].groups, vec![rs(3, 1_000_000), rs(1, 145_728), ag(3, 1_000_000), ag(1, 145_728)]);
        assert_eq!((p[1].calls(), p[1].bytes()), (8, 2 * 3_145_728));
    }

    #[test]
    fn sequence_parallel_splits_each_all_reduce() {
        let m = Model { sequence_parallel: true, ..small() };
        let p = plan(&m, &Shape::dense(2, 2, 1));
        // 2 layers per stage × 3 micro-batches × 4 = 24 all-gathers and 24 reduce-scatters.
        assert_eq!(
            p[0].groups,
            vec![
                CallGroup { dim: Dim::Tp, kind: Kind::AllGather, calls: 24, bytes: 131_072 },
                CallGroup { dim: Dim::Tp, kind: Kind::ReduceScatter, calls: 24, bytes: 131_072 },
            ]
        );
        // PP sends the sequence shard: 131 072 / 2.
        assert_eq!(p[1].groups[0].bytes, 65_536);
        assert_eq!(p.len(), 2, "dp=1 sends nothing");
    }

    /// EP: 4 all-to-all-v's per layer of the stage and micro-batch (dispatch and combine,
    /// forward and backward) of micro-batch × seq × topk × hidden elements; ep must divide the
    /// experts and needs them; `--layout all` splits dp into ep × dp.
    #[test]
    fn ep_by_hand() {
        let moe = Experts { experts: 8, topk: 2, skew: 0.0, capacity: None };
        let m = Model { moe: Some(moe), ..small() };
        let p = plan(&m, &Shape { tp: 1, pp: 2, dp: 1, ep: 2 });
        // 2 layers per stage × 3 micro-batches × 4 = 24 calls of 2·128 tokens × 2 × 256 × 2 B.
        assert_eq!(p[0].groups, vec![CallGroup { dim: Dim::Ep, kind: Kind::AllToAllV, calls: 24, bytes: 262_144 }]);
        assert_eq!((p[0].dim, p[0].group_size, p[1].dim), (Dim::Ep, 2, Dim::Pp));
        // With sequence parallelism a TP rank dispatches its shard of the sequence.
        let sp = Model { sequence_parallel: true, ..m.clone() };
        assert_eq!(plan(&sp, &Shape { tp: 2, pp: 1, dp: 1, ep: 2 })[1].groups[0].bytes, 131_072);
        assert_eq!(m.refuse(&Shape { tp: 1, pp: 1, dp: 1, ep: 3 }).unwrap(), "ep=3 does not divide --experts 8");
        assert_eq!(
            small().refuse(&Shape { tp: 1, pp: 1, dp: 1, ep: 2 }).unwrap(),
            "ep=2 needs a mixture-of-experts model (--experts E)"
        );
        assert_eq!(Shape { tp: 1, pp: 1, dp: 1, ep: 4 }.to_string(), "tp=1, ep=4, pp=1, dp=1");
        let all: Vec<(usize, usize, usize, usize)> =
            layouts(4, 4, false, &Model { layers: 4, ..m }).0.iter().map(|s| (s.tp, s.ep, s.pp, s.dp)).collect();
        assert_eq!(
            all,
            vec![
                (1, 1, 1, 4),
                (1, 2, 1, 2),
                (1, 4, 1, 1),
                (1, 1, 2, 2),
                (1, 2, 2, 1),
                (1, 1, 4, 1),
                (2, 1, 1, 2),
                (2, 2, 1, 1),
                (2, 1, 2, 1),
                (4, 1, 1, 1)
            ]
        );
        let g = Shape { tp: 2, pp: 1, dp: 2, ep: 2 }.grid();
        // tp fastest, then ep, then dp: rank 3 = t1, e1, d0; rank 4 = t0, e0, d1.
        assert_eq!((g.coord(3, Dim::Tp), g.coord(3, Dim::Ep), g.coord(3, Dim::Dp)), (1, 1, 0));
        assert_eq!((g.coord(4, Dim::Ep), g.coord(4, Dim::Dp)), (0, 1));
    }

    /// Every product of the flags checked (issue 65): none wraps to a small model.
    #[test]
    fn sizes_that_overflow_are_refused() {
        assert!(small().check().is_ok());
        let e = |m: Model| m.check().unwrap_err().to_string();
        let wraps = Model { hidden: 1 << 32, seq: 1 << 32, ..small() };
        assert!(e(wraps).starts_with("step --layers/--hidden: a gradient of 12 × 4 layers"));
        let act = Model { params: Some(1000), hidden: 1 << 16, seq: 1 << 32, ..small() };
        assert!(e(act).starts_with("step --micro-batch/--seq/--hidden: an activation"));
        let calls = Model { params: Some(1000), layers: 1 << 40, micro_batches: 1 << 40, ..small() };
        assert!(e(calls).starts_with("step --layers/--micro-batches: "));
        let moe = Experts { experts: 2, topk: 2, skew: 0.0, capacity: None };
        let ep = Model { moe: Some(moe), params: Some(1000), micro_batch: 1, hidden: 1 << 15, seq: 1 << 32, ..small() };
        assert!(e(ep).starts_with("step --micro-batch/--seq/--topk/--hidden: "));
        let sp = Model { moe: Some(moe), micro_batch: 1, seq: 1, sequence_parallel: true, ..small() };
        assert!(sp
            .empty(&Shape { tp: 2, pp: 1, dp: 1, ep: 2 })
            .unwrap()
            .contains("ep all-to-all-v calls would be 0 bytes"));
        assert_eq!(sp.empty(&Shape { tp: 1, pp: 1, dp: 1, ep: 2 }), None);
    }

    #[test]
    fn a_world_of_one_sends_nothing() {
        assert!(plan(&small(), &Shape::dense(1, 1, 1)).is_empty());
    }

    fn shapes(world: usize, per_host: usize, across: bool) -> Vec<(usize, usize, usize)> {
        let m = Model { layers: 64, ..small() };
        layouts(world, per_host, across, &m).0.iter().map(|s| (s.tp, s.pp, s.dp)).collect()
    }

    #[test]
    fn layouts_of_4_8_16_ranks() {
        assert_eq!(shapes(4, 4, false), vec![(1, 1, 4), (1, 2, 2), (1, 4, 1), (2, 1, 2), (2, 2, 1), (4, 1, 1)]);
        assert_eq!(shapes(4, 2, false), vec![(1, 1, 4), (1, 2, 2), (1, 4, 1), (2, 1, 2), (2, 2, 1)]);
        assert_eq!(shapes(4, 1, false), vec![(1, 1, 4), (1, 2, 2), (1, 4, 1)]);
        assert_eq!(shapes(4, 1, true).len(), 6);
        // 8 ranks: tp ∈ {1,2,4,8} with pp·dp = 8/tp: 4 + 3 + 2 + 1 = 10.
        assert_eq!(shapes(8, 8, false).len(), 10);
        assert_eq!(shapes(8, 2, false).len(), 4 + 3);
        assert_eq!(shapes(8, 1, false).len(), 4);
        // 16: 5 + 4 + 3 + 2 + 1 = 15; 8 per host drops tp=16; 2 per host keeps tp 1, 2.
        assert_eq!(shapes(16, 8, false).len(), 14);
        assert_eq!(shapes(16, 2, false).len(), 9);
        assert_eq!(shapes(16, 1, false).len(), 5);
    }

    #[test]
    fn pp_must_divide_the_layers() {
        let m = Model { layers: 3, ..small() };
        let (ok, left) = layouts(4, 4, false, &m);
        assert!(ok.iter().all(|s| s.pp == 1));
        assert_eq!(left.len(), 3);
        assert!(left[0].1.contains("pp=2 does not divide --layers 3"), "{:?}", left);
    }

    #[test]
    fn tp_across_hosts_is_left_out_with_the_reason() {
        // 4 ranks, 2 per host, 3 layers: tp=4 spans hosts; pp=2 and pp=4 do not divide 3.
        let m = Model { layers: 3, ..small() };
        let (ok, left) = layouts(4, 2, false, &m);
        let t = |s: &Shape| (s.tp, s.pp, s.dp);
        assert_eq!(ok.iter().map(t).collect::<Vec<_>>(), vec![(1, 1, 4), (2, 1, 2)]);
        let left: Vec<((usize, usize, usize), &str)> = left.iter().map(|(s, w)| (t(s), w.as_str())).collect();
        assert_eq!(
            left,
            vec![
                ((1, 2, 2), "pp=2 does not divide --layers 3"),
                ((1, 4, 1), "pp=4 does not divide --layers 3"),
                ((2, 2, 1), "pp=2 does not divide --layers 3"),
                ((4, 1, 1), "tp=4 would span hosts of 2 ranks (--tp-across-hosts)"),
            ]
        );
        assert_eq!(layouts(4, 2, true, &m).0.len(), 3);
    }

    #[test]
    fn shape_is_a_view_of_the_grid() {
        let s = Shape::dense(2, 2, 2);
        let g = s.grid();
        assert_eq!(Shape::of(&g), s);
        assert_eq!(g.world(), Some(8));
        // Megatron-LM's order: tp fastest-varying, then dp, then pp (rank 5 = t1, d0, p1).
        assert_eq!((g.coord(5, Dim::Tp), g.coord(5, Dim::Dp), g.coord(5, Dim::Pp)), (1, 0, 1));
        assert_eq!(DIMS.map(|d| s.size(d)), [2, 1, 2, 2]);
    }
}
