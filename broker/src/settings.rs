//! The broker's runtime configuration and the typed settings its request paths read.
//!
//! Send, pull and POP read a handful of keys on every request. Each holds a [`Settings`]
//! of its own keys, copied out of the 95-key [`BrokerConfig`] and replaced whenever
//! UPDATE_BROKER_CONFIG changes it, so a request reads its keys without taking the whole
//! configuration's lock and sees nothing it does not use.

use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::{RwLock, RwLockReadGuard};

use crate::config::BrokerConfig;
use crate::processor::pop::PopSettings;
use crate::processor::pull::PullSettings;
use crate::processor::send::SendSettings;

/// One area's settings: read lock-free, replaced as a whole when the configuration changes.
pub struct Settings<T>(Arc<ArcSwap<T>>);

impl<T> Clone for Settings<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T: for<'a> From<&'a BrokerConfig>> Settings<T> {
    fn of(config: &BrokerConfig) -> Self {
        Self(Arc::new(ArcSwap::from_pointee(T::from(config))))
    }

    fn refresh(&self, config: &BrokerConfig) {
        self.0.store(Arc::new(T::from(config)));
    }
}

impl<T> Settings<T> {
    /// The settings now in force.
    pub fn get(&self) -> arc_swap::Guard<Arc<T>> {
        self.0.load()
    }
}

/// The broker's configuration as changed at runtime, and each request path's settings
/// derived from it.
pub struct LiveConfig {
    config: RwLock<BrokerConfig>,
    send: Settings<SendSettings>,
    pull: Settings<PullSettings>,
    pop: Settings<PopSettings>,
}

impl LiveConfig {
    pub fn new(config: BrokerConfig) -> Self {
        Self {
            send: Settings::of(&config),
            pull: Settings::of(&config),
            pop: Settings::of(&config),
            config: RwLock::new(config),
        }
    }

    /// The whole configuration, for the paths that read it rarely (admin, registration,
    /// metrics).
    pub fn read(&self) -> RwLockReadGuard<'_, BrokerConfig> {
        self.config.read()
    }

    /// Puts `config` in force: the whole configuration and every area's settings.
    pub fn replace(&self, config: BrokerConfig) {
        let mut current = self.config.write();
        self.send.refresh(&config);
        self.pull.refresh(&config);
        self.pop.refresh(&config);
        *current = config;
    }

    pub fn send(&self) -> Settings<SendSettings> {
        self.send.clone()
    }

    pub fn pull(&self) -> Settings<PullSettings> {
        self.pull.clone()
    }

    pub fn pop(&self) -> Settings<PopSettings> {
        self.pop.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_config_reaches_every_area() {
        let live = LiveConfig::new(BrokerConfig::default());
        let (send, pull, pop) = (live.send(), live.pull(), live.pop());
        assert!(!send.get().reject_transaction_message);
        let mut changed = live.read().clone();
        changed.reject_transaction_message = true;
        changed.broker_permission = 4;
        changed.long_polling_max_suspend_millis = 1234;
        changed.enable_property_filter = !changed.enable_property_filter;
        let filter = changed.enable_property_filter;
        live.replace(changed);
        assert!(send.get().reject_transaction_message);
        assert_eq!(send.get().broker_permission, 4);
        assert_eq!(pull.get().broker_permission, 4);
        assert_eq!(pop.get().broker_permission, 4);
        assert_eq!(pop.get().long_polling_max_suspend_millis, 1234);
        assert_eq!(pull.get().enable_property_filter, filter);
        assert_eq!(live.read().broker_permission, 4);
    }
}
