//! A name server and one broker in process, with a raw client aimed at the broker: what most
//! broker and client tests start from.

use std::path::Path;

use stellmq_broker::BrokerStartConfig;
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_remoting::protocol::RemotingCommand;

use crate::broker::TestBroker;
use crate::namesrv::NameServer;
use crate::raw::{Pull, RawClient};

/// A name server and `broker-a` of `DefaultCluster` registered with it, both on ephemeral
/// loopback ports with temporary files (see [`crate::broker_config`]), and a [`RawClient`]
/// aimed at the broker.
pub struct Stack {
    namesrv: NameServer,
    broker: TestBroker,
    raw: RawClient,
}

impl Stack {
    /// Starts the name server and the broker.
    pub async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// Starts the name server and the broker, its configuration changed by `tweak`.
    pub async fn start_with(tweak: impl FnOnce(&mut BrokerStartConfig)) -> Self {
        let namesrv = NameServer::start().await;
        let broker = TestBroker::start(namesrv.addr(), tweak).await;
        let raw = RawClient::new(broker.addr());
        Self {
            namesrv,
            broker,
            raw,
        }
    }

    pub fn namesrv(&self) -> &NameServer {
        &self.namesrv
    }

    /// The name server's address.
    pub fn ns_addr(&self) -> &str {
        self.namesrv.addr()
    }

    pub fn broker(&self) -> &TestBroker {
        &self.broker
    }

    /// The broker's address.
    pub fn addr(&self) -> &str {
        self.broker.addr()
    }

    /// The broker's temporary directory; its store is the `store` subdirectory.
    pub fn dir(&self) -> &Path {
        self.broker.dir()
    }

    /// The raw client aimed at the broker.
    pub fn raw(&self) -> &RawClient {
        &self.raw
    }

    /// See [`RawClient::call`].
    pub async fn call(&self, request: RemotingCommand) -> RemotingCommand {
        self.raw.call(request).await
    }

    /// See [`RawClient::send`].
    pub async fn send(
        &self,
        topic: &str,
        queue_id: i32,
        body: &str,
        props: &[(&str, &str)],
    ) -> RemotingCommand {
        self.raw.send(topic, queue_id, body, props).await
    }

    /// See [`RawClient::pull`].
    pub async fn pull(&self, pull: Pull) -> RemotingCommand {
        self.raw.pull(pull).await
    }

    /// See [`RawClient::pull_until`].
    pub async fn pull_until(
        &self,
        group: &str,
        topic: &str,
        queue_id: i32,
        n: usize,
    ) -> Vec<MessageRecord> {
        self.raw.pull_until(group, topic, queue_id, n).await
    }

    /// Starts a slave of the broker's group (see [`TestBroker::start_slave`]).
    pub async fn start_slave(
        &self,
        broker_id: i64,
        tweak: impl FnOnce(&mut BrokerStartConfig),
    ) -> TestBroker {
        self.broker.start_slave(broker_id, tweak).await
    }

    /// Restarts the broker on the same store (see [`TestBroker::restart`]); the raw client
    /// follows it to its new address.
    pub async fn restart_broker(&mut self, tweak: impl FnOnce(&mut BrokerStartConfig)) {
        self.broker.restart(tweak).await;
        self.raw.set_addr(self.broker.addr());
    }

    /// Stops the broker, keeping its store (see [`TestBroker::stop`]).
    pub async fn stop_broker(&mut self) {
        self.broker.stop().await;
    }

    /// Starts the stopped broker again on its store; the raw client follows it.
    pub async fn start_broker_again(&mut self) {
        self.broker.start_again().await;
        self.raw.set_addr(self.broker.addr());
    }

    /// Stops the broker, then the name server, and removes their files.
    pub async fn stop(self) {
        self.raw.shutdown().await;
        self.broker.shutdown().await;
        self.namesrv.shutdown().await;
    }
}
