//! A collective's candidates: the library's default, the algorithms its tool interface lists
//! (through the variable that forces them), and the library's other call and coll-bench's own
//! implementations where they fit.

use super::algorithms::{self, Library};
use super::choose::Source;
use crate::backend::mpi::Implementation;
use crate::backend::mpit::{Cvar, Tool};
use crate::collective::Kind;

pub fn truthy(v: &str) -> bool {
    matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "y" | "t" | "enabled")
}

/// One candidate of a collective.
pub struct Candidate {
    pub name: String,
    pub source: Source,
}

impl Candidate {
    pub fn id(&self) -> String {
        match &self.source {
            Source::Default => "0".into(),
            Source::Library(v) => v.to_string(),
            Source::Own(_) => String::new(),
        }
    }
}

/// A collective's variable and candidates, or why the library's algorithms cannot be forced.
pub struct Discovered {
    pub var: Option<Cvar>,
    pub candidates: Vec<Candidate>,
    pub note: Option<String>,
}

pub fn discover(tool: &Tool, library: Library, kind: Kind, nranks: usize, all: &[Cvar]) -> Discovered {
    let mut candidates = vec![Candidate { name: "default".into(), source: Source::Default }];
    let mut note = None;
    let mut var = None;
    match library.variable(kind) {
        None => note = Some("this MPI library reports no algorithm variable coll-bench knows".to_string()),
        Some(name) => match all.iter().find(|c| c.name == name) {
            None => note = Some(format!("the library reports no {name}")),
            Some(c) => {
                let items = match (&c.items, library) {
                    (Some(items), _) => items.clone(),
                    (None, Library::Mpich) => algorithms::parse_mpich_description(&c.description),
                    (None, _) => vec![],
                };
                let dynamic =
                    std::env::var("OMPI_MCA_coll_tuned_use_dynamic_rules").map(|v| truthy(&v)).unwrap_or(false);
                if library == Library::OpenMpi && !dynamic {
                    note = Some(format!(
                        "{name} takes effect only with coll_tuned_use_dynamic_rules on, which was set off at launch and is read-only once MPI runs"
                    ));
                } else if !c.is_int || items.is_empty() {
                    note = Some(format!("{name} lists no algorithms tune can set"));
                } else if let Err(e) = tool.read(c) {
                    note = Some(e.to_string());
                } else {
                    candidates.extend(
                        items
                            .iter()
                            .filter(|(v, _)| *v != 0)
                            .map(|(v, n)| Candidate { name: n.clone(), source: Source::Library(*v) }),
                    );
                    var = Some(c.clone());
                }
            }
        },
    }
    for imp in [Implementation::Ring, Implementation::RecursiveDoubling, Implementation::Counts] {
        if imp.provides(kind) && imp.unfit(nranks).is_none() {
            let name = match Implementation::counts_functions(kind) {
                Some((_, other)) if !imp.own() => format!("{other}(call)"),
                _ => format!("{}(coll-bench)", imp.name()),
            };
            candidates.push(Candidate { name, source: Source::Own(imp) });
        }
    }
    Discovered { var, candidates, note }
}
