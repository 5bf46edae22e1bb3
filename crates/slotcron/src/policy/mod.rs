//! Run policies that the engine applies per job, one file per policy.

mod budget;
mod misfire;

pub use budget::run_budget;
pub use misfire::Misfire;
