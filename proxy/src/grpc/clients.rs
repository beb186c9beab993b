//! The gRPC clients the proxy knows: each one's settings (from its Telemetry stream), the
//! stream to send it commands on, and when it was last heard from. Bounded; silent clients
//! are forgotten.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::mpsc;

use super::status::Refusal;
use crate::pb::{settings::PubSub, ClientType, Code, Settings, TelemetryCommand};

/// Commands to a client's Telemetry stream.
pub type CommandSender = mpsc::Sender<Result<TelemetryCommand, tonic::Status>>;

struct Client {
    settings: Settings,
    /// The stream this client's settings came on (one per proxy endpoint a client dials).
    commands: Option<(u64, CommandSender)>,
    last_seen: Instant,
}

/// Every known client, by client id.
pub struct Clients {
    table: Mutex<HashMap<String, Client>>,
    max: usize,
    expiry: Duration,
}

impl Clients {
    pub fn new(max: usize, expiry: Duration) -> Self {
        Self {
            table: Mutex::new(HashMap::new()),
            max,
            expiry,
        }
    }

    /// Records `settings` of `client_id` and the stream `(stream_id, commands)` they came on.
    pub fn put(
        &self,
        client_id: &str,
        settings: Settings,
        stream_id: u64,
        commands: CommandSender,
    ) -> Result<(), Refusal> {
        let mut table = self.table.lock();
        if table.len() >= self.max && !table.contains_key(client_id) {
            return Err(Refusal::new(
                Code::TooManyRequests,
                format!("the proxy serves at most {} clients", self.max),
            ));
        }
        table.insert(
            client_id.to_owned(),
            Client {
                settings,
                commands: Some((stream_id, commands)),
                last_seen: Instant::now(),
            },
        );
        Ok(())
    }

    /// The settings of `client_id`, marking it alive.
    pub fn settings(&self, client_id: &str) -> Option<Settings> {
        let mut table = self.table.lock();
        let client = table.get_mut(client_id)?;
        client.last_seen = Instant::now();
        Some(client.settings.clone())
    }

    /// Forgets `client_id`; its settings, if it was known.
    pub fn remove(&self, client_id: &str) -> Option<Settings> {
        self.table.lock().remove(client_id).map(|c| c.settings)
    }

    /// The stream `stream_id` of `client_id` ended: commands can no longer reach it.
    pub fn stream_closed(&self, client_id: &str, stream_id: u64) {
        if let Some(client) = self.table.lock().get_mut(client_id) {
            if client
                .commands
                .as_ref()
                .is_some_and(|(id, _)| *id == stream_id)
            {
                client.commands = None;
            }
        }
    }

    /// A stream to a producer that publishes to `topic`, to hand a transaction check to.
    pub fn producer_of(&self, topic: &str) -> Option<CommandSender> {
        let table = self.table.lock();
        table
            .values()
            .filter(|c| publishes_to(&c.settings, topic))
            .filter_map(|c| c.commands.as_ref().map(|(_, tx)| tx.clone()))
            .find(|tx| !tx.is_closed())
    }

    /// Every topic a known producer publishes to.
    pub fn producer_topics(&self) -> BTreeSet<String> {
        let table = self.table.lock();
        table
            .values()
            .filter_map(|c| match &c.settings.pub_sub {
                Some(PubSub::Publishing(p)) => Some(p.topics.iter().map(|t| t.name.clone())),
                _ => None,
            })
            .flatten()
            .collect()
    }

    /// Forgets clients silent for longer than the expiry; how many.
    pub fn sweep(&self) -> usize {
        let mut table = self.table.lock();
        let before = table.len();
        let expiry = self.expiry;
        table.retain(|_, c| c.last_seen.elapsed() < expiry);
        before - table.len()
    }

    pub fn len(&self) -> usize {
        self.table.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn publishes_to(settings: &Settings, topic: &str) -> bool {
    settings.client_type == Some(ClientType::Producer as i32)
        && matches!(&settings.pub_sub, Some(PubSub::Publishing(p)) if p.topics.iter().any(|t| t.name == topic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb::{Publishing, Resource};

    fn producer(topic: &str) -> Settings {
        Settings {
            client_type: Some(ClientType::Producer as i32),
            pub_sub: Some(PubSub::Publishing(Publishing {
                topics: vec![Resource {
                    resource_namespace: String::new(),
                    name: topic.into(),
                }],
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    #[test]
    fn bounded_and_forgets_the_silent() {
        let clients = Clients::new(1, Duration::from_millis(50));
        let (tx, _rx) = mpsc::channel(1);
        clients.put("a", producer("T"), 1, tx.clone()).unwrap();
        let refused = clients.put("b", producer("T"), 2, tx.clone()).unwrap_err();
        assert_eq!(refused.code, Code::TooManyRequests);
        assert!(clients.producer_of("T").is_some());
        assert!(clients.producer_of("U").is_none());
        assert_eq!(
            clients.producer_topics().into_iter().collect::<Vec<_>>(),
            ["T"]
        );
        clients.stream_closed("a", 1);
        assert!(clients.producer_of("T").is_none());
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(clients.sweep(), 1);
        assert!(clients.is_empty());
    }
}
