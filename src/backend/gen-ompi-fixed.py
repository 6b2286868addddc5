#!/usr/bin/env python3
"""Translate Open MPI 4.1's coll_tuned fixed decision rules (coll_tuned_decision_fixed.c) into
Rust, mechanically: each decision function's if/else chain becomes one Rust expression with the
same comparisons, thresholds and algorithm numbers, in the same order. Nothing is hand-edited.

    git -C OMPI show v4.1.4:ompi/mca/coll/tuned/coll_tuned_decision_fixed.c > fixed.c
    src/backend/gen-ompi-fixed.py fixed.c > src/backend/ompi_fixed.rs && cargo fmt

The whole 4.1 series (v4.1.0 to v4.1.8) has the same file."""
import re
import sys

# C function -> (Rust name, the collective coll-bench times, the C size variable)
FUNCTIONS = [
    ("allreduce", "MPI_Allreduce"),
    ("alltoall", "MPI_Alltoall"),
    ("barrier", "MPI_Barrier"),
    ("bcast", "MPI_Bcast"),
    ("reduce", "MPI_Reduce"),
    ("reduce_scatter_block", "MPI_Reduce_scatter_block"),
    ("allgather", "MPI_Allgather"),
    ("gather", "MPI_Gather"),
    ("scatter", "MPI_Scatter"),
]


def body(src, name):
    start = src.index(f"ompi_coll_tuned_{name}_intra_dec_fixed(")
    start = src.index("*/", src.index("/** Algorithms:", start)) + 2
    end = src.index("return", start)
    return src[start:end]


def translate(c):
    out = []
    for line in c.splitlines():
        s = line.strip()
        if not s or s.startswith("OPAL_OUTPUT") or s.startswith('"') or s.endswith("));"):
            continue
        s = s.replace("!ompi_op_is_commute(op)", "!commute").replace("communicator_size", "n")
        m = re.fullmatch(r"(\} else )?if\s*\((.*)\)\s*\{", s)
        if m:
            out.append(f"{m.group(1) or ''}if {m.group(2).strip()} {{")
            continue
        m = re.fullmatch(r"alg = (\d+);", s)
        if m:
            out.append(m.group(1))
            continue
        if s in ("} else {", "}"):
            out.append(s)
            continue
        raise SystemExit(f"unexpected line: {line!r}")
    return "\n".join(out)


def main():
    src = open(sys.argv[1]).read()
    print("//! Open MPI 4.1's `coll_tuned` fixed decision rules, translated mechanically from")
    print("//! `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c` (the same file from v4.1.0 to v4.1.8) by")
    print("//! `src/backend/gen-ompi-fixed.py`: do not edit by hand, regenerate. Each function returns the")
    print("//! algorithm number `coll_tuned_<coll>_algorithm` enumerates, from the communicator size `n`")
    print("//! and `total_dsize`, the bytes of one call's count argument (type size × count), as the C")
    print("//! function computes it.")
    print()
    print("#![allow(clippy::collapsible_else_if, clippy::if_same_then_else)]")
    for name, mpi in FUNCTIONS:
        b = translate(body(src, name))
        uses_size = "total_dsize" in b
        uses_commute = "commute" in b
        args = ["n: u64"]
        args.append("total_dsize: u64" if uses_size else "_total_dsize: u64")
        args.append("commute: bool" if uses_commute else "_commute: bool")
        print()
        print(f"/// `{mpi}`: `ompi_coll_tuned_{name}_intra_dec_fixed`.")
        print(f"pub fn {name}({', '.join(args)}) -> i32 {{")
        print(b)
        print("}")


main()
