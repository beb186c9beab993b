//! The background services that belong to one role: a master runs the delay-level, timer,
//! POP revive and transaction-check services; a slave copies its master's metadata. A
//! classic broker starts one set at start-up; in controller mode the
//! [`crate::replicas::RoleSwitcher`] stops one set and starts the other on each switch.

use std::sync::Arc;
use std::time::Duration;

use stellmq_remoting::net::ClientConfig;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::BrokerConfig;
use crate::deferred;
use crate::processor::pop::revive::ReviveService;
use crate::registration::Registrar;
use crate::replicas::switch::ServiceStarter;
use crate::slave_sync::SlaveSync;
use crate::state::BrokerState;
use crate::transaction::check::{CheckConfig, TransactionCheckService};

/// A starter of the master-only services of `s`. With `restore_pop` (a slave promoted at
/// runtime) the POP checkpoints are first rebuilt from the replicated revive log, as a
/// master does at start-up.
pub fn master(s: &BrokerState, bc: &BrokerConfig, restore_pop: bool) -> ServiceStarter {
    let persist_every = Duration::from_millis(bc.flush_delay_offset_interval);
    let schedule = s.schedule.clone();
    let timers = s.timers.clone();
    let pop = s.consumption.pop.clone();
    let revive_interval = Duration::from_millis(bc.revive_interval.max(10));
    let check = Arc::new(TransactionCheckService::new(
        s.identity.clone(),
        s.store.clone(),
        s.offsets.clone(),
        s.producers.clone(),
        s.topics.clone(),
        s.resolved_transactions.clone(),
        CheckConfig {
            timeout_ms: bc.transaction_time_out,
            check_max: bc.transaction_check_max,
            interval: Duration::from_millis(bc.transaction_check_interval.max(100)),
        },
    ));
    Box::new(move |stop: CancellationToken| -> Vec<JoinHandle<()>> {
        vec![
            tokio::spawn(deferred::run(schedule.clone(), persist_every, stop.clone())),
            tokio::spawn(deferred::run(timers.clone(), persist_every, stop.clone())),
            tokio::spawn(revive(
                pop.clone(),
                revive_interval,
                restore_pop,
                stop.clone(),
            )),
            tokio::spawn(check.clone().run(stop)),
        ]
    })
}

/// Runs the POP revive service, after rebuilding the checkpoints when asked to.
async fn revive(
    core: Arc<crate::processor::pop::PopCore>,
    interval: Duration,
    restore: bool,
    stop: CancellationToken,
) {
    if restore {
        core.ensure_revive_topic();
        let pop = core.clone();
        let restored = tokio::task::spawn_blocking(move || {
            pop.load_orders()
                .map(|()| crate::processor::pop::revive::replay(&pop))
        })
        .await;
        match restored {
            Ok(Ok(replayed)) => tracing::info!(
                event = "POP_RESTORED",
                records = replayed.records,
                in_flight = replayed.in_flight,
                "POP checkpoints rebuilt from the revive log"
            ),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "cannot read consumerOrderInfo.json; POP orderly state starts empty")
            }
            Err(e) => tracing::error!(error = %e, "POP restore failed"),
        }
    }
    ReviveService { core, interval }.run(stop).await;
}

/// A starter of the slave-only services of `s` (metadata sync from the master the
/// registrar knows).
pub fn slave(
    s: &BrokerState,
    registrar: &Arc<Registrar>,
    outbound: ClientConfig,
) -> ServiceStarter {
    let (registrar, topics, groups, offsets, schedule) = (
        registrar.clone(),
        s.topics.clone(),
        s.groups.clone(),
        s.offsets.clone(),
        s.schedule.clone(),
    );
    let auth = s.auth.registry.clone();
    Box::new(move |stop: CancellationToken| -> Vec<JoinHandle<()>> {
        let sync = SlaveSync {
            client: outbound.clone(),
            registrar: registrar.clone(),
            topics: topics.clone(),
            groups: groups.clone(),
            offsets: offsets.clone(),
            schedule: schedule.clone(),
            auth: auth.clone(),
        };
        vec![tokio::spawn(sync.run(stop))]
    })
}
