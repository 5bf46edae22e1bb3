//! slotcron: a cron and timer-task scheduler for Rust services that run as several
//! replicas. Each trigger of a job runs exactly once across the fleet.

pub mod clock;
pub mod schedule;
