//! `MQVersion.Version` ordinals (protocol.md 1.8) that StellMQ relies on.

/// The version StellMQ reports in every response: 4.9.4, so clients enable every 4.x feature.
pub const CURRENT_VERSION: i32 = V4_9_4;
/// Human readable form of [`CURRENT_VERSION`] (`brokerVersionDesc`).
pub const CURRENT_VERSION_DESC: &str = "V4_9_4";

/// Java clients older than this never send `maxReconsumeTimes` that the broker should honour.
pub const V3_4_9: i32 = 121;
/// From this version on the name server answers route data in standard JSON.
pub const V4_9_4: i32 = 401;
/// First version of the 5.x line.
pub const V5_0_0: i32 = 413;
