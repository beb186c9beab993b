//! Sends that measure: `sendMsgStatus` (messages to a broker's own topic, each with its round
//! trip) and `checkMsgSendRT` (messages spread over a topic's queues, and the average round
//! trip).
#![allow(clippy::print_stdout, clippy::print_literal)] // CLI output; header rows are literals

use std::time::Instant;

use stellmq_client::{AdminClient, ClientError, Message};

use super::session::{send_result_text, Session};

#[derive(clap::Args, Debug)]
pub struct SendMsgStatus {
    /// Broker name: messages go to the topic every broker has under its own name.
    #[arg(short = 'b', long = "brokerName")]
    broker_name: String,
    #[arg(short = 's', long = "messageSize", default_value_t = 128)]
    size: usize,
    #[arg(short = 'c', long = "count", default_value_t = 50)]
    count: usize,
}

/// `sendMsgStatus`: a 16-byte warm-up send, then `count` sends of `size` bytes.
pub async fn send_msg_status(session: &Session, a: SendMsgStatus) -> Result<(), ClientError> {
    let producer = session.producer("PID_SMSC").await?;
    let result = send_each(&producer, &a).await;
    producer.shutdown().await;
    result
}

async fn send_each(
    producer: &stellmq_client::Producer,
    a: &SendMsgStatus,
) -> Result<(), ClientError> {
    producer
        .send(Message::new(a.broker_name.clone(), "a".repeat(16)))
        .await?;
    for _ in 0..a.count {
        let started = Instant::now();
        let result = producer
            .send(Message::new(a.broker_name.clone(), "a".repeat(a.size)))
            .await?;
        crate::outln!(
            "rt={}ms, SendResult={}",
            started.elapsed().as_millis(),
            send_result_text(&result)
        );
    }
    Ok(())
}

#[derive(clap::Args, Debug)]
pub struct CheckMsgSendRt {
    #[arg(short = 't', long = "topic")]
    topic: String,
    #[arg(short = 'a', long = "amount", default_value_t = 100)]
    amount: usize,
    #[arg(short = 's', long = "size", default_value_t = 128)]
    size: usize,
}

/// `checkMsgSendRT`: message `i` goes to queue `i % queues`; each send's broker, queue,
/// outcome and round trip, then the average round trip without the first (warm-up) send.
pub async fn check_msg_send_rt(
    admin: &AdminClient,
    session: &Session,
    a: CheckMsgSendRt,
) -> Result<(), ClientError> {
    // The route must exist: a failed send below is reported, not fatal.
    admin.topic_route(&a.topic).await?;
    let producer = session
        .producer(&stellmq_client::admin::now_ms().to_string())
        .await?;
    crate::outln!(
        "{:<32}  {:<4}  {:<20}    {}",
        "#Broker Name",
        "#QID",
        "#Send Result",
        "#RT"
    );
    let body = "a".repeat(a.size);
    let mut total_ms = 0u128;
    for i in 0..a.amount {
        let started = Instant::now();
        let sent = producer
            .send_with_selector(Message::new(a.topic.clone(), body.clone()), |queues| {
                i % queues.len().max(1)
            })
            .await;
        let rt = started.elapsed().as_millis();
        if i != 0 {
            total_ms += rt;
        }
        let (broker, queue) = sent
            .as_ref()
            .map(|r| (r.queue.broker_name.clone(), r.queue.queue_id.to_string()))
            .unwrap_or_default();
        crate::outln!(
            "{:<32}  {:<4}  {:<20}    {}",
            broker,
            queue,
            sent.is_ok(),
            rt
        );
    }
    producer.shutdown().await;
    let avg = total_ms as f64 / a.amount.saturating_sub(1).max(1) as f64;
    crate::outln!("Avg RT: {avg:.2}");
    Ok(())
}
