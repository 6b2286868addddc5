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

/// The dimensions of a step, in the order it prints them (the order of `--layout tp=T,pp=P,dp=D`).
pub const DIMS: [Dim; 3] = [Dim::Tp, Dim::Pp, Dim::Dp];

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
}

impl Shape {
    /// The sizes of a resolved grid (cp and ep are 1 in every grid step accepts).
    pub fn of(grid: &Grid) -> Shape {
        Shape { tp: grid.size(Dim::Tp), pp: grid.size(Dim::Pp), dp: grid.size(Dim::Dp) }
    }
    /// The grid of these sizes, in Megatron-LM's default rank order.
    pub fn grid(&self) -> Grid {
        Grid::new(&[(Dim::Tp, self.tp), (Dim::Pp, self.pp), (Dim::Dp, self.dp)])
    }
    /// The size of `dim` (1 for cp and ep, which a step does not use).
    pub fn size(&self, dim: Dim) -> usize {
        match dim {
            Dim::Tp => self.tp,
            Dim::Pp => self.pp,
            Dim::Dp => self.dp,
            Dim::Cp | Dim::Ep => 1,
        }
    }
    pub fn world(&self) -> usize {
        self.tp * self.pp * self.dp
    }
}

impl fmt::Display for Shape {
    /// `tp=2, pp=1, dp=2` (every dimension, in the order of the flag).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tp={}, pp={}, dp={}", self.tp, self.pp, self.dp)
    }
}

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

    /// Why this shape cannot run this model (pp must divide the layers), or None.
    pub fn refuse(&self, shape: &Shape) -> Option<String> {
        if self.layers % shape.pp as u64 != 0 {
            return Some(format!("pp={} does not divide --layers {}", shape.pp, self.layers));
        }
        None
    }
}

/// One kind of call of one dimension in one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct CallGroup {
    pub dim: Dim,
    /// All-reduce, all-gather, reduce-scatter; sendrecv for PP's point-to-point transfers.
    pub kind: Kind,
    /// Calls per step (for PP: transfers across one stage boundary, forward and backward).
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

/// The calls of one step, per dimension of size > 1 (TP, PP, DP in that order).
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
/// the model's layers; in order of tp, then pp. The second list: every factorization left out,
/// with why.
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
        } else if let Some(why) = model.refuse(&shape) {
            left.push((shape, why));
        } else {
            ok.push(shape);
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
        let p = plan(&small(), &Shape { tp: 2, pp: 1, dp: 2 });
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
        let p = plan(&m, &Shape { tp: 1, pp: 2, dp: 2 });
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
        let p = plan(&m, &Shape { tp: 2, pp: 2, dp: 1 });
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

    #[test]
    fn a_world_of_one_sends_nothing() {
        assert!(plan(&small(), &Shape { tp: 1, pp: 1, dp: 1 }).is_empty());
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
        let s = Shape { tp: 2, pp: 2, dp: 2 };
        let g = s.grid();
        assert_eq!(Shape::of(&g), s);
        assert_eq!(g.world(), Some(8));
        // Megatron-LM's order: tp fastest-varying, then dp, then pp (rank 5 = t1, d0, p1).
        assert_eq!((g.coord(5, Dim::Tp), g.coord(5, Dim::Dp), g.coord(5, Dim::Pp)), (1, 0, 1));
        assert_eq!(DIMS.map(|d| s.size(d)), [2, 2, 2]);
    }
}
