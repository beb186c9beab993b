//! Which queues this member owns: every subscribed topic's readable queues, all of them in
//! broadcasting mode, this member's share (by the allocation strategy over the group's
//! sorted member list) in clustering mode. A queue gained starts its pull loop at its start
//! offset; a queue lost stops it, stores its offset and gives up its lock.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use stellmq_remoting::protocol::body::{
    fastjson, ConsumerIdList, MessageModel, MessageQueue, TopicRouteData,
};
use stellmq_remoting::protocol::headers::GetConsumerListByGroupRequestHeader;
use stellmq_remoting::protocol::RequestCode;

use super::core::{ConsumerCore, CALL_TIMEOUT};
use super::queue_state::QueueState;
use crate::error::ClientError;
use crate::inbound::OffsetResetNotice;
use crate::request::request;

impl ConsumerCore {
    /// Recomputes which queues this client owns and starts or stops their pull loops.
    pub async fn rebalance(self: &Arc<Self>) {
        let mut wanted: BTreeSet<MessageQueue> = BTreeSet::new();
        for topic in self.subscriptions.topics() {
            let route = match self.routes.fetch(&topic).await {
                Ok(route) => route,
                Err(e) => {
                    tracing::debug!(%topic, error = %e, "no route yet");
                    continue;
                }
            };
            let queues = crate::route::subscribe_queues(&topic, &route);
            let mine = match self.config.message_model {
                MessageModel::Broadcasting => queues,
                MessageModel::Clustering => {
                    let members = self.members(&route).await;
                    if members.is_empty() {
                        continue;
                    }
                    match self
                        .config
                        .allocate
                        .allocate(&self.client_id, &queues, &members)
                    {
                        Ok(mine) => mine,
                        Err(e) => {
                            tracing::warn!(%topic, error = %e, strategy = %self.config.allocate.name(), "cannot allocate queues, keeping the current ones");
                            self.owned_of(&topic)
                        }
                    }
                }
            };
            wanted.extend(mine);
        }
        let current: BTreeSet<MessageQueue> = self.queues.lock().keys().cloned().collect();
        for gone in current.difference(&wanted) {
            self.drop_queue(gone).await;
        }
        for new in wanted.difference(&current) {
            match self.start_offset(new).await {
                Ok(offset) => self.start_queue(new.clone(), offset),
                Err(e) => tracing::warn!(queue = ?new, error = %e, "cannot find a start offset"),
            }
        }
    }

    /// The queues of `topic` this member owns now (kept when the strategy cannot split).
    fn owned_of(&self, topic: &str) -> Vec<MessageQueue> {
        self.queues
            .lock()
            .keys()
            .filter(|q| q.topic == topic)
            .cloned()
            .collect()
    }

    /// Takes queues without a group rebalance (lite pull `assign`).
    pub async fn assign(self: &Arc<Self>, queues: &[MessageQueue]) -> Result<(), ClientError> {
        for mq in queues {
            if self.queue_state(mq).is_some() {
                continue;
            }
            self.routes.fetch(&mq.topic).await?;
            let offset = self.start_offset(mq).await?;
            self.start_queue(mq.clone(), offset);
        }
        Ok(())
    }

    /// The group's members (client ids, sorted) as the first broker of the route that
    /// answers knows them; none if no broker does.
    async fn members(&self, route: &TopicRouteData) -> Vec<String> {
        let header = GetConsumerListByGroupRequestHeader {
            consumer_group: self.config.group.clone(),
        };
        for b in &route.broker_datas {
            for addr in b.broker_addrs.0.values() {
                let request = request(RequestCode::GET_CONSUMER_LIST_BY_GROUP, &header);
                if let Ok(r) = self
                    .instance
                    .remoting
                    .invoke(addr, request, CALL_TIMEOUT)
                    .await
                {
                    if r.code == 0 {
                        if let Ok(list) = fastjson::decode::<ConsumerIdList>(&r.body) {
                            let mut ids = list.consumer_id_list;
                            ids.sort();
                            return ids;
                        }
                    }
                }
            }
        }
        Vec::new()
    }

    /// RESET_CONSUMER_CLIENT_OFFSET: every queue of the notice this member owns restarts at
    /// its new offset; what was pulled from it before is dropped, and its progress is no
    /// longer recorded (so it cannot overwrite the reset). Queues owned by other members are
    /// theirs to reset.
    pub(crate) async fn reset_offsets(self: &Arc<Self>, notice: OffsetResetNotice) {
        for (mq, offset) in notice.offsets {
            let Some(state) = self.queues.lock().remove(&mq) else {
                continue;
            };
            state.dropped.cancel();
            self.offsets.update(&mq, offset, true);
            self.persist_one(&mq).await;
            tracing::info!(queue = ?mq, offset, "consumption restarts at the reset offset");
            self.start_queue(mq, offset);
        }
    }

    fn start_queue(self: &Arc<Self>, mq: MessageQueue, offset: i64) {
        let state = Arc::new(QueueState::new(mq.clone(), offset, self.stop.child_token()));
        self.offsets.update(&mq, offset, true);
        self.queues.lock().insert(mq, state.clone());
        tokio::spawn(super::pull_loop::run(self.clone(), state));
    }

    async fn drop_queue(&self, mq: &MessageQueue) {
        let Some(state) = self.queues.lock().remove(mq) else {
            return;
        };
        state.dropped.cancel();
        self.offsets.update(mq, state.consumed_offset(), false);
        self.persist_one(mq).await;
        if self.sink.orderly() && state.locked.load(Ordering::Acquire) {
            self.lock_call(RequestCode::UNLOCK_BATCH_MQ, mq).await;
        }
        self.offsets.remove(mq);
    }
}
