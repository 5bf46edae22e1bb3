//! Run policies that the engine applies per job, one file per policy.

mod misfire;

pub use misfire::Misfire;
