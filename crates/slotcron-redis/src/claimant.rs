//! The value a won claim leaves in its trigger key, `{fencing token}/{token} {instance}`
//! (`{fencing token}/^{token} {instance}` for a claim made ahead of its trigger; a start
//! mark leaves it as it is), and what a claimant whose reply was lost concludes from
//! reading it back. An older release wrote a space after the fencing token and marked a
//! start in place, `{fencing token} !{token} {instance}`; such a value still reads.

use std::fmt;

use slotcron::ClaimHolder;

/// A random token that tells this claim from every other, even from the same instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token(String);

impl Token {
    /// 64 bits from the operating system's random source, in hex.
    #[cfg(test)]
    pub fn random() -> Result<Self, getrandom::Error> {
        Ok(Self::several(1)?.remove(0))
    }

    /// `n` tokens that differ from each other and, but for a chance of about `n` in
    /// 2^64, from every token drawn elsewhere: 64 bits from the operating system's random
    /// source for the first, each next one more (wrapping), in hex. One draw for a whole
    /// batch of claims rather than a system call per claim.
    pub fn several(n: usize) -> Result<Vec<Self>, getrandom::Error> {
        let mut bytes = [0u8; 8];
        getrandom::getrandom(&mut bytes)?;
        let first = u64::from_le_bytes(bytes);
        Ok((0..n as u64).map(|i| Self(format!("{:016x}", first.wrapping_add(i)))).collect())
    }

    /// The script's claimant argument: `{token} {instance}`, or `^{token} {instance}`
    /// for a claim made ahead of its trigger (which a void of the owner's start may
    /// drop).
    pub fn claimant(&self, instance: &str, ahead: bool) -> String {
        let mark = if ahead { "^" } else { "" };
        format!("{mark}{} {instance}", self.0)
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Reads the holder of a trigger from its key's value (`None`: no key: the script did not
/// run). A value slotcron did not write is another's. A claim an older release marked
/// (`!`) is still its claimant's.
pub(crate) fn holder(value: Option<&str>, ours: &Token) -> ClaimHolder {
    let Some(value) = value else { return ClaimHolder::Nobody };
    let (fencing, rest) = value.split_once(['/', ' ']).unwrap_or((value, ""));
    let token = rest.split(' ').next().filter(|_| !rest.is_empty());
    match (fencing.parse().ok(), token) {
        (Some(fencing_token), Some(token)) if bare(token) == ours.0 => ClaimHolder::Us { fencing_token },
        _ => ClaimHolder::Other,
    }
}

/// A stored token without an older release's start mark (`!`) and its claim-ahead mark
/// (`^`), in that order.
fn bare(token: &str) -> &str {
    let token = token.strip_prefix('!').unwrap_or(token);
    token.strip_prefix('^').unwrap_or(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(s: &str) -> Token {
        Token(s.to_owned())
    }

    #[test]
    fn our_token_wins_with_the_stored_fencing_token() {
        let ours = token("00000000000000aa");
        let value = format!("17/{}", ours.claimant("host-1 pid 42", false));
        assert_eq!(holder(Some(&value), &ours), ClaimHolder::Us { fencing_token: 17 });
    }

    #[test]
    fn our_claim_made_ahead_is_ours_too() {
        let ours = token("00000000000000aa");
        let value = format!("17/{}", ours.claimant("host-1", true));
        assert_eq!(value, "17/^00000000000000aa host-1");
        assert_eq!(holder(Some(&value), &ours), ClaimHolder::Us { fencing_token: 17 });
        assert_eq!(holder(Some("17/^00000000000000bb host-1"), &ours), ClaimHolder::Other);
    }

    #[test]
    fn our_claim_as_an_older_release_wrote_and_marked_it_is_still_ours() {
        let ours = token("00000000000000aa");
        assert_eq!(holder(Some("17 00000000000000aa host-1"), &ours), ClaimHolder::Us { fencing_token: 17 });
        assert_eq!(holder(Some("17 !00000000000000aa host-1"), &ours), ClaimHolder::Us { fencing_token: 17 });
        assert_eq!(
            holder(Some("17 !^00000000000000aa host-1"), &ours),
            ClaimHolder::Us { fencing_token: 17 }
        );
        assert_eq!(holder(Some("17 !00000000000000bb host-1"), &ours), ClaimHolder::Other);
        assert_eq!(holder(Some("17 ^!00000000000000aa host-1"), &ours), ClaimHolder::Other, "! comes first");
    }

    #[test]
    fn another_token_or_a_foreign_value_loses_and_no_key_means_nobody() {
        let ours = token("00000000000000aa");
        assert_eq!(holder(Some("17 00000000000000bb host-1"), &ours), ClaimHolder::Other);
        // Same instance, another claim (a restarted process with the same id).
        assert_eq!(
            holder(Some("18 00000000000000bb host-1"), &token("00000000000000cc")),
            ClaimHolder::Other
        );
        assert_eq!(holder(Some("not a claim"), &ours), ClaimHolder::Other);
        assert_eq!(holder(Some("x 00000000000000aa host-1"), &ours), ClaimHolder::Other);
        assert_eq!(holder(Some("17/"), &ours), ClaimHolder::Other);
        assert_eq!(holder(Some("17"), &ours), ClaimHolder::Other);
        assert_eq!(holder(None, &ours), ClaimHolder::Nobody);
    }

    #[test]
    fn random_tokens_differ() {
        let (a, b) = (Token::random().unwrap(), Token::random().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.to_string().len(), 16);
        let batch = Token::several(1000).unwrap();
        let distinct: std::collections::BTreeSet<String> = batch.iter().map(Token::to_string).collect();
        assert_eq!(distinct.len(), 1000, "the tokens of one batch all differ");
        assert!(batch.iter().all(|t| t.to_string().len() == 16));
    }
}
