//! Controller mode (RocketMQ 5's ReplicasManager): the broker's identity granted by the
//! controller, and the loop that registers with the controllers, sends heartbeats and
//! switches the broker's role when the controller elects a new master.

pub mod metadata;
pub mod register;
pub mod role;
pub mod switch;

pub use switch::{RoleChange, RoleChangeError, RoleServices, RoleSnapshot, RoleSwitcher};
pub mod manager;
