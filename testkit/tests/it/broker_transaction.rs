//! Transactional messages over TCP: half messages stay invisible until END_TRANSACTION
//! commits them, rollbacks never appear, and unresolved halves are checked with the
//! producer group (CHECK_TRANSACTION_STATE) until answered or given up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_broker::BrokerStartConfig;
use stellmq_remoting::net::{Channel, ClientConfig, InboundHandler, RemotingClient};
use stellmq_remoting::protocol::body::MessageModel;
use stellmq_remoting::protocol::headers::{
    CheckTransactionStateRequestHeader, CommandHeader, EndTransactionRequestHeader,
};
use stellmq_remoting::protocol::message::{id, sys_flag, MessageRecord};
use stellmq_remoting::protocol::{RemotingCommand, RequestCode, ResponseCode};
use stellmq_testkit::{heartbeat, wait_for, Pull, Stack, TIMEOUT as T};
use tokio::sync::mpsc;

const COMMIT: i32 = sys_flag::TRANSACTION_COMMIT_TYPE;
const ROLLBACK: i32 = sys_flag::TRANSACTION_ROLLBACK_TYPE;

/// A half message as the broker acknowledged it.
struct Half {
    uniq: String,
    queue_offset: i64,
    commit_log_offset: i64,
}

async fn send_half(stack: &Stack, topic: &str, uniq: &str, extra: &[(&str, &str)]) -> Half {
    let mut props = vec![("TRAN_MSG", "true"), ("PGROUP", "pg"), ("UNIQ_KEY", uniq)];
    props.extend_from_slice(extra);
    let r = stack.send(topic, 0, uniq, &props).await;
    assert_eq!(r.code, 0, "half stored: {}", r.remark_str());
    let msg_id = r.ext_fields.get("msgId").expect("msgId");
    let (_, commit_log_offset) = id::decode_offset_msg_id(msg_id).expect("offset msg id");
    Half {
        uniq: uniq.to_owned(),
        queue_offset: r
            .ext_fields
            .get("queueOffset")
            .and_then(|v| v.parse().ok())
            .expect("queueOffset"),
        commit_log_offset,
    }
}

fn end_request(half: &Half, group: &str, kind: i32, from_check: bool) -> RemotingCommand {
    let header = EndTransactionRequestHeader {
        producer_group: group.into(),
        tran_state_table_offset: half.queue_offset,
        commit_log_offset: half.commit_log_offset,
        commit_or_rollback: kind,
        from_transaction_check: Some(from_check),
        msg_id: half.uniq.clone(),
        transaction_id: Some(half.uniq.clone()),
        topic: None,
    };
    RemotingCommand::request(RequestCode::END_TRANSACTION, header.to_ext_fields())
}

async fn visible(stack: &Stack, topic: &str, n: usize) -> Vec<MessageRecord> {
    stack.pull_until("tx-reader", topic, 0, n).await
}

/// Whether queue 0 of `topic` has anything at `offset` right now (the caller waits until the
/// store has dispatched what it wants to see or not see).
async fn has_message_at(stack: &Stack, topic: &str, offset: i64) -> bool {
    let r = stack
        .pull(Pull::new("tx-reader", topic, 0, offset).subscribe("*"))
        .await;
    r.code == 0
}

/// The header of a CHECK_TRANSACTION_STATE request.
fn check_header(check: &RemotingCommand) -> CheckTransactionStateRequestHeader {
    CheckTransactionStateRequestHeader::from_ext_fields(&check.ext_fields).expect("header")
}

async fn transaction_stack(tweak: impl FnOnce(&mut BrokerStartConfig)) -> Stack {
    Stack::start_with(|c| {
        c.broker.transaction_time_out = 200;
        c.broker.transaction_check_interval = 200;
        tweak(c);
    })
    .await
}

/// Collects the CHECK_TRANSACTION_STATE requests a producer connection receives.
struct Checks(mpsc::UnboundedSender<RemotingCommand>);

impl InboundHandler for Checks {
    fn on_request(&self, _channel: Channel, request: RemotingCommand, _at: Instant) {
        if request.request_code_typed() == Some(RequestCode::CHECK_TRANSACTION_STATE) {
            let _ = self.0.send(request);
        }
    }
}

/// A producer of group `pg` connected to the broker, and the checks it gets.
async fn producer(stack: &Stack) -> (RemotingClient, mpsc::UnboundedReceiver<RemotingCommand>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let client = RemotingClient::with_handler(ClientConfig::default(), Arc::new(Checks(tx)));
    let heartbeat = heartbeat("tx-producer@1", "tx-unused", &[], MessageModel::Clustering);
    let r = client
        .invoke(stack.addr(), heartbeat, T)
        .await
        .expect("heartbeat");
    assert_eq!(r.code, 0);
    (client, rx)
}

async fn next_check(rx: &mut mpsc::UnboundedReceiver<RemotingCommand>) -> RemotingCommand {
    tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("a transaction check arrives")
        .expect("channel open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_makes_a_half_visible_and_rollback_never_does() {
    let stack = transaction_stack(|c| c.broker.transaction_time_out = 60_000).await;
    let committed = send_half(&stack, "TxTopic", "TX-COMMIT", &[("KEYS", "k1")]).await;
    let rolled_back = send_half(&stack, "TxTopic", "TX-ROLLBACK", &[]).await;
    // Dispatched first, so that a visible half would be found.
    assert!(stack.broker().store().wait_dispatched(T));
    assert!(
        !has_message_at(&stack, "TxTopic", 0).await,
        "halves are invisible before their end"
    );

    let wrong_group = stack
        .call(end_request(&committed, "other-group", COMMIT, false))
        .await;
    assert_eq!(wrong_group.code, ResponseCode::SYSTEM_ERROR.as_i32());
    assert!(wrong_group.remark_str().contains("producer group wrong"));
    let mut wrong_offset = end_request(&committed, "pg", COMMIT, false);
    wrong_offset.ext_fields.insert("tranStateTableOffset", "99");
    let r = stack.call(wrong_offset).await;
    assert!(
        r.remark_str().contains("offset wrong"),
        "{}",
        r.remark_str()
    );

    assert_eq!(
        stack
            .call(end_request(&committed, "pg", COMMIT, false))
            .await
            .code,
        0
    );
    assert_eq!(
        stack
            .call(end_request(&rolled_back, "pg", ROLLBACK, false))
            .await
            .code,
        0
    );
    // A repeated answer changes nothing.
    assert_eq!(
        stack
            .call(end_request(&committed, "pg", COMMIT, true))
            .await
            .code,
        0
    );

    let got = visible(&stack, "TxTopic", 1).await;
    assert_eq!(got.len(), 1);
    assert!(
        has_message_at(&stack, "TxTopic", 0).await,
        "has_message_at sees the committed message"
    );
    assert!(stack.broker().store().wait_dispatched(T));
    assert!(
        !has_message_at(&stack, "TxTopic", 1).await,
        "only the committed message, once"
    );
    let msg = &got[0];
    assert_eq!(&msg.body[..], b"TX-COMMIT");
    assert_eq!(msg.head.queue_id, 0);
    assert_eq!(
        sys_flag::transaction_type(msg.head.sys_flag),
        sys_flag::TRANSACTION_COMMIT_TYPE
    );
    assert_eq!(
        msg.head.prepared_transaction_offset,
        committed.commit_log_offset
    );
    assert_eq!(msg.properties.get("KEYS"), Some("k1"));
    assert_eq!(msg.properties.get("UNIQ_KEY"), Some("TX-COMMIT"));
    assert!(msg.properties.get("TRAN_MSG").is_none());
    assert!(msg.properties.get("REAL_TOPIC").is_none());
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unresolved_halves_are_checked_with_the_producer_group() {
    let stack = transaction_stack(|_| {}).await;
    let (producer, mut checks) = producer(&stack).await;
    let half = send_half(&stack, "TxCheck", "TX-CHECKED", &[]).await;

    let check = next_check(&mut checks).await;
    let h = CheckTransactionStateRequestHeader::from_ext_fields(&check.ext_fields).expect("header");
    assert_eq!(h.msg_id.as_deref(), Some("TX-CHECKED"));
    assert_eq!(h.transaction_id.as_deref(), Some("TX-CHECKED"));
    assert!(
        h.commit_log_offset > half.commit_log_offset,
        "the check names the copy put back at the end of the half queue"
    );
    let (body, _) = MessageRecord::decode(&check.body, true).expect("half in the body");
    assert_eq!(body.topic, "TxCheck", "real topic restored");
    assert_eq!(body.head.physical_offset, h.commit_log_offset);
    assert_eq!(body.head.queue_offset, h.tran_state_table_offset);
    assert_eq!(body.properties.get("TRANSACTION_CHECK_TIMES"), Some("1"));

    let copy = Half {
        uniq: "TX-CHECKED".into(),
        queue_offset: h.tran_state_table_offset,
        commit_log_offset: h.commit_log_offset,
    };
    let r = producer
        .invoke(stack.addr(), end_request(&copy, "pg", COMMIT, true), T)
        .await
        .expect("end answered");
    assert_eq!(r.code, 0, "{}", r.remark_str());
    let got = visible(&stack, "TxCheck", 1).await;
    assert_eq!(got.len(), 1);
    // Resolved: no more checks. A half sent now is checked by a walk of the half queue that
    // has passed the resolved one, and checks arrive in order: every check about the resolved
    // transaction would come before the new half's.
    send_half(&stack, "TxCheck", "TX-LATER", &[]).await;
    loop {
        let h = check_header(&next_check(&mut checks).await);
        if h.msg_id.as_deref() == Some("TX-LATER") {
            break;
        }
        assert!(
            h.tran_state_table_offset < copy.queue_offset,
            "asked again about a resolved transaction"
        );
    }
    producer.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_checked_too_often_is_given_up() {
    let stack = transaction_stack(|c| c.broker.transaction_check_max = 2).await;
    let (producer, mut checks) = producer(&stack).await;
    send_half(&stack, "TxGiveUp", "TX-SILENT", &[]).await;
    for _ in 0..2 {
        next_check(&mut checks).await;
    }
    let broker = stack.broker();
    wait_for("the half is given up", Duration::from_secs(10), || {
        broker
            .store()
            .max_offset_in_queue("TRANS_CHECK_MAX_TIME_TOPIC", 0)
            > 0
    })
    .await;
    // A half sent now is checked by a walk that has passed the given-up one, and checks
    // arrive in order: a check after giving up would come before the new half's.
    send_half(&stack, "TxGiveUp", "TX-LATER", &[]).await;
    let h = check_header(&next_check(&mut checks).await);
    assert_eq!(
        h.msg_id.as_deref(),
        Some("TX-LATER"),
        "no check after giving up"
    );
    assert!(stack.broker().store().wait_dispatched(T));
    assert!(!has_message_at(&stack, "TxGiveUp", 0).await);
    producer.shutdown().await;
    stack.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_messages_can_be_refused() {
    let stack = transaction_stack(|c| c.broker.reject_transaction_message = true).await;
    let r = stack
        .send(
            "TxRefused",
            0,
            "x",
            &[("TRAN_MSG", "true"), ("PGROUP", "pg")],
        )
        .await;
    assert_eq!(r.code, ResponseCode::NO_PERMISSION.as_i32());
    assert!(r.remark_str().contains("transaction message is forbidden"));
    stack.stop().await;
}

/// Resolution is in the CommitLog (op records), so a restarted broker asks only about
/// what is still open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_only_open_transactions_are_checked() {
    // No checks before the restart: halves are "young" for a minute.
    let mut stack = transaction_stack(|c| c.broker.transaction_time_out = 60_000).await;
    let done = send_half(&stack, "TxRestart", "TX-DONE", &[]).await;
    send_half(&stack, "TxRestart", "TX-OPEN", &[]).await;
    assert_eq!(
        stack
            .call(end_request(&done, "pg", ROLLBACK, false))
            .await
            .code,
        0
    );

    stack
        .restart_broker(|c| {
            c.broker.transaction_time_out = 200;
            c.broker.transaction_check_interval = 200;
        })
        .await;
    let (producer, mut checks) = producer(&stack).await;
    let check = next_check(&mut checks).await;
    let h = check_header(&check);
    assert_eq!(h.msg_id.as_deref(), Some("TX-OPEN"));
    // The open transaction stays open, so a later walk asks about it again: until its second
    // check, nothing else is asked.
    loop {
        let more = next_check(&mut checks).await;
        let h = check_header(&more);
        assert_eq!(
            h.msg_id.as_deref(),
            Some("TX-OPEN"),
            "a rolled back transaction was checked"
        );
        let (half, _) = MessageRecord::decode(&more.body, true).expect("half in the body");
        if half.properties.get("TRANSACTION_CHECK_TIMES") == Some("2") {
            break;
        }
    }
    producer.shutdown().await;
    stack.stop().await;
}
