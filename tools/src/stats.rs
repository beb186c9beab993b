//! Latency and throughput summaries shared by the benchmark tools.

use std::time::Duration;

use hdrhistogram::Histogram;

/// A microsecond latency histogram (1 us .. 60 s, 3 significant digits).
pub struct Latency(Histogram<u64>);

impl Default for Latency {
    fn default() -> Self {
        Self(
            Histogram::new_with_bounds(1, 60_000_000, 3)
                .expect("constant histogram bounds are valid"),
        )
    }
}

impl Latency {
    pub fn record(&mut self, d: Duration) {
        let us = (d.as_micros() as u64).clamp(1, 60_000_000);
        let _ = self.0.record(us);
    }

    pub fn merge(&mut self, other: &Latency) {
        let _ = self.0.add(&other.0);
    }

    pub fn count(&self) -> u64 {
        self.0.len()
    }

    /// Value at quantile `q` (0..1) in microseconds.
    pub fn quantile_us(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q)
    }

    pub fn max_us(&self) -> u64 {
        self.0.max()
    }

    pub fn mean_us(&self) -> f64 {
        self.0.mean()
    }

    /// `p50 ... p99 ... p99.9 ... max` in milliseconds.
    pub fn summary(&self) -> String {
        format!(
            "p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, max {:.3} ms",
            self.quantile_us(0.5) as f64 / 1000.0,
            self.quantile_us(0.99) as f64 / 1000.0,
            self.quantile_us(0.999) as f64 / 1000.0,
            self.max_us() as f64 / 1000.0
        )
    }
}

/// Median of a non-empty list (mean of the middle two for an even count).
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    let mid = values.len() / 2;
    if values.len().is_multiple_of(2) {
        (values[mid - 1] + values[mid]) / 2.0
    } else {
        values[mid]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_quantiles() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        let mut l = Latency::default();
        for us in 1..=1000 {
            l.record(Duration::from_micros(us));
        }
        assert_eq!(l.count(), 1000);
        assert!((499..=501).contains(&l.quantile_us(0.5)));
        assert!(l.quantile_us(0.99) >= 989);
    }
}
