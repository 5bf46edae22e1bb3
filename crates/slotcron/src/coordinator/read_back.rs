//! A claim whose reply was lost is read back, never guessed: described on
//! [`Coordinator`](super::Coordinator), "Lost replies".

use std::fmt;
use std::future::Future;

use super::{ClaimOutcome, CoordinatorError, CoordinatorErrorKind};

/// Who holds a trigger, as a claimant whose reply was lost reads it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimHolder {
    /// This claim (the backend stores its token): won.
    Us {
        /// The fencing token stored with the claim.
        fencing_token: u64,
    },
    /// Another claim, or a value slotcron did not write: lost.
    Other,
    /// Nobody: the claim was not made.
    Nobody,
}

/// Why one attempt at a claim has no answer. `E` is the backend's account of the failure,
/// shown in the claim's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimAttemptError<E> {
    /// The claim was not made: no connection, a failure before the request was sent, or
    /// an error reply from the backend (which made no claim). Nothing to read back.
    NotMade(E),
    /// The backend refused this replica's credentials or permissions: the claim was not
    /// made, and none will be until the configuration is fixed. The claim's error is of
    /// kind [`Unauthorized`](super::CoordinatorErrorKind::Unauthorized).
    Refused(E),
    /// The request was sent but its reply was lost: the claim may have been made.
    ReplyLost(E),
}

impl<E: fmt::Display> ClaimAttemptError<E> {
    /// The kind of the claim's error this failure makes, were it final: `unavailable`
    /// (not made), `unauthorized` (refused) or `outcome-unknown` (reply lost).
    pub fn kind(&self) -> CoordinatorErrorKind {
        match self {
            Self::NotMade(_) => CoordinatorErrorKind::Unavailable,
            Self::Refused(_) => CoordinatorErrorKind::Unauthorized,
            Self::ReplyLost(_) => CoordinatorErrorKind::OutcomeUnknown,
        }
    }

    /// The claim's error: `{claim} failed: {cause}`, of this failure's [`kind`](Self::kind).
    pub fn to_error(&self, claim: &str) -> CoordinatorError {
        let (Self::NotMade(e) | Self::Refused(e) | Self::ReplyLost(e)) = self;
        CoordinatorError::new(self.kind(), format!("{claim} failed: {e}"))
    }
}

/// Makes a claim with `attempt` and, when its reply is lost, reads the trigger's holder
/// with `read_holder` and decides as [`Coordinator`](super::Coordinator)'s "Lost replies" describes: at most two attempts
/// and two read-backs.
///
/// `attempt` makes the claim once, always with the same token; `read_holder` reads back
/// who holds the trigger. `claim` names the claim in errors and logs, in the backend's
/// words (`claim of slotcron:job:2024-05-17T00:00:00Z`, or with the server's URL without
/// its password first); `token` is this claim's random token, logged with a lost reply.
///
/// # Errors
/// The claim's outcome is unknown or it failed, each naming `claim` and the backend's
/// causes: an attempt that made no claim (`{claim} failed: {cause}`), a lost reply whose
/// read-back failed (`{claim}: outcome unknown after "{cause}", and reading it back
/// failed: {cause}`), or two lost replies each followed by nobody holding the trigger.
pub async fn claim_with_read_back<E, A, AF, R, RF, T>(
    claim: &str,
    token: &T,
    mut attempt: A,
    mut read_holder: R,
) -> Result<ClaimOutcome, CoordinatorError>
where
    E: fmt::Display,
    A: FnMut() -> AF,
    AF: Future<Output = Result<ClaimOutcome, ClaimAttemptError<E>>>,
    R: FnMut() -> RF,
    RF: Future<Output = Result<ClaimHolder, E>>,
    T: fmt::Display + ?Sized,
{
    let mut tried_again = false;
    loop {
        let lost = match attempt().await {
            Ok(outcome) => return Ok(outcome),
            Err(ClaimAttemptError::ReplyLost(e)) => e,
            Err(not_made) => return Err(not_made.to_error(claim)),
        };
        let holder = read_holder().await.map_err(|e| {
            CoordinatorError::outcome_unknown(format!(
                "{claim}: outcome unknown after \"{lost}\", and reading it back failed: {e}"
            ))
        })?;
        tracing::warn!(claim, %token, ?holder, "claim reply lost ({lost}); read the claim back");
        match holder {
            ClaimHolder::Us { fencing_token } => return Ok(ClaimOutcome::Won { fencing_token }),
            ClaimHolder::Other => return Ok(ClaimOutcome::Lost),
            ClaimHolder::Nobody if !tried_again => tried_again = true,
            ClaimHolder::Nobody => {
                return Err(CoordinatorError::outcome_unknown(format!(
                    "{claim} failed twice: {lost}; reading it back found no claim"
                )));
            }
        }
    }
}

/// One attempt at a batch: each claim's outcome (or its own error, e.g. a key the backend
/// cannot read), in the order asked, or why the attempt as a whole has no answer.
pub type ClaimBatchAttempt<E> = Result<Vec<Result<ClaimOutcome, CoordinatorError>>, ClaimAttemptError<E>>;

/// [`claim_with_read_back`] for a batch of `count` claims made in one round trip: the
/// same decision, per claim, with one attempt and one read-back per round for every
/// claim still undecided.
///
/// `attempt` makes the claims whose indices (into the batch, ascending) it is given, in
/// one round trip, each always with its same token, and answers one result per index;
/// `read_holders` reads back, in one round trip, who holds each of the given claims'
/// triggers. `claim(i)` names claim `i` in errors. At most two attempts and two
/// read-backs; the second attempt and read-back cover only the claims nobody held.
///
/// Returns one result per claim, in order. Errors are as [`claim_with_read_back`]'s,
/// each naming its claim.
pub async fn claim_batch_with_read_back<E, A, AF, R, RF>(
    count: usize,
    claim: &(dyn Fn(usize) -> String + Sync),
    mut attempt: A,
    mut read_holders: R,
) -> Vec<Result<ClaimOutcome, CoordinatorError>>
where
    E: fmt::Display,
    A: FnMut(Vec<usize>) -> AF,
    AF: Future<Output = ClaimBatchAttempt<E>>,
    R: FnMut(Vec<usize>) -> RF,
    RF: Future<Output = Result<Vec<ClaimHolder>, E>>,
{
    let mut results: Vec<Option<Result<ClaimOutcome, CoordinatorError>>> = (0..count).map(|_| None).collect();
    let mut pending: Vec<usize> = (0..count).collect();
    let mut tried_again = false;
    while !pending.is_empty() {
        let lost = match attempt(pending.clone()).await {
            Ok(outcomes) => {
                for (i, outcome) in pending.iter().zip(outcomes) {
                    results[*i] = Some(outcome);
                }
                break;
            }
            Err(ClaimAttemptError::ReplyLost(e)) => e,
            Err(not_made) => {
                for &i in &pending {
                    results[i] = Some(Err(not_made.to_error(&claim(i))));
                }
                break;
            }
        };
        let holders = match read_holders(pending.clone()).await {
            Ok(holders) if holders.len() == pending.len() => holders,
            Ok(_) => {
                let e = "the read-back answered for another number of claims";
                fail_all(&mut results, &pending, claim, &lost, e);
                break;
            }
            Err(e) => {
                fail_all(&mut results, &pending, claim, &lost, e);
                break;
            }
        };
        tracing::warn!(claims = pending.len(), "batch claim reply lost ({lost}); read the claims back");
        let mut nobody = Vec::new();
        for (&i, holder) in pending.iter().zip(holders) {
            results[i] = match holder {
                ClaimHolder::Us { fencing_token } => Some(Ok(ClaimOutcome::Won { fencing_token })),
                ClaimHolder::Other => Some(Ok(ClaimOutcome::Lost)),
                ClaimHolder::Nobody if !tried_again => {
                    nobody.push(i);
                    None
                }
                ClaimHolder::Nobody => Some(Err(CoordinatorError::outcome_unknown(format!(
                    "{} failed twice: {lost}; reading it back found no claim",
                    claim(i)
                )))),
            };
        }
        pending = nobody;
        tried_again = true;
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(CoordinatorError::outcome_unknown("no answer for this claim"))))
        .collect()
}

/// Every pending claim's outcome is unknown: its reply was lost and the read-back failed.
fn fail_all(
    results: &mut [Option<Result<ClaimOutcome, CoordinatorError>>],
    pending: &[usize],
    claim: &(dyn Fn(usize) -> String + Sync),
    lost: &dyn fmt::Display,
    e: impl fmt::Display,
) {
    for &i in pending {
        results[i] = Some(Err(CoordinatorError::outcome_unknown(format!(
            "{}: outcome unknown after \"{lost}\", and reading it back failed: {e}",
            claim(i)
        ))));
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;

    type Attempt = Result<ClaimOutcome, ClaimAttemptError<&'static str>>;
    type ReadBack = Result<ClaimHolder, &'static str>;

    /// Runs the decision on scripted replies; the outcome (or error text) and how many
    /// attempts and read-backs it made.
    async fn decide(
        attempts: Vec<Attempt>,
        read_backs: Vec<ReadBack>,
    ) -> (Result<ClaimOutcome, String>, usize, usize) {
        let attempts = Mutex::new(VecDeque::from(attempts));
        let read_backs = Mutex::new(VecDeque::from(read_backs));
        let (made, read) = (Mutex::new(0), Mutex::new(0));
        let outcome = claim_with_read_back(
            "claim of k",
            "00000000000000aa",
            || {
                *made.lock().unwrap() += 1;
                std::future::ready(attempts.lock().unwrap().pop_front().expect("an attempt too many"))
            },
            || {
                *read.lock().unwrap() += 1;
                std::future::ready(read_backs.lock().unwrap().pop_front().expect("a read-back too many"))
            },
        )
        .await
        .map_err(|e| e.to_string());
        (outcome, made.into_inner().unwrap(), read.into_inner().unwrap())
    }

    const WON: ClaimOutcome = ClaimOutcome::Won { fencing_token: 7 };

    #[tokio::test]
    async fn an_answer_is_the_outcome_without_reading_back() {
        assert_eq!(decide(vec![Ok(WON)], vec![]).await, (Ok(WON), 1, 0));
        assert_eq!(decide(vec![Ok(ClaimOutcome::Lost)], vec![]).await, (Ok(ClaimOutcome::Lost), 1, 0));
    }

    #[tokio::test]
    async fn an_attempt_that_made_no_claim_is_an_error_without_reading_back() {
        let (outcome, made, read) = decide(vec![Err(ClaimAttemptError::NotMade("refused"))], vec![]).await;
        assert_eq!(outcome, Err("claim of k failed: refused".to_owned()));
        assert_eq!((made, read), (1, 0));
    }

    #[tokio::test]
    async fn a_lost_reply_is_won_or_lost_as_the_stored_claimant_says() {
        let lost = || vec![Err(ClaimAttemptError::ReplyLost("reset"))];
        let ours = ClaimHolder::Us { fencing_token: 9 };
        assert_eq!(decide(lost(), vec![Ok(ours)]).await, (Ok(ClaimOutcome::Won { fencing_token: 9 }), 1, 1));
        assert_eq!(decide(lost(), vec![Ok(ClaimHolder::Other)]).await, (Ok(ClaimOutcome::Lost), 1, 1));
    }

    #[tokio::test]
    async fn a_lost_reply_that_cannot_be_read_back_is_an_error_not_a_win() {
        let (outcome, made, read) =
            decide(vec![Err(ClaimAttemptError::ReplyLost("reset"))], vec![Err("down")]).await;
        let expected = "claim of k: outcome unknown after \"reset\", and reading it back failed: down";
        assert_eq!(outcome, Err(expected.to_owned()));
        assert_eq!((made, read), (1, 1));
    }

    #[tokio::test]
    async fn a_claim_not_made_is_unavailable_a_refused_one_unauthorized_and_an_unread_lost_reply_outcome_unknown()
     {
        use crate::coordinator::CoordinatorErrorKind;
        let kind = |attempts: Vec<Attempt>, read_backs: Vec<ReadBack>| async move {
            let attempts = Mutex::new(VecDeque::from(attempts));
            let read_backs = Mutex::new(VecDeque::from(read_backs));
            claim_with_read_back(
                "claim of k",
                "00000000000000aa",
                || std::future::ready(attempts.lock().unwrap().pop_front().expect("an attempt")),
                || std::future::ready(read_backs.lock().unwrap().pop_front().expect("a read-back")),
            )
            .await
            .expect_err("no answer")
            .kind()
        };
        let lost = || Err(ClaimAttemptError::ReplyLost("reset"));
        assert_eq!(
            kind(vec![Err(ClaimAttemptError::NotMade("refused"))], vec![]).await,
            CoordinatorErrorKind::Unavailable
        );
        assert_eq!(
            kind(vec![Err(ClaimAttemptError::Refused("WRONGPASS"))], vec![]).await,
            CoordinatorErrorKind::Unauthorized
        );
        assert_eq!(kind(vec![lost()], vec![Err("down")]).await, CoordinatorErrorKind::OutcomeUnknown);
        let nobody = vec![Ok(ClaimHolder::Nobody), Ok(ClaimHolder::Nobody)];
        assert_eq!(kind(vec![lost(), lost()], nobody).await, CoordinatorErrorKind::OutcomeUnknown);
    }

    #[tokio::test]
    async fn nobody_holding_the_trigger_means_one_more_attempt_and_no_more() {
        let lost = || Err(ClaimAttemptError::ReplyLost("reset"));
        assert_eq!(decide(vec![lost(), Ok(WON)], vec![Ok(ClaimHolder::Nobody)]).await, (Ok(WON), 2, 1));
        let (outcome, made, read) =
            decide(vec![lost(), lost()], vec![Ok(ClaimHolder::Nobody), Ok(ClaimHolder::Nobody)]).await;
        assert_eq!(outcome, Err("claim of k failed twice: reset; reading it back found no claim".to_owned()));
        assert_eq!((made, read), (2, 2));
    }

    #[tokio::test]
    async fn a_batch_whose_reply_was_lost_is_read_back_claim_by_claim_and_only_nobodys_made_again() {
        let attempts = Mutex::new(Vec::new());
        let outcomes = claim_batch_with_read_back(
            3,
            &|i| format!("claim {i}"),
            |pending: Vec<usize>| {
                attempts.lock().unwrap().push(pending.clone());
                let answer: ClaimBatchAttempt<&str> = match attempts.lock().unwrap().len() {
                    1 => Err(ClaimAttemptError::ReplyLost("reset")),
                    _ => Ok(pending.iter().map(|_| Ok(WON)).collect()),
                };
                std::future::ready(answer)
            },
            |pending: Vec<usize>| {
                assert_eq!(pending, [0, 1, 2], "one read-back for the whole batch");
                std::future::ready(Ok::<_, &str>(vec![
                    ClaimHolder::Us { fencing_token: 3 },
                    ClaimHolder::Other,
                    ClaimHolder::Nobody,
                ]))
            },
        )
        .await;
        let outcomes: Vec<_> = outcomes.into_iter().map(|o| o.map_err(|e| e.to_string())).collect();
        assert_eq!(outcomes, [Ok(ClaimOutcome::Won { fencing_token: 3 }), Ok(ClaimOutcome::Lost), Ok(WON)]);
        assert_eq!(*attempts.lock().unwrap(), [vec![0, 1, 2], vec![2]], "only nobody's claim again");
    }

    #[tokio::test]
    async fn a_batch_that_cannot_be_read_back_is_outcome_unknown_for_every_claim() {
        let outcomes = claim_batch_with_read_back(
            2,
            &|i| format!("claim {i}"),
            |_| std::future::ready(Err::<Vec<_>, _>(ClaimAttemptError::ReplyLost("reset"))),
            |_| std::future::ready(Err::<Vec<ClaimHolder>, _>("down")),
        )
        .await;
        for outcome in outcomes {
            assert_eq!(
                outcome.expect_err("unknown").kind(),
                crate::coordinator::CoordinatorErrorKind::OutcomeUnknown
            );
        }
    }

    #[tokio::test]
    async fn a_refused_batch_is_unauthorized_for_every_claim_without_reading_back() {
        let outcomes = claim_batch_with_read_back(
            2,
            &|i| format!("claim {i}"),
            |_| std::future::ready(Err::<Vec<_>, _>(ClaimAttemptError::Refused("WRONGPASS"))),
            |_| -> std::future::Ready<Result<Vec<ClaimHolder>, &str>> { panic!("no read-back") },
        )
        .await;
        let errors: Vec<_> = outcomes
            .into_iter()
            .map(|o| o.map_err(|e| (e.kind(), e.to_string())).expect_err("refused"))
            .collect();
        let unauthorized = crate::coordinator::CoordinatorErrorKind::Unauthorized;
        assert_eq!(
            errors,
            [
                (unauthorized, "claim 0 failed: WRONGPASS".to_owned()),
                (unauthorized, "claim 1 failed: WRONGPASS".to_owned())
            ]
        );
    }
}
