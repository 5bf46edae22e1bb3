//! Names that a newer release wrote and this release does not know.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Mutex;

/// A name read from a ledger or store that this release does not know — an outcome or a
/// cause a newer release wrote, during a rolling upgrade. It is kept and shown as read,
/// rather than failing the read.
///
/// Names are interned, so the type stays `Copy`: at most [`UnknownName::MAX_NAMES`]
/// distinct names of at most [`UnknownName::MAX_LEN`] bytes each are kept for the life of
/// the process; any other reads as [`UnknownName::OVERFLOW`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UnknownName(&'static str);

static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

impl UnknownName {
    /// The most distinct unknown names a process keeps.
    pub const MAX_NAMES: usize = 256;
    /// The longest unknown name kept, in bytes.
    pub const MAX_LEN: usize = 64;
    /// What a name past those limits reads as.
    pub const OVERFLOW: &'static str = "unknown";

    /// The name `name`, interned.
    pub fn new(name: &str) -> Self {
        let mut names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(known) = names.get(name) {
            return Self(known);
        }
        if name.len() > Self::MAX_LEN || names.len() >= Self::MAX_NAMES {
            return Self(Self::OVERFLOW);
        }
        let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.insert(leaked);
        Self(leaked)
    }

    /// The name as read.
    pub fn as_str(self) -> &'static str {
        self.0
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_as_read_and_interned() {
        let a = UnknownName::new("skipped-paused");
        assert_eq!(a.as_str(), "skipped-paused");
        assert_eq!(a, UnknownName::new("skipped-paused"));
        assert!(std::ptr::eq(a.as_str(), UnknownName::new("skipped-paused").as_str()));
        assert_eq!(UnknownName::new(&"x".repeat(65)).as_str(), UnknownName::OVERFLOW);
    }
}
