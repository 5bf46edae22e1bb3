//! Where a burst's lateness goes: the coordinator calls and ledger writes on a burst's
//! path, timed from the triggers' scheduled instant ([`Stages`], fed by
//! [`Counted`](super::counted::Counted) and [`Timed`](super::ledger::Timed)), beside the
//! handlers' start and the runs' end, as [`StageFigures`].

use std::sync::{Arc, Mutex};

use jiff::Timestamp;

use super::Window;

/// A coordinator call on a burst's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Claims made ahead of their instant (`claim_batch_ahead`): before it, off its path.
    ClaimAhead,
    /// Claims made at (or after) their instant (`claim_batch`).
    Claim,
    /// The `running` records of a burst's runs written to the ledger (`write_batch`),
    /// each run's start mark there.
    RunningRecords,
    /// The instant's start of claims made ahead (`start_ahead`), the start mark of each.
    StartAhead,
    /// Start marks of claims made at the instant (`mark_starts`).
    MarkStarts,
    /// Other records written to the ledger (`write_batch`): runs' ends, skips.
    EndRecords,
}

impl Stage {
    /// How the bench names the stage.
    pub fn name(self) -> &'static str {
        match self {
            Stage::ClaimAhead => "claims ahead",
            Stage::Claim => "claims at the instant",
            Stage::StartAhead => "start of claims ahead",
            Stage::MarkStarts => "start marks",
            Stage::RunningRecords => "running records (ledger)",
            Stage::EndRecords => "end records (ledger)",
        }
    }
}

/// One call's share of one instant: `triggers` of that instant, the call sent and
/// answered `sent_us` and `answered_us` after it (negative: before it).
#[derive(Debug, Clone, Copy)]
struct Call {
    stage: Stage,
    instant_ms: i64,
    triggers: u32,
    sent_us: i64,
    answered_us: i64,
}

/// The burst-path calls of the measured window's instants.
pub(crate) struct Stages {
    window: Arc<Window>,
    calls: Mutex<Vec<Call>>,
}

impl Stages {
    pub(crate) fn new(window: Arc<Window>) -> Self {
        Self { window, calls: Mutex::new(Vec::with_capacity(1 << 16)) }
    }

    /// A call of `stage` for `triggers` triggers of `instant`, sent at `sent` and
    /// answered now; noted if `instant` is in the window.
    pub(crate) fn note(&self, stage: Stage, instant: Timestamp, sent: Timestamp, triggers: usize) {
        if triggers == 0 || !self.window.contains(instant.as_millisecond()) {
            return;
        }
        let after = |at: Timestamp| instant.duration_until(at).as_micros() as i64;
        let call = Call {
            stage,
            instant_ms: instant.as_millisecond(),
            triggers: u32::try_from(triggers).unwrap_or(u32::MAX),
            sent_us: after(sent),
            answered_us: after(Timestamp::now()),
        };
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).push(call);
    }

    /// The figures of each stage that had calls, in [`Stage`]'s order: of every instant
    /// (`None`), or of one (Unix milliseconds).
    pub(crate) fn figures(&self, instant_ms: Option<i64>) -> Vec<StageFigures> {
        let mut calls = self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone();
        calls.retain(|call| instant_ms.is_none_or(|at| call.instant_ms == at));
        calls.sort_by_key(|call| call.stage);
        calls
            .chunk_by(|a, b| a.stage == b.stage)
            .map(|chunk| {
                let sent: Vec<(i64, u32)> = chunk.iter().map(|c| (c.sent_us, c.triggers)).collect();
                let answered: Vec<(i64, u32)> = chunk.iter().map(|c| (c.answered_us, c.triggers)).collect();
                StageFigures {
                    stage: chunk[0].stage.name(),
                    calls: Some(chunk.len() as u64),
                    triggers: chunk.iter().map(|c| u64::from(c.triggers)).sum(),
                    began_us: Some(weighted_percentiles(sent)),
                    ended_us: weighted_percentiles(answered),
                }
            })
            .collect()
    }
}

/// One stage of the window's bursts: when, after their instant, its triggers entered it
/// and left it, p50 and p99 over the triggers (microseconds; negative: before the instant).
#[derive(Debug, Clone)]
pub struct StageFigures {
    /// The stage ([`Stage::name`], or "handler start", "run ended").
    pub stage: &'static str,
    /// Coordinator calls (`None`: not a call).
    pub calls: Option<u64>,
    /// Triggers that went through it.
    pub triggers: u64,
    /// When the triggers' call was sent (`None`: a moment, not a call).
    pub began_us: Option<(i64, i64)>,
    /// When it answered (or the moment came).
    pub ended_us: (i64, i64),
}

impl StageFigures {
    /// A moment each of `offsets` (microseconds after the trigger's instant) came.
    pub(crate) fn moment(stage: &'static str, offsets: Vec<i64>) -> Self {
        let triggers = offsets.len() as u64;
        let ended_us = weighted_percentiles(offsets.into_iter().map(|o| (o, 1)).collect());
        Self { stage, calls: None, triggers, began_us: None, ended_us }
    }
}

impl std::fmt::Display for StageFigures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |(p50, p99): (i64, i64)| format!("{:.1} / {:.1} ms", p50 as f64 / 1e3, p99 as f64 / 1e3);
        write!(f, "{}: {} triggers", self.stage, self.triggers)?;
        if let Some(calls) = self.calls {
            write!(f, " in {calls} calls")?;
        }
        if let Some(began) = self.began_us {
            write!(f, ", sent at {}, answered at {}", ms(began), ms(self.ended_us))
        } else {
            write!(f, ", at {}", ms(self.ended_us))
        }
    }
}

/// p50 and p99 of values each counted `weight` times (0 for none).
fn weighted_percentiles(mut values: Vec<(i64, u32)>) -> (i64, i64) {
    values.sort_unstable();
    let total: u64 = values.iter().map(|&(_, w)| u64::from(w)).sum();
    let at = |p: f64| {
        let rank = ((total as f64 * p).ceil() as u64).max(1);
        let mut seen = 0;
        values.iter().find(|&&(_, w)| {
            seen += u64::from(w);
            seen >= rank
        })
    };
    let value = |p| at(p).map_or(0, |&(v, _)| v);
    (value(0.5), value(0.99))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_count_each_value_by_its_weight() {
        assert_eq!(weighted_percentiles(vec![]), (0, 0));
        assert_eq!(weighted_percentiles(vec![(5, 1)]), (5, 5));
        // 98 triggers at 10, one call of 2 at 500: p99 is the 99th of 100, at 500.
        assert_eq!(weighted_percentiles(vec![(500, 2), (10, 98)]), (10, 500));
        assert_eq!(weighted_percentiles(vec![(500, 1), (10, 99)]), (10, 10));
        assert_eq!(weighted_percentiles(vec![(-3, 3), (7, 1)]), (-3, 7));
    }

    #[test]
    fn only_the_windows_instants_are_noted() {
        let window = Arc::new(Window::default());
        window.set((1_000, 2_000));
        let stages = Stages::new(window);
        let at = |ms| Timestamp::from_millisecond(ms).unwrap();
        stages.note(Stage::Claim, at(1_000), at(1_002), 10);
        stages.note(Stage::Claim, at(2_000), at(2_002), 10);
        stages.note(Stage::MarkStarts, at(1_000), at(1_010), 0);
        let figures = stages.figures(None);
        assert_eq!(stages.figures(Some(2_000)).len(), 0);
        assert_eq!(stages.figures(Some(1_000)).len(), 1);
        assert_eq!(figures.len(), 1);
        assert_eq!(
            (figures[0].stage, figures[0].triggers, figures[0].calls),
            ("claims at the instant", 10, Some(1))
        );
        assert_eq!(figures[0].began_us, Some((2_000, 2_000)));
    }
}
