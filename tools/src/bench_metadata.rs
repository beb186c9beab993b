//! `mqbench metadata`: what a topic or group change costs as a broker's tables grow.
//!
//! Creates `--topics` topics one by one with UPDATE_AND_CREATE_TOPIC (and `--groups` groups
//! with UPDATE_AND_CREATE_SUBSCRIPTIONGROUP), each waiting for the broker's answer, which
//! comes once the change is durable. It prints the median and p99 of the creations within
//! each `--window` of the table's size, then times `--sample` updates, route queries
//! (GET_ROUTEINFO_BY_TOPIC from the name server) and deletions at the full size.

use std::time::{Duration, Instant};

use stellmq_client::admin::AdminClient;
use stellmq_client::ClientError;
use stellmq_remoting::protocol::body::{SubscriptionGroupConfig, TopicConfig};

use crate::stats::Latency;

#[derive(clap::Args, Debug)]
pub struct MetadataArgs {
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv: Option<String>,
    /// The broker's address (`ip:port`).
    #[arg(short = 'b', long = "brokerAddr")]
    broker: String,
    /// Topics to create.
    #[arg(long = "topics", default_value_t = 10_000)]
    topics: usize,
    /// Subscription groups to create after the topics.
    #[arg(long = "groups", default_value_t = 0)]
    groups: usize,
    /// Queues of each topic.
    #[arg(long = "queues", default_value_t = 4)]
    queues: i32,
    /// Report creations per this many entries of table size.
    #[arg(long = "window", default_value_t = 1_000)]
    window: usize,
    /// Updates and deletions timed at the full size.
    #[arg(long = "sample", default_value_t = 500)]
    sample: usize,
    /// Names start with this (several runs on one broker need different prefixes).
    #[arg(long = "prefix", default_value = "MetaBench")]
    prefix: String,
}

pub async fn run(a: MetadataArgs) -> Result<(), ClientError> {
    let admin = AdminClient::new(&crate::namesrv_addr(&a.namesrv))?;
    let topic = |i: usize, queues: i32| {
        TopicConfig::with_queues(format!("{}_T{i:07}", a.prefix), queues, queues, 6)
    };
    let group = |i: usize| SubscriptionGroupConfig::new(format!("{}_G{i:07}", a.prefix));
    let window = a.window.max(1);

    crate::outln!(
        "creating {} topics of {} queues on {}",
        a.topics,
        a.queues,
        a.broker
    );
    let mut timed = Windowed::new("topics", window);
    for i in 0..a.topics {
        let begin = Instant::now();
        admin.create_topic(&a.broker, &topic(i, a.queues)).await?;
        timed.record(i, begin.elapsed());
    }
    timed.finish();
    crate::outln!("creating {} groups on {}", a.groups, a.broker);
    let mut timed = Windowed::new("groups", window);
    for i in 0..a.groups {
        let begin = Instant::now();
        admin.create_group(&a.broker, &group(i)).await?;
        timed.record(i, begin.elapsed());
    }
    timed.finish();

    let sample = a.sample.min(a.topics);
    let step = (a.topics / sample.max(1)).max(1);
    let picked: Vec<usize> = (0..sample).map(|k| k * step).collect();
    let mut updates = Latency::default();
    for &i in &picked {
        let begin = Instant::now();
        admin
            .create_topic(&a.broker, &topic(i, a.queues * 2))
            .await?;
        updates.record(begin.elapsed());
    }
    crate::outln!("update at {} topics: {}", a.topics, updates.summary());
    let mut routes = Latency::default();
    for &i in &picked {
        let begin = Instant::now();
        admin.topic_route(&topic(i, a.queues).topic_name).await?;
        routes.record(begin.elapsed());
    }
    crate::outln!("route query at {} topics: {}", a.topics, routes.summary());
    let mut deletes = Latency::default();
    for &i in &picked {
        let begin = Instant::now();
        admin
            .delete_topic_in_broker(&a.broker, &topic(i, a.queues).topic_name)
            .await?;
        deletes.record(begin.elapsed());
    }
    crate::outln!("delete at {} topics: {}", a.topics, deletes.summary());
    admin.shutdown().await;
    Ok(())
}

/// Latencies per window of table size.
struct Windowed {
    what: &'static str,
    window: usize,
    current: Latency,
    start: usize,
}

impl Windowed {
    fn new(what: &'static str, window: usize) -> Self {
        Self {
            what,
            window,
            current: Latency::default(),
            start: 0,
        }
    }

    /// The creation of entry `i` (the table held `i` of them) took `took`.
    fn record(&mut self, i: usize, took: Duration) {
        self.current.record(took);
        if (i + 1).is_multiple_of(self.window) {
            self.report(i + 1);
        }
    }

    fn finish(&mut self) {
        if self.current.count() > 0 {
            let end = self.start + self.current.count() as usize;
            self.report(end);
        }
    }

    fn report(&mut self, end: usize) {
        crate::outln!(
            "{} {:>7}-{:<7} create median {:.3} ms p99 {:.3} ms",
            self.what,
            self.start,
            end,
            self.current.quantile_us(0.5) as f64 / 1000.0,
            self.current.quantile_us(0.99) as f64 / 1000.0
        );
        self.current = Latency::default();
        self.start = end;
    }
}
