//! What a slave checks before it appends a byte from its master (no I/O, fuzzable).
//!
//! Frames may split records anywhere, so [`ReplicaVerifier`] keeps the bytes of an incomplete
//! record (at most one record of the largest size the store accepts) and hands out only whole,
//! checked records. Every record must carry a known magic, a size within bounds that does not
//! cross its segment, its own offset in PHYSICALOFFSET and a body matching its CRC. An
//! end-of-file blank must fill its segment exactly; its filler carries nothing (readers and
//! recovery look only at its header), so it is counted rather than buffered and the slave
//! writes the blank as its header plus zeros.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use stellmq_remoting::protocol::error::RecordError;
use stellmq_remoting::protocol::message::record::{
    self, MessageVersion, BLANK_MAGIC, MAGIC_V1, MAGIC_V2, PHYSICAL_OFFSET_POS,
};
use stellmq_remoting::protocol::message::MessageRecord;

/// TOTALSIZE and MAGICCODE.
const RECORD_HEAD_LEN: usize = 8;

/// Why replicated bytes were refused; every case names the offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("frame at {got}, but the next byte expected is at {expected}")]
    NotContiguous { expected: i64, got: i64 },
    #[error("an empty log can only start at a segment boundary, not at {0}")]
    UnalignedStart(i64),
    #[error("record at {offset}: unknown magic {magic:#010x}")]
    BadMagic { offset: i64, magic: u32 },
    #[error("record at {offset}: size {total} out of bounds ({min} to {max})")]
    BadSize {
        offset: i64,
        total: i32,
        min: usize,
        max: usize,
    },
    #[error("record at {offset}: {total} bytes cross the segment end at {segment_end}")]
    CrossesSegment {
        offset: i64,
        total: i32,
        segment_end: i64,
    },
    #[error("blank at {offset}: {total} bytes do not end at the segment end {segment_end}")]
    BlankNotAtSegmentEnd {
        offset: i64,
        total: i32,
        segment_end: i64,
    },
    #[error("record at {offset} says it is at {stored} (PHYSICALOFFSET)")]
    WrongPhysicalOffset { offset: i64, stored: i64 },
    #[error("record at {offset} is corrupt: {source}")]
    Corrupt { offset: i64, source: RecordError },
}

/// Checked bytes, ready for `MessageStore::append_replicated`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Append {
    /// Whole records, back to back.
    Records { offset: i64, bytes: Bytes },
    /// An end-of-file blank of `len` bytes (write its header, then zeros to the segment end).
    Blank { offset: i64, len: usize },
}

impl Append {
    pub fn end(&self) -> i64 {
        match self {
            Append::Records { offset, bytes } => offset + bytes.len() as i64,
            Append::Blank { offset, len } => offset + *len as i64,
        }
    }
}

/// What one frame yielded: the checked appends, and the error that stopped it, if any.
#[derive(Debug, Default)]
pub struct Pushed {
    pub appends: Vec<Append>,
    pub error: Option<VerifyError>,
}

/// The largest record a store with this `maxMessageSize` writes: the body plus the largest
/// header, topic and properties.
pub fn max_record_len(max_message_size: usize) -> usize {
    let v6 = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0);
    record::record_len(
        &v6,
        &v6,
        max_message_size,
        i16::MAX as usize,
        record::MAX_PROPERTIES_LEN,
        MessageVersion::V2,
    )
}

/// Reassembles and checks the record stream a master sends.
#[derive(Debug)]
pub struct ReplicaVerifier {
    segment_size: i64,
    min_record: usize,
    max_record: usize,
    /// Offset of the first byte not handed out yet (the start of `partial` or `blank`).
    start: i64,
    /// False until the first frame for an empty log fixes where it starts.
    anchored: bool,
    /// The head, or more, of an incomplete record at `start`.
    partial: Vec<u8>,
    /// A blank at `start` being received: its length and the filler bytes still to come.
    blank: Option<(usize, usize)>,
}

enum Kind {
    Record(usize),
    Blank(usize),
}

/// Whole records found in one frame, handed out as one slice of it.
struct Run {
    offset: i64,
    from: usize,
    to: usize,
}

fn flush(run: &mut Option<Run>, body: &Bytes, appends: &mut Vec<Append>) {
    if let Some(r) = run.take() {
        appends.push(Append::Records {
            offset: r.offset,
            bytes: body.slice(r.from..r.to),
        });
    }
}

impl ReplicaVerifier {
    /// For a log that ends at `end` (0 = empty: the master may start at any segment boundary).
    pub fn new(end: i64, segment_size: usize, max_message_size: usize) -> Self {
        let v4 = SocketAddr::from(([0, 0, 0, 0], 0));
        Self {
            segment_size: i64::try_from(segment_size).unwrap_or(i64::MAX).max(1),
            min_record: record::record_len(&v4, &v4, 0, 0, 0, MessageVersion::V1),
            max_record: max_record_len(max_message_size),
            start: end,
            anchored: end > 0,
            partial: Vec::new(),
            blank: None,
        }
    }

    /// The offset the next frame must carry.
    pub fn expected(&self) -> i64 {
        let blank = self.blank.map_or(0, |(total, left)| total - left);
        self.start + (self.partial.len() + blank) as i64
    }

    /// Bytes of an incomplete record kept (at most one maximum-size record).
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }

    /// Takes one frame (an empty body is a heartbeat). Appends come out in log order; after
    /// an error the verifier must not be used again.
    pub fn push(&mut self, offset: i64, body: Bytes) -> Pushed {
        let mut out = Pushed::default();
        let mut run = None;
        let result = self
            .anchor(offset)
            .and_then(|()| self.consume(&body, &mut run, &mut out.appends));
        flush(&mut run, &body, &mut out.appends);
        out.error = result.err();
        out
    }

    fn anchor(&mut self, offset: i64) -> Result<(), VerifyError> {
        if !self.anchored {
            if offset < 0 || offset % self.segment_size != 0 {
                return Err(VerifyError::UnalignedStart(offset));
            }
            self.anchored = true;
            self.start = offset;
        }
        let expected = self.expected();
        if offset != expected {
            return Err(VerifyError::NotContiguous {
                expected,
                got: offset,
            });
        }
        Ok(())
    }

    fn consume(
        &mut self,
        body: &Bytes,
        run: &mut Option<Run>,
        appends: &mut Vec<Append>,
    ) -> Result<(), VerifyError> {
        let mut pos = 0;
        loop {
            if let Some((total, left)) = self.blank {
                let take = left.min(body.len() - pos);
                pos += take;
                if take < left {
                    self.blank = Some((total, left - take));
                    return Ok(());
                }
                appends.push(Append::Blank {
                    offset: self.start,
                    len: total,
                });
                self.start += total as i64;
                self.blank = None;
                continue;
            }
            if pos == body.len() {
                return Ok(());
            }
            if !self.partial.is_empty() {
                // Only at the start of a frame: complete the record an earlier frame began.
                if !self.complete_partial(body, &mut pos, appends)? {
                    return Ok(());
                }
                continue;
            }
            let rest = body.slice(pos..);
            if rest.len() < RECORD_HEAD_LEN {
                self.partial.extend_from_slice(&rest);
                return Ok(());
            }
            match self.check_head(self.start, &rest)? {
                Kind::Blank(total) => {
                    flush(run, body, appends);
                    self.blank = Some((total, total - RECORD_HEAD_LEN));
                    pos += RECORD_HEAD_LEN;
                }
                Kind::Record(total) if total <= rest.len() => {
                    self.check_record(self.start, &rest.slice(..total))?;
                    match run {
                        Some(r) => r.to = pos + total,
                        None => {
                            *run = Some(Run {
                                offset: self.start,
                                from: pos,
                                to: pos + total,
                            })
                        }
                    }
                    pos += total;
                    self.start += total as i64;
                }
                Kind::Record(_) => {
                    self.partial.extend_from_slice(&rest);
                    return Ok(());
                }
            }
        }
    }

    /// Adds this frame's bytes to the partial record; true once it is handed out (or turned
    /// out to be a blank), false while it still needs more.
    fn complete_partial(
        &mut self,
        body: &Bytes,
        pos: &mut usize,
        appends: &mut Vec<Append>,
    ) -> Result<bool, VerifyError> {
        let mut fill = |partial: &mut Vec<u8>, upto: usize| {
            let rest = body.get(*pos..).unwrap_or_default();
            let take = upto.saturating_sub(partial.len()).min(rest.len());
            partial.extend_from_slice(rest.get(..take).unwrap_or_default());
            *pos += take;
            partial.len() >= upto
        };
        if !fill(&mut self.partial, RECORD_HEAD_LEN) {
            return Ok(false);
        }
        let total = match self.check_head(self.start, &self.partial)? {
            Kind::Blank(total) => {
                self.partial.clear();
                self.blank = Some((total, total - RECORD_HEAD_LEN));
                return Ok(true);
            }
            Kind::Record(total) => total,
        };
        if !fill(&mut self.partial, total) {
            return Ok(false);
        }
        let bytes = Bytes::from(std::mem::take(&mut self.partial));
        self.check_record(self.start, &bytes)?;
        appends.push(Append::Records {
            offset: self.start,
            bytes,
        });
        self.start += total as i64;
        Ok(true)
    }

    /// Checks TOTALSIZE and MAGICCODE (`head` holds at least their 8 bytes).
    fn check_head(&self, offset: i64, head: &[u8]) -> Result<Kind, VerifyError> {
        let (total, magic) =
            record::peek(head).map_err(|source| VerifyError::Corrupt { offset, source })?;
        let segment_end = (offset / self.segment_size + 1) * self.segment_size;
        let size = usize::try_from(total).unwrap_or(0);
        let bad_size = |min: usize, max: usize| VerifyError::BadSize {
            offset,
            total,
            min,
            max,
        };
        match magic {
            BLANK_MAGIC => {
                if size < RECORD_HEAD_LEN {
                    return Err(bad_size(RECORD_HEAD_LEN, self.segment_size as usize));
                }
                if offset + size as i64 != segment_end {
                    return Err(VerifyError::BlankNotAtSegmentEnd {
                        offset,
                        total,
                        segment_end,
                    });
                }
                Ok(Kind::Blank(size))
            }
            MAGIC_V1 | MAGIC_V2 => {
                if !(self.min_record..=self.max_record).contains(&size) {
                    return Err(bad_size(self.min_record, self.max_record));
                }
                if offset + size as i64 > segment_end {
                    return Err(VerifyError::CrossesSegment {
                        offset,
                        total,
                        segment_end,
                    });
                }
                Ok(Kind::Record(size))
            }
            magic => Err(VerifyError::BadMagic { offset, magic }),
        }
    }

    /// Decodes a whole record: its own offset in PHYSICALOFFSET, a well-formed layout and
    /// a body that matches its CRC.
    fn check_record(&self, offset: i64, bytes: &Bytes) -> Result<(), VerifyError> {
        let stored = bytes
            .get(PHYSICAL_OFFSET_POS..PHYSICAL_OFFSET_POS + 8)
            .and_then(|f| f.try_into().ok())
            .map(i64::from_be_bytes);
        if let Some(stored) = stored.filter(|s| *s != offset) {
            return Err(VerifyError::WrongPhysicalOffset { offset, stored });
        }
        MessageRecord::decode(bytes, true)
            .map(|_| ())
            .map_err(|source| VerifyError::Corrupt { offset, source })
    }
}

#[cfg(test)]
mod tests;
