//! Transactional sends (RocketMQ's TransactionMQProducer): a half message is stored
//! invisibly, the local transaction runs, and END_TRANSACTION commits or rolls it back. A
//! transaction left unknown is settled later by the broker asking the producer group
//! (CHECK_TRANSACTION_STATE), which calls the checker given at start.

use std::collections::HashSet;
use std::sync::Arc;

use parking_lot::Mutex;
use stellmq_remoting::net::Channel;
use stellmq_remoting::protocol::body::MessageQueue;
use stellmq_remoting::protocol::headers::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader,
};
use stellmq_remoting::protocol::message::{id, property, sys_flag, MessageRecord};
use stellmq_remoting::protocol::RequestCode;

use crate::error::ClientError;
use crate::inbound::TransactionCheck;
use crate::message::{Message, ReceivedMessage, SendResult, SendStatus};
use crate::producer::{Producer, ProducerConfig};
use crate::request::request;

/// What a local transaction (or a check of it) concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionState {
    Commit,
    Rollback,
    /// Not known yet: the broker will ask again later.
    Unknown,
}

impl TransactionState {
    /// The `commitOrRollback` value of END_TRANSACTION.
    fn wire(self) -> i32 {
        match self {
            TransactionState::Commit => sys_flag::TRANSACTION_COMMIT_TYPE,
            TransactionState::Rollback => sys_flag::TRANSACTION_ROLLBACK_TYPE,
            TransactionState::Unknown => sys_flag::TRANSACTION_NOT_TYPE,
        }
    }

    /// Java's `LocalTransactionState` name, as trace records carry it.
    fn java_name(self) -> &'static str {
        match self {
            TransactionState::Commit => "COMMIT_MESSAGE",
            TransactionState::Rollback => "ROLLBACK_MESSAGE",
            TransactionState::Unknown => "UNKNOW",
        }
    }
}

/// Answers the broker's question about a transaction it has not seen ended.
pub type TransactionChecker = dyn Fn(&ReceivedMessage) -> TransactionState + Send + Sync;

/// A transactional send's outcome: where the half landed and what the local transaction said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionSendResult {
    pub send: SendResult,
    pub local_state: TransactionState,
}

/// A started transactional producer.
pub struct TransactionProducer {
    producer: Producer,
    /// Brokers this producer has announced itself to (checks go to announced producers).
    announced: Mutex<HashSet<String>>,
}

impl TransactionProducer {
    /// Starts a producer whose group's unresolved transactions `checker` settles.
    pub async fn start(
        config: ProducerConfig,
        checker: impl Fn(&ReceivedMessage) -> TransactionState + Send + Sync + 'static,
    ) -> Result<Self, ClientError> {
        let producer = Producer::start(config).await?;
        let group = producer.group().to_owned();
        let answer = answer_checks(producer.clone(), Arc::new(checker));
        producer.instance().register_checker(&group, answer);
        Ok(Self {
            producer,
            announced: Mutex::new(HashSet::new()),
        })
    }

    /// Sends `msg` as a half message, runs `local` and ends the transaction with its answer
    /// (a half the broker did not store cleanly is rolled back without running `local`).
    pub async fn send_in_transaction(
        &self,
        msg: Message,
        local: impl FnOnce(&Message, &SendResult) -> TransactionState,
    ) -> Result<TransactionSendResult, ClientError> {
        let mut msg = msg
            .with_property(property::TRAN_MSG, "true")
            .with_property(property::PGROUP, self.producer.group());
        // RocketMQ ignores delay levels of transactional messages.
        msg.remove_property(property::DELAY);
        let send = self.producer.send(msg.clone()).await?;
        let local_state = if send.status == SendStatus::SendOk {
            local(&msg, &send)
        } else {
            TransactionState::Rollback
        };
        self.end(&msg, &send, local_state).await?;
        Ok(TransactionSendResult { send, local_state })
    }

    async fn end(
        &self,
        msg: &Message,
        send: &SendResult,
        state: TransactionState,
    ) -> Result<(), ClientError> {
        let addr = self.broker_of(&send.queue)?;
        if self.announced.lock().insert(addr.clone()) {
            // The broker asks only producers it knows about unresolved transactions.
            self.producer.heartbeat_now().await;
        }
        let (_, commit_log_offset) = id::decode_offset_msg_id(&send.offset_msg_id)?;
        let header = EndTransactionRequestHeader {
            producer_group: self.producer.group().to_owned(),
            tran_state_table_offset: send.queue_offset,
            commit_log_offset,
            commit_or_rollback: state.wire(),
            from_transaction_check: Some(false),
            msg_id: send.msg_id.clone(),
            transaction_id: Some(send.msg_id.clone()),
            topic: None,
        };
        let request = request(RequestCode::END_TRANSACTION, &header);
        self.producer.invoke_oneway(&addr, request).await?;
        trace_end(&self.producer, msg, &addr, send, state, false);
        Ok(())
    }

    fn broker_of(&self, queue: &MessageQueue) -> Result<String, ClientError> {
        self.producer
            .master_addr(&queue.broker_name)
            .ok_or_else(|| {
                ClientError::Invalid(format!("no master known for broker {}", queue.broker_name))
            })
    }

    pub fn producer(&self) -> &Producer {
        &self.producer
    }

    pub async fn shutdown(self) {
        let instance = self.producer.instance();
        instance.unregister_checker(self.producer.group());
        self.producer.shutdown().await;
    }
}

/// What answers the broker's CHECK_TRANSACTION_STATE for producer `group`: runs `checker` on
/// the half and answers with END_TRANSACTION (`fromTransactionCheck=true`) on the connection
/// the check came on.
fn answer_checks(producer: Producer, checker: Arc<TransactionChecker>) -> Arc<TransactionCheck> {
    Arc::new(
        move |channel: Channel, h: CheckTransactionStateRequestHeader, record: MessageRecord| {
            let (producer, checker) = (producer.clone(), checker.clone());
            tokio::spawn(async move {
                let msg = ReceivedMessage::pushed(record);
                let uniq = msg.msg_id();
                let traced = producer
                    .tracer()
                    .is_some()
                    .then(|| checked_half(&msg, &channel));
                let state = tokio::task::spawn_blocking(move || checker(&msg))
                    .await
                    .unwrap_or(TransactionState::Unknown);
                if let Some((half, addr, result)) = traced {
                    trace_end(&producer, &half, &addr, &result, state, true);
                }
                let header = EndTransactionRequestHeader {
                    producer_group: producer.group().to_owned(),
                    tran_state_table_offset: h.tran_state_table_offset,
                    commit_log_offset: h.commit_log_offset,
                    commit_or_rollback: state.wire(),
                    from_transaction_check: Some(true),
                    msg_id: h.msg_id.unwrap_or(uniq),
                    transaction_id: h.transaction_id,
                    topic: None,
                };
                let mut end = request(RequestCode::END_TRANSACTION, &header);
                end.mark_oneway();
                if !channel.try_send(end) {
                    tracing::debug!("could not answer a transaction check");
                }
            });
        },
    )
}

/// Records a transaction's end, with `enable_msg_trace`.
fn trace_end(
    producer: &Producer,
    msg: &Message,
    addr: &str,
    send: &SendResult,
    state: TransactionState,
    from_check: bool,
) {
    if let Some(tracer) = producer.tracer() {
        tracer.append(crate::trace::transaction_ended(
            producer.namespace(),
            producer.group(),
            msg,
            addr,
            send,
            state.java_name(),
            from_check,
        ));
    }
}

/// What a trace of a checked half names: its topic, tags, keys and id, and the broker asking.
fn checked_half(half: &ReceivedMessage, channel: &Channel) -> (Message, String, SendResult) {
    let mut msg = Message::new(half.topic().to_owned(), half.body.clone());
    for key in [property::TAGS, property::KEYS] {
        if let Some(v) = half.record.properties.get(key) {
            msg = msg.with_property(key, v);
        }
    }
    let result = SendResult {
        status: SendStatus::SendOk,
        msg_id: half.msg_id(),
        offset_msg_id: String::new(),
        queue: half.queue.clone(),
        queue_offset: half.queue_offset(),
        region_id: half
            .record
            .properties
            .get(property::MSG_REGION)
            .unwrap_or("")
            .to_owned(),
        trace_on: true,
        recall_handle: None,
    };
    (msg, channel.peer().to_string(), result)
}
