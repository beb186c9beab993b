//! The broker's role as a runtime value: which brokerId it registers with (0 = master) and,
//! in controller mode, the master epoch it last switched to.
//!
//! A classic broker's role is its configuration and never changes. In controller mode the
//! broker starts unassigned (not master, not registered) and [`super::RoleSwitcher`] sets
//! the role when the controller elects a master. Processors read it on every request
//! (`BrokerIdentity::is_master`), so a switch takes effect at once.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, Ordering};

/// The brokerId of a master (RocketMQ's `MixAll.MASTER_ID`).
pub const MASTER_ID: i64 = 0;

#[derive(Debug)]
pub struct RuntimeRole {
    broker_id: AtomicI64,
    master_epoch: AtomicI32,
    controller_mode: bool,
    /// Controller mode: a role was given (before that the broker does not register).
    assigned: AtomicBool,
}

impl RuntimeRole {
    /// A classic broker: `broker_id` from its configuration, forever.
    pub fn fixed(broker_id: i64) -> Self {
        Self {
            broker_id: AtomicI64::new(broker_id),
            master_epoch: AtomicI32::new(-1),
            controller_mode: false,
            assigned: AtomicBool::new(true),
        }
    }

    /// A controller-mode broker before the controller spoke: a slave of nobody (its
    /// configured id if it is one, else -1), not registered.
    pub fn unassigned(configured_id: i64) -> Self {
        Self {
            broker_id: AtomicI64::new(if configured_id > 0 { configured_id } else { -1 }),
            master_epoch: AtomicI32::new(-1),
            controller_mode: true,
            assigned: AtomicBool::new(false),
        }
    }

    /// The brokerId this broker registers with now.
    pub fn broker_id(&self) -> i64 {
        self.broker_id.load(Ordering::Acquire)
    }

    pub fn is_master(&self) -> bool {
        self.broker_id() == MASTER_ID
    }

    /// Controller mode: the master epoch of the last switch (-1 before any).
    pub fn master_epoch(&self) -> i32 {
        self.master_epoch.load(Ordering::Acquire)
    }

    pub fn controller_mode(&self) -> bool {
        self.controller_mode
    }

    /// Whether the broker has a role to register with (always, for a classic broker).
    pub fn is_assigned(&self) -> bool {
        self.assigned.load(Ordering::Acquire)
    }

    /// Sets the role (controller mode only; the switcher's job).
    pub(crate) fn set(&self, broker_id: i64, master_epoch: i32) {
        self.master_epoch.store(master_epoch, Ordering::Release);
        self.broker_id.store(broker_id, Ordering::Release);
        self.assigned.store(true, Ordering::Release);
    }
}
