//! Run policies that the engine applies per job, one file per policy, each a layer
//! composed around the handler (jitter, then the concurrency cap, the claim, the
//! overlap lease, the retries and the per-attempt timeout), and the failure hooks that
//! observe how a trigger ended.

mod budget;
mod concurrency;
mod hook;
mod interrupt;
mod jitter;
mod misfire;
mod overlap;
mod retry;

pub use budget::run_budget;
pub(crate) use concurrency::{ConcurrencyCap, RunSlot};
pub use hook::{Failure, FailureHook, RunObserver};
pub use interrupt::OnInterrupt;
pub use jitter::jitter_offset;
pub(crate) use jitter::{jittered, wait_for_start};
pub use misfire::Misfire;
pub use overlap::Overlap;
pub(crate) use overlap::{Guard, Guarded, RunStop};
pub(crate) use retry::{AttemptResult, Attempted};
pub use retry::{Permanent, Retry};
