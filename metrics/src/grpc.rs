//! `rocketmq_rpc_latency` of a gRPC server (`protocol_type="grpc"`): milliseconds from a
//! request's arrival to its answer, by RPC (`send_message`, `receive_message`, ...) and
//! RocketMQ 5 status code (`ok`, `unauthorized`, ...). Series are bounded.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;
use prometheus_client::metrics::MetricType;

use crate::histogram::AtomicHistogram;
use crate::rpc::RPC_BOUNDS;

/// (RPC, status) pairs kept; the set of both is finite, this only guards mistakes.
const MAX_SERIES: usize = 1024;

#[derive(Debug, Default)]
pub struct GrpcLatency {
    cells: RwLock<HashMap<(&'static str, &'static str), Arc<AtomicHistogram>>>,
}

impl GrpcLatency {
    /// Counts one answer of `rpc` (its method name, `SendMessage`) with `status` (the
    /// status code's name, `OK`).
    pub fn observe(&self, rpc: &'static str, status: &'static str, elapsed: Duration) {
        let key = (rpc, status);
        let ms = elapsed.as_millis().min(u128::from(u64::MAX)) as u64;
        let known = self.cells.read().get(&key).cloned();
        let cell = match known {
            Some(cell) => cell,
            None => {
                let mut cells = self.cells.write();
                if cells.len() >= MAX_SERIES && !cells.contains_key(&key) {
                    return;
                }
                cells
                    .entry(key)
                    .or_insert_with(|| Arc::new(AtomicHistogram::new(&RPC_BOUNDS)))
                    .clone()
            }
        };
        cell.observe(ms);
    }
}

/// `SendMessage` -> `send_message`.
fn snake(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl Collector for GrpcLatency {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let cells: Vec<_> = self
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
        for ((rpc, status), cell) in cells {
            let (request, response) = (snake(rpc), status.to_ascii_lowercase());
            let long_polling = if rpc == "ReceiveMessage" {
                "true"
            } else {
                "false"
            };
            let result = if status == "OK" { "success" } else { "failure" };
            let labels = [
                ("protocol_type", "grpc"),
                ("request_code", request.as_str()),
                ("response_code", response.as_str()),
                ("is_long_polling", long_polling),
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
    fn rpcs_are_labelled_in_snake_case_with_their_status() {
        assert_eq!(snake("SendMessage"), "send_message");
        assert_eq!(
            snake("ForwardMessageToDeadLetterQueue"),
            "forward_message_to_dead_letter_queue"
        );
        let latency = Arc::new(GrpcLatency::default());
        latency.observe("SendMessage", "OK", Duration::from_millis(2));
        latency.observe("SendMessage", "UNAUTHORIZED", Duration::from_millis(1));
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(latency));
        let text = crate::encode(&registry).expect("encodes");
        assert!(
            text.contains(r#"request_code="send_message",response_code="ok""#),
            "{text}"
        );
        assert!(text.contains(r#"response_code="unauthorized""#), "{text}");
        assert!(text.contains(r#"protocol_type="grpc""#), "{text}");
    }
}
