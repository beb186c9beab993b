//! `rocketmq_rpc_latency`: milliseconds from a request's arrival to its response being
//! queued, by request code and response code, as RocketMQ's remoting server records it.
//! The remoting server reports each answer ([`RequestObserver`]); series are bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;
use stellmq_remoting::net::RequestObserver;
use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use crate::histogram::AtomicHistogram;

/// RocketMQ's buckets (ms).
pub(crate) static RPC_BOUNDS: [u64; 9] = [1, 3, 5, 7, 10, 100, 1000, 2000, 3000];
/// (request code, response code) pairs kept; later ones share one "other" series.
const MAX_SERIES: usize = 1024;
const OTHER: (i32, i32) = (i32::MIN, i32::MIN);
/// Response code of a oneway request (none is sent).
const ONEWAY: i32 = i32::MAX;

/// The histogram family, one member per (request code, response code).
#[derive(Debug)]
pub struct RpcLatency {
    protocol: &'static str,
    cells: RwLock<HashMap<(i32, i32), Arc<AtomicHistogram>>>,
}

impl RpcLatency {
    /// `protocol`: the `protocol_type` label (`remoting`, `grpc`).
    pub fn new(protocol: &'static str) -> Self {
        Self {
            protocol,
            cells: RwLock::new(HashMap::new()),
        }
    }

    /// Counts one answer; `response_code` None for a oneway request.
    pub fn observe(&self, request_code: i32, response_code: Option<i32>, elapsed: Duration) {
        let key = (request_code, response_code.unwrap_or(ONEWAY));
        let ms = elapsed.as_millis().min(u64::MAX as u128) as u64;
        let known = self.cells.read().get(&key).cloned();
        let cell = known.unwrap_or_else(|| {
            let mut cells = self.cells.write();
            let key = if cells.len() >= MAX_SERIES && !cells.contains_key(&key) {
                OTHER
            } else {
                key
            };
            cells
                .entry(key)
                .or_insert_with(|| Arc::new(AtomicHistogram::new(&RPC_BOUNDS)))
                .clone()
        });
        cell.observe(ms);
    }
}

/// RocketMQ's label value of a code: the constant's name in lower case, else the number.
fn request_label(code: i32) -> String {
    match code {
        OTHER_CODE => "other".to_owned(),
        _ => RequestCode::from_i32(code)
            .map_or_else(|| code.to_string(), |c| c.name().to_ascii_lowercase()),
    }
}

fn response_label(code: i32) -> String {
    match code {
        OTHER_CODE => "other".to_owned(),
        ONEWAY => "oneway".to_owned(),
        _ => ResponseCode::from_i32(code)
            .map_or_else(|| code.to_string(), |c| c.name().to_ascii_lowercase()),
    }
}

const OTHER_CODE: i32 = OTHER.0;

impl RequestObserver for RpcLatency {
    fn on_answered(&self, request_code: i32, response_code: Option<i32>, elapsed: Duration) {
        self.observe(request_code, response_code, elapsed);
    }
}

impl Collector for RpcLatency {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let cells: Vec<((i32, i32), Arc<AtomicHistogram>)> = self
            .cells
            .read()
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        let mut metric = encoder.encode_descriptor(
            "rocketmq_rpc_latency",
            "Rpc latency (milliseconds)",
            None,
            MetricType::Histogram,
        )?;
        for ((request, response), cell) in cells {
            let (request, response) = (request_label(request), response_label(response));
            let result = if response == "oneway" {
                "oneway"
            } else {
                "success"
            };
            let labels = [
                ("protocol_type", self.protocol),
                ("request_code", request.as_str()),
                ("response_code", response.as_str()),
                ("is_long_polling", "false"),
                ("result", result),
            ];
            cell.snapshot().encode_with(&mut metric, &labels)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_rocketmq_names() {
        assert_eq!(request_label(10), "send_message");
        assert_eq!(response_label(0), "success");
        assert_eq!(request_label(99_999), "99999");
        assert_eq!(response_label(ONEWAY), "oneway");
    }

    #[test]
    fn series_are_bounded() {
        let rpc = RpcLatency::new("remoting");
        for code in 0..(MAX_SERIES as i32 + 10) {
            rpc.observe(code, Some(0), Duration::from_millis(2));
        }
        let cells = rpc.cells.read();
        assert_eq!(cells.len(), MAX_SERIES + 1);
        assert_eq!(cells.get(&OTHER).map(|h| h.snapshot().count), Some(10));
    }
}
