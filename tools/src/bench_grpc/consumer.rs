//! `mqbench grpc-consumer`: a SimpleConsumer through mqproxy. Telemetry settings first (as
//! RocketMQ 5 clients do), then `-w` workers, each a loop of one ReceiveMessage long poll
//! (`-b` messages at most, invisible for 30 s) and one AckMessage for everything it brought;
//! the remoting consumer's report lines (consume TPS, born-to-received latency).

use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_client::admin::now_ms;
use stellmq_grpc_api::pb::receive_message_response::Content;
use stellmq_grpc_api::pb::{
    settings, telemetry_command, AckMessageEntry, AckMessageRequest, ClientType, Code,
    FilterExpression, FilterType, Message, MessageQueue, ReceiveMessageRequest, Settings,
    Subscription, SubscriptionEntry, TelemetryCommand,
};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_stream::wrappers::ReceiverStream;

use super::{
    check, resource, timestamp_ms, Client, ConnectionArgs, Connections, FirstFailure,
    GrpcBenchError,
};
use crate::bench_consumer::{watch_until, ConsumeStats};

/// How long a received message stays invisible to other consumers.
const INVISIBLE: Duration = Duration::from_secs(30);
/// How long the proxy may hold a receive that finds nothing (its minimum is 5 s).
const LONG_POLLING: Duration = Duration::from_secs(5);
/// The request timeout the settings announce (RocketMQ 5 clients' default).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// How long the Telemetry settings may take to be answered.
const SETTINGS_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(clap::Args, Debug, Clone)]
pub struct GrpcConsumerArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Consumer group.
    #[arg(short = 'g', long = "group", default_value = "benchmark_consumer")]
    pub group: String,
    /// Workers, each with one ReceiveMessage (then its AckMessage) in flight.
    #[arg(short = 'w', long = "threadCount", default_value_t = 8)]
    pub threads: usize,
    /// Messages per ReceiveMessage at most (the proxy serves up to 32).
    #[arg(short = 'b', long = "batchSize", default_value_t = 32)]
    pub batch: i32,
    /// Stop after this many messages (0 = until --duration).
    #[arg(short = 'q', long = "messageQuantity", default_value_t = 0)]
    pub quantity: u64,
    /// Seconds to run (0 = only at --messageQuantity).
    #[arg(long = "duration", default_value_t = 60)]
    pub duration: u64,
    /// Seconds between report lines.
    #[arg(long = "report-interval", default_value_t = 10)]
    pub report_interval: u64,
    /// Milliseconds between report lines (RocketMQ's `-ri`; overrides --report-interval).
    #[arg(long = "reportInterval")]
    pub report_interval_ms: Option<u64>,
}

impl GrpcConsumerArgs {
    pub fn validate(&self) -> Result<(), String> {
        self.connection.endpoint_list()?;
        if self.duration == 0 && self.quantity == 0 {
            return Err("give --duration or -q/--messageQuantity (or both)".into());
        }
        if !(1..=32).contains(&self.batch) {
            return Err(format!("-b/--batchSize {} is not in 1..32", self.batch));
        }
        Ok(())
    }

    pub fn report_every_ms(&self) -> u64 {
        self.report_interval_ms
            .unwrap_or(self.report_interval.saturating_mul(1000))
            .max(100)
    }

    pub fn start_line(&self) -> String {
        format!(
            "topic: {}, threadCount {}, group: {}, batchSize: {}, invisibleDuration: {}s, endpoints: {}, connections: {}, reportInterval: {}, messageQuantity: {}, duration: {}s",
            self.topic,
            self.threads.max(1),
            self.group,
            self.batch,
            INVISIBLE.as_secs(),
            self.connection.endpoints,
            self.connection.connections.max(1),
            self.report_every_ms(),
            self.quantity,
            self.duration,
        )
    }

    fn settings(&self) -> Settings {
        Settings {
            client_type: Some(ClientType::SimpleConsumer as i32),
            request_timeout: Some(proto_duration(REQUEST_TIMEOUT)),
            pub_sub: Some(settings::PubSub::Subscription(Subscription {
                group: resource(&self.group),
                subscriptions: vec![SubscriptionEntry {
                    topic: resource(&self.topic),
                    expression: Some(match_all()),
                }],
                receive_batch_size: Some(self.batch),
                long_polling_timeout: Some(proto_duration(LONG_POLLING)),
                ..Default::default()
            })),
            ..Default::default()
        }
    }
}

fn proto_duration(d: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: d.as_secs() as i64,
        nanos: d.subsec_nanos() as i32,
    }
}

fn match_all() -> FilterExpression {
    FilterExpression {
        r#type: FilterType::Tag as i32,
        expression: "*".into(),
    }
}

/// Runs the benchmark: the start line, `Consumer Started.`, a line every report interval and
/// the `[Complete]` line once `--duration` has passed or `-q` messages have arrived.
pub async fn run(a: GrpcConsumerArgs) -> Result<(), GrpcBenchError> {
    a.validate().map_err(GrpcBenchError::Invalid)?;
    crate::outln!("{}", a.start_line());
    let connections = Arc::new(Connections::open(&a.connection).await?);
    // Held until the end: the proxy keeps the settings while the stream is open.
    let telemetry = send_settings(&connections, a.settings()).await?;
    let stats = Arc::new(ConsumeStats::default());
    let worker = Arc::new(Worker {
        connections: connections.clone(),
        stats: stats.clone(),
        topic: a.topic.clone(),
        group: a.group.clone(),
        batch: a.batch,
        receive_failure: FirstFailure::new(),
        ack_failure: FirstFailure::new(),
    });
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for i in 0..a.threads.max(1) {
        let (worker, client) = (worker.clone(), connections.client(i));
        tasks.spawn(async move { worker.run(client).await });
    }
    crate::outln!("Consumer Started.");
    watch_until(a.quantity, a.duration, a.report_every_ms(), &stats).await;
    let elapsed = started.elapsed();
    // Receives held by the proxy would keep workers waiting: drop them (the proxy makes
    // what it could not deliver visible again).
    tasks.shutdown().await;
    drop(telemetry);
    crate::outln!("{}", stats.complete_line(elapsed));
    Ok(())
}

/// The open Telemetry stream: our side of it and the task reading the proxy's side.
struct Telemetry {
    _commands: mpsc::Sender<TelemetryCommand>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Opens Telemetry and sends the settings; fails with the proxy's reason if refused.
async fn send_settings(
    connections: &Connections,
    settings: Settings,
) -> Result<Telemetry, GrpcBenchError> {
    let (commands, rx) = mpsc::channel(4);
    let first = TelemetryCommand {
        status: None,
        command: Some(telemetry_command::Command::Settings(settings)),
    };
    // The channel has room and its receiver is alive: this cannot fail.
    let _ = commands.send(first).await;
    let request = connections.request_without_deadline(ReceiverStream::new(rx));
    let opened = tokio::time::timeout(SETTINGS_TIMEOUT, async {
        let mut answers = connections
            .client(0)
            .telemetry(request)
            .await
            .map_err(|s| GrpcBenchError::rpc("Telemetry", s))?
            .into_inner();
        let answer = answers
            .message()
            .await
            .map_err(|s| GrpcBenchError::rpc("Telemetry", s))?;
        Ok::<_, GrpcBenchError>((answers, answer))
    })
    .await
    .map_err(|_| GrpcBenchError::Invalid("Telemetry: the settings were not answered".into()))?;
    let (mut answers, answer) = opened?;
    let Some(answer) = answer else {
        return Err(GrpcBenchError::Invalid(
            "Telemetry: the proxy closed the stream without answering the settings".into(),
        ));
    };
    check(answer.status.as_ref()).map_err(|(code, message)| GrpcBenchError::Refused {
        what: "Telemetry settings",
        code,
        message,
    })?;
    // Whatever the proxy sends later (nothing a benchmark acts on) is read and dropped.
    let reader = tokio::spawn(async move { while let Ok(Some(_)) = answers.message().await {} });
    Ok(Telemetry {
        _commands: commands,
        reader,
    })
}

/// What every worker shares.
struct Worker {
    connections: Arc<Connections>,
    stats: Arc<ConsumeStats>,
    topic: String,
    group: String,
    batch: i32,
    receive_failure: FirstFailure,
    ack_failure: FirstFailure,
}

impl Worker {
    async fn run(&self, mut client: Client) {
        loop {
            match self.receive(&mut client).await {
                Ok(messages) if !messages.is_empty() => self.ack(&mut client, messages).await,
                Ok(_) => {}
                Err(pause) => tokio::time::sleep(pause).await,
            }
        }
    }

    /// One ReceiveMessage: the messages it brought (counted), or how long to wait after a
    /// failure.
    async fn receive(&self, client: &mut Client) -> Result<Vec<Message>, Duration> {
        let request = ReceiveMessageRequest {
            group: resource(&self.group),
            message_queue: Some(MessageQueue {
                topic: resource(&self.topic),
                id: -1,
                ..Default::default()
            }),
            filter_expression: Some(match_all()),
            batch_size: self.batch,
            invisible_duration: Some(proto_duration(INVISIBLE)),
            auto_renew: false,
            long_polling_timeout: Some(proto_duration(LONG_POLLING)),
            attempt_id: None,
        };
        let timeout = LONG_POLLING + REQUEST_TIMEOUT * 2;
        let began = Instant::now();
        let failed = |what: String| {
            self.receive_failure.report(|| what);
            Duration::from_millis(200)
        };
        let mut stream = match client
            .receive_message(self.connections.request(request, timeout))
            .await
        {
            Ok(answer) => answer.into_inner(),
            Err(s) => return Err(failed(format!("ReceiveMessage failed: {s}"))),
        };
        let mut messages = Vec::new();
        loop {
            match stream.message().await {
                Ok(Some(answer)) => match answer.content {
                    Some(Content::Status(status)) => {
                        if let Err((code, message)) = check(Some(&status)) {
                            return Err(match Code::try_from(status.code) {
                                // Nothing new (after the long poll, or at once): poll again.
                                Ok(Code::MessageNotFound) => {
                                    Duration::from_millis(20).saturating_sub(began.elapsed())
                                }
                                Ok(Code::TooManyRequests) => Duration::from_millis(50),
                                _ => {
                                    failed(format!("ReceiveMessage refused with {code}: {message}"))
                                }
                            });
                        }
                    }
                    Some(Content::Message(m)) => messages.push(m),
                    Some(Content::DeliveryTimestamp(_)) | None => {}
                },
                Ok(None) => break,
                Err(s) if messages.is_empty() => {
                    return Err(failed(format!("ReceiveMessage stream failed: {s}")))
                }
                Err(_) => break,
            }
        }
        let now = now_ms();
        self.stats.record(
            now,
            messages.iter().map(|m| {
                let system = m.system_properties.as_ref();
                let stamp = |t: Option<&prost_types::Timestamp>| t.map_or(now, timestamp_ms);
                (
                    stamp(system.and_then(|s| s.born_timestamp.as_ref())),
                    stamp(system.and_then(|s| s.store_timestamp.as_ref())),
                )
            }),
        );
        Ok(messages)
    }

    /// One AckMessage for everything a receive brought; what is not acked counts as failed.
    async fn ack(&self, client: &mut Client, messages: Vec<Message>) {
        let entries: Vec<AckMessageEntry> = messages
            .into_iter()
            .filter_map(|m| m.system_properties)
            .map(|s| AckMessageEntry {
                message_id: s.message_id,
                receipt_handle: s.receipt_handle.unwrap_or_default(),
                lite_topic: None,
            })
            .collect();
        let count = entries.len();
        let request = AckMessageRequest {
            group: resource(&self.group),
            topic: resource(&self.topic),
            entries,
        };
        let failed = match client
            .ack_message(self.connections.request(request, REQUEST_TIMEOUT * 2))
            .await
        {
            Ok(answer) => {
                let answer = answer.into_inner();
                match check(answer.status.as_ref()) {
                    Ok(()) => 0,
                    Err((code, message)) => {
                        self.ack_failure
                            .report(|| format!("AckMessage refused with {code}: {message}"));
                        let refused = answer
                            .entries
                            .iter()
                            .filter(|e| check(e.status.as_ref()).is_err())
                            .count();
                        if answer.entries.is_empty() {
                            count
                        } else {
                            refused
                        }
                    }
                }
            }
            Err(s) => {
                self.ack_failure
                    .report(|| format!("AckMessage failed: {s}"));
                count
            }
        };
        for _ in 0..failed {
            self.stats.fail();
        }
    }
}
