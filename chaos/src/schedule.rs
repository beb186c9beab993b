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
    /// The name server cut from every broker for longer than its route expiry
    /// (`brokerChannelExpiredTime`, 120 s): it drops the brokers' routes, clients keep their
    /// cached ones, and the brokers' next registrations bring the routes back.
    ExpireRoutes { ms: u64 },
    /// The master's link, both ways, shaped to `kbit` kilobits per second by a token bucket
    /// that drops what would queue longer than `latency_ms`: queueing delay and packet loss
    /// at once, as on a congested link (the stand-in for netem on kernels without it).
    CongestMaster { ms: u64, kbit: u32, latency_ms: u32 },
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
            | Fault::FlapMaster { ms }
            | Fault::ExpireRoutes { ms }
            | Fault::CongestMaster { ms, .. } => ms,
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
            Fault::ExpireRoutes { .. } => "expire-routes",
            Fault::CongestMaster { .. } => "congest-master",
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

/// Inserts `count` route expiries (each 125-135 s: past the name server's 120 s expiry
/// wherever the brokers' last registration fell) at seeded places of `steps`; the other
/// steps keep their order and durations.
pub fn with_route_expiries(steps: Vec<Step>, seed: u64, count: usize) -> Vec<Step> {
    insert_seeded(steps, seed ^ 0x5EED_0E7E, count, |rng| {
        Fault::ExpireRoutes {
            ms: rng.gen_range(125_000..=135_000),
        }
    })
}

/// Inserts `count` congested links of the master (each 5-20 s at 128-2048 kbit/s, dropping
/// what would queue longer than 50-400 ms) at seeded places of `steps`; the other steps keep
/// their order and durations.
pub fn with_congestion(steps: Vec<Step>, seed: u64, count: usize) -> Vec<Step> {
    insert_seeded(steps, seed ^ 0xC0_4E57, count, |rng| Fault::CongestMaster {
        ms: rng.gen_range(5_000..=20_000),
        kbit: rng.gen_range(128..=2048),
        latency_ms: rng.gen_range(50..=400),
    })
}

/// Inserts `count` faults made by `make` at places drawn from `seed`, each after 2-5 s of
/// quiet.
fn insert_seeded(
    mut steps: Vec<Step>,
    seed: u64,
    count: usize,
    make: impl Fn(&mut StdRng) -> Fault,
) -> Vec<Step> {
    let mut rng = StdRng::seed_from_u64(seed);
    for _ in 0..count {
        let at = rng.gen_range(0..=steps.len());
        let quiet_before_ms = rng.gen_range(2_000..=5_000);
        let fault = make(&mut rng);
        steps.insert(
            at,
            Step {
                quiet_before_ms,
                fault,
            },
        );
    }
    steps
}

/// The faults each shape draws from, in draw order (the order is part of a seed's schedule).
const CONTROLLER_FAULTS: [fn(u64) -> Fault; 10] = [
    |ms| Fault::KillMaster { ms },
    |ms| Fault::KillSlave { ms },
    |ms| Fault::PauseMaster { ms },
    |ms| Fault::IsolateMaster { ms },
    |ms| Fault::PartialMaster { ms },
    |ms| Fault::IsolateSlave { ms },
    |ms| Fault::IsolateControllerLeader { ms },
    |ms| Fault::KillControllerLeader { ms },
    |ms| Fault::CutNameServer { ms },
    |ms| Fault::FlapMaster { ms },
];
const CLASSIC_FAULTS: [fn(u64) -> Fault; 7] = [
    |ms| Fault::KillMaster { ms },
    |ms| Fault::KillSlave { ms },
    |ms| Fault::PauseMaster { ms },
    |ms| Fault::IsolateMaster { ms },
    |ms| Fault::PartialMaster { ms },
    |ms| Fault::IsolateSlave { ms },
    |ms| Fault::CutNameServer { ms },
];

fn pick(rng: &mut StdRng, shape: Shape, ms: u64) -> Fault {
    let faults: &[fn(u64) -> Fault] = match shape {
        Shape::Controller | Shape::Proxy => &CONTROLLER_FAULTS,
        Shape::Classic => &CLASSIC_FAULTS,
    };
    // Drawn as an i32, as the first schedules were: a seed keeps its schedule.
    let n = i32::try_from(faults.len()).unwrap_or(i32::MAX);
    faults[rng.gen_range(0..n) as usize](ms)
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
    fn the_ci_schedule_stays_what_it_was() {
        let faults: Vec<Fault> = generate(1, Shape::Controller, 4)
            .into_iter()
            .map(|s| s.fault)
            .collect();
        assert_eq!(
            faults,
            [
                Fault::PartialMaster { ms: 8913 },
                Fault::IsolateSlave { ms: 5855 },
                Fault::IsolateMaster { ms: 4094 },
                Fault::PauseMaster { ms: 5145 },
            ]
        );
    }

    #[test]
    fn route_expiries_join_a_schedule_without_changing_it() {
        let plain = generate(5, Shape::Classic, 6);
        let mixed = with_route_expiries(plain.clone(), 5, 2);
        assert_eq!(mixed, with_route_expiries(plain.clone(), 5, 2));
        let (expiries, rest): (Vec<Step>, Vec<Step>) = mixed
            .into_iter()
            .partition(|s| matches!(s.fault, Fault::ExpireRoutes { .. }));
        assert_eq!(rest, plain);
        assert_eq!(expiries.len(), 2);
        assert!(expiries.iter().all(|s| s.fault.duration_ms() > 120_000));
    }

    #[test]
    fn congestion_joins_a_schedule_without_changing_it() {
        let plain = generate(6, Shape::Controller, 5);
        let mixed = with_congestion(plain.clone(), 6, 3);
        assert_eq!(mixed, with_congestion(plain.clone(), 6, 3));
        let (congested, rest): (Vec<Step>, Vec<Step>) = mixed
            .into_iter()
            .partition(|s| matches!(s.fault, Fault::CongestMaster { .. }));
        assert_eq!(rest, plain);
        assert_eq!(congested.len(), 3);
        for step in congested {
            let Fault::CongestMaster {
                kbit, latency_ms, ..
            } = step.fault
            else {
                unreachable!("partitioned on CongestMaster");
            };
            assert!((128..=2048).contains(&kbit) && (50..=400).contains(&latency_ms));
        }
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
