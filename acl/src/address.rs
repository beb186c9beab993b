//! Remote-address patterns of `globalWhiteRemoteAddresses` and `whiteRemoteAddress`, in the
//! forms RocketMQ accepts: one address (`192.168.0.1`, `::1`), everything (`*`, `*.*.*.*`,
//! `*:*:*:*:*:*:*:*`), a set (`192.168.1.{1,2,3}`, `10.0.0.1,10.0.0.2`, also
//! `192.168.1.1,2,3`), and ranges per segment (`192.168.0.*`, `192.168.1.10-20`,
//! `192.168.*.*`, `2001:db8::1-ff:*`). An empty pattern matches no address.

use std::collections::HashSet;
use std::net::IpAddr;

use thiserror::Error;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad remote address pattern {pattern:?}: {reason}")]
pub struct AddressError {
    pub pattern: String,
    pub reason: &'static str,
}

/// One parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressPattern {
    Nobody,
    Everyone,
    Set(HashSet<IpAddr>),
    V4([SegmentRange; 4]),
    V6([SegmentRange; 8]),
}

/// The values one segment (an IPv4 octet or an IPv6 group) may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentRange {
    pub low: u16,
    pub high: u16,
}

impl SegmentRange {
    fn contains(self, value: u16) -> bool {
        (self.low..=self.high).contains(&value)
    }
}

impl AddressPattern {
    pub fn parse(text: &str) -> Result<AddressPattern, AddressError> {
        let pattern = text.trim();
        let fail = |reason| AddressError {
            pattern: pattern.to_owned(),
            reason,
        };
        if pattern.is_empty() {
            return Ok(AddressPattern::Nobody);
        }
        if matches!(pattern, "*" | "*.*.*.*" | "*:*:*:*:*:*:*:*") {
            return Ok(AddressPattern::Everyone);
        }
        if pattern.ends_with('}') {
            return parse_braces(pattern).ok_or_else(|| fail("expected prefix.{a,b,c}"));
        }
        if pattern.contains(',') {
            return parse_list(pattern).ok_or_else(|| fail("expected addresses separated by ','"));
        }
        if pattern.contains('*') || pattern.contains('-') {
            return parse_ranges(pattern)
                .ok_or_else(|| fail("expected segments of numbers, '*' or 'low-high'"));
        }
        let address: IpAddr = pattern.parse().map_err(|_| fail("not an IP address"))?;
        Ok(AddressPattern::Set(HashSet::from([address])))
    }

    pub fn matches(&self, peer: IpAddr) -> bool {
        let peer = canonical(peer);
        match self {
            AddressPattern::Nobody => false,
            AddressPattern::Everyone => true,
            AddressPattern::Set(set) => set.contains(&peer),
            AddressPattern::V4(ranges) => match peer {
                IpAddr::V4(v4) => segments_match(ranges, v4.octets().map(u16::from)),
                IpAddr::V6(_) => false,
            },
            AddressPattern::V6(ranges) => match peer {
                IpAddr::V6(v6) => segments_match(ranges, v6.segments()),
                IpAddr::V4(_) => false,
            },
        }
    }
}

/// IPv4 peers seen through an IPv6 socket (`::ffff:a.b.c.d`) match IPv4 patterns.
fn canonical(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

fn segments_match<const N: usize>(ranges: &[SegmentRange; N], values: [u16; N]) -> bool {
    ranges
        .iter()
        .zip(values)
        .all(|(range, value)| range.contains(value))
}

fn parse_braces(pattern: &str) -> Option<AddressPattern> {
    let (prefix, rest) = pattern.rsplit_once('{')?;
    let items = rest.strip_suffix('}')?;
    let set = items
        .split(',')
        .map(|item| format!("{prefix}{}", item.trim()).parse::<IpAddr>().ok())
        .collect::<Option<HashSet<_>>>()?;
    Some(AddressPattern::Set(set))
}

/// `a,b,c`: whole addresses, or bare last segments that reuse the previous address's head.
fn parse_list(pattern: &str) -> Option<AddressPattern> {
    let mut set = HashSet::new();
    let mut head: Option<String> = None;
    for item in pattern.split(',').map(str::trim) {
        let address = match item.parse::<IpAddr>() {
            Ok(address) => {
                // Everything up to and with the last separator.
                let through_separator = item.trim_end_matches(|c| c != '.' && c != ':');
                if through_separator.is_empty() {
                    return None;
                }
                head = Some(through_separator.to_owned());
                address
            }
            Err(_) => format!("{}{item}", head.as_deref()?).parse().ok()?,
        };
        set.insert(address);
    }
    Some(AddressPattern::Set(set))
}

fn parse_ranges(pattern: &str) -> Option<AddressPattern> {
    if pattern.contains(':') {
        let groups = expand_v6_groups(pattern)?;
        let ranges = groups
            .iter()
            .map(|g| parse_segment(g, 16, 0xffff))
            .collect::<Option<Vec<_>>>()?;
        Some(AddressPattern::V6(ranges.try_into().ok()?))
    } else {
        let ranges = pattern
            .split('.')
            .map(|octet| parse_segment(octet, 10, 255))
            .collect::<Option<Vec<_>>>()?;
        Some(AddressPattern::V4(ranges.try_into().ok()?))
    }
}

/// Eight IPv6 groups, with `::` expanded to the zero groups it stands for.
fn expand_v6_groups(pattern: &str) -> Option<Vec<String>> {
    let split = |part: &str| -> Vec<String> {
        part.split(':')
            .filter(|g| !g.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let groups = match pattern.split_once("::") {
        Some((_, right)) if right.contains("::") => return None,
        Some((left, right)) => {
            let (left, right) = (split(left), split(right));
            let zeros = 8usize.checked_sub(left.len() + right.len())?;
            let mut all = left;
            all.extend(std::iter::repeat_n("0".to_owned(), zeros));
            all.extend(right);
            all
        }
        None => pattern.split(':').map(str::to_owned).collect(),
    };
    (groups.len() == 8).then_some(groups)
}

fn parse_segment(text: &str, radix: u32, max: u16) -> Option<SegmentRange> {
    let number = |s: &str| {
        u16::from_str_radix(s.trim(), radix)
            .ok()
            .filter(|n| *n <= max)
    };
    let text = text.trim();
    let (low, high) = match text {
        "*" => (0, max),
        _ => match text.split_once('-') {
            Some((low, high)) => (number(low)?, number(high)?),
            None => {
                let exact = number(text)?;
                (exact, exact)
            }
        },
    };
    (low <= high).then_some(SegmentRange { low, high })
}

/// Parses a list of patterns, failing on the first bad one.
pub fn parse_all<'a>(
    patterns: impl IntoIterator<Item = &'a str>,
) -> Result<Vec<AddressPattern>, AddressError> {
    patterns.into_iter().map(AddressPattern::parse).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    fn pattern(text: &str) -> AddressPattern {
        AddressPattern::parse(text).expect(text)
    }

    #[test]
    fn empty_matches_nobody_and_star_everyone() {
        assert!(!pattern("").matches(ip("127.0.0.1")));
        for all in ["*", "*.*.*.*", "*:*:*:*:*:*:*:*"] {
            assert!(pattern(all).matches(ip("10.1.2.3")), "{all}");
            assert!(pattern(all).matches(ip("::1")), "{all}");
        }
    }

    #[test]
    fn single_addresses_compare_as_addresses() {
        assert!(pattern("192.168.0.1").matches(ip("192.168.0.1")));
        assert!(!pattern("192.168.0.1").matches(ip("192.168.0.10")));
        assert!(pattern("2001:DB8:0:0::1").matches(ip("2001:db8::1")));
        assert!(
            pattern("127.0.0.1").matches(ip("::ffff:127.0.0.1")),
            "v4-mapped peers"
        );
    }

    #[test]
    fn sets_in_braces_and_lists() {
        let braces = pattern("192.168.1.{1,2,3}");
        assert!(braces.matches(ip("192.168.1.2")));
        assert!(!braces.matches(ip("192.168.1.4")));
        let list = pattern("10.0.0.1, 10.0.0.9");
        assert!(list.matches(ip("10.0.0.9")) && !list.matches(ip("10.0.0.2")));
        let short = pattern("192.168.1.1,2,3");
        assert!(short.matches(ip("192.168.1.3")) && !short.matches(ip("192.168.1.4")));
        assert!(pattern("2001:db8::{1,a}").matches(ip("2001:db8::a")));
    }

    #[test]
    fn ranges_per_segment() {
        let star = pattern("192.168.0.*");
        assert!(star.matches(ip("192.168.0.77")));
        assert!(!star.matches(ip("192.168.1.77")));
        let range = pattern("192.168.1.10-20");
        assert!(range.matches(ip("192.168.1.10")) && range.matches(ip("192.168.1.20")));
        assert!(!range.matches(ip("192.168.1.21")));
        assert!(pattern("10.*.*.*").matches(ip("10.200.3.4")));
        let v6 = pattern("2::ac5:78:1-200:*");
        assert!(v6.matches(ip("2::ac5:78:150:1")));
        assert!(!v6.matches(ip("2::ac5:78:201:1")));
        assert!(!v6.matches(ip("192.168.0.1")));
    }

    #[test]
    fn malformed_patterns_are_errors() {
        for bad in [
            "192.168.1.300-400",
            "192.168.1.20-10",
            "192.168.1",
            "10.0.0.*.*",
            "x.y",
            "1.2.3.{a}",
            "5,6",
            "::1::2:*",
        ] {
            assert!(AddressPattern::parse(bad).is_err(), "{bad}");
        }
    }
}
