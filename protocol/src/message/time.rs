//! UTC calendar times of epoch milliseconds: the protocol's clock, and the dates that name
//! index files, count UNIQ_KEY months and print in admin tables.

/// Milliseconds since the Unix epoch: the unit of every timestamp in the protocol and the
/// store (born, store and delivery times, data versions).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The wall clock of time-driven state (a broker's POP invisible times, revive and long-poll
/// deadlines; a proxy's auto-renewals): the system's, moved forward by what
/// [`Clock::advance`] added. Tests jump past an invisible time instead of sleeping through
/// it; in production nothing advances it.
#[derive(Debug, Default)]
pub struct Clock {
    advanced_ms: std::sync::atomic::AtomicI64,
}

impl Clock {
    /// Milliseconds since the Unix epoch, as [`now_ms`] plus what was advanced.
    pub fn now_ms(&self) -> i64 {
        now_ms().saturating_add(self.advanced_ms.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Moves this clock forward by `by`.
    pub fn advance(&self, by: std::time::Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.advanced_ms
            .fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A UTC calendar time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UtcTime {
    pub year: i64,
    pub month: i64,
    pub day: i64,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    pub millis: i64,
}

impl UtcTime {
    pub fn from_ms(ms: i64) -> Self {
        let (year, month, day) = civil_from_days(ms.div_euclid(86_400_000));
        let rem = ms.rem_euclid(86_400_000);
        Self {
            year,
            month,
            day,
            hour: rem / 3_600_000,
            minute: rem / 60_000 % 60,
            second: rem / 1000 % 60,
            millis: rem % 1000,
        }
    }

    /// Milliseconds since the epoch of this time.
    pub fn to_ms(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) * 86_400_000
            + ((self.hour * 60 + self.minute) * 60 + self.second) * 1000
            + self.millis
    }

    /// Milliseconds of the first instant of this time's month.
    pub fn start_of_month_ms(&self) -> i64 {
        days_from_civil(self.year, self.month, 1) * 86_400_000
    }
}

/// Howard Hinnant's days-from-civil algorithm (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse: (year, month, day) of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_round_trips() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        let t = UtcTime::from_ms(1_796_220_000_123);
        assert_eq!(
            (t.year, t.month, t.day, t.hour, t.millis),
            (2026, 12, 2, 14, 123)
        );
        assert_eq!(UtcTime::from_ms(t.start_of_month_ms()).day, 1);
        assert_eq!(t.to_ms(), 1_796_220_000_123);
        for days in [-800_000, -1, 0, 59, 60, 11_000, 20_000, 3_000_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
