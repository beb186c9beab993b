//! Authentication of the Raft RPCs between controllers (issue #36). With
//! `controllerRaftAuthSecret` set, every vote, append and snapshot request carries the
//! sender's node id, its time and an HMAC-SHA256 under the secret of the request code, both
//! of those and the body (ext fields `raftFrom`, `raftTime`, `raftSignature`, hex); a
//! controller answers only requests whose signature checks out and whose time is within
//! [`MAX_SKEW_MS`] of its own, and refuses the others with NO_PERMISSION. So nothing that
//! reaches a controller's port without the secret can vote, append log entries or install a
//! snapshot. (A request captured on the wire could be replayed within the skew window; Raft
//! ignores a request of a past term or an entry it already holds, and TLS on the port keeps
//! requests from being captured.) Without the secret, Raft RPCs are accepted from anyone who
//! reaches the port, as RocketMQ's DLedger and JRaft controllers do.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use stellmq_remoting::protocol::{ExtFields, RemotingCommand, RequestCode};

const FROM: &str = "raftFrom";
const TIME: &str = "raftTime";
const SIGNATURE: &str = "raftSignature";
/// How far a request's time may be from the receiver's clock.
pub const MAX_SKEW_MS: i64 = 30_000;

/// Why a Raft RPC was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PeerAuthError {
    #[error("the Raft RPC is not signed (controllerRaftAuthSecret is set on this controller)")]
    Unsigned,
    #[error("the Raft RPC's {0} is malformed")]
    Malformed(&'static str),
    #[error("the Raft RPC's time is {0} ms away from this controller's clock")]
    Skewed(i64),
    #[error("the Raft RPC's signature does not match controllerRaftAuthSecret")]
    BadSignature,
}

/// Signs outgoing and checks incoming Raft RPCs; does nothing without a secret.
#[derive(Clone)]
pub struct PeerAuth {
    secret: Option<Vec<u8>>,
}

impl PeerAuth {
    /// An empty `secret` turns authentication off.
    pub fn new(secret: &str) -> Self {
        Self {
            secret: (!secret.is_empty()).then(|| secret.as_bytes().to_vec()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.secret.is_some()
    }

    /// The fields that authenticate a request from node `from` at `now_ms`.
    pub fn sign(&self, code: RequestCode, from: u64, now_ms: i64, body: &[u8]) -> ExtFields {
        let mut fields = ExtFields::new();
        if let Some(mac) = self.mac(code.as_i32(), &from.to_string(), &now_ms.to_string(), body) {
            fields.insert(FROM, from.to_string());
            fields.insert(TIME, now_ms.to_string());
            fields.insert(SIGNATURE, hex(&mac.finalize().into_bytes()));
        }
        fields
    }

    /// Checks a received request at the receiver's time `now_ms`.
    pub fn verify(&self, request: &RemotingCommand, now_ms: i64) -> Result<(), PeerAuthError> {
        if self.secret.is_none() {
            return Ok(());
        }
        let fields = &request.ext_fields;
        let (Some(from), Some(time), Some(signature)) =
            (fields.get(FROM), fields.get(TIME), fields.get(SIGNATURE))
        else {
            return Err(PeerAuthError::Unsigned);
        };
        from.parse::<u64>()
            .map_err(|_| PeerAuthError::Malformed(FROM))?;
        let at: i64 = time.parse().map_err(|_| PeerAuthError::Malformed(TIME))?;
        let skew = now_ms.saturating_sub(at);
        if skew.saturating_abs() > MAX_SKEW_MS {
            return Err(PeerAuthError::Skewed(skew));
        }
        let signature = unhex(signature).ok_or(PeerAuthError::Malformed(SIGNATURE))?;
        let mac = self
            .mac(request.code, from, time, &request.body)
            .ok_or(PeerAuthError::BadSignature)?;
        // Constant-time comparison.
        mac.verify_slice(&signature)
            .map_err(|_| PeerAuthError::BadSignature)
    }

    fn mac(&self, code: i32, from: &str, time: &str, body: &[u8]) -> Option<Hmac<Sha256>> {
        let secret = self.secret.as_ref()?;
        let mut mac = Hmac::<Sha256>::new_from_slice(secret).ok()?;
        mac.update(format!("{code}\n{from}\n{time}\n").as_bytes());
        mac.update(body);
        Some(mac)
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(digits, 16).ok()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CODE: RequestCode = RequestCode::STELLMQ_CONTROLLER_RAFT_VOTE;

    fn request(fields: ExtFields, body: &[u8]) -> RemotingCommand {
        RemotingCommand::request(CODE, fields).with_body(body.to_vec())
    }

    #[test]
    fn a_signed_request_passes_and_any_change_fails() {
        let auth = PeerAuth::new("s3cret");
        let fields = auth.sign(CODE, 2, 1_000_000, b"{\"vote\":1}");
        assert_eq!(
            auth.verify(&request(fields.clone(), b"{\"vote\":1}"), 1_000_500),
            Ok(())
        );
        assert_eq!(
            auth.verify(&request(fields.clone(), b"{\"vote\":2}"), 1_000_500),
            Err(PeerAuthError::BadSignature),
            "another body"
        );
        assert_eq!(
            PeerAuth::new("other").verify(&request(fields.clone(), b"{\"vote\":1}"), 1_000_500),
            Err(PeerAuthError::BadSignature),
            "another secret"
        );
        assert_eq!(
            auth.verify(
                &request(fields.clone(), b"{\"vote\":1}"),
                1_000_000 + MAX_SKEW_MS + 1
            ),
            Err(PeerAuthError::Skewed(MAX_SKEW_MS + 1))
        );
        let mut forged = fields;
        forged.insert(FROM, "3");
        assert_eq!(
            auth.verify(&request(forged, b"{\"vote\":1}"), 1_000_500),
            Err(PeerAuthError::BadSignature),
            "another sender"
        );
    }

    #[test]
    fn unsigned_or_garbled_requests_are_refused_only_with_a_secret() {
        let auth = PeerAuth::new("s3cret");
        assert_eq!(
            auth.verify(&request(ExtFields::new(), b"{}"), 0),
            Err(PeerAuthError::Unsigned)
        );
        let mut fields = auth.sign(CODE, 1, 0, b"{}");
        fields.insert(SIGNATURE, "zz");
        assert_eq!(
            auth.verify(&request(fields, b"{}"), 0),
            Err(PeerAuthError::Malformed(SIGNATURE))
        );
        let off = PeerAuth::new("");
        assert!(!off.enabled());
        assert!(off.sign(CODE, 1, 0, b"{}").get(FROM).is_none());
        assert_eq!(off.verify(&request(ExtFields::new(), b"{}"), 0), Ok(()));
    }
}
