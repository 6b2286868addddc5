//! The MPI world: initialisation, the node split, hosts, agreement on success or failure across
//! ranks, and the reductions of timings. Everything here is collective: every rank calls the same
//! functions in the same order.

use crate::error::{Error, Result};
use crate::launch::View;
use crate::options::Aggregation;
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once MPI is initialised, so the panic hook knows whether it can abort the job.
pub static MPI_UP: AtomicBool = AtomicBool::new(false);

const NAME_LEN: usize = 256;

/// This process's place in the job.
pub struct World {
    // Field order is drop order: communicators are freed before the universe finalises MPI.
    /// The node split (`split_shared`); only its rank and size are used, but the communicator
    /// must live until it is freed, before MPI_Finalize.
    #[allow(dead_code)]
    node: SimpleCommunicator,
    world: SimpleCommunicator,
    universe: Universe,
    pub rank: usize,
    pub size: usize,
    pub local_rank: usize,
    pub local_size: usize,
    /// Host name of every rank, indexed by rank.
    pub hosts: Vec<String>,
    pub library_version: String,
}

impl World {
    /// Initialise MPI and learn the world: ranks, node split, hosts.
    pub fn init() -> Result<World> {
        let universe = mpi::initialize()
            .ok_or_else(|| Error::setup("MPI could not be initialised (was it initialised already?)"))?;
        MPI_UP.store(true, Ordering::SeqCst);
        let world = universe.world();
        let rank = world.rank() as usize;
        let size = world.size() as usize;
        let node = world.split_shared(rank as i32);
        let local_rank = node.rank() as usize;
        let local_size = node.size() as usize;

        let name = mpi::environment::processor_name().unwrap_or_else(|_| "unknown".into());
        let mut mine = [0u8; NAME_LEN];
        let n = name.len().min(NAME_LEN - 1);
        mine[..n].copy_from_slice(&name.as_bytes()[..n]);
        let mut all = vec![0u8; NAME_LEN * size];
        world.all_gather_into(&mine[..], &mut all[..]);
        let hosts = all
            .chunks(NAME_LEN)
            .map(|c| {
                let end = c.iter().position(|b| *b == 0).unwrap_or(c.len());
                String::from_utf8_lossy(&c[..end]).into_owned()
            })
            .collect();
        let library_version = mpi::environment::library_version()
            .map(|v| {
                v.trim_matches(|c: char| c == '\0' || c.is_whitespace()).lines().next().unwrap_or("").trim().to_string()
            })
            .unwrap_or_else(|_| "unknown MPI".into());
        Ok(World { node, world, universe, rank, size, local_rank, local_size, hosts, library_version })
    }

    pub fn comm(&self) -> &SimpleCommunicator {
        &self.world
    }

    pub fn universe(&self) -> &Universe {
        &self.universe
    }

    pub fn host(&self) -> &str {
        &self.hosts[self.rank]
    }

    /// MPI's view of this process, for the launcher cross-check.
    pub fn view(&self) -> View {
        View {
            source: "MPI".into(),
            rank: self.rank,
            size: Some(self.size),
            local_rank: Some(self.local_rank),
            local_size: Some(self.local_size),
            vars: vec![],
        }
    }

    /// Distinct hosts in order of their first rank, each with its ranks.
    pub fn ranks_by_host(&self) -> Vec<(String, Vec<usize>)> {
        let mut out: Vec<(String, Vec<usize>)> = vec![];
        for (r, h) in self.hosts.iter().enumerate() {
            match out.iter_mut().find(|(name, _)| name == h) {
                Some((_, ranks)) => ranks.push(r),
                None => out.push((h.clone(), vec![r])),
            }
        }
        out
    }

    /// Agree across ranks: if any rank has an error, every rank returns the error of the lowest
    /// such rank (so rank 0 can print it once). Collective.
    pub fn agree<T>(&self, local: Result<T>) -> Result<T> {
        let mine = if local.is_err() { self.rank as i32 } else { self.size as i32 };
        let mut first = 0i32;
        self.world.all_reduce_into(&mine, &mut first, SystemOperation::min());
        if first as usize == self.size {
            return local;
        }
        let (kind, text) = match &local {
            Err(Error::Usage(m)) => (0u8, m.clone()),
            Err(Error::Setup(m)) => (1u8, m.clone()),
            Ok(_) => (0, String::new()),
        };
        let mut payload = vec![kind];
        payload.extend_from_slice(text.as_bytes());
        let payload = self.broadcast_bytes(first as usize, payload);
        let text = String::from_utf8_lossy(&payload[1..]).into_owned();
        Err(if payload[0] == 0 { Error::Usage(text) } else { Error::Setup(text) })
    }

    /// Broadcast a byte string of any length from `root`. Collective.
    pub fn broadcast_bytes(&self, root: usize, mut bytes: Vec<u8>) -> Vec<u8> {
        let root_proc = self.world.process_at_rank(root as i32);
        let mut len = bytes.len() as u64;
        root_proc.broadcast_into(&mut len);
        bytes.resize(len as usize, 0);
        if len > 0 {
            root_proc.broadcast_into(&mut bytes[..]);
        }
        bytes
    }

    pub fn max_f64(&self, x: f64) -> f64 {
        let mut y = 0.0;
        self.world.all_reduce_into(&x, &mut y, SystemOperation::max());
        y
    }

    pub fn max_u64(&self, x: u64) -> u64 {
        let mut y = 0u64;
        self.world.all_reduce_into(&x, &mut y, SystemOperation::max());
        y
    }

    pub fn sum_u64(&self, x: u64) -> u64 {
        let mut y = 0u64;
        self.world.all_reduce_into(&x, &mut y, SystemOperation::sum());
        y
    }

    /// Every rank's value, on every rank.
    pub fn all_gather<T: Equivalence + Default + Clone>(&self, x: T) -> Vec<T> {
        let mut all = vec![T::default(); self.size];
        self.world.all_gather_into(&x, &mut all[..]);
        all
    }

    /// Every rank's byte string (of any length), on every rank, indexed by rank. Collective.
    pub fn all_gather_bytes(&self, bytes: &[u8]) -> Vec<Vec<u8>> {
        use mpi::datatype::PartitionMut;
        let counts: Vec<i32> = self.all_gather(bytes.len() as i32);
        let displs: Vec<i32> = counts.iter().scan(0, |at, c| Some(std::mem::replace(at, *at + c))).collect();
        let total = counts.iter().map(|c| *c as usize).sum();
        let mut all = vec![0u8; total];
        {
            let mut parts = PartitionMut::new(&mut all[..], counts.clone(), &displs[..]);
            self.world.all_gather_varcount_into(bytes, &mut parts);
        }
        counts.iter().zip(&displs).map(|(c, d)| all[*d as usize..(*d + *c) as usize].to_vec()).collect()
    }

    /// Combine per-iteration samples across ranks element by element with `agg`; the result is
    /// valid on rank 0 only (other ranks get an empty vector). Collective.
    pub fn combine_samples(&self, agg: Aggregation, samples: &[f64]) -> Vec<f64> {
        let root = self.world.process_at_rank(0);
        if agg == Aggregation::Rank0 {
            return if self.rank == 0 { samples.to_vec() } else { vec![] };
        }
        let op = match agg {
            Aggregation::Mean => SystemOperation::sum(),
            Aggregation::Min => SystemOperation::min(),
            _ => SystemOperation::max(),
        };
        if self.rank == 0 {
            let mut out = vec![0.0; samples.len()];
            root.reduce_into_root(samples, &mut out[..], op);
            if agg == Aggregation::Mean {
                out.iter_mut().for_each(|x| *x /= self.size as f64);
            }
            out
        } else {
            root.reduce_into(samples, op);
            vec![]
        }
    }

    pub fn barrier(&self) {
        self.world.barrier();
    }

    /// Stop every rank of the job now. For errors that cannot be agreed on.
    pub fn abort(&self, code: i32) -> ! {
        self.world.abort(code)
    }
}

/// Ranks as ranges: `0-3,8,10-11`.
pub fn rank_list(ranks: &[usize]) -> String {
    let mut parts = vec![];
    let mut i = 0;
    while i < ranks.len() {
        let start = ranks[i];
        let mut end = start;
        while i + 1 < ranks.len() && ranks[i + 1] == end + 1 {
            i += 1;
            end = ranks[i];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        i += 1;
    }
    parts.join(",")
}

/// Combine one value per rank with `agg`.
pub fn aggregate(agg: Aggregation, per_rank: &[f64]) -> f64 {
    match agg {
        Aggregation::Rank0 => per_rank[0],
        Aggregation::Mean => per_rank.iter().sum::<f64>() / per_rank.len() as f64,
        Aggregation::Min => per_rank.iter().copied().fold(f64::INFINITY, f64::min),
        Aggregation::Max => per_rank.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_lists_compress() {
        assert_eq!(rank_list(&[0, 1, 2, 3, 8, 10, 11]), "0-3,8,10-11");
        assert_eq!(rank_list(&[5]), "5");
        assert_eq!(rank_list(&[]), "");
    }

    #[test]
    fn aggregation_policies() {
        let v = [4.0, 1.0, 7.0];
        assert_eq!(aggregate(Aggregation::Rank0, &v), 4.0);
        assert_eq!(aggregate(Aggregation::Mean, &v), 4.0);
        assert_eq!(aggregate(Aggregation::Min, &v), 1.0);
        assert_eq!(aggregate(Aggregation::Max, &v), 7.0);
    }
}
