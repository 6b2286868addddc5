//! Which algorithms a library offers for a collective: the library families, their algorithm
//! variables and MPICH's description parser live with the backend that reads them
//! ([`crate::backend::algorithm`]), which also names the algorithm each sweep point ran.

pub use crate::backend::algorithm::{parse_mpich_description, Library, TUNABLE};
