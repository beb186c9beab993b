//! StellMQ's cluster fault harness (issue #36): proves that acknowledged messages survive
//! partitions, pauses, kills and fail-overs.
//!
//! A run builds a private network of Linux namespaces ([`net`]), starts a cluster of the
//! release binaries in it ([`cluster`]: controller mode with three controllers and a broker
//! set of three, a classic SYNC_MASTER/SLAVE pair, or the controller shape behind an
//! mqproxy), puts a workload on it ([`workload`]: sync and orderly sends, consumers in both
//! modes; [`sdk`]: the official C++ SDK or RocketMQ 5 Python client beside it), injects the faults of a seeded schedule
//! ([`schedule`]) one after another, undoes them, and checks the acknowledgements against what
//! the final master stores and what the consumers received ([`check`]). [`run::run`] ties it
//! together; `mqchaos` is its command line. Runs need root; without it they are refused with
//! [`ChaosError::Unsupported`].

pub mod check;
pub mod cluster;
pub mod net;
pub mod run;
pub mod schedule;
pub mod sdk;
pub mod workload;

/// Why a run could not finish (a finding is not an error: it is in the report).
#[derive(Debug, thiserror::Error)]
pub enum ChaosError {
    /// This machine cannot build the network (not root, no `ip`, no namespaces).
    #[error("cannot run here: {0}")]
    Unsupported(String),
    #[error("setup: {0}")]
    Setup(String),
    #[error("workload: {0}")]
    Workload(String),
    /// The cluster did not reach a state the run waits for.
    #[error("stuck waiting for {0}")]
    Stuck(String),
}
