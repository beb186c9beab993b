//! Background work of a controller: following its own leadership (the liveness table is the
//! leader's alone) and, on the leader, electing new masters for sets whose master stopped
//! heartbeating.

use std::sync::Arc;
use std::time::Duration;

use openraft::ServerState;
use stellmq_remoting::protocol::ResponseCode;
use tokio_util::sync::CancellationToken;

use crate::elect::ElectRequest;
use crate::node::ControllerNode;
use crate::processor::elect_and_notify;

/// Starts or stops the liveness grace period whenever this controller gains or loses leadership.
pub async fn follow_leadership(node: Arc<ControllerNode>, stop: CancellationToken) {
    let mut metrics = node.raft.metrics();
    let mut leading: Option<u64> = None;
    loop {
        let (state, term) = {
            let m = metrics.borrow_and_update();
            (m.state, m.current_term)
        };
        let now_leading = (state == ServerState::Leader).then_some(term);
        if now_leading != leading {
            node.liveness.reset(now_leading.is_some());
            match now_leading {
                Some(term) => {
                    tracing::info!(term, node = %node.self_peer.name, "CONTROLLER_BECAME_LEADER")
                }
                None if leading.is_some() => {
                    tracing::info!(node = %node.self_peer.name, "CONTROLLER_LOST_LEADERSHIP")
                }
                None => {}
            }
            leading = now_leading;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            changed = metrics.changed() => if changed.is_err() { return },
        }
    }
}

/// Every `scanNotActiveBrokerInterval`, on the leader: re-elects where the master is gone.
pub async fn scan_inactive_masters(node: Arc<ControllerNode>, stop: CancellationToken) {
    loop {
        let interval =
            Duration::from_millis(node.config.read().scan_not_active_broker_interval.max(10));
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        if node.is_leader() {
            for broker_name in sets_needing_election(&node) {
                reelect(&node, &broker_name).await;
            }
        }
    }
}

/// Sets whose master is not alive while another member still heartbeats.
fn sets_needing_election(node: &ControllerNode) -> Vec<String> {
    node.with_state(|state| {
        state
            .broker_sets
            .values()
            .filter(|set| {
                set.master_broker_id
                    .is_some_and(|m| !node.liveness.is_alive(&set.broker_name, m))
                    && set
                        .brokers
                        .keys()
                        .any(|id| node.liveness.is_heard(&set.broker_name, *id))
            })
            .map(|set| set.broker_name.clone())
            .collect()
    })
}

async fn reelect(node: &Arc<ControllerNode>, broker_name: &str) {
    let (retries, unclean) = {
        let config = node.config.read();
        (
            config.elect_master_max_retry_count.max(1),
            config.enable_elect_unclean_master,
        )
    };
    let request = ElectRequest {
        broker_id: None,
        designate: false,
        unclean,
    };
    for attempt in 1..=retries {
        match elect_and_notify(node, broker_name, request).await {
            Ok(outcome) => {
                tracing::info!(broker_name, code = %outcome.code, master = ?outcome.header.master_broker_id, "CONTROLLER_REELECTION_DONE");
                return;
            }
            Err(e)
                if e.code == ResponseCode::CONTROLLER_FENCED_MASTER_EPOCH && attempt < retries =>
            {
                continue
            }
            Err(e) => {
                tracing::warn!(broker_name, attempt, code = %e.code, remark = %e.remark, "CONTROLLER_REELECTION_FAILED");
                return;
            }
        }
    }
}
