//! The stored message record (protocol.md 4.1): the CommitLog's unit, also the body of pull, query
//! and view responses.
//!
//! | field | size |
//! |---|---|
//! | TOTALSIZE, MAGICCODE, BODYCRC, QUEUEID, FLAG | 4 each |
//! | QUEUEOFFSET, PHYSICALOFFSET | 8 each |
//! | SYSFLAG | 4 |
//! | BORNTIMESTAMP | 8 |
//! | BORNHOST | 8 (IPv4) or 20 (IPv6) |
//! | STORETIMESTAMP | 8 |
//! | STOREHOST | 8 or 20 |
//! | RECONSUMETIMES | 4 |
//! | PREPAREDTRANSACTIONOFFSET | 8 |
//! | BODY | 4 + n |
//! | TOPIC | 1 + t (V1) or 2 + t (V2) |
//! | PROPERTIES | 2 + p |

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{Buf, BufMut, Bytes};

use super::id;
use super::properties::{keys, Properties};
use super::sys_flag;
use crate::error::RecordError;
use crate::reader::{ByteReader, Short};

/// Magic of a V1 record (1-byte topic length).
pub const MAGIC_V1: u32 = 0xDAA3_20A7;
/// Magic of a V2 record (2-byte topic length, 5.x).
pub const MAGIC_V2: u32 = 0xDAA3_20AB;
/// Magic of the end-of-file blank that pads a CommitLog segment.
pub const BLANK_MAGIC: u32 = 0xCBD4_3194;

/// Byte position of QUEUEOFFSET in every record.
pub const QUEUE_OFFSET_POS: usize = 20;
/// Byte position of PHYSICALOFFSET in every record.
pub const PHYSICAL_OFFSET_POS: usize = 28;
/// Byte position of SYSFLAG in every record.
pub const SYS_FLAG_POS: usize = 36;
/// Byte position of BORNTIMESTAMP in every record.
pub const BORN_TIMESTAMP_POS: usize = 40;
const BORN_HOST_POS: usize = 48;

/// Longest properties string (its length is a Java short).
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

/// Record format version, chosen by topic length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MessageVersion {
    #[default]
    V1,
    V2,
}

impl MessageVersion {
    /// V1 whenever the topic fits in 127 bytes: old clients cannot read V2 (protocol.md 4.2).
    pub fn for_topic(topic: &str) -> Self {
        if topic.len() > i8::MAX as usize {
            MessageVersion::V2
        } else {
            MessageVersion::V1
        }
    }

    pub fn magic(self) -> u32 {
        match self {
            MessageVersion::V1 => MAGIC_V1,
            MessageVersion::V2 => MAGIC_V2,
        }
    }

    fn topic_len_size(self) -> usize {
        match self {
            MessageVersion::V1 => 1,
            MessageVersion::V2 => 2,
        }
    }
}

fn host_len(addr: &SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 8,
        SocketAddr::V6(_) => 20,
    }
}

/// Byte position of STORETIMESTAMP, which depends on the born host's family.
pub fn store_timestamp_pos(sys_flag: i32) -> usize {
    BORN_HOST_POS
        + if sys_flag & sys_flag::BORNHOST_V6 != 0 {
            20
        } else {
            8
        }
}

/// Everything of a record but its body, topic and properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHead {
    pub body_crc: u32,
    pub queue_id: i32,
    pub flag: i32,
    pub queue_offset: i64,
    pub physical_offset: i64,
    /// Bits 4 and 5 are set from the host address families when encoding.
    pub sys_flag: i32,
    pub born_timestamp: i64,
    pub born_host: SocketAddr,
    pub store_timestamp: i64,
    pub store_host: SocketAddr,
    pub reconsume_times: i32,
    pub prepared_transaction_offset: i64,
}

impl RecordHead {
    /// The sysFlag with the host-family bits matching the addresses.
    pub fn effective_sys_flag(&self) -> i32 {
        let mut flag = self.sys_flag & !(sys_flag::BORNHOST_V6 | sys_flag::STOREHOST_V6);
        if self.born_host.is_ipv6() {
            flag |= sys_flag::BORNHOST_V6;
        }
        if self.store_host.is_ipv6() {
            flag |= sys_flag::STOREHOST_V6;
        }
        flag
    }
}

/// Size of an encoded record.
pub fn record_len(
    born_host: &SocketAddr,
    store_host: &SocketAddr,
    body_len: usize,
    topic_len: usize,
    properties_len: usize,
    version: MessageVersion,
) -> usize {
    4 + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + host_len(born_host)
        + 8
        + host_len(store_host)
        + 4
        + 8
        + 4
        + body_len
        + version.topic_len_size()
        + topic_len
        + 2
        + properties_len
}

/// Encodes one record; returns its length. Fails only on a topic or properties string
/// too long for its length field.
pub fn encode_record(
    head: &RecordHead,
    body: &[u8],
    topic: &str,
    properties: &str,
    out: &mut impl BufMut,
) -> Result<usize, RecordError> {
    let version = MessageVersion::for_topic(topic);
    if topic.len() > i16::MAX as usize {
        return Err(RecordError::Invalid("topic longer than 32767 bytes"));
    }
    if properties.len() > MAX_PROPERTIES_LEN {
        return Err(RecordError::Invalid("properties longer than 32767 bytes"));
    }
    if body.len() > i32::MAX as usize {
        return Err(RecordError::Invalid("body longer than 2 GiB"));
    }
    let total = record_len(
        &head.born_host,
        &head.store_host,
        body.len(),
        topic.len(),
        properties.len(),
        version,
    );
    out.put_i32(total as i32);
    out.put_u32(version.magic());
    out.put_u32(head.body_crc);
    out.put_i32(head.queue_id);
    out.put_i32(head.flag);
    out.put_i64(head.queue_offset);
    out.put_i64(head.physical_offset);
    out.put_i32(head.effective_sys_flag());
    out.put_i64(head.born_timestamp);
    put_host(out, &head.born_host);
    out.put_i64(head.store_timestamp);
    put_host(out, &head.store_host);
    out.put_i32(head.reconsume_times);
    out.put_i64(head.prepared_transaction_offset);
    out.put_i32(body.len() as i32);
    out.put_slice(body);
    match version {
        MessageVersion::V1 => out.put_u8(topic.len() as u8),
        MessageVersion::V2 => out.put_i16(topic.len() as i16),
    }
    out.put_slice(topic.as_bytes());
    out.put_i16(properties.len() as i16);
    out.put_slice(properties.as_bytes());
    Ok(total)
}

fn put_host(out: &mut impl BufMut, addr: &SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => out.put_slice(&ip.octets()),
        IpAddr::V6(ip) => out.put_slice(&ip.octets()),
    }
    out.put_i32(i32::from(addr.port()));
}

/// One decoded stored message (Java's `MessageExt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRecord {
    pub head: RecordHead,
    pub version: MessageVersion,
    /// The stored body bytes (compressed when sysFlag bit 0 is set).
    pub body: Bytes,
    pub topic: String,
    pub properties: Properties,
}

impl MessageRecord {
    /// Encodes the record; the store fills in offsets and timestamps before this.
    pub fn encode(&self, out: &mut impl BufMut) -> Result<usize, RecordError> {
        encode_record(
            &self.head,
            &self.body,
            &self.topic,
            &self.properties.encode(),
            out,
        )
    }

    pub fn encode_to_vec(&self) -> Result<Vec<u8>, RecordError> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }

    /// Decodes the record at the start of `buf`; returns it and the bytes it used.
    pub fn decode(buf: &Bytes, check_crc: bool) -> Result<(Self, usize), RecordError> {
        let view = RecordView::parse(buf)?;
        let body = buf.slice(view.body_range.clone());
        if check_crc {
            let computed = super::body_crc(&body);
            if computed != view.head.body_crc {
                return Err(RecordError::BadCrc {
                    stored: view.head.body_crc,
                    computed,
                });
            }
        }
        let record = Self {
            version: view.version,
            body,
            topic: view.topic.to_owned(),
            properties: Properties::decode(view.properties),
            head: view.head,
        };
        Ok((record, view.total))
    }

    /// Decodes back-to-back records (a pull or query response body).
    pub fn decode_all(mut buf: Bytes, check_crc: bool) -> Result<Vec<Self>, RecordError> {
        let mut out = Vec::new();
        while !buf.is_empty() {
            let (record, used) = Self::decode(&buf, check_crc)?;
            out.push(record);
            buf.advance(used);
        }
        Ok(out)
    }

    /// The broker-generated id: store host and physical offset (protocol.md 5.1).
    pub fn offset_msg_id(&self) -> String {
        id::offset_msg_id(&self.head.store_host, self.head.physical_offset)
    }

    /// The id clients show: `UNIQ_KEY` when present, else the offset id.
    pub fn msg_id(&self) -> String {
        self.properties
            .get(keys::UNIQ_KEY)
            .map_or_else(|| self.offset_msg_id(), str::to_owned)
    }

    /// The body as the application sent it (inflated when compressed).
    pub fn uncompressed_body(&self, limit: usize) -> Result<Bytes, RecordError> {
        if self.head.sys_flag & sys_flag::COMPRESSED != 0 {
            super::zlib_decompress(&self.body, limit).map(Bytes::from)
        } else {
            Ok(self.body.clone())
        }
    }
}

/// A record read in place: the head, and the topic and properties borrowed from the
/// bytes. The dispatcher reads every appended record this way, without the allocations of
/// an owned [`MessageRecord`] (its topic and a map of owned properties).
#[derive(Debug, Clone)]
pub struct RecordView<'a> {
    pub head: RecordHead,
    pub version: MessageVersion,
    /// Where the body lies in the parsed bytes.
    pub body_range: std::ops::Range<usize>,
    pub topic: &'a str,
    /// The encoded properties (`name\u0001value\u0002`...).
    pub properties: &'a str,
    /// TOTALSIZE: the bytes the record takes.
    pub total: usize,
}

impl<'a> RecordView<'a> {
    /// Reads the record at the start of `buf`, checking its layout (not its body CRC).
    pub fn parse(buf: &'a [u8]) -> Result<Self, RecordError> {
        let (total, magic) = peek(buf)?;
        let version = match magic {
            MAGIC_V1 => MessageVersion::V1,
            MAGIC_V2 => MessageVersion::V2,
            other => return Err(RecordError::BadMagic(other)),
        };
        let total =
            usize::try_from(total)
                .ok()
                .filter(|t| *t >= 4)
                .ok_or(RecordError::SizeMismatch {
                    declared: i64::from(total),
                    actual: buf.len(),
                })?;
        let record = buf.get(..total).ok_or(RecordError::Truncated {
            needed: total,
            available: buf.len(),
        })?;
        let mut cur = Cursor(ByteReader::new(record));
        cur.skip(8)?;
        let body_crc = cur.u32()?;
        let queue_id = cur.i32()?;
        let flag = cur.i32()?;
        let queue_offset = cur.i64()?;
        let physical_offset = cur.i64()?;
        let sys_flag = cur.i32()?;
        let born_timestamp = cur.i64()?;
        let born_host = cur.host(sys_flag & sys_flag::BORNHOST_V6 != 0)?;
        let store_timestamp = cur.i64()?;
        let store_host = cur.host(sys_flag & sys_flag::STOREHOST_V6 != 0)?;
        let reconsume_times = cur.i32()?;
        let prepared_transaction_offset = cur.i64()?;
        let body_len = cur.i32_len()?;
        let body_start = cur.pos();
        cur.skip(body_len)?;
        let topic_len = match version {
            MessageVersion::V1 => usize::from(cur.u8()?),
            MessageVersion::V2 => cur.i16_len()?,
        };
        let topic = cur.text(topic_len)?;
        let props_len = cur.i16_len()?;
        let properties = cur.text(props_len)?;
        if cur.pos() != total {
            return Err(RecordError::SizeMismatch {
                declared: total as i64,
                actual: cur.pos(),
            });
        }
        let head = RecordHead {
            body_crc,
            queue_id,
            flag,
            queue_offset,
            physical_offset,
            sys_flag,
            born_timestamp,
            born_host,
            store_timestamp,
            store_host,
            reconsume_times,
            prepared_transaction_offset,
        };
        Ok(Self {
            head,
            version,
            body_range: body_start..body_start + body_len,
            topic,
            properties,
            total,
        })
    }

    /// The properties' entries as [`Properties::decode`] reads them (of a repeated name the
    /// last one counts).
    pub fn property_entries(&self) -> impl Iterator<Item = (&'a str, &'a str)> {
        super::properties::entries(self.properties)
    }
}

/// Reads TOTALSIZE and MAGICCODE of the record at the start of `buf`.
pub fn peek(buf: &[u8]) -> Result<(i32, u32), RecordError> {
    let mut reader = ByteReader::new(buf);
    match (reader.i32(), reader.u32()) {
        (Ok(total), Ok(magic)) => Ok((total, magic)),
        _ => Err(RecordError::Truncated {
            needed: 8,
            available: buf.len(),
        }),
    }
}

/// The record's fields: a short read is a truncated record.
struct Cursor<'a>(ByteReader<'a>);

fn truncated(short: Short) -> RecordError {
    RecordError::Truncated {
        needed: short.needed,
        available: short.available,
    }
}

impl<'a> Cursor<'a> {
    fn pos(&self) -> usize {
        self.0.pos()
    }

    fn skip(&mut self, n: usize) -> Result<(), RecordError> {
        self.0.take(n).map(|_| ()).map_err(truncated)
    }

    fn i32_len(&mut self) -> Result<usize, RecordError> {
        let len = self.i32()?;
        usize::try_from(len).map_err(|_| RecordError::Invalid("negative length field"))
    }

    fn i16_len(&mut self) -> Result<usize, RecordError> {
        let len = self.0.i16().map_err(truncated)?;
        usize::try_from(len).map_err(|_| RecordError::Invalid("negative length field"))
    }

    fn u8(&mut self) -> Result<u8, RecordError> {
        self.0.u8().map_err(truncated)
    }
    fn i32(&mut self) -> Result<i32, RecordError> {
        self.0.i32().map_err(truncated)
    }
    fn u32(&mut self) -> Result<u32, RecordError> {
        self.0.u32().map_err(truncated)
    }
    fn i64(&mut self) -> Result<i64, RecordError> {
        self.0.i64().map_err(truncated)
    }

    fn host(&mut self, v6: bool) -> Result<SocketAddr, RecordError> {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.0.array::<16>().map_err(truncated)?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.0.array::<4>().map_err(truncated)?))
        };
        let port = self.i32()?;
        Ok(SocketAddr::new(ip, port as u16))
    }

    fn text(&mut self, len: usize) -> Result<&'a str, RecordError> {
        let raw = self.0.take(len).map_err(truncated)?;
        std::str::from_utf8(raw).map_err(|_| RecordError::Invalid("text field is not UTF-8"))
    }
}
