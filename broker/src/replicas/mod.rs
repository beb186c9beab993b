//! Controller mode (RocketMQ 5's ReplicasManager): the broker's identity granted by the
//! controller, and the loop that registers with the controllers, sends heartbeats and
//! switches the broker's role when the controller elects a new master.
//!
//! # The API for the controller client loop
//!
//! [`RoleSwitcher`] (from `BrokerHandle::roles()`, present only with
//! `enableControllerMode=true`) does the switching; the loop decides when:
//!
//! * [`RoleSwitcher::change_to_master`]`(epoch, SyncStateSet)` when the controller elected
//!   this broker, and [`RoleSwitcher::change_to_slave`]`(master_addr, master_ha_addr, epoch,
//!   own_broker_id)` when it elected another. Both are serialized, return
//!   [`RoleChange::Unchanged`] for the epoch already switched to and [`RoleChange::Stale`]
//!   for an older one, so the loop may call them on every notification and every periodic
//!   GET_REPLICA_INFO answer. An error leaves the broker in its former role; retry.
//! * [`RoleSwitcher::set_controller_broker_id`] once the controller assigned an id
//!   ([`metadata`] persists it): the master's own member id in its SyncStateSet.
//! * On a master: watch [`RoleSwitcher::wanted_sync_state_set`], send each wanted set with
//!   ALTER_SYNC_STATE_SET, and apply what the controller accepted with
//!   [`RoleSwitcher::apply_sync_state_set`] (also for sets pushed with role notifications).
//! * For heartbeats and reports: [`RoleSwitcher::role`], [`RoleSwitcher::master_epoch`],
//!   [`RoleSwitcher::epoch_entries`], [`RoleSwitcher::max_offset`],
//!   [`RoleSwitcher::sync_state_set`].
//!
//! What each switch does (epoch file, store, HA, services, registration) is in [`switch`];
//! the runtime brokerId every processor reads is [`role::RuntimeRole`]. docs/controller-broker.md
//! describes the whole picture.

pub mod metadata;
pub mod register;
pub mod role;
pub mod switch;

pub use switch::{RoleChange, RoleChangeError, RoleServices, RoleSnapshot, RoleSwitcher};
pub mod manager;
