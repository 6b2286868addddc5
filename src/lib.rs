//! coll-bench: measure collective communication on clusters, the way nccl-tests does, with
//! clean CSV, exact checks and exit codes, over MPI (CPU buffers) or NCCL (GPU buffers).
//!
//! # Layers
//!
//! Modules use only modules below them (`tests/layers.rs` checks every `crate::` path):
//!
//! 1. `bin/coll-bench.rs` → [`app`]: argv → the MPI [`world`] → the plan, agreed across ranks →
//!    a subcommand; for the sweep it wires the reports.
//! 2. [`cli`]: every flag of every subcommand (one parser per file; `cli/plot.rs`,
//!    `cli/spec.rs` and `cli/compare.rs` for the subcommands over files) → typed options.
//! 3. Subcommands: [`acceptance`] (`check`, `spec`), [`tune`], [`pairs`], [`info`], [`step`]; below them
//!    [`plot`] and [`compare`], which read CSVs without MPI.
//! 4. [`setup`]: one sweep's set-up on every rank: the backend made from the options, the types
//!    it supports, the memory fit, the output paths, the run's context for the reports.
//! 5. [`sweep`] (the driver), then [`watchdog`] (`-T`: a call that outlives it ends the job; a
//!    failed MPI call ends every rank in order through its side channel).
//! 6. [`backend`] (one trait; MPI, NCCL) and [`report`] (table, CSV, JSON, Markdown, progress).
//! 7. [`csvread`], [`memory`]; [`record`], [`world`]; [`launch`], [`options`] (with its literal
//!    `Default`); [`verify`] (exact inputs, verification).
//! 8. The vocabulary: [`collective`] (one file each), [`dtype`], [`duration`], [`layout`] (process groups), [`mpi_error`] (every MPI return code checked; a failed call is one line), [`size`],
//!    [`stats`]; at the bottom [`error`].
//!
//! # Data flow
//!
//! Command line → [`cli`] → [`options::Options`] (broadcast from rank 0, compared on every
//! rank) → [`setup`] makes the backend and checks memory and outputs → [`sweep`] runs the
//! options' plan (collective × type × op × size, both placements) on the [`backend`] and hands
//! each [`record::Point`] to the reports ([`report`]) on rank 0; nothing in the measuring path
//! prints. `check` judges the same points against a spec; `tune` times each algorithm through
//! the same sweep; `plot` and `compare` read the CSVs back ([`csvread`]).

#![warn(clippy::undocumented_unsafe_blocks)]

pub mod acceptance;
pub mod app;
pub mod backend;
pub mod cli;
pub mod collective;
pub mod compare;
pub mod csvread;
pub mod dtype;
pub mod duration;
pub mod error;
pub mod info;
pub mod launch;
pub mod layout;
pub mod memory;
pub mod mpi_error;
pub mod options;
pub mod pairs;
pub mod plot;
pub mod record;
pub mod report;
pub mod setup;
pub mod size;
pub mod stats;
pub mod step;
pub mod sweep;
pub mod tune;
pub mod verify;
pub mod watchdog;
pub mod world;
