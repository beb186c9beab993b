//! `MQVersion.Version` ordinals (protocol.md 1.8) that StellMQ relies on.

/// The version StellMQ reports in every response: 4.9.4, so clients enable every 4.x feature.
pub const CURRENT_VERSION: i32 = V4_9_4;
/// Human readable form of [`CURRENT_VERSION`] (`brokerVersionDesc`).
pub const CURRENT_VERSION_DESC: &str = "V4_9_4";

/// Clients from this version on answer GET_CONSUMER_STATUS_FROM_CLIENT and take offset resets.
pub const V3_0_7_SNAPSHOT: i32 = 28;
/// Clients from this version on answer GET_CONSUMER_RUNNING_INFO and CONSUME_MESSAGE_DIRECTLY.
pub const V3_1_8_SNAPSHOT: i32 = 62;
/// Java clients older than this never send `maxReconsumeTimes` that the broker should honour.
pub const V3_4_9: i32 = 121;
/// From this version on the name server answers route data in standard JSON.
pub const V4_9_4: i32 = 401;
/// First version of the 5.x line.
pub const V5_0_0: i32 = 413;
