//! How a size is shared out among ranks, and the bus factor that follows: the two rules most
//! collectives' files use (nccl-tests' `(count/nranks) & ~(16/eltSize-1)` and `(n-1)/n`).

/// Elements of one rank's block where a size is shared out among `nranks` ranks (all-gather,
/// reduce-scatter, all-to-all, gather, scatter): nccl-tests' `(count/nranks) & ~(16/eltSize-1)`,
/// the even share rounded down to whole 16 bytes, so every block, and every in-place pointer
/// into one buffer (`rank × block`), stays 16-byte aligned. 100 floats on 7 ranks: 14, rounded
/// down to 12.
pub(crate) fn per_rank(elems: usize, elem: usize, nranks: usize) -> usize {
    let unit = (16 / elem.max(1)).max(1);
    elems / nranks.max(1) / unit * unit
}

/// (n−1)/n, the bus factor of the collectives where each rank's block crosses the bus once.
pub(crate) fn one_pass(nranks: usize) -> f64 {
    if nranks == 0 {
        return 0.0;
    }
    (nranks as f64 - 1.0) / nranks as f64
}
