//! Who made a claim: the random token each claim keeps in its row (`claimant_token`,
//! beside `instance` and `fencing_token`), and what a claimant whose reply was lost
//! concludes from reading the row back.

use std::fmt;

use slotcron::ClaimHolder;

/// A random token that tells this claim from every other, even from the same instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token(i64);

impl Token {
    /// 64 bits from the operating system's random source.
    pub fn random() -> Result<Self, getrandom::Error> {
        Ok(Self(getrandom::u64()? as i64))
    }

    /// The value of the `claimant_token` column (`bigint`).
    pub fn column(self) -> i64 {
        self.0
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0 as u64)
    }
}

/// A claim row as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClaimRow {
    /// `NULL` in rows written by schema version 1.
    pub claimant_token: Option<i64>,
    pub instance: String,
    /// Set in the same transaction as the token; `NULL` in rows of version 1.
    pub fencing_token: Option<i64>,
}

/// Reads the holder of a trigger from its row (`None`: no row: the claim was not written).
/// The row is ours when it has our token and our instance: a replica of an older release
/// taking over an expired row leaves the token column as it was, but writes its own
/// instance. A row without a token is another's.
pub(crate) fn holder(row: Option<&ClaimRow>, ours: Token, instance: &str) -> ClaimHolder {
    let Some(row) = row else { return ClaimHolder::Nobody };
    match (row.claimant_token, row.fencing_token) {
        (Some(token), Some(fencing_token)) if token == ours.0 && row.instance == instance => {
            ClaimHolder::Us { fencing_token: fencing_token as u64 }
        }
        _ => ClaimHolder::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(claimant_token: Option<i64>, instance: &str, fencing_token: Option<i64>) -> ClaimRow {
        ClaimRow { claimant_token, instance: instance.to_owned(), fencing_token }
    }

    #[test]
    fn our_token_and_instance_win_with_the_stored_fencing_token() {
        let ours = Token(-42);
        assert_eq!(
            holder(Some(&row(Some(-42), "host-1", Some(17))), ours, "host-1"),
            ClaimHolder::Us { fencing_token: 17 }
        );
        // Fencing tokens keep their 64 bits.
        assert_eq!(
            holder(Some(&row(Some(-42), "host-1", Some(-1))), ours, "host-1"),
            ClaimHolder::Us { fencing_token: u64::MAX }
        );
    }

    #[test]
    fn another_token_another_instance_or_a_version_1_row_loses_and_no_row_means_nobody() {
        let ours = Token(7);
        assert_eq!(holder(Some(&row(Some(8), "host-1", Some(17))), ours, "host-1"), ClaimHolder::Other);
        // Our token under another instance: an older release took the expired row over.
        assert_eq!(holder(Some(&row(Some(7), "host-2", Some(17))), ours, "host-1"), ClaimHolder::Other);
        assert_eq!(holder(Some(&row(None, "host-1", None)), ours, "host-1"), ClaimHolder::Other);
        assert_eq!(holder(Some(&row(Some(7), "host-1", None)), ours, "host-1"), ClaimHolder::Other);
        assert_eq!(holder(None, ours, "host-1"), ClaimHolder::Nobody);
    }

    #[test]
    fn random_tokens_differ() {
        let (a, b) = (Token::random().unwrap(), Token::random().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.to_string().len(), 16);
    }
}
