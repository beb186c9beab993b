//! Bounds on what clients can make the broker create: topics and groups auto-created on
//! sends, pulls, heartbeats and send-backs count against a total and a rate.

use std::time::Instant;

use parking_lot::Mutex;
use thiserror::Error;

use crate::config::BrokerConfig;

/// Why an auto-creation was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AutoCreateRefused {
    #[error("this broker already has {count} {what}s, the most it auto-creates ({key}={count}); create it with mqadmin")]
    TooMany {
        what: &'static str,
        key: &'static str,
        count: usize,
    },
    #[error("more than {per_second} topics and groups per second are being auto-created (autoCreateRatePerSecond); try again later")]
    TooFast { per_second: u32 },
}

/// A token bucket: `per_second` tokens a second, at most `per_second` saved up.
struct TokenBucket {
    per_second: f64,
    tokens: f64,
    refilled: Instant,
}

impl TokenBucket {
    fn new(per_second: u32) -> Self {
        Self {
            per_second: f64::from(per_second),
            tokens: f64::from(per_second),
            refilled: Instant::now(),
        }
    }

    fn try_take(&mut self) -> bool {
        self.try_take_at(Instant::now())
    }

    /// Takes a token if one has been earned by `now`.
    fn try_take_at(&mut self, now: Instant) -> bool {
        let earned = now.duration_since(self.refilled).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + earned).min(self.per_second);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Limits shared by topic and group auto-creation.
pub struct AutoCreateLimits {
    pub max_topics: usize,
    pub max_groups: usize,
    per_second: u32,
    bucket: Mutex<TokenBucket>,
}

impl AutoCreateLimits {
    pub fn new(max_topics: usize, max_groups: usize, per_second: u32) -> Self {
        let per_second = per_second.max(1);
        Self {
            max_topics,
            max_groups,
            per_second,
            bucket: Mutex::new(TokenBucket::new(per_second)),
        }
    }

    pub fn from_config(config: &BrokerConfig) -> Self {
        Self::new(
            config.auto_create_topic_limit,
            config.auto_create_subscription_group_limit,
            config.auto_create_rate_per_second,
        )
    }

    /// Unlimited (tests and tools).
    pub fn unlimited() -> Self {
        Self::new(usize::MAX, usize::MAX, u32::MAX)
    }

    /// Admits one more auto-created topic when the table holds `existing`.
    pub fn admit_topic(&self, existing: usize) -> Result<(), AutoCreateRefused> {
        self.admit(existing, self.max_topics, "topic", "autoCreateTopicLimit")
    }

    /// Admits one more auto-created group when the table holds `existing`.
    pub fn admit_group(&self, existing: usize) -> Result<(), AutoCreateRefused> {
        self.admit(
            existing,
            self.max_groups,
            "group",
            "autoCreateSubscriptionGroupLimit",
        )
    }

    fn admit(
        &self,
        existing: usize,
        max: usize,
        what: &'static str,
        key: &'static str,
    ) -> Result<(), AutoCreateRefused> {
        if existing >= max {
            return Err(AutoCreateRefused::TooMany {
                what,
                key,
                count: max,
            });
        }
        if !self.bucket.lock().try_take() {
            return Err(AutoCreateRefused::TooFast {
                per_second: self.per_second,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_bucket_refills_at_its_rate_up_to_one_seconds_worth() {
        let mut bucket = TokenBucket::new(4);
        let start = bucket.refilled;
        assert_eq!((0..10).filter(|_| bucket.try_take_at(start)).count(), 4);
        assert!(!bucket.try_take_at(start + Duration::from_millis(100)));
        // A quarter of a second earns one token at 4 a second.
        assert!(bucket.try_take_at(start + Duration::from_millis(260)));
        assert!(!bucket.try_take_at(start + Duration::from_millis(270)));
        // A long pause earns no more than a second's worth.
        let later = start + Duration::from_secs(60);
        assert_eq!((0..10).filter(|_| bucket.try_take_at(later)).count(), 4);
    }

    #[test]
    fn counts_and_rate_are_bounded() {
        let limits = AutoCreateLimits::new(3, 10, 5);
        assert_eq!(limits.admit_topic(2), Ok(()));
        assert!(matches!(
            limits.admit_topic(3),
            Err(AutoCreateRefused::TooMany { count: 3, .. })
        ));
        let admitted = (0..20).filter(|_| limits.admit_group(0).is_ok()).count();
        assert!(
            admitted <= 5,
            "burst of at most one second's worth: {admitted}"
        );
        assert!(matches!(
            limits.admit_group(0),
            Err(AutoCreateRefused::TooFast { per_second: 5 })
        ));
    }
}
