//! Open MPI's dynamic rules file (`coll_tuned_dynamic_rules_filename`), read and applied as
//! Open MPI 4.1 reads and applies it, so a point run under such a file names the algorithm the
//! file chose (`algorithm_source` `rules file`). `tune --write-rules` writes the same format and
//! checks what it reads back with [`parse`] too (`src/tune/rules.rs`).
//!
//! The format (`ompi/mca/coll/tuned/coll_tuned_dynamic_file.c`, classic form, unchanged from
//! v4.1.0 to v4.1.8): whitespace-separated integers, `#` to the end of a line a comment; the
//! number of collectives; per collective its id (`COLLTYPE_T`), the number of communicator
//! sizes, and per communicator size the size, the number of message-size rules and per rule
//! `message_size algorithm fan-in/out segment_size`, the first from 0.
//!
//! The choice (`coll_tuned_dynamic_rules.c`): of a collective's communicator sizes, the last
//! whose size is at most the communicator's (the first one if none is); of its message-size
//! rules, the last whose size is at most the call's (the first if none is). Algorithm 0 leaves
//! the choice to the forced algorithm and then the fixed rules (`coll_tuned_decision_dynamic.c`).

use crate::collective::Kind;

/// Open MPI's id of `kind` (`COLLTYPE_T` in `coll_base_functions.h`); none for point-to-point.
pub fn collective_id(kind: Kind) -> Option<u32> {
    Some(match kind {
        Kind::AllGather => 0,
        Kind::AllReduce => 2,
        Kind::AllToAll => 3,
        Kind::Barrier => 6,
        Kind::Broadcast => 7,
        Kind::Gather => 9,
        Kind::Reduce => 11,
        Kind::ReduceScatter => 13,
        Kind::Scatter => 15,
        Kind::AllToAllV | Kind::SendRecv | Kind::PingPong => return None,
    })
}

/// The message size a rule is matched against, from the bytes of one call's count argument
/// (type size × count, what the fixed rules take) on `n` ranks: the whole buffer where the
/// count is per rank (`coll_tuned_decision_dynamic.c`: all-gather, all-to-all, gather and
/// scatter multiply by the communicator size, reduce-scatter-block too), 0 for the barrier.
pub fn message_bytes(kind: Kind, n: u64, call_bytes: u64) -> u64 {
    match kind {
        Kind::AllGather | Kind::AllToAll | Kind::Gather | Kind::Scatter | Kind::ReduceScatter => call_bytes * n,
        Kind::Barrier => 0,
        _ => call_bytes,
    }
}

/// One message-size rule: from `from_bytes` on, `algorithm` (0: the next way of deciding).
#[derive(Clone, Debug, PartialEq)]
pub struct MessageRule {
    pub from_bytes: u64,
    pub algorithm: i32,
}

/// One collective's rules for the communicators from `comm_size` ranks on.
#[derive(Clone, Debug, PartialEq)]
pub struct CommRules {
    pub comm_size: u64,
    pub rules: Vec<MessageRule>,
}

/// One collective's section of the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Collective {
    /// Open MPI's `COLLTYPE_T` id.
    pub id: u32,
    pub comm_sizes: Vec<CommRules>,
}

/// Open MPI 4.1's number of collective ids (`COLLCOUNT` in `coll_base_functions.h`): a file
/// naming more collectives, or an id from this on, is refused by Open MPI's reader.
pub const COLLECTIVE_IDS: i64 = 22;

/// The integers of `text` in order (comments dropped), or the first word that is not one.
fn numbers(text: &str) -> Result<Vec<i64>, String> {
    let mut out = vec![];
    for (i, line) in text.lines().enumerate() {
        let body = line.split('#').next().unwrap_or("");
        for w in body.split_whitespace() {
            // Open MPI reads with `%li` (so `010` is octal and `0x10` hex) and skips what is not
            // a number one character at a time: only plain decimal words read the same here.
            let digits = w.strip_prefix(['-', '+']).unwrap_or(w);
            let plain = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            let v = w.parse().ok().filter(|_| plain);
            out.push(v.ok_or_else(|| format!("line {}: '{w}' is not a plain whole number", i + 1))?);
        }
    }
    Ok(out)
}

/// Read a rules file's text as Open MPI's reader does (the same refusals: a missing or
/// negative number, too many collectives, an id out of range, a first message size other than
/// 0, numbers left over are ignored by Open MPI and refused here only by [`parse_strict`]).
pub fn parse(text: &str) -> Result<Vec<Collective>, String> {
    read(text).map(|(rules, _)| rules)
}

/// [`parse`]'s rules and how many numbers follow the last rule.
fn read(text: &str) -> Result<(Vec<Collective>, usize), String> {
    let numbers = numbers(text)?;
    let mut it = numbers.iter().copied();
    let mut next = |what: &str| it.next().filter(|v| *v >= 0).ok_or_else(|| format!("missing or negative {what}"));
    let count = next("number of collectives")?;
    if count > COLLECTIVE_IDS {
        return Err(format!("{count} collectives: Open MPI 4.1 has {COLLECTIVE_IDS}"));
    }
    let mut out = vec![];
    for _ in 0..count {
        let id = next("collective id")?;
        if id >= COLLECTIVE_IDS {
            return Err(format!("collective id {id} is not one of Open MPI 4.1's (0 to {})", COLLECTIVE_IDS - 1));
        }
        let mut comm_sizes = vec![];
        for _ in 0..next("number of communicator sizes")? {
            let comm_size = next("communicator size")? as u64;
            let mut rules = vec![];
            for r in 0..next("number of message-size rules")? {
                let from_bytes = next("message size")? as u64;
                let algorithm = next("algorithm")? as i32;
                next("fan-in/out")?;
                next("segment size")?;
                if r == 0 && from_bytes != 0 {
                    return Err(format!(
                        "collective {id}: the first message-size rule must start at 0, not {from_bytes}"
                    ));
                }
                rules.push(MessageRule { from_bytes, algorithm });
            }
            comm_sizes.push(CommRules { comm_size, rules });
        }
        // Open MPI keeps one section per id: a later one replaces the earlier.
        out.retain(|c: &Collective| c.id != id as u32);
        out.push(Collective { id: id as u32, comm_sizes });
    }
    Ok((out, it.count()))
}

/// [`parse`], refusing too what Open MPI lets through but a file of ours never holds: numbers
/// left over after the last rule, message sizes that do not increase.
pub fn parse_strict(text: &str) -> Result<Vec<Collective>, String> {
    let (out, left_over) = read(text)?;
    if left_over > 0 {
        return Err("numbers left over after the last rule".into());
    }
    for c in &out {
        for s in &c.comm_sizes {
            if let Some(w) = s.rules.windows(2).find(|w| w[1].from_bytes <= w[0].from_bytes) {
                return Err(format!(
                    "collective {}: message sizes must increase ({} after {})",
                    c.id, w[1].from_bytes, w[0].from_bytes
                ));
            }
        }
    }
    Ok(out)
}

/// The algorithm the file gives collective `id` on `n` ranks for a call of `message_bytes`
/// (Open MPI's message size for that collective: see `coll_tuned_decision_dynamic.c`), or 0
/// where it gives none (no section, no communicator size, no rule, or a rule of 0).
pub fn choose(rules: &[Collective], id: u32, n: u64, message_bytes: u64) -> i32 {
    let Some(c) = rules.iter().find(|c| c.id == id) else { return 0 };
    // The first entry stands unless a later one fits: Open MPI starts from the first.
    let Some(mut comm) = c.comm_sizes.first() else { return 0 };
    for s in &c.comm_sizes {
        if s.comm_size > n {
            break;
        }
        comm = s;
    }
    let Some(mut rule) = comm.rules.first() else { return 0 };
    for r in &comm.rules {
        if r.from_bytes > message_bytes {
            break;
        }
        rule = r;
    }
    rule.algorithm
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# a comment\n2 # collectives\n2 # allreduce\n2\n  4 2  0 1 0 0  8192 3 0 0\n  8 1  0 4 0 0\n\
                        0 # allgather\n1 1 1 0 0 0 0\n";

    #[test]
    fn a_file_reads_as_open_mpi_reads_it() {
        let r = parse(FILE).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].id, 2);
        assert_eq!(
            r[0].comm_sizes[0],
            CommRules {
                comm_size: 4,
                rules: vec![
                    MessageRule { from_bytes: 0, algorithm: 1 },
                    MessageRule { from_bytes: 8192, algorithm: 3 }
                ],
            }
        );
        assert_eq!(
            r[1],
            Collective {
                id: 0,
                comm_sizes: vec![CommRules { comm_size: 1, rules: vec![MessageRule { from_bytes: 0, algorithm: 0 }] }]
            }
        );
        for (bad, why) in [
            ("1 2 1 4 1 8 1 0 0", "must start at 0"),
            ("1 2 1 4 1 0 1 0", "missing or negative segment size"),
            ("1 22 0", "not one of Open MPI 4.1's"),
            ("23", "Open MPI 4.1 has 22"),
            ("1 2 -1", "negative"),
            ("1 2 x", "'x' is not a plain whole number"),
            ("1 2 1 4 1 0 010 0 0", "'010' is not a plain whole number"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        // Open MPI ignores what follows the last rule; tune's own reading does not.
        assert!(parse("1 2 1 4 1 0 1 0 0 7").is_ok());
        assert!(parse_strict("1 2 1 4 1 0 1 0 0 7").unwrap_err().contains("left over"));
        assert!(parse_strict("1 2 1 4 2 0 1 0 0 0 3 0 0").unwrap_err().contains("must increase"));
        assert!(parse_strict(FILE).is_ok());
    }

    #[test]
    fn the_choice_takes_the_last_entry_that_fits_and_the_first_when_none_does() {
        let r = parse(FILE).unwrap();
        assert_eq!(choose(&r, 2, 4, 0), 1);
        assert_eq!(choose(&r, 2, 4, 8191), 1);
        assert_eq!(choose(&r, 2, 4, 8192), 3);
        assert_eq!(choose(&r, 2, 7, 1 << 30), 3);
        assert_eq!(choose(&r, 2, 8, 8192), 4);
        assert_eq!(choose(&r, 2, 4096, 8), 4);
        // Fewer ranks than the first entry's size: Open MPI still starts from the first.
        assert_eq!(choose(&r, 2, 2, 8192), 3);
        // A rule of 0, or no section: the next way of deciding.
        assert_eq!(choose(&r, 0, 4, 8), 0);
        assert_eq!(choose(&r, 7, 4, 8), 0);
    }
}
