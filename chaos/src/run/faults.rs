//! One fault of the schedule: put in force, held for its time, undone, and recorded.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::{Duration, Instant};

use super::{off_worker, FaultRecord};
use crate::cluster::{Cluster, Role};
use crate::net::Net;
use crate::schedule::{Fault, Step};
use crate::workload::{Workload, TOPIC};
use crate::ChaosError;
use stellmq_client::AdminClient;

/// How a fault in force is undone.
enum Undo {
    Nothing,
    Restart(String),
    Resume(String),
    Heal,
    /// Heal, and see the routes expired and come back.
    HealRoutes,
    /// The master's links go down and up until the fault's time is over.
    Flap(String),
}

/// Applies one fault, holds it for its duration, then undoes it. Its start is taken once
/// it is in force (a send begun while the rules were being written is not "after it").
pub(super) async fn inject(
    step: &Step,
    seed: u64,
    net: &mut Net,
    cluster: &mut Cluster,
    workload: &Workload,
) -> Result<FaultRecord, ChaosError> {
    let mut rng = StdRng::seed_from_u64(seed);
    let hold = Duration::from_millis(step.fault.duration_ms());
    let (target, undo) = apply(&step.fault, &mut rng, net, cluster).await?;
    let started_at = workload.now();
    let mut routes = (None, None);
    match undo {
        Undo::Flap(m) => {
            let until = Instant::now() + hold;
            while Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(rng.gen_range(200..1000))).await;
                off_worker(|| net.heal())?;
                tokio::time::sleep(Duration::from_millis(rng.gen_range(200..1000))).await;
                off_worker(|| net.isolate(&m))?;
            }
            off_worker(|| net.heal())?;
        }
        undo => {
            tokio::time::sleep(hold).await;
            match undo {
                Undo::Restart(name) => cluster.restart(&name).await?,
                Undo::Resume(name) => off_worker(|| cluster.resume(&name))?,
                Undo::Heal => off_worker(|| net.heal())?,
                Undo::HealRoutes => {
                    let expired = route_expired(cluster).await;
                    off_worker(|| net.heal())?;
                    routes = (expired, routes_back(cluster).await);
                }
                Undo::Nothing | Undo::Flap(_) => {}
            }
        }
    }
    Ok(FaultRecord {
        fault: step.fault.clone(),
        target,
        started_at,
        ended_at: workload.now(),
        recovery_ms: None,
        sdk_recovery_ms: None,
        routes_expired: routes.0,
        routes_back_ms: routes.1,
    })
}

/// Whether the name server answers that the workload's topic has no route (None: it did not
/// answer).
async fn route_expired(cluster: &Cluster) -> Option<bool> {
    let admin = AdminClient::new(cluster.namesrv_addr()).ok()?;
    let route = admin.topic_route(TOPIC).await;
    admin.shutdown().await;
    match route {
        Ok(_) => Some(false),
        Err(stellmq_client::ClientError::TopicNotExist(_)) => Some(true),
        Err(_) => None,
    }
}

/// Milliseconds until the name server routes the topic's master again (None: not within
/// 90 s).
async fn routes_back(cluster: &Cluster) -> Option<u64> {
    let healed = Instant::now();
    let admin = AdminClient::new(cluster.namesrv_addr()).ok()?;
    let mut back = None;
    while healed.elapsed() < Duration::from_secs(90) {
        let routed = admin
            .topic_route(TOPIC)
            .await
            .is_ok_and(|r| r.broker_datas.iter().any(|b| b.master_addr().is_some()));
        if routed {
            back = u64::try_from(healed.elapsed().as_millis()).ok();
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    admin.shutdown().await;
    back
}

/// Puts `fault` in force; returns its target (empty when none could be resolved) and how
/// to undo it.
async fn apply(
    fault: &Fault,
    rng: &mut StdRng,
    net: &mut Net,
    cluster: &mut Cluster,
) -> Result<(String, Undo), ChaosError> {
    let master = cluster.master().await;
    let brokers = cluster.names(Role::Broker);
    let slaves: Vec<String> = brokers
        .iter()
        .filter(|b| Some(*b) != master.as_ref())
        .cloned()
        .collect();
    let slave = slaves.get(rng.gen_range(0..slaves.len().max(1))).cloned();
    let target = match fault {
        Fault::KillMaster { .. } | Fault::PauseMaster { .. } | Fault::IsolateMaster { .. } => {
            master.clone()
        }
        Fault::PartialMaster { .. } | Fault::FlapMaster { .. } | Fault::CongestMaster { .. } => {
            master.clone()
        }
        Fault::KillSlave { .. } | Fault::IsolateSlave { .. } => slave,
        Fault::IsolateControllerLeader { .. } | Fault::KillControllerLeader { .. } => {
            cluster.controller_leader().await
        }
        Fault::CutNameServer { .. } | Fault::ExpireRoutes { .. } => Some("ns".to_owned()),
    };
    let Some(name) = target else {
        return Ok((String::new(), Undo::Nothing));
    };
    let undo = match fault {
        Fault::KillMaster { .. } | Fault::KillSlave { .. } | Fault::KillControllerLeader { .. } => {
            off_worker(|| cluster.kill(&name))?;
            Undo::Restart(name.clone())
        }
        Fault::PauseMaster { .. } => {
            off_worker(|| cluster.pause(&name))?;
            Undo::Resume(name.clone())
        }
        Fault::IsolateMaster { .. }
        | Fault::IsolateSlave { .. }
        | Fault::IsolateControllerLeader { .. } => {
            off_worker(|| net.isolate(&name))?;
            Undo::Heal
        }
        Fault::PartialMaster { .. } => {
            let mut others = cluster.names(Role::Controller);
            others.extend(brokers.iter().filter(|b| **b != name).cloned());
            let others: Vec<&str> = others.iter().map(String::as_str).collect();
            off_worker(|| net.cut(&[name.as_str()], &others))?;
            Undo::Heal
        }
        Fault::CutNameServer { .. } | Fault::ExpireRoutes { .. } => {
            let b: Vec<&str> = brokers.iter().map(String::as_str).collect();
            off_worker(|| net.cut(&["ns"], &b))?;
            if matches!(fault, Fault::ExpireRoutes { .. }) {
                Undo::HealRoutes
            } else {
                Undo::Heal
            }
        }
        Fault::FlapMaster { .. } => {
            off_worker(|| net.isolate(&name))?;
            Undo::Flap(name.clone())
        }
        Fault::CongestMaster {
            kbit, latency_ms, ..
        } => {
            off_worker(|| net.congest(&name, *kbit, *latency_ms))?;
            Undo::Heal
        }
    };
    Ok((name, undo))
}
