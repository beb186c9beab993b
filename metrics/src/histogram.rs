//! A fixed-bucket histogram of integers counted with atomics only (no lock per
//! observation), encoded as a Prometheus histogram when scraped.

use std::sync::atomic::{AtomicU64, Ordering};

use prometheus_client::encoding::{EncodeLabelSet, MetricEncoder, NoLabelSet};

/// Upper bounds are inclusive, as Prometheus' `le`; one more bucket holds the rest (+Inf).
#[derive(Debug)]
pub struct AtomicHistogram {
    bounds: &'static [u64],
    buckets: Box<[AtomicU64]>,
    sum: AtomicU64,
    count: AtomicU64,
}

/// A histogram read at one moment: per-bucket (not cumulative) counts, +Inf last.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    pub buckets: Vec<(f64, u64)>,
    pub sum: u64,
    pub count: u64,
}

impl AtomicHistogram {
    /// `bounds` must be ascending.
    pub fn new(bounds: &'static [u64]) -> Self {
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: u64) {
        let index = self
            .bounds
            .iter()
            .position(|bound| value <= *bound)
            .unwrap_or(self.bounds.len());
        if let Some(bucket) = self.buckets.get(index) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.sum.fetch_add(value, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let buckets: Vec<(f64, u64)> = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, b)| {
                let bound = self.bounds.get(i).map_or(f64::INFINITY, |b| *b as f64);
                (bound, b.load(Ordering::Relaxed))
            })
            .collect();
        // The count is the buckets' total, so `_count` always equals the +Inf bucket.
        let count = buckets.iter().map(|(_, n)| n).sum();
        HistogramSnapshot {
            buckets,
            sum: self.sum.load(Ordering::Relaxed),
            count,
        }
    }
}

impl HistogramSnapshot {
    /// Writes this histogram as one member of a family.
    pub fn encode(&self, encoder: &mut MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<NoLabelSet>(self.sum as f64, self.count, &self.buckets, None)
    }

    /// Writes it with `labels`.
    pub fn encode_with(
        &self,
        encoder: &mut MetricEncoder<'_>,
        labels: &impl EncodeLabelSet,
    ) -> Result<(), std::fmt::Error> {
        let mut family = encoder.encode_family(labels)?;
        self.encode(&mut family)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_inclusive_and_overflow_goes_last() {
        static BOUNDS: [u64; 3] = [1, 10, 100];
        let h = AtomicHistogram::new(&BOUNDS);
        for v in [0, 1, 2, 10, 11, 100, 1000] {
            h.observe(v);
        }
        let s = h.snapshot();
        assert_eq!(
            s.buckets,
            vec![(1.0, 2), (10.0, 2), (100.0, 2), (f64::INFINITY, 1)]
        );
        assert_eq!(s.count, 7);
        assert_eq!(s.sum, 1124);
    }
}
