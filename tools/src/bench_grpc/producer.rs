//! `mqbench grpc-producer`: `-w` workers, each with one unary SendMessage in flight (one
//! message, or `-b` messages per call), ids made as RocketMQ 5 clients make them; the
//! remoting producer's report lines.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use stellmq_grpc_api::pb::{
    Message, MessageType, QueryRouteRequest, SendMessageRequest, SystemProperties,
};
use tokio::task::JoinSet;

use super::{
    check, now_timestamp, resource, Client, ConnectionArgs, Connections, FirstFailure,
    GrpcBenchError, MessageIds,
};
use crate::send_stats::SendStats;

/// A SendMessage's deadline (the proxy's own broker calls time out after 3 s).
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Pause after a failed send, as the remoting producer.
const FAILURE_PAUSE: Duration = Duration::from_millis(10);

#[derive(clap::Args, Debug, Clone)]
pub struct GrpcProducerArgs {
    #[command(flatten)]
    pub connection: ConnectionArgs,
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Workers, each with one SendMessage in flight.
    #[arg(short = 'w', long = "threadCount", default_value_t = 64)]
    pub threads: usize,
    #[arg(short = 's', long = "messageSize", default_value_t = 128)]
    pub size: usize,
    /// Messages per SendMessage (1 = one message per call).
    #[arg(short = 'b', long = "batchSize", default_value_t = 1)]
    pub batch: usize,
    /// Total messages (0 = until --duration).
    #[arg(short = 'q', long = "messageQuantity", default_value_t = 0)]
    pub quantity: u64,
    /// Seconds to run (0 = until --messageQuantity).
    #[arg(long = "duration", default_value_t = 60)]
    pub duration: u64,
    /// Seconds between report lines.
    #[arg(long = "report-interval", default_value_t = 10)]
    pub report_interval: u64,
    /// Milliseconds between report lines (RocketMQ's `-ri`; overrides --report-interval).
    #[arg(long = "reportInterval")]
    pub report_interval_ms: Option<u64>,
}

impl GrpcProducerArgs {
    pub fn validate(&self) -> Result<(), String> {
        self.connection.endpoint_list()?;
        if self.duration == 0 && self.quantity == 0 {
            return Err("give --duration or -q/--messageQuantity (or both)".into());
        }
        if self.size == 0 {
            return Err(
                "-s/--messageSize must be at least 1 (the proxy refuses empty bodies)".into(),
            );
        }
        Ok(())
    }

    pub fn report_every(&self) -> Duration {
        Duration::from_millis(
            self.report_interval_ms
                .unwrap_or(self.report_interval.saturating_mul(1000))
                .max(100),
        )
    }

    pub fn start_line(&self) -> String {
        format!(
            "topic: {} threadCount: {} messageSize: {} batchSize: {} messageQuantity: {} duration: {}s endpoints: {} connections: {}",
            self.topic,
            self.threads.max(1),
            self.size,
            self.batch.max(1),
            self.quantity,
            self.duration,
            self.connection.endpoints,
            self.connection.connections.max(1),
        )
    }
}

/// Runs the benchmark: the start line, a line every report interval, `[Complete]`.
pub async fn run(a: GrpcProducerArgs) -> Result<(), GrpcBenchError> {
    a.validate().map_err(GrpcBenchError::Invalid)?;
    crate::outln!("{}", a.start_line());
    let connections = Arc::new(Connections::open(&a.connection).await?);
    check_route(&connections, &a.topic).await?;
    let shared = Arc::new(Shared {
        connections: connections.clone(),
        stats: Arc::new(SendStats::default()),
        ids: MessageIds::default(),
        body: vec![b'x'; a.size],
        topic: a.topic.clone(),
        batch: a.batch.max(1),
        send_failure: FirstFailure::new(),
        response_failure: FirstFailure::new(),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let deadline = (a.duration > 0).then(|| started + Duration::from_secs(a.duration));
    let threads = a.threads.max(1);
    let per_worker = if a.quantity > 0 {
        a.quantity.div_ceil(threads as u64)
    } else {
        u64::MAX
    };
    let mut tasks = JoinSet::new();
    for worker in 0..threads {
        let shared = shared.clone();
        let client = connections.client(worker);
        tasks.spawn(async move { shared.work(client, per_worker, deadline).await });
    }
    let reporter = shared.stats.spawn_reporter(a.report_every(), stop.clone());
    while tasks.join_next().await.is_some() {}
    stop.store(true, Ordering::Relaxed);
    reporter.abort();
    crate::outln!("{}", shared.stats.complete_line(started.elapsed()));
    Ok(())
}

/// Fails fast, with the proxy's reason, when the topic has no route.
async fn check_route(connections: &Connections, topic: &str) -> Result<(), GrpcBenchError> {
    let request = QueryRouteRequest {
        topic: resource(topic),
        endpoints: connections.endpoints(),
    };
    let answer = connections
        .client(0)
        .query_route(connections.request(request, SEND_TIMEOUT))
        .await
        .map_err(|s| GrpcBenchError::rpc("QueryRoute", s))?
        .into_inner();
    check(answer.status.as_ref()).map_err(|(code, message)| GrpcBenchError::Refused {
        what: "QueryRoute",
        code,
        message: format!("topic {topic}: {message}"),
    })
}

/// What every worker shares.
struct Shared {
    connections: Arc<Connections>,
    stats: Arc<SendStats>,
    ids: MessageIds,
    body: Vec<u8>,
    topic: String,
    batch: usize,
    send_failure: FirstFailure,
    response_failure: FirstFailure,
}

impl Shared {
    fn message(&self) -> Message {
        Message {
            topic: resource(&self.topic),
            user_properties: Default::default(),
            system_properties: Some(SystemProperties {
                message_id: self.ids.next_id(),
                message_type: MessageType::Normal as i32,
                born_timestamp: Some(now_timestamp()),
                ..Default::default()
            }),
            body: self.body.clone(),
        }
    }

    /// One worker: sends until it has sent `quota` messages or `deadline` has passed.
    async fn work(&self, mut client: Client, quota: u64, deadline: Option<Instant>) {
        let mut sent = 0u64;
        while sent < quota && deadline.is_none_or(|d| Instant::now() < d) {
            let messages: Vec<Message> = (0..self.batch).map(|_| self.message()).collect();
            let request = self
                .connections
                .request(SendMessageRequest { messages }, SEND_TIMEOUT);
            let begin = Instant::now();
            match client.send_message(request).await {
                Ok(answer) => match check(answer.get_ref().status.as_ref()) {
                    Ok(()) => {
                        self.stats.record(begin.elapsed(), self.batch as u64);
                        sent += self.batch as u64;
                    }
                    Err((code, message)) => {
                        self.stats.response_failed();
                        self.response_failure
                            .report(|| format!("SendMessage refused with {code}: {message}"));
                        tokio::time::sleep(FAILURE_PAUSE).await;
                    }
                },
                Err(status) => {
                    self.stats.send_failed();
                    self.send_failure.report(|| {
                        format!(
                            "SendMessage failed: gRPC error {}: {}",
                            status.code(),
                            status.message()
                        )
                    });
                    tokio::time::sleep(FAILURE_PAUSE).await;
                }
            }
        }
    }
}
