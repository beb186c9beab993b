//! What every request says about its client in gRPC metadata (RocketMQ 5's `x-mq-*` headers)
//! and how long the client waits (`grpc-timeout`).

use std::net::SocketAddr;
use std::time::Duration;

use tonic::metadata::MetadataMap;

use super::status::Refusal;
use crate::pb::Code;

/// The longest client id, language, version or namespace read from metadata.
const MAX_HEADER_VALUE: usize = 512;

/// A request's client.
#[derive(Debug, Clone)]
pub struct Caller {
    pub client_id: String,
    pub language: String,
    pub version: String,
    pub namespace: String,
    pub peer: Option<SocketAddr>,
    /// What is left of the client's deadline when the request arrived.
    pub deadline: Option<Duration>,
}

impl Caller {
    /// Reads the metadata of a request; a request without `x-mq-client-id` is refused with
    /// CLIENT_ID_REQUIRED, as in RocketMQ.
    pub fn of<T>(request: &tonic::Request<T>) -> Result<Self, Refusal> {
        let metadata = request.metadata();
        let client_id = header(metadata, "x-mq-client-id");
        if client_id.trim().is_empty() {
            return Err(Refusal::new(
                Code::ClientIdRequired,
                "the x-mq-client-id header is required",
            ));
        }
        Ok(Self {
            client_id,
            language: header(metadata, "x-mq-language"),
            version: header(metadata, "x-mq-client-version"),
            namespace: header(metadata, "x-mq-namespace"),
            peer: request.remote_addr(),
            deadline: metadata
                .get("grpc-timeout")
                .and_then(|v| v.to_str().ok())
                .and_then(parse_grpc_timeout),
        })
    }

    /// The client's address as `ip:port` (what born hosts are filled with), or empty.
    pub fn peer_text(&self) -> String {
        self.peer.map(|p| p.to_string()).unwrap_or_default()
    }
}

fn header(metadata: &MetadataMap, name: &str) -> String {
    metadata
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(MAX_HEADER_VALUE).collect())
        .unwrap_or_default()
}

/// gRPC's `grpc-timeout` (`<digits><unit>`, unit H M S m u n).
fn parse_grpc_timeout(text: &str) -> Option<Duration> {
    let text = text.trim();
    if text.len() < 2 || text.len() > 9 {
        return None;
    }
    let (digits, unit) = text.split_at_checked(text.len().checked_sub(1)?)?;
    let value: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(value.checked_mul(3600)?),
        "M" => Duration::from_secs(value.checked_mul(60)?),
        "S" => Duration::from_secs(value),
        "m" => Duration::from_millis(value),
        "u" => Duration::from_micros(value),
        "n" => Duration::from_nanos(value),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_grpc_timeouts() {
        assert_eq!(parse_grpc_timeout("23S"), Some(Duration::from_secs(23)));
        assert_eq!(
            parse_grpc_timeout("3000m"),
            Some(Duration::from_millis(3000))
        );
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("S"), None);
        assert_eq!(parse_grpc_timeout("12x"), None);
        assert_eq!(parse_grpc_timeout("1234567890S"), None);
    }
}
