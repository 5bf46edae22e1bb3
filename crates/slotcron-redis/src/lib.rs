//! The Redis [`Coordinator`](slotcron::Coordinator) for slotcron: every replica of a
//! service claims each trigger in one shared Redis (one server, or a Redis Cluster through
//! a `redis+cluster://` URL), and exactly one runs it.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use slotcron::{Job, JobContext, Scheduler};
//! use slotcron_redis::{RedisConfig, RedisCoordinator};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let coordinator = RedisCoordinator::connect(RedisConfig::new("redis://127.0.0.1:6379")).await?;
//! let scheduler = Scheduler::builder().coordinator(Arc::new(coordinator)).build();
//! scheduler.add(
//!     Job::builder("report")
//!         .cron("0 * * * *")
//!         .handler(|ctx: JobContext| async move {
//!             println!("{} won with fencing token {}", ctx.trigger_key(), ctx.fencing_token());
//!             Ok::<_, std::io::Error>(())
//!         })
//!         .build()?,
//! )?;
//! scheduler.run(slotcron::CancellationToken::new()).await;
//! # Ok(())
//! # }
//! ```

mod claimant;
mod config;
mod connection;
mod controls;
mod coordinator;
mod error;
mod keys;
mod single;
mod start;

pub use config::RedisConfig;
pub use coordinator::RedisCoordinator;
pub use error::RedisCoordinatorError;
