//! coll-bench: measure collective communication on clusters, the way nccl-tests does, with
//! clean CSV, exact checks and exit codes, over MPI (CPU buffers) or NCCL (GPU buffers).
//!
//! # Layers
//!
//! Modules use only modules below them. The layer list, the module map and the checklists for
//! adding a collective, a backend, an output format or a subcommand are in
//! `docs/architecture.md`, the list's one copy: `tests/layers.rs` reads it from there and checks
//! every `crate::` path against it.
//!
//! # Data flow
//!
//! Command line → [`cli`] → [`options::Options`] (broadcast from rank 0, compared on every
//! rank) → [`setup`] makes the backend and checks memory and outputs → [`sweep`] runs the
//! options' plan (collective × type × op × size, both placements) on the [`backend`] and hands
//! each [`record::Point`] to the reports ([`report`]) on rank 0; nothing in the measuring path
//! prints. `check` judges the same points against a spec; `tune` times each algorithm in
//! interleaved rounds of its own (`tune::measure`), each round timing batches through the
//! backend as the sweep does; `step` times a training step's calls (`step::exec`); `doctor`
//! runs the sweep, `pairs`' and tune's measurements at one size and ranks the causes of a
//! shortfall; `plot` and `compare` read the CSVs back ([`csvread`]).

#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod acceptance;
pub mod app;
pub mod backend;
pub mod cli;
pub mod collective;
pub mod compare;
pub mod csvread;
pub mod doctor;
pub mod dtype;
pub mod duration;
pub mod error;
pub mod info;
pub mod launch;
pub mod layout;
pub mod memory;
pub mod mpi_error;
pub mod nic;
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
pub mod sweep_run;
pub mod tune;
pub mod verify;
pub mod watchdog;
pub mod world;
