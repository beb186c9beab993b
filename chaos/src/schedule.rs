//! Fault schedules, generated from a seed: the same seed and shape give the same faults, in
//! the same order, with the same durations and pauses between them. Targets that depend on
//! the cluster's state ("the master", "the controller leader") are resolved when the fault
//! starts.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::cluster::Shape;

/// One fault. Each lasts `ms` milliseconds, then is undone (cut links healed, a paused
/// process resumed, a killed one restarted on its store).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Fault {
    /// SIGKILL of the master.
    KillMaster { ms: u64 },
    /// SIGKILL of a broker that is not the master.
    KillSlave { ms: u64 },
    /// SIGSTOP of the master (it wakes up believing it still is).
    PauseMaster { ms: u64 },
    /// The master cut from every other node, the client included.
    IsolateMaster { ms: u64 },
    /// The master cut from the controllers and the other brokers, still reachable by the
    /// client and the name server.
    PartialMaster { ms: u64 },
    /// A broker that is not the master cut from every other node.
    IsolateSlave { ms: u64 },
    /// The Raft leader of the controllers cut from every other node.
    IsolateControllerLeader { ms: u64 },
    /// SIGKILL of the Raft leader of the controllers.
    KillControllerLeader { ms: u64 },
    /// The name server cut from every broker (routes age, registrations fail).
    CutNameServer { ms: u64 },
    /// The master's links go down and up at random every 0.2-1 s (the stand-in for a lossy
    /// link on kernels without netem).
    FlapMaster { ms: u64 },
}

impl Fault {
    pub fn duration_ms(&self) -> u64 {
        match *self {
            Fault::KillMaster { ms }
            | Fault::KillSlave { ms }
            | Fault::PauseMaster { ms }
            | Fault::IsolateMaster { ms }
            | Fault::PartialMaster { ms }
            | Fault::IsolateSlave { ms }
            | Fault::IsolateControllerLeader { ms }
            | Fault::KillControllerLeader { ms }
            | Fault::CutNameServer { ms }
            | Fault::FlapMaster { ms } => ms,
        }
    }

    /// Short name for tables.
    pub fn name(&self) -> &'static str {
        match self {
            Fault::KillMaster { .. } => "kill-master",
            Fault::KillSlave { .. } => "kill-slave",
            Fault::PauseMaster { .. } => "pause-master",
            Fault::IsolateMaster { .. } => "isolate-master",
            Fault::PartialMaster { .. } => "partial-master",
            Fault::IsolateSlave { .. } => "isolate-slave",
            Fault::IsolateControllerLeader { .. } => "isolate-controller-leader",
            Fault::KillControllerLeader { .. } => "kill-controller-leader",
            Fault::CutNameServer { .. } => "cut-name-server",
            Fault::FlapMaster { .. } => "flap-master",
        }
    }
}

/// A fault and the quiet time before it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    pub quiet_before_ms: u64,
    pub fault: Fault,
}

/// `count` faults for `shape` from `seed`.
pub fn generate(seed: u64, shape: Shape, count: usize) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let quiet_before_ms = rng.gen_range(2_000..=5_000);
            let ms = rng.gen_range(2_000..=12_000);
            let fault = pick(&mut rng, shape, ms);
            Step {
                quiet_before_ms,
                fault,
            }
        })
        .collect()
}

fn pick(rng: &mut StdRng, shape: Shape, ms: u64) -> Fault {
    match shape {
        Shape::Controller => match rng.gen_range(0..10) {
            0 => Fault::KillMaster { ms },
            1 => Fault::KillSlave { ms },
            2 => Fault::PauseMaster { ms },
            3 => Fault::IsolateMaster { ms },
            4 => Fault::PartialMaster { ms },
            5 => Fault::IsolateSlave { ms },
            6 => Fault::IsolateControllerLeader { ms },
            7 => Fault::KillControllerLeader { ms },
            8 => Fault::CutNameServer { ms },
            _ => Fault::FlapMaster { ms },
        },
        Shape::Classic => match rng.gen_range(0..7) {
            0 => Fault::KillMaster { ms },
            1 => Fault::KillSlave { ms },
            2 => Fault::PauseMaster { ms },
            3 => Fault::IsolateMaster { ms },
            4 => Fault::PartialMaster { ms },
            5 => Fault::IsolateSlave { ms },
            _ => Fault::CutNameServer { ms },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_replays_the_same_schedule() {
        let a = generate(7, Shape::Controller, 50);
        assert_eq!(a, generate(7, Shape::Controller, 50));
        assert_ne!(a, generate(8, Shape::Controller, 50));
    }

    #[test]
    fn classic_schedules_need_no_controllers() {
        for step in generate(3, Shape::Classic, 200) {
            assert!(!matches!(
                step.fault,
                Fault::IsolateControllerLeader { .. } | Fault::KillControllerLeader { .. }
            ));
        }
    }
}
