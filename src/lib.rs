//! coll-bench: measure collective communication on clusters, the way nccl-tests does, with
//! clean CSV, exact checks and exit codes.
//!
//! Data flows one way: command line ([`cli`]) → validated, rank-agreed [`options::Options`] →
//! the driver ([`sweep`]) runs each collective ([`collective`], one module each) on a
//! [`backend`] (MPI, NCCL) and produces plain records ([`record`]) → reports ([`report`]: table,
//! CSV) on rank 0. [`world`] holds everything MPI-wide (ranks, node split, agreement);
//! [`launch`] cross-checks MPI's view of the job with the launcher's environment; [`check`]
//! makes exact input patterns and verifies outputs; [`stats`] summarises samples. [`info`] reports
//! what every host has (versions, CPU, memory, network, NCCL, GPUs) and which hosts differ.

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod acceptance;
pub mod app;
pub mod backend;
pub mod check;
pub mod cli;
pub mod collective;
pub mod compare;
pub mod csvread;
pub mod dtype;
pub mod error;
pub mod info;
pub mod launch;
pub mod memory;
pub mod mpi_error;
pub mod options;
pub mod pairs;
pub mod plot;
pub mod record;
pub mod report;
pub mod size;
pub mod stats;
pub mod sweep;
pub mod tune;
pub mod watchdog;
pub mod world;
