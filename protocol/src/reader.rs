//! One big-endian byte reader for every binary layout of the protocol (ROCKETMQ binary
//! headers, stored records, compressed registration bodies). Each codec maps a short read
//! to its own error.

/// The big-endian `i32` at byte `at` of `buf`, if `buf` holds it.
pub fn i32_at(buf: &[u8], at: usize) -> Option<i32> {
    let (word, _) = buf.get(at..)?.split_first_chunk()?;
    Some(i32::from_be_bytes(*word))
}

/// The big-endian `i64` at byte `at` of `buf`, if `buf` holds it.
pub fn i64_at(buf: &[u8], at: usize) -> Option<i64> {
    let (word, _) = buf.get(at..)?.split_first_chunk()?;
    Some(i64::from_be_bytes(*word))
}

/// A read past the end: how far it needed to go and how much there was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Short {
    pub needed: usize,
    pub available: usize,
}

/// Reads big-endian fields from the front of a slice, never past its end.
pub(crate) struct ByteReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> ByteReader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes read so far.
    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Short> {
        let short = Short {
            needed: self.pos.saturating_add(n),
            available: self.buf.len(),
        };
        let end = self.pos.checked_add(n).ok_or(short)?;
        let slice = self.buf.get(self.pos..end).ok_or(short)?;
        self.pos = end;
        Ok(slice)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        let rest = self.buf.get(self.pos..).unwrap_or_default();
        let (head, _) = rest.split_first_chunk::<N>().ok_or(Short {
            needed: self.pos.saturating_add(N),
            available: self.buf.len(),
        })?;
        self.pos += N;
        Ok(*head)
    }

    pub fn u8(&mut self) -> Result<u8, Short> {
        let [byte] = self.array::<1>()?;
        Ok(byte)
    }

    pub fn i16(&mut self) -> Result<i16, Short> {
        Ok(i16::from_be_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32, Short> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32, Short> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, Short> {
        Ok(i64::from_be_bytes(self.array()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_big_endian_and_never_past_the_end() {
        let mut r = ByteReader::new(&[0, 1, 0, 0, 0, 2, 9]);
        assert_eq!(r.i16(), Ok(1));
        assert_eq!(r.i32(), Ok(2));
        assert_eq!(r.remaining(), 1);
        assert_eq!(
            r.i32(),
            Err(Short {
                needed: 10,
                available: 7
            })
        );
        assert_eq!(
            r.take(usize::MAX).map(<[u8]>::len),
            Err(Short {
                needed: usize::MAX,
                available: 7
            })
        );
        assert_eq!(r.u8(), Ok(9));
        assert_eq!(r.pos(), 7);
    }
}
