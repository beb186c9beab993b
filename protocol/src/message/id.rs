//! Message ids (protocol.md 5): the broker's offsetMsgId and the producer's UNIQ_KEY.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use thiserror::Error;

use crate::reader::ByteReader;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum IdError {
    #[error("message id '{0}' is neither 32 (IPv4) nor 56 (IPv6) hex characters")]
    BadLength(String),
    #[error("message id '{0}' is not hexadecimal")]
    NotHex(String),
}

fn hex_upper(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut s = String::with_capacity(bytes.len() * 2);
    let digit = |nibble: u8| char::from(*DIGITS.get(usize::from(nibble)).unwrap_or(&b'0'));
    for b in bytes {
        s.push(digit(b >> 4));
        s.push(digit(b & 0xF));
    }
    s
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits = text.as_bytes().chunks(2);
    digits
        .map(|pair| match pair {
            [high, low] => Some(hex_value(*high)? << 4 | hex_value(*low)?),
            _ => None,
        })
        .collect()
}

fn hex_value(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).map(|d| d as u8)
}

/// offsetMsgId: store host address, port (int) and physical offset (long), uppercase hex.
pub fn offset_msg_id(store_host: &SocketAddr, physical_offset: i64) -> String {
    let mut raw = Vec::with_capacity(28);
    match store_host.ip() {
        IpAddr::V4(ip) => raw.extend_from_slice(&ip.octets()),
        IpAddr::V6(ip) => raw.extend_from_slice(&ip.octets()),
    }
    raw.extend_from_slice(&i32::from(store_host.port()).to_be_bytes());
    raw.extend_from_slice(&physical_offset.to_be_bytes());
    hex_upper(&raw)
}

/// Decodes an offsetMsgId into the broker address and the physical offset.
pub fn decode_offset_msg_id(id: &str) -> Result<(SocketAddr, i64), IdError> {
    let ip_len = match id.len() {
        32 => 4,
        56 => 16,
        _ => return Err(IdError::BadLength(id.to_owned())),
    };
    let raw = unhex(id).ok_or_else(|| IdError::NotHex(id.to_owned()))?;
    // 16 or 28 bytes, as the length check above decided.
    let mut reader = ByteReader::new(&raw);
    let ip = if ip_len == 4 {
        reader.array::<4>().map(|o| IpAddr::V4(Ipv4Addr::from(o)))
    } else {
        reader.array::<16>().map(|o| IpAddr::V6(Ipv6Addr::from(o)))
    };
    match (ip, reader.i32(), reader.i64()) {
        (Ok(ip), Ok(port), Ok(offset)) => Ok((SocketAddr::new(ip, port as u16), offset)),
        _ => Err(IdError::BadLength(id.to_owned())),
    }
}

/// Generates UNIQ_KEY ids: client IP, low 16 bits of the pid, a random int (Java uses its
/// class loader's hash), milliseconds since the start of the month (UTC here) and a counter.
pub struct UniqIdGenerator {
    prefix: String,
    counter: AtomicU16,
}

impl UniqIdGenerator {
    pub fn new(client_ip: IpAddr) -> Self {
        let mut raw = Vec::with_capacity(22);
        match client_ip {
            IpAddr::V4(ip) => raw.extend_from_slice(&ip.octets()),
            IpAddr::V6(ip) => raw.extend_from_slice(&ip.octets()),
        }
        raw.extend_from_slice(&(std::process::id() as u16).to_be_bytes());
        raw.extend_from_slice(&rand::random::<i32>().to_be_bytes());
        Self {
            prefix: hex_upper(&raw),
            counter: AtomicU16::new(rand::random()),
        }
    }

    /// The next id: 32 hex characters for an IPv4 client.
    pub fn next_id(&self) -> String {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        let since_month = now_ms - start_of_month_utc_ms(now_ms);
        let count = self.counter.fetch_add(1, Ordering::Relaxed);
        let mut tail = [0u8; 6];
        tail[..4].copy_from_slice(&(since_month as i32).to_be_bytes());
        tail[4..].copy_from_slice(&count.to_be_bytes());
        let mut id = self.prefix.clone();
        id.push_str(&hex_upper(&tail));
        id
    }
}

/// Milliseconds of the first instant of the UTC month containing `now_ms`.
fn start_of_month_utc_ms(now_ms: i64) -> i64 {
    super::UtcTime::from_ms(now_ms).start_of_month_ms()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_id_golden_from_spec() {
        let host: SocketAddr = "10.0.0.1:10911".parse().expect("addr");
        let id = offset_msg_id(&host, 0x1F40);
        assert_eq!(id, "0A00000100002A9F0000000000001F40");
        assert_eq!(decode_offset_msg_id(&id), Ok((host, 0x1F40)));
    }

    #[test]
    fn offset_id_ipv6() {
        let host: SocketAddr = "[::1]:10911".parse().expect("addr");
        let id = offset_msg_id(&host, 7);
        assert_eq!(id.len(), 56);
        assert_eq!(
            id,
            "0000000000000000000000000000000100002A9F0000000000000007"
        );
        assert_eq!(decode_offset_msg_id(&id), Ok((host, 7)));
    }

    #[test]
    fn bad_ids_are_errors() {
        assert!(matches!(
            decode_offset_msg_id("ABC"),
            Err(IdError::BadLength(_))
        ));
        assert!(matches!(
            decode_offset_msg_id("ZZ00000100002A9F0000000000001F40"),
            Err(IdError::NotHex(_))
        ));
    }

    #[test]
    fn uniq_ids_are_unique_hex() {
        let g = UniqIdGenerator::new("192.168.0.5".parse().expect("ip"));
        let a = g.next_id();
        let b = g.next_id();
        assert_eq!(a.len(), 32);
        assert!(a.starts_with("C0A80005"));
        assert_ne!(a, b);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
    }

    #[test]
    fn month_start() {
        // 2026-12-02T14:00:00Z -> 2026-12-01T00:00:00Z
        assert_eq!(start_of_month_utc_ms(1_796_220_000_000), 1_796_083_200_000);
    }
}
