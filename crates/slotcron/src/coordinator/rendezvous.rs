//! Which live replica owns a job's triggers: rendezvous (highest random weight) hashing
//! of the job's name over the membership (Thaler and Ravishankar, "Using name-based
//! mappings to increase hit rates", IEEE/ACM Transactions on Networking, 1998).
//!
//! Each member gets a weight per job, a hash of the member's instance id and the job's
//! name; the member with the highest weight owns the job. Every replica with the same
//! membership computes the same owner, with no coordination; when a member leaves only
//! the jobs it owned move (each to the member with the next highest weight), and when
//! one joins it takes only the jobs for which it weighs most — about `1 / members` of
//! them.
//!
//! The hash is fixed here (64-bit FNV-1a, then the SplitMix64 finalizer to spread its
//! bits), not the standard library's, so every replica and every release computes the
//! same owners: a fleet upgraded one replica at a time keeps agreeing.

/// The member of `members` (instance ids) that owns `job`'s triggers, as every replica
/// of a fleet reckons it; `None` for an empty membership. Ties (equal weights) go to the
/// smaller instance id, so the answer never depends on the order of `members`.
///
/// A pure function of the job's name and the instance ids, the same for every replica
/// and every release: a test (the test kit's ownership suite) or a tool can tell which
/// replica of a membership owns a job, as the engine decides it.
///
/// ```
/// let members = ["replica-a", "replica-b"];
/// let owner = slotcron::job_owner("report", &members).unwrap();
/// assert!(members.contains(&owner));
/// assert_eq!(slotcron::job_owner("report", &["replica-b", "replica-a"]), Some(owner));
/// assert_eq!(slotcron::job_owner("report", &[] as &[&str]), None);
/// ```
pub fn owner<'a>(job: &str, members: &'a [impl AsRef<str>]) -> Option<&'a str> {
    // Each member's weight computed once; among equal weights the smaller id is the max.
    members.iter().map(AsRef::as_ref).max_by_key(|member| (weight(member, job), std::cmp::Reverse(*member)))
}

/// The weight of `member` for `job`.
fn weight(member: &str, job: &str) -> u64 {
    stable_hash([member.as_bytes(), &[0], job.as_bytes()])
}

/// A hash of the concatenated `parts` that every replica and release computes alike:
/// 64-bit FNV-1a, then the SplitMix64 finalizer.
pub(crate) fn stable_hash<'a>(parts: impl IntoIterator<Item = &'a [u8]>) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in parts.into_iter().flatten() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn members(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("replica-{i}")).collect()
    }

    fn jobs() -> Vec<String> {
        (0..10_000).map(|i| format!("job-{i}")).collect()
    }

    #[test]
    fn the_owner_is_stable_and_ignores_the_order_of_members() {
        let mut fleet = members(5);
        let owners: Vec<&str> = jobs().iter().map(|job| owner(job, &fleet).unwrap()).collect::<Vec<_>>();
        let owners: Vec<String> = owners.into_iter().map(str::to_owned).collect();
        fleet.reverse();
        for (job, expected) in jobs().iter().zip(&owners) {
            assert_eq!(owner(job, &fleet), Some(expected.as_str()), "{job}");
        }
        assert_eq!(owner("job", &Vec::<String>::new()), None);
        assert_eq!(owner("job", &["alone"]), Some("alone"));
        // Pinned: a change of hash would move every fleet's jobs at an upgrade.
        assert_eq!(stable_hash([b"replica-0".as_slice(), &[0], b"report"]), 16_743_551_618_658_713_286);
    }

    #[test]
    fn jobs_spread_evenly_over_the_members() {
        let fleet = members(3);
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for job in &jobs() {
            *counts.entry(owner(job, &fleet).unwrap()).or_default() += 1;
        }
        assert_eq!(counts.len(), 3);
        // 10,000 jobs over 3 members: 3,333 each, within 5 %.
        for (member, count) in counts {
            assert!((3_166..=3_500).contains(&count), "{member} owns {count}");
        }
    }

    #[test]
    fn when_a_member_leaves_only_its_jobs_move() {
        let fleet = members(4);
        let smaller: Vec<String> = fleet.iter().filter(|m| *m != "replica-2").cloned().collect();
        let mut moved = 0;
        for job in &jobs() {
            let before = owner(job, &fleet).unwrap();
            let after = owner(job, &smaller).unwrap();
            if before == "replica-2" {
                moved += 1;
            } else {
                assert_eq!(before, after, "{job} moved though its owner stayed");
            }
        }
        // Its quarter of the jobs, within 5 %, and nothing else.
        assert!((2_375..=2_625).contains(&moved), "{moved}");
    }

    #[test]
    fn a_joining_member_takes_only_the_jobs_it_now_owns() {
        let fleet = members(3);
        let larger = members(4);
        for job in &jobs() {
            let after = owner(job, &larger).unwrap();
            if after != "replica-3" {
                assert_eq!(owner(job, &fleet).unwrap(), after, "{job}");
            }
        }
    }
}
