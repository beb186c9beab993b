//! The HA wire formats as plain functions over bytes (no I/O), so they can be unit-tested
//! and fuzzed on arbitrary input: StellMQ's identity handshake, the slave's offset
//! reports and the master's frame headers. Record checks live in [`super::verify`].

use hmac::{Hmac, Mac};
use sha2::Sha256;
use stellmq_remoting::protocol::{i32_at, i64_at};

/// First 8 bytes a StellMQ slave sends: `0xFF "SMQHA"` then the version (u16, big-endian).
/// Read as a classic offset report it is negative, which no slave can report, so a classic
/// peer can never be mistaken for a handshake (nor the other way round).
pub const HANDSHAKE_MAGIC: [u8; 8] = [0xFF, b'S', b'M', b'Q', b'H', b'A', 0x00, 0x01];
/// The handshake version this build speaks (the last two bytes of [`HANDSHAKE_MAGIC`]).
pub const HANDSHAKE_VERSION: u16 = 1;
/// The magic followed by the identity length (u16, big-endian).
pub const HELLO_HEAD_LEN: usize = 10;
/// The longest identity a master reads.
pub const MAX_IDENTITY_LEN: usize = 1024;
/// Length of the nonce a master with `haAuthSecret` sends.
pub const NONCE_LEN: usize = 32;
/// Shortest nonce a slave accepts.
pub const MIN_NONCE_LEN: usize = 16;
/// HMAC-SHA256 output.
pub const PROOF_LEN: usize = 32;
/// The master's last handshake byte: the slave is registered; the classic protocol follows.
pub const ACCEPTED: u8 = 0x01;
/// A frame header: physical offset (i64) and body size (i32), big-endian.
pub const FRAME_HEADER_LEN: usize = 12;
/// The largest frame body a slave accepts (a master sends at most `haTransferBatchSize`).
pub const MAX_FRAME_BODY: usize = 4 * super::TRANSFER_BATCH;

/// Why a handshake was refused or could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error(
        "sent an offset report ({0}) instead of the StellMQ handshake: a classic RocketMQ \
         slave, an older StellMQ, or not a slave at all"
    )]
    ClassicReport(i64),
    #[error("bad handshake magic {0:02x?}")]
    BadMagic([u8; 8]),
    #[error(
        "unsupported handshake version {0} (a classic master speaks {HANDSHAKE_VERSION}, one \
         in controller mode 2: are both brokers in the same mode?)"
    )]
    UnsupportedVersion(u16),
    #[error("identity of {0} bytes (at most {MAX_IDENTITY_LEN})")]
    IdentityTooLong(usize),
    #[error("malformed identity: {0}")]
    MalformedIdentity(&'static str),
    #[error("cluster '{got}' is not this group's cluster '{expected}'")]
    WrongCluster { expected: String, got: String },
    #[error("brokerName '{got}' is not this group's brokerName '{expected}'")]
    WrongBrokerName { expected: String, got: String },
    #[error("brokerId {0} is not a slave's (slaves use brokerId > 0)")]
    NotASlaveId(i64),
    #[error("nonce of {0} bytes (expected {MIN_NONCE_LEN} to 255)")]
    BadNonce(usize),
    #[error("wrong haAuthSecret proof")]
    BadProof,
}

/// Who a slave says it is: the group (cluster and broker name) and its brokerId.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlaveIdentity {
    pub cluster_name: String,
    pub broker_name: String,
    pub broker_id: i64,
}

impl SlaveIdentity {
    /// The identity bytes: cluster and broker name (each a u16 length and UTF-8), then
    /// brokerId (i64), all big-endian.
    pub fn encode(&self) -> Result<Vec<u8>, HandshakeError> {
        let mut out = Vec::with_capacity(12 + self.cluster_name.len() + self.broker_name.len());
        for name in [&self.cluster_name, &self.broker_name] {
            let len = u16::try_from(name.len())
                .map_err(|_| HandshakeError::IdentityTooLong(name.len()))?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(name.as_bytes());
        }
        out.extend_from_slice(&self.broker_id.to_be_bytes());
        if out.len() > MAX_IDENTITY_LEN {
            return Err(HandshakeError::IdentityTooLong(out.len()));
        }
        Ok(out)
    }

    /// Decodes exactly one identity (no trailing bytes).
    pub fn decode(bytes: &[u8]) -> Result<Self, HandshakeError> {
        let mut rest = bytes;
        let cluster_name = take_str(&mut rest)?;
        let broker_name = take_str(&mut rest)?;
        let id: [u8; 8] = rest
            .try_into()
            .map_err(|_| HandshakeError::MalformedIdentity("brokerId is not the last 8 bytes"))?;
        Ok(Self {
            cluster_name,
            broker_name,
            broker_id: i64::from_be_bytes(id),
        })
    }
}

fn take_str(rest: &mut &[u8]) -> Result<String, HandshakeError> {
    let (len, tail) = rest
        .split_first_chunk::<2>()
        .ok_or(HandshakeError::MalformedIdentity("truncated name length"))?;
    let len = usize::from(u16::from_be_bytes(*len));
    let (name, tail) = tail
        .split_at_checked(len)
        .ok_or(HandshakeError::MalformedIdentity("truncated name"))?;
    let name = std::str::from_utf8(name)
        .map_err(|_| HandshakeError::MalformedIdentity("name is not UTF-8"))?;
    *rest = tail;
    Ok(name.to_owned())
}

/// What a slave sends first: [`HANDSHAKE_MAGIC`], the identity length (u16), the identity.
pub fn encode_hello(identity_bytes: &[u8]) -> Result<Vec<u8>, HandshakeError> {
    let len = u16::try_from(identity_bytes.len())
        .ok()
        .filter(|l| usize::from(*l) <= MAX_IDENTITY_LEN)
        .ok_or(HandshakeError::IdentityTooLong(identity_bytes.len()))?;
    let mut out = Vec::with_capacity(HELLO_HEAD_LEN + identity_bytes.len());
    out.extend_from_slice(&HANDSHAKE_MAGIC);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(identity_bytes);
    Ok(out)
}

/// Checks the hello's first 8 bytes, naming what a peer sent instead of the magic.
pub fn check_magic(magic: &[u8; 8]) -> Result<(), HandshakeError> {
    check_magic_version(magic, HANDSHAKE_VERSION)
}

/// [`check_magic`] for a master that speaks `version` (1 classic, 2 controller mode).
pub fn check_magic_version(magic: &[u8; 8], version: u16) -> Result<(), HandshakeError> {
    check_magic_versions(magic, &[version]).map(|_| ())
}

/// [`check_magic`] for a master that speaks any of `versions`; the slave's version.
pub fn check_magic_versions(magic: &[u8; 8], versions: &[u16]) -> Result<u16, HandshakeError> {
    let version = u16::from_be_bytes([magic[6], magic[7]]);
    if magic[..6] == HANDSHAKE_MAGIC[..6] && versions.contains(&version) {
        return Ok(version);
    }
    if magic[..6] == HANDSHAKE_MAGIC[..6] {
        return Err(HandshakeError::UnsupportedVersion(u16::from_be_bytes([
            magic[6], magic[7],
        ])));
    }
    let as_report = i64::from_be_bytes(*magic);
    Err(if as_report >= 0 {
        HandshakeError::ClassicReport(as_report)
    } else {
        HandshakeError::BadMagic(*magic)
    })
}

/// Checks the identity length that follows the magic.
pub fn decode_identity_len(len: [u8; 2]) -> Result<usize, HandshakeError> {
    let len = usize::from(u16::from_be_bytes(len));
    if len > MAX_IDENTITY_LEN {
        return Err(HandshakeError::IdentityTooLong(len));
    }
    Ok(len)
}

/// Checks the magic and returns the identity length that follows.
pub fn decode_hello_head(head: &[u8; HELLO_HEAD_LEN]) -> Result<usize, HandshakeError> {
    let [m0, m1, m2, m3, m4, m5, m6, m7, l0, l1] = *head;
    check_magic(&[m0, m1, m2, m3, m4, m5, m6, m7])?;
    decode_identity_len([l0, l1])
}

/// A decoded hello.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello<'a> {
    pub identity: SlaveIdentity,
    /// The identity as sent (what a proof covers).
    pub identity_bytes: &'a [u8],
    /// Bytes of `buf` the hello used.
    pub len: usize,
}

/// A whole hello at the start of `buf`; `Ok(None)` while more bytes are needed.
pub fn decode_hello(buf: &[u8]) -> Result<Option<Hello<'_>>, HandshakeError> {
    let Some(head) = buf.first_chunk::<HELLO_HEAD_LEN>() else {
        return Ok(None);
    };
    let len = decode_hello_head(head)?;
    let Some(identity_bytes) = buf.get(HELLO_HEAD_LEN..HELLO_HEAD_LEN + len) else {
        return Ok(None);
    };
    Ok(Some(Hello {
        identity: SlaveIdentity::decode(identity_bytes)?,
        identity_bytes,
        len: HELLO_HEAD_LEN + len,
    }))
}

/// What a master admits: slaves of its own cluster and broker name.
pub fn admit(
    identity: &SlaveIdentity,
    cluster_name: &str,
    broker_name: &str,
) -> Result<(), HandshakeError> {
    if identity.cluster_name != cluster_name {
        return Err(HandshakeError::WrongCluster {
            expected: cluster_name.to_owned(),
            got: identity.cluster_name.clone(),
        });
    }
    if identity.broker_name != broker_name {
        return Err(HandshakeError::WrongBrokerName {
            expected: broker_name.to_owned(),
            got: identity.broker_name.clone(),
        });
    }
    if identity.broker_id <= 0 {
        return Err(HandshakeError::NotASlaveId(identity.broker_id));
    }
    Ok(())
}

/// The master's challenge: the nonce length (one byte; 0 = no secret) and the nonce.
pub fn encode_challenge(nonce: Option<&[u8; NONCE_LEN]>) -> Vec<u8> {
    match nonce {
        None => vec![0],
        Some(nonce) => {
            let mut out = Vec::with_capacity(1 + NONCE_LEN);
            out.push(NONCE_LEN as u8);
            out.extend_from_slice(nonce);
            out
        }
    }
}

/// The nonce length announced by a challenge's first byte (0: the master wants no secret).
pub fn decode_challenge_len(first: u8) -> Result<usize, HandshakeError> {
    match usize::from(first) {
        0 => Ok(0),
        n if n >= MIN_NONCE_LEN => Ok(n),
        n => Err(HandshakeError::BadNonce(n)),
    }
}

fn mac(secret: &[u8], nonce: &[u8], identity_bytes: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length, so this never fails.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(nonce);
    mac.update(identity_bytes);
    mac
}

/// HMAC-SHA256(secret, nonce || identity bytes): the slave's answer to a challenge.
pub fn proof(secret: &[u8], nonce: &[u8], identity_bytes: &[u8]) -> [u8; PROOF_LEN] {
    mac(secret, nonce, identity_bytes)
        .finalize()
        .into_bytes()
        .into()
}

/// Checks a slave's proof in constant time.
pub fn verify_proof(
    secret: &[u8],
    nonce: &[u8],
    identity_bytes: &[u8],
    proof: &[u8],
) -> Result<(), HandshakeError> {
    mac(secret, nonce, identity_bytes)
        .verify_slice(proof)
        .map_err(|_| HandshakeError::BadProof)
}

/// A master → slave frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// CommitLog offset of the body's first byte (or the next offset, for a heartbeat).
    pub offset: i64,
    /// Body length; 0 = heartbeat.
    pub size: usize,
}

/// A frame header a slave cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame size {0} out of bounds (0 to {MAX_FRAME_BODY})")]
    BadSize(i32),
    #[error("negative frame offset {0}")]
    NegativeOffset(i64),
}

pub fn encode_frame_header(offset: i64, size: usize) -> [u8; FRAME_HEADER_LEN] {
    let mut header = [0u8; FRAME_HEADER_LEN];
    header[..8].copy_from_slice(&offset.to_be_bytes());
    // Bodies are at most a few transfer batches, far below i32::MAX.
    header[8..].copy_from_slice(&i32::try_from(size).unwrap_or(i32::MAX).to_be_bytes());
    header
}

pub fn decode_frame_header(header: &[u8; FRAME_HEADER_LEN]) -> Result<FrameHeader, FrameError> {
    let (offset, size) = (i64_at(header, 0), i32_at(header, 8));
    let (offset, size) = (offset.unwrap_or_default(), size.unwrap_or_default());
    if offset < 0 {
        return Err(FrameError::NegativeOffset(offset));
    }
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s <= MAX_FRAME_BODY)
        .ok_or(FrameError::BadSize(size))?;
    Ok(FrameHeader { offset, size })
}

pub mod v2;

#[cfg(test)]
mod tests;
