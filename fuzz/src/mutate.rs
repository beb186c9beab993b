//! A small, dependency-free mutation engine for the stable driver: bit flips, byte and
//! word edits (with lengths in mind), truncations, deletions, insertions, splices,
//! dictionary tokens and long repetitions (for nesting and quadratic behaviour).

/// xorshift64*: fast, seedable, good enough to pick mutations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // Zero is xorshift's one fixed point.
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        (self.next_u64() % n as u64) as usize
    }

    /// True once in `n` times.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// Values that tend to sit on the edge of a length or count check.
const INTERESTING: [i64; 14] = [
    0,
    1,
    -1,
    2,
    4,
    8,
    127,
    128,
    255,
    0x7FFF,
    0xFFFF,
    i32::MAX as i64,
    i32::MIN as i64,
    i64::MAX,
];

pub struct Mutator<'a> {
    pub rng: Rng,
    dictionary: &'a [&'a [u8]],
    max_len: usize,
}

impl<'a> Mutator<'a> {
    pub fn new(seed: u64, dictionary: &'a [&'a [u8]], max_len: usize) -> Self {
        Self {
            rng: Rng::new(seed),
            dictionary,
            max_len,
        }
    }

    /// A mutant of `input`, sometimes spliced with `other`; never longer than `max_len`.
    pub fn mutate(&mut self, input: &[u8], other: &[u8]) -> Vec<u8> {
        let mut out = input.to_vec();
        let rounds = 1 + self.rng.below(4);
        for _ in 0..rounds {
            self.once(&mut out, other);
            out.truncate(self.max_len);
        }
        out
    }

    fn once(&mut self, data: &mut Vec<u8>, other: &[u8]) {
        let len = data.len();
        match self.rng.below(13) {
            0 if len > 0 => {
                let pos = self.rng.below(len);
                data[pos] ^= 1 << self.rng.below(8);
            }
            1 if len > 0 => {
                let pos = self.rng.below(len);
                data[pos] = match self.rng.below(3) {
                    0 => self.rng.next_u64() as u8,
                    _ => INTERESTING[self.rng.below(INTERESTING.len())] as u8,
                };
            }
            2 if len > 0 => data.truncate(self.rng.below(len)),
            3 if len > 0 => {
                let start = self.rng.below(len);
                let end = start + 1 + self.rng.below((len - start).min(64));
                data.drain(start..end);
            }
            4 => {
                let pos = self.rng.below(len + 1);
                let n = 1 + self.rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                data.splice(pos..pos, bytes);
            }
            5 if len > 0 => {
                // Copy a chunk elsewhere (duplicates a field, a frame, a JSON member).
                let start = self.rng.below(len);
                let end = start + 1 + self.rng.below((len - start).min(256));
                let chunk = data[start..end].to_vec();
                let pos = self.rng.below(len + 1);
                data.splice(pos..pos, chunk);
            }
            6 if !other.is_empty() => {
                let keep = self.rng.below(len + 1);
                let from = self.rng.below(other.len());
                data.truncate(keep);
                data.extend_from_slice(&other[from..]);
            }
            7 if len > 0 => self.overwrite_word(data),
            8 if len >= 4 => {
                // Rewrite a 4-byte length word to what follows it, give or take a little.
                let pos = self.rng.below(len - 3);
                let rest = (len - pos - 4) as i64;
                let delta = self.rng.below(9) as i64 - 4;
                let value = (rest + delta) as i32;
                data[pos..pos + 4].copy_from_slice(&value.to_be_bytes());
            }
            9 if !self.dictionary.is_empty() => {
                let token = self.dictionary[self.rng.below(self.dictionary.len())];
                let pos = self.rng.below(len + 1);
                if self.rng.one_in(2) || pos == len {
                    data.splice(pos..pos, token.iter().copied());
                } else {
                    let end = (pos + token.len()).min(len);
                    data.splice(pos..end, token.iter().copied());
                }
            }
            10 => {
                // Repeat a short chunk (or a token) many times: deep nesting, long runs.
                let chunk: Vec<u8> = if len > 0 && self.rng.one_in(2) {
                    let start = self.rng.below(len);
                    let end = start + 1 + self.rng.below((len - start).min(8));
                    data[start..end].to_vec()
                } else if !self.dictionary.is_empty() {
                    self.dictionary[self.rng.below(self.dictionary.len())].to_vec()
                } else {
                    vec![self.rng.next_u64() as u8]
                };
                let most = if self.rng.one_in(4) { 20_000 } else { 100 };
                let times = 2 + self.rng.below(most);
                let repeated: Vec<u8> = chunk
                    .iter()
                    .copied()
                    .cycle()
                    .take((chunk.len() * times).min(self.max_len))
                    .collect();
                let pos = self.rng.below(len + 1);
                data.splice(pos..pos, repeated);
            }
            11 if len > 0 => {
                // Small arithmetic on a byte: off-by-one lengths and counts.
                let pos = self.rng.below(len);
                let delta = self.rng.below(33) as u8;
                data[pos] = if self.rng.one_in(2) {
                    data[pos].wrapping_add(delta)
                } else {
                    data[pos].wrapping_sub(delta)
                };
            }
            _ => {
                // Fresh random bytes, now and then.
                if self.rng.one_in(8) {
                    let n = self.rng.below(64);
                    *data = (0..n).map(|_| self.rng.next_u64() as u8).collect();
                } else if len > 0 {
                    let pos = self.rng.below(len);
                    data[pos] = self.rng.next_u64() as u8;
                }
            }
        }
    }

    /// Overwrites a big-endian 2-, 4- or 8-byte word with an interesting value.
    fn overwrite_word(&mut self, data: &mut [u8]) {
        let width = [2, 4, 4, 8][self.rng.below(4)];
        if data.len() < width {
            return;
        }
        let pos = self.rng.below(data.len() - width + 1);
        let value = match self.rng.below(4) {
            0 => data.len() as i64,
            1 => (data.len() - pos) as i64,
            _ => INTERESTING[self.rng.below(INTERESTING.len())],
        };
        let bytes = value.to_be_bytes();
        data[pos..pos + width].copy_from_slice(&bytes[8 - width..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_bounded_and_reproducible() {
        let dict: &[&[u8]] = &[b"(", b"NOT "];
        let mut a = Mutator::new(7, dict, 512);
        let mut b = Mutator::new(7, dict, 512);
        let mut changed = 0;
        for _ in 0..5_000 {
            let x = a.mutate(b"a = 1 AND b = 'x'", b"{\"k\":1}");
            assert_eq!(x, b.mutate(b"a = 1 AND b = 'x'", b"{\"k\":1}"));
            assert!(x.len() <= 512);
            changed += usize::from(x != b"a = 1 AND b = 'x'");
        }
        assert!(changed > 4_500, "{changed}");
        // Empty inputs grow.
        let mut m = Mutator::new(1, &[], 64);
        assert!((0..100).any(|_| !m.mutate(b"", b"").is_empty()));
    }
}
