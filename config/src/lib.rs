//! Configuration for every StellMQ process: Java `Properties` text, typed structs keyed by
//! RocketMQ's names ([`properties_config!`]), and config files written atomically with a
//! backup. Shared by the store, the name server, the broker and the client; it knows
//! nothing of the protocol or the network.
//!
//! Used for `-c FILE` configuration files, for the `key=value` bodies of
//! UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG and their GET counterparts, and for the JSON
//! tables the broker, name server and client keep on disk.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

mod files;
mod properties;

pub use files::{read_with_backup, write_atomically};
pub use properties::{
    format_documented, format_properties, parse_config_changes, parse_config_value,
    parse_properties, read_properties_file, ConfigError, ConfigValue,
};
