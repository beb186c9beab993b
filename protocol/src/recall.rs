//! Recall handles (RocketMQ 5.3.2+, `RecallMessageHandle.HandleV1`): what a send of a timer
//! message answers so that its producer can take the message back before it is due.
//!
//! A handle is `v1 <topic> <brokerName> <timestamp> <messageId>` joined by single spaces and
//! encoded as URL-safe Base64 with padding (Java's `Base64.getUrlEncoder()`); the decoder
//! also takes it without padding, as Java's does. The timestamp is the due time plus one
//! millisecond (RocketMQ's "consider of floor"), the message id the message's UNIQ_KEY.

use base64::alphabet::URL_SAFE;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine;

const VERSION_1: &str = "v1";

/// URL-safe Base64 that writes padding and reads it or its absence.
const ENGINE: GeneralPurpose = GeneralPurpose::new(
    &URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// A decoded version-1 recall handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecallHandle {
    pub topic: String,
    pub broker_name: String,
    /// Milliseconds since the epoch, as text (RocketMQ parses it leniently on recall).
    pub timestamp: String,
    /// The message's UNIQ_KEY.
    pub message_id: String,
}

/// Why a recall handle does not decode (RocketMQ answers every case "recall handle is
/// invalid").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("recall handle is invalid")]
pub struct InvalidRecallHandle;

impl RecallHandle {
    /// The handle of a timer message of `topic` stored on `broker_name`, due at `due_ms`.
    pub fn for_timer(topic: &str, broker_name: &str, due_ms: i64, message_id: &str) -> Self {
        Self {
            topic: topic.to_owned(),
            broker_name: broker_name.to_owned(),
            timestamp: due_ms.saturating_add(1).to_string(),
            message_id: message_id.to_owned(),
        }
    }

    pub fn encode(&self) -> String {
        let raw = [
            VERSION_1,
            &self.topic,
            &self.broker_name,
            &self.timestamp,
            &self.message_id,
        ]
        .join(" ");
        ENGINE.encode(raw)
    }

    pub fn decode(handle: &str) -> Result<Self, InvalidRecallHandle> {
        if handle.is_empty() {
            return Err(InvalidRecallHandle);
        }
        let raw = ENGINE
            .decode(handle.as_bytes())
            .map_err(|_| InvalidRecallHandle)?;
        let raw = String::from_utf8(raw).map_err(|_| InvalidRecallHandle)?;
        let items: Vec<&str> = raw.split(' ').collect();
        match items.as_slice() {
            [VERSION_1, topic, broker_name, timestamp, message_id, ..] => Ok(Self {
                topic: (*topic).to_owned(),
                broker_name: (*broker_name).to_owned(),
                timestamp: (*timestamp).to_owned(),
                message_id: (*message_id).to_owned(),
            }),
            _ => Err(InvalidRecallHandle),
        }
    }

    /// The timestamp as a number; `-1` when it is not one (RocketMQ's `NumberUtils.toLong`).
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp.parse().unwrap_or(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_round_trips_and_reads_as_java_writes_it() {
        let handle = RecallHandle::for_timer("Orders", "broker-a", 1_700_000_000_000, "ABCD");
        assert_eq!(handle.timestamp, "1700000000001");
        let encoded = handle.encode();
        // Java: Base64.getUrlEncoder().encodeToString("v1 Orders broker-a 1700000000001 ABCD")
        assert_eq!(
            encoded,
            "djEgT3JkZXJzIGJyb2tlci1hIDE3MDAwMDAwMDAwMDEgQUJDRA=="
        );
        assert_eq!(RecallHandle::decode(&encoded), Ok(handle.clone()));
        let unpadded = encoded.trim_end_matches('=');
        assert_eq!(RecallHandle::decode(unpadded), Ok(handle));
    }

    #[test]
    fn anything_else_is_invalid() {
        for bad in [
            "",
            "not base64 !",
            &ENGINE.encode("v2 T b 1 id"),
            &ENGINE.encode("v1 T b 1"),
            &ENGINE.encode([0xff, 0xfe, 0x20]),
        ] {
            assert_eq!(RecallHandle::decode(bad), Err(InvalidRecallHandle), "{bad}");
        }
        let handle = RecallHandle::decode(&ENGINE.encode("v1 T b soon id")).expect("decodes");
        assert_eq!(handle.timestamp_ms(), -1);
    }
}
