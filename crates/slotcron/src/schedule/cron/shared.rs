//! Compiled cron expressions, shared: jobs whose expressions compile to the same
//! [`Spec`] hold one copy of it (about 220 bytes, most of it the day table). A million
//! jobs of a few distinct expressions (`S * * * * *` for each second of the minute, say)
//! keep a few specs rather than a million; jobs of distinct expressions pay a weak
//! reference each in the index.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, Weak};

use super::spec::Spec;

/// The specs in use, by their hash; entries whose spec was dropped are swept out when
/// the index has doubled since the last sweep.
static SPECS: Mutex<Index> = Mutex::new(Index { by_hash: None, sweep_at: MIN_SWEEP });

/// The index's size below which it is never swept.
const MIN_SWEEP: usize = 1024;

struct Index {
    by_hash: Option<HashMap<u64, Vec<Weak<Spec>>, foldhash::fast::FixedState>>,
    sweep_at: usize,
}

/// The shared copy of `spec`: one already in use, if any, else `spec`, now shared.
pub(super) fn shared(spec: Spec) -> Arc<Spec> {
    let hash = foldhash::fast::FixedState::with_seed(0).hash_one(&spec);
    let mut index = SPECS.lock().unwrap_or_else(|p| p.into_inner());
    let Index { by_hash, sweep_at } = &mut *index;
    let by_hash = by_hash.get_or_insert_with(HashMap::default);
    let same = by_hash.entry(hash).or_default();
    if let Some(found) = same.iter().filter_map(Weak::upgrade).find(|found| **found == spec) {
        return found;
    }
    let spec = Arc::new(spec);
    same.retain(|weak| weak.strong_count() > 0);
    same.push(Arc::downgrade(&spec));
    if by_hash.len() >= *sweep_at {
        by_hash.retain(|_, same| {
            same.retain(|weak| weak.strong_count() > 0);
            !same.is_empty()
        });
        *sweep_at = (2 * by_hash.len()).max(MIN_SWEEP);
    }
    spec
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::cron::parse::{Parsed, parse};

    fn spec(expression: &str) -> Spec {
        match parse(expression).unwrap() {
            Parsed::Fields(spec) => spec,
            Parsed::Every(_) => unreachable!("{expression} is not @every"),
        }
    }

    #[test]
    fn the_same_spec_is_held_once_and_a_different_one_apart() {
        let a = shared(spec("7 * * * * *"));
        let b = shared(spec("7 * * * * *"));
        let c = shared(spec("8 * * * * *"));
        assert!(Arc::ptr_eq(&a, &b), "one copy of one spec");
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(*c, spec("8 * * * * *"));
    }

    #[test]
    fn a_spec_no_job_holds_any_more_is_freed() {
        let held = shared(spec("59 58 23 31 12 *"));
        let weak = Arc::downgrade(&held);
        drop(held);
        assert_eq!(weak.strong_count(), 0, "the index holds no strong reference");
        let again = shared(spec("59 58 23 31 12 *"));
        assert_eq!(*again, spec("59 58 23 31 12 *"));
    }
}
