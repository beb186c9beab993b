//! In-process brokers on ephemeral loopback ports, each storing in a temporary directory of
//! its own, with small files so that tests stay light.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::path::Path;

use stellmq_broker::{BrokerHandle, BrokerStartConfig};

/// A broker configuration on `127.0.0.1`, port 0 (chosen by the system), registering as
/// `broker_name` of `DefaultCluster` with the name server at `ns_addr` and storing under
/// `store_root`, with [`BrokerStartConfig::small`]'s small files.
pub fn broker_config(store_root: &Path, ns_addr: &str, broker_name: &str) -> BrokerStartConfig {
    let mut c = BrokerStartConfig::small(store_root);
    c.broker.namesrv_addr = ns_addr.to_owned();
    c.broker.broker_name = broker_name.to_owned();
    c
}

/// A broker's place in its master/slave group (`brokerRole` and `brokerId`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `ASYNC_MASTER`, broker id 0: acknowledges before its slaves have the message.
    AsyncMaster,
    /// `SYNC_MASTER`, broker id 0: acknowledges once a slave has the message.
    SyncMaster,
    /// `SLAVE` with this broker id (1 or more).
    Slave(i64),
}

impl Role {
    /// Sets `brokerRole` and `brokerId` in `config`, through the keys of a config file.
    pub fn apply(self, config: &mut BrokerStartConfig) {
        let (role, id) = match self {
            Role::AsyncMaster => ("ASYNC_MASTER", 0),
            Role::SyncMaster => ("SYNC_MASTER", 0),
            Role::Slave(id) => ("SLAVE", id),
        };
        let props = BTreeMap::from([
            ("brokerRole".to_owned(), role.to_owned()),
            ("brokerId".to_owned(), id.to_string()),
        ]);
        config
            .apply(&props)
            .expect("a valid brokerRole and brokerId");
    }
}

/// A running in-process broker; it dereferences to its [`BrokerHandle`]. Dropping it without
/// [`TestBroker::shutdown`] leaves it serving until the tokio runtime ends; its directory is
/// removed on drop.
pub struct TestBroker {
    handle: Option<BrokerHandle>,
    config: BrokerStartConfig,
    dir: tempfile::TempDir,
}

impl TestBroker {
    /// Starts `broker-a` of `DefaultCluster` ([`broker_config`], storing under
    /// `<its directory>/store`) changed by `tweak`, registering with `ns_addr`.
    pub async fn start(ns_addr: &str, tweak: impl FnOnce(&mut BrokerStartConfig)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for the broker");
        let mut config = broker_config(&dir.path().join("store"), ns_addr, "broker-a");
        tweak(&mut config);
        let handle = stellmq_broker::start(config.clone())
            .await
            .expect("the broker starts");
        Self {
            handle: Some(handle),
            config,
            dir,
        }
    }

    pub fn handle(&self) -> &BrokerHandle {
        self.handle.as_ref().expect("the broker is running")
    }

    /// `127.0.0.1:<port>`, the address it registers.
    pub fn addr(&self) -> &str {
        self.handle().broker_addr()
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &BrokerStartConfig {
        &self.config
    }

    /// Its temporary directory; the store is its `store` subdirectory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Starts a slave of this broker's group (same cluster, broker name, name servers and
    /// `haAuthSecret`) with `broker_id`, changed by `tweak`, storing in a directory of its own.
    pub async fn start_slave(
        &self,
        broker_id: i64,
        tweak: impl FnOnce(&mut BrokerStartConfig),
    ) -> TestBroker {
        let master = &self.config.broker;
        let (ns, cluster, name, secret) = (
            master.namesrv_addr.clone(),
            master.broker_cluster_name.clone(),
            master.broker_name.clone(),
            master.ha_auth_secret.clone(),
        );
        TestBroker::start(&ns, |c| {
            c.broker.broker_cluster_name = cluster;
            c.broker.broker_name = name;
            c.broker.ha_auth_secret = secret;
            Role::Slave(broker_id).apply(c);
            tweak(c);
        })
        .await
    }

    /// Stops the broker and starts it again on the same store with its configuration changed
    /// by `tweak` (listening on a new port unless `tweak` sets one).
    pub async fn restart(&mut self, tweak: impl FnOnce(&mut BrokerStartConfig)) {
        self.stop().await;
        tweak(&mut self.config);
        self.start_again().await;
    }

    /// Stops serving (unregistering from the name servers), keeping its store for
    /// [`TestBroker::start_again`].
    pub async fn stop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
    }

    /// Starts a stopped broker again on its store (listening on a new port unless its
    /// configuration sets one).
    pub async fn start_again(&mut self) {
        let handle = stellmq_broker::start(self.config.clone())
            .await
            .expect("the broker restarts");
        self.handle = Some(handle);
    }

    /// Stops serving (unregistering from the name servers) and removes its directory.
    pub async fn shutdown(mut self) {
        if let Some(handle) = self.handle.take() {
            handle.shutdown().await;
        }
    }
}

impl Deref for TestBroker {
    type Target = BrokerHandle;

    fn deref(&self) -> &BrokerHandle {
        self.handle()
    }
}

/// Removes `topic` from a stopped broker's metadata store, as if it had been deleted without
/// its files (the broker under `store_root` must not run).
pub fn forget_topic(store_root: &std::path::Path, topic: &str) {
    use stellmq_metadata::{MetadataStore, Named};
    let store = MetadataStore::open(&store_root.join("config")).expect("the metadata store opens");
    let (topics, version) = store.topics().expect("the topics load");
    assert!(topics.contains_key(topic), "{topic} is not configured");
    let removal: [(
        String,
        Option<stellmq_remoting::protocol::body::TopicConfig>,
    ); 1] = [(topic.to_owned(), None)];
    store
        .write_named(Named::Topics, &removal, &version.unwrap_or_default())
        .expect("the removal commits");
}
