//! Open MPI 4.1's `coll_tuned` fixed decision rules, translated mechanically from
//! `ompi/mca/coll/tuned/coll_tuned_decision_fixed.c` (the same file from v4.1.0 to v4.1.8) by
//! `src/backend/gen-ompi-fixed.py`: do not edit by hand, regenerate. Each function returns the
//! algorithm number `coll_tuned_<coll>_algorithm` enumerates, from the communicator size `n`
//! and `total_dsize`, the bytes of one call's count argument (type size × count), as the C
//! function computes it.

#![allow(clippy::collapsible_else_if, clippy::if_same_then_else)]

/// `MPI_Allreduce`: `ompi_coll_tuned_allreduce_intra_dec_fixed`.
pub fn allreduce(n: u64, total_dsize: u64, commute: bool) -> i32 {
    if !commute {
        if n < 4 {
            if total_dsize < 131072 {
                3
            } else {
                1
            }
        } else if n < 8 {
            3
        } else if n < 16 {
            if total_dsize < 1048576 {
                3
            } else {
                2
            }
        } else if n < 128 {
            3
        } else if n < 256 {
            if total_dsize < 131072 {
                2
            } else if total_dsize < 524288 {
                3
            } else {
                2
            }
        } else if n < 512 {
            if total_dsize < 4096 {
                2
            } else if total_dsize < 524288 {
                3
            } else {
                2
            }
        } else {
            if total_dsize < 2048 {
                2
            } else {
                3
            }
        }
    } else {
        if n < 4 {
            if total_dsize < 8 {
                4
            } else if total_dsize < 4096 {
                3
            } else if total_dsize < 8192 {
                4
            } else if total_dsize < 16384 {
                3
            } else if total_dsize < 65536 {
                4
            } else if total_dsize < 262144 {
                5
            } else {
                6
            }
        } else if n < 8 {
            if total_dsize < 16 {
                4
            } else if total_dsize < 8192 {
                3
            } else {
                6
            }
        } else if n < 16 {
            if total_dsize < 8192 {
                3
            } else {
                6
            }
        } else if n < 32 {
            if total_dsize < 64 {
                5
            } else if total_dsize < 4096 {
                3
            } else {
                6
            }
        } else if n < 64 {
            if total_dsize < 128 {
                5
            } else {
                6
            }
        } else if n < 128 {
            if total_dsize < 262144 {
                3
            } else {
                6
            }
        } else if n < 256 {
            if total_dsize < 131072 {
                2
            } else if total_dsize < 262144 {
                3
            } else {
                6
            }
        } else if n < 512 {
            if total_dsize < 4096 {
                2
            } else {
                6
            }
        } else if n < 2048 {
            if total_dsize < 2048 {
                2
            } else if total_dsize < 16384 {
                3
            } else {
                6
            }
        } else if n < 4096 {
            if total_dsize < 2048 {
                2
            } else if total_dsize < 4096 {
                5
            } else if total_dsize < 16384 {
                3
            } else {
                6
            }
        } else {
            if total_dsize < 2048 {
                2
            } else if total_dsize < 16384 {
                5
            } else if total_dsize < 32768 {
                3
            } else {
                6
            }
        }
    }
}

/// `MPI_Alltoall`: `ompi_coll_tuned_alltoall_intra_dec_fixed`.
pub fn alltoall(n: u64, total_dsize: u64, _commute: bool) -> i32 {
    if n == 2 {
        if total_dsize < 2 {
            2
        } else if total_dsize < 4 {
            5
        } else if total_dsize < 16 {
            2
        } else if total_dsize < 64 {
            5
        } else if total_dsize < 256 {
            2
        } else if total_dsize < 4096 {
            5
        } else if total_dsize < 32768 {
            2
        } else if total_dsize < 262144 {
            4
        } else if total_dsize < 1048576 {
            5
        } else {
            2
        }
    } else if n < 8 {
        if total_dsize < 8192 {
            4
        } else if total_dsize < 16384 {
            1
        } else if total_dsize < 65536 {
            4
        } else if total_dsize < 524288 {
            1
        } else if total_dsize < 1048576 {
            2
        } else {
            1
        }
    } else if n < 16 {
        if total_dsize < 262144 {
            4
        } else {
            1
        }
    } else if n < 32 {
        if total_dsize < 4 {
            4
        } else if total_dsize < 512 {
            3
        } else if total_dsize < 8192 {
            4
        } else if total_dsize < 32768 {
            1
        } else if total_dsize < 262144 {
            4
        } else if total_dsize < 524288 {
            1
        } else {
            4
        }
    } else if n < 64 {
        if total_dsize < 512 {
            3
        } else if total_dsize < 524288 {
            1
        } else {
            4
        }
    } else if n < 128 {
        if total_dsize < 1024 {
            3
        } else if total_dsize < 2048 {
            1
        } else if total_dsize < 4096 {
            4
        } else if total_dsize < 262144 {
            1
        } else {
            2
        }
    } else if n < 256 {
        if total_dsize < 1024 {
            3
        } else if total_dsize < 2048 {
            4
        } else if total_dsize < 262144 {
            1
        } else {
            2
        }
    } else if n < 512 {
        if total_dsize < 1024 {
            3
        } else if total_dsize < 8192 {
            4
        } else if total_dsize < 32768 {
            1
        } else {
            2
        }
    } else if n < 1024 {
        if total_dsize < 512 {
            3
        } else if total_dsize < 8192 {
            4
        } else if total_dsize < 16384 {
            1
        } else if total_dsize < 131072 {
            4
        } else if total_dsize < 262144 {
            1
        } else {
            2
        }
    } else if n < 2048 {
        if total_dsize < 512 {
            3
        } else if total_dsize < 1024 {
            4
        } else if total_dsize < 2048 {
            1
        } else if total_dsize < 16384 {
            4
        } else if total_dsize < 262144 {
            1
        } else {
            4
        }
    } else if n < 4096 {
        if total_dsize < 1024 {
            3
        } else if total_dsize < 4096 {
            4
        } else if total_dsize < 8192 {
            1
        } else if total_dsize < 131072 {
            4
        } else {
            1
        }
    } else {
        if total_dsize < 2048 {
            3
        } else if total_dsize < 8192 {
            4
        } else if total_dsize < 16384 {
            1
        } else if total_dsize < 32768 {
            4
        } else if total_dsize < 65536 {
            1
        } else {
            4
        }
    }
}

/// `MPI_Barrier`: `ompi_coll_tuned_barrier_intra_dec_fixed`.
pub fn barrier(n: u64, _total_dsize: u64, _commute: bool) -> i32 {
    if n < 4 {
        3
    } else if n < 8 {
        1
    } else if n < 64 {
        3
    } else if n < 256 {
        4
    } else if n < 512 {
        6
    } else if n < 1024 {
        4
    } else if n < 4096 {
        6
    } else {
        4
    }
}

/// `MPI_Bcast`: `ompi_coll_tuned_bcast_intra_dec_fixed`.
pub fn bcast(n: u64, total_dsize: u64, _commute: bool) -> i32 {
    if n < 4 {
        if total_dsize < 32 {
            3
        } else if total_dsize < 256 {
            5
        } else if total_dsize < 512 {
            3
        } else if total_dsize < 1024 {
            7
        } else if total_dsize < 32768 {
            1
        } else if total_dsize < 131072 {
            5
        } else if total_dsize < 262144 {
            2
        } else if total_dsize < 524288 {
            1
        } else if total_dsize < 1048576 {
            6
        } else {
            5
        }
    } else if n < 8 {
        if total_dsize < 64 {
            5
        } else if total_dsize < 128 {
            6
        } else if total_dsize < 2048 {
            5
        } else if total_dsize < 8192 {
            6
        } else if total_dsize < 1048576 {
            1
        } else {
            2
        }
    } else if n < 16 {
        if total_dsize < 8 {
            7
        } else if total_dsize < 64 {
            5
        } else if total_dsize < 4096 {
            7
        } else if total_dsize < 16384 {
            5
        } else if total_dsize < 32768 {
            6
        } else {
            1
        }
    } else if n < 32 {
        if total_dsize < 4096 {
            7
        } else if total_dsize < 1048576 {
            6
        } else {
            8
        }
    } else if n < 64 {
        if total_dsize < 2048 {
            6
        } else {
            7
        }
    } else if n < 128 {
        7
    } else if n < 256 {
        if total_dsize < 2 {
            6
        } else if total_dsize < 16384 {
            5
        } else if total_dsize < 32768 {
            1
        } else if total_dsize < 65536 {
            5
        } else {
            7
        }
    } else if n < 1024 {
        if total_dsize < 16384 {
            7
        } else if total_dsize < 32768 {
            4
        } else {
            7
        }
    } else if n < 2048 {
        if total_dsize < 524288 {
            7
        } else {
            8
        }
    } else if n < 4096 {
        if total_dsize < 262144 {
            7
        } else {
            8
        }
    } else {
        if total_dsize < 8192 {
            7
        } else if total_dsize < 16384 {
            5
        } else if total_dsize < 262144 {
            7
        } else {
            8
        }
    }
}

/// `MPI_Reduce`: `ompi_coll_tuned_reduce_intra_dec_fixed`.
pub fn reduce(n: u64, total_dsize: u64, commute: bool) -> i32 {
    if !commute {
        if n < 4 {
            if total_dsize < 8 {
                6
            } else {
                1
            }
        } else if n < 8 {
            1
        } else if n < 16 {
            if total_dsize < 1024 {
                6
            } else if total_dsize < 8192 {
                1
            } else if total_dsize < 16384 {
                6
            } else if total_dsize < 262144 {
                1
            } else {
                6
            }
        } else if n < 128 {
            6
        } else if n < 256 {
            if total_dsize < 512 {
                6
            } else if total_dsize < 1024 {
                1
            } else {
                6
            }
        } else {
            6
        }
    } else {
        if n < 4 {
            if total_dsize < 8 {
                7
            } else if total_dsize < 16 {
                4
            } else if total_dsize < 32 {
                3
            } else if total_dsize < 262144 {
                1
            } else if total_dsize < 524288 {
                3
            } else if total_dsize < 1048576 {
                2
            } else {
                3
            }
        } else if n < 8 {
            if total_dsize < 4096 {
                4
            } else if total_dsize < 65536 {
                2
            } else if total_dsize < 262144 {
                5
            } else if total_dsize < 524288 {
                1
            } else if total_dsize < 1048576 {
                5
            } else {
                1
            }
        } else if n < 16 {
            if total_dsize < 8192 {
                4
            } else {
                5
            }
        } else if n < 32 {
            if total_dsize < 4096 {
                4
            } else {
                5
            }
        } else if n < 256 {
            5
        } else if n < 512 {
            if total_dsize < 8192 {
                5
            } else if total_dsize < 16384 {
                6
            } else {
                5
            }
        } else if n < 2048 {
            5
        } else if n < 4096 {
            if total_dsize < 512 {
                5
            } else if total_dsize < 1024 {
                6
            } else if total_dsize < 8192 {
                5
            } else if total_dsize < 16384 {
                6
            } else {
                5
            }
        } else {
            if total_dsize < 16 {
                5
            } else if total_dsize < 32 {
                6
            } else if total_dsize < 1024 {
                5
            } else if total_dsize < 2048 {
                6
            } else if total_dsize < 8192 {
                5
            } else if total_dsize < 16384 {
                6
            } else {
                5
            }
        }
    }
}

/// `MPI_Reduce_scatter_block`: `ompi_coll_tuned_reduce_scatter_block_intra_dec_fixed`.
pub fn reduce_scatter_block(n: u64, total_dsize: u64, commute: bool) -> i32 {
    if !commute {
        1
    } else {
        if n < 4 {
            if total_dsize < 4 {
                2
            } else if total_dsize < 8 {
                4
            } else if total_dsize < 16 {
                3
            } else if total_dsize < 128 {
                4
            } else if total_dsize < 256 {
                3
            } else if total_dsize < 4096 {
                4
            } else if total_dsize < 8192 {
                3
            } else if total_dsize < 131072 {
                4
            } else {
                1
            }
        } else if n < 8 {
            if total_dsize < 8 {
                3
            } else if total_dsize < 32 {
                2
            } else if total_dsize < 256 {
                4
            } else if total_dsize < 8192 {
                3
            } else if total_dsize < 16384 {
                4
            } else if total_dsize < 1048576 {
                3
            } else {
                1
            }
        } else if n < 16 {
            if total_dsize < 4 {
                1
            } else if total_dsize < 32 {
                3
            } else if total_dsize < 128 {
                4
            } else if total_dsize < 524288 {
                3
            } else if total_dsize < 4194304 {
                1
            } else {
                4
            }
        } else if n < 32 {
            if total_dsize < 32 {
                1
            } else if total_dsize < 524288 {
                3
            } else if total_dsize < 2097152 {
                1
            } else if total_dsize < 4194304 {
                3
            } else {
                4
            }
        } else {
            if total_dsize < 4 {
                3
            } else if total_dsize < 16 {
                1
            } else if total_dsize < 65536 {
                4
            } else if total_dsize < 262144 {
                1
            } else {
                4
            }
        }
    }
}

/// `MPI_Allgather`: `ompi_coll_tuned_allgather_intra_dec_fixed`.
pub fn allgather(n: u64, total_dsize: u64, _commute: bool) -> i32 {
    if n == 2 {
        6
    } else if n < 32 {
        3
    } else if n < 64 {
        if total_dsize < 1024 {
            3
        } else if total_dsize < 65536 {
            5
        } else {
            4
        }
    } else if n < 128 {
        if total_dsize < 512 {
            3
        } else if total_dsize < 65536 {
            5
        } else {
            4
        }
    } else if n < 256 {
        if total_dsize < 512 {
            3
        } else if total_dsize < 131072 {
            5
        } else if total_dsize < 524288 {
            4
        } else if total_dsize < 1048576 {
            5
        } else {
            4
        }
    } else if n < 512 {
        if total_dsize < 32 {
            3
        } else if total_dsize < 128 {
            2
        } else if total_dsize < 1024 {
            3
        } else if total_dsize < 131072 {
            5
        } else if total_dsize < 524288 {
            4
        } else if total_dsize < 1048576 {
            5
        } else {
            4
        }
    } else if n < 1024 {
        if total_dsize < 64 {
            3
        } else if total_dsize < 256 {
            2
        } else if total_dsize < 2048 {
            3
        } else {
            5
        }
    } else if n < 2048 {
        if total_dsize < 4 {
            3
        } else if total_dsize < 8 {
            2
        } else if total_dsize < 16 {
            3
        } else if total_dsize < 32 {
            2
        } else if total_dsize < 256 {
            3
        } else if total_dsize < 512 {
            2
        } else if total_dsize < 4096 {
            3
        } else {
            5
        }
    } else if n < 4096 {
        if total_dsize < 32 {
            2
        } else if total_dsize < 128 {
            3
        } else if total_dsize < 512 {
            2
        } else if total_dsize < 4096 {
            3
        } else {
            5
        }
    } else {
        if total_dsize < 2 {
            3
        } else if total_dsize < 8 {
            2
        } else if total_dsize < 16 {
            3
        } else if total_dsize < 512 {
            2
        } else if total_dsize < 4096 {
            3
        } else {
            5
        }
    }
}

/// `MPI_Gather`: `ompi_coll_tuned_gather_intra_dec_fixed`.
pub fn gather(n: u64, total_dsize: u64, _commute: bool) -> i32 {
    if n < 4 {
        if total_dsize < 2 {
            3
        } else if total_dsize < 4 {
            1
        } else if total_dsize < 32768 {
            2
        } else if total_dsize < 65536 {
            1
        } else if total_dsize < 131072 {
            2
        } else {
            3
        }
    } else if n < 8 {
        if total_dsize < 1024 {
            2
        } else if total_dsize < 8192 {
            1
        } else if total_dsize < 32768 {
            2
        } else if total_dsize < 262144 {
            1
        } else {
            3
        }
    } else if n < 256 {
        2
    } else if n < 512 {
        if total_dsize < 2048 {
            2
        } else if total_dsize < 8192 {
            1
        } else {
            2
        }
    } else {
        2
    }
}

/// `MPI_Scatter`: `ompi_coll_tuned_scatter_intra_dec_fixed`.
pub fn scatter(n: u64, total_dsize: u64, _commute: bool) -> i32 {
    if n < 4 {
        if total_dsize < 2 {
            3
        } else if total_dsize < 131072 {
            1
        } else if total_dsize < 262144 {
            3
        } else {
            1
        }
    } else if n < 8 {
        if total_dsize < 2048 {
            2
        } else if total_dsize < 4096 {
            1
        } else if total_dsize < 8192 {
            2
        } else if total_dsize < 32768 {
            1
        } else if total_dsize < 1048576 {
            3
        } else {
            1
        }
    } else if n < 16 {
        if total_dsize < 16384 {
            2
        } else if total_dsize < 1048576 {
            3
        } else {
            1
        }
    } else if n < 32 {
        if total_dsize < 16384 {
            2
        } else if total_dsize < 32768 {
            1
        } else {
            3
        }
    } else if n < 64 {
        if total_dsize < 512 {
            2
        } else if total_dsize < 8192 {
            3
        } else if total_dsize < 16384 {
            2
        } else {
            3
        }
    } else {
        if total_dsize < 512 {
            2
        } else {
            3
        }
    }
}
