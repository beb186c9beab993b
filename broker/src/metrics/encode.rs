//! Small helpers that write one metric family from rows of (labels, value).

use stellmq_metrics::prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use stellmq_metrics::prometheus_client::metrics::MetricType;

pub type Labels = Vec<(&'static str, String)>;

pub fn gauges(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, i64)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in rows {
        metric.encode_family(&labels)?.encode_gauge(&value)?;
    }
    Ok(())
}

/// `name` without `_total`: the encoder adds it to counters.
pub fn counters(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (Labels, u64)>,
) -> Result<(), std::fmt::Error> {
    let mut metric = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in rows {
        metric
            .encode_family(&labels)?
            .encode_counter::<NoLabelSet, u64, u64>(&value, None)?;
    }
    Ok(())
}

pub fn flag(value: bool) -> String {
    value.to_string()
}
