//! Request signatures of RocketMQ's plain ACL (protocol.md 1.10).
//!
//! A client with credentials adds `AccessKey` (and `SecurityToken` when it has one) to a
//! request's `extFields`, then signs: the values of every field but `Signature`, in key
//! order, followed by the body, HMAC-SHA1 with the secret key, Base64. Java, C++ and Node
//! clients agree on this shape; C++ and Node also sign an `OnsChannel` field they add.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha1::Sha1;

use super::command::RemotingCommand;
use super::ext_fields::ExtFields;

pub const ACCESS_KEY: &str = "AccessKey";
pub const SIGNATURE: &str = "Signature";
pub const SECURITY_TOKEN: &str = "SecurityToken";
/// Added (and signed) by the C++ and Node clients; Java never sends it.
pub const ONS_CHANNEL: &str = "OnsChannel";
/// Java clients up to 4.9.3 add this query flag after signing; brokers leave it out.
pub const UNIQUE_KEY_QUERY: &str = "_UNIQUE_KEY_QUERY";

type HmacSha1 = Hmac<Sha1>;

/// The key pair a client signs its requests with.
#[derive(Clone, PartialEq, Eq)]
pub struct SessionCredentials {
    pub access_key: String,
    pub secret_key: String,
    pub security_token: Option<String>,
}

impl SessionCredentials {
    pub fn new(access_key: impl Into<String>, secret_key: impl Into<String>) -> Self {
        Self {
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            security_token: None,
        }
    }
}

impl std::fmt::Debug for SessionCredentials {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionCredentials")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// Which fields a signature covers besides `Signature` itself, which never is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// Every field.
    All,
    /// Every field but `_UNIQUE_KEY_QUERY`, which old Java clients add after signing.
    WithoutUniqueKeyQuery,
}

impl Coverage {
    /// What a broker checks for a request of this client version (Java's V4_9_3 is 399).
    pub fn for_version(version: i32) -> Self {
        if version <= 399 {
            Coverage::WithoutUniqueKeyQuery
        } else {
            Coverage::All
        }
    }

    fn covers(self, key: &str) -> bool {
        key != SIGNATURE && !(self == Coverage::WithoutUniqueKeyQuery && key == UNIQUE_KEY_QUERY)
    }
}

fn keyed_mac(secret: &str, fields: &ExtFields, body: &[u8], coverage: Coverage) -> HmacSha1 {
    // HMAC takes keys of any length, so this cannot fail.
    let mut mac = match HmacSha1::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts any key length"),
    };
    for (key, value) in fields.iter() {
        if coverage.covers(key) {
            mac.update(value.as_bytes());
        }
    }
    mac.update(body);
    mac
}

/// The Base64 signature of `fields` (in key order, `Signature` left out) and `body`.
pub fn signature(secret: &str, fields: &ExtFields, body: &[u8], coverage: Coverage) -> String {
    BASE64.encode(
        keyed_mac(secret, fields, body, coverage)
            .finalize()
            .into_bytes(),
    )
}

/// Whether `claimed` is the signature of `fields` and `body`, compared in constant time.
pub fn verify(
    secret: &str,
    fields: &ExtFields,
    body: &[u8],
    coverage: Coverage,
    claimed: &str,
) -> bool {
    let Ok(claimed) = BASE64.decode(claimed) else {
        return false;
    };
    keyed_mac(secret, fields, body, coverage)
        .verify_slice(&claimed)
        .is_ok()
}

/// Signs a request as RocketMQ's Java client does: adds `AccessKey` (and `SecurityToken`),
/// then `Signature` over every other field and the body.
pub fn sign(request: &mut RemotingCommand, credentials: &SessionCredentials) {
    request
        .ext_fields
        .insert(ACCESS_KEY, credentials.access_key.as_str());
    if let Some(token) = &credentials.security_token {
        request.ext_fields.insert(SECURITY_TOKEN, token.as_str());
    }
    request.ext_fields.remove(SIGNATURE);
    let signed = signature(
        &credentials.secret_key,
        &request.ext_fields,
        &request.body,
        Coverage::All,
    );
    request.ext_fields.insert(SIGNATURE, signed);
}

/// RocketMQ 5's gRPC signature: HMAC-SHA1 of the `x-mq-date-time` value with the secret,
/// in upper-case hex (the `Signature=` of the `authorization` header).
pub fn grpc_signature(secret: &str, date_time: &str) -> String {
    let mut mac = match HmacSha1::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts any key length"),
    };
    mac.update(date_time.as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// Whether `claimed_hex` (either case) is [`grpc_signature`] of `date_time`, compared in
/// constant time.
pub fn verify_grpc(secret: &str, date_time: &str, claimed_hex: &str) -> bool {
    let claimed = claimed_hex.trim();
    if !claimed.len().is_multiple_of(2) || !claimed.is_ascii() {
        return false;
    }
    let mut bytes = Vec::with_capacity(claimed.len() / 2);
    for i in (0..claimed.len()).step_by(2) {
        match claimed
            .get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            Some(b) => bytes.push(b),
            None => return false,
        }
    }
    let mut mac = match HmacSha1::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts any key length"),
    };
    mac.update(date_time.as_bytes());
    mac.verify_slice(&bytes).is_ok()
}

/// RocketMQ 5's `innerClientAuthenticationCredentials`, `{"accessKey":"...","secretKey":"..."}`;
/// blank text is none. The error says what was expected, never the text (it holds a secret).
pub fn parse_inner_credentials(text: &str) -> Result<Option<SessionCredentials>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Inner {
        access_key: String,
        secret_key: String,
    }
    let inner: Inner = serde_json::from_str(text)
        .map_err(|_| r#"expected {"accessKey":"...","secretKey":"..."}"#.to_owned())?;
    Ok(Some(SessionCredentials::new(
        inner.access_key,
        inner.secret_key,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestCode;

    fn fields(pairs: &[(&str, &str)]) -> ExtFields {
        pairs.iter().copied().collect()
    }

    #[test]
    fn known_vector_matches_hmac_sha1_base64() {
        // HMAC-SHA1("key", "The quick brown fox jumps over the lazy dog") is RFC-known:
        // de7c9b85b8b78aa6bc8a7a36f70a90701c9db4d9.
        let f = fields(&[
            ("a", "The quick brown fox "),
            ("b", "jumps over the lazy dog"),
        ]);
        assert_eq!(
            signature("key", &f, b"", Coverage::All),
            "3nybhbi3iqa8ino29wqQcBydtNk="
        );
        let split = fields(&[("a", "The quick brown fox ")]);
        assert_eq!(
            signature("key", &split, b"jumps over the lazy dog", Coverage::All),
            "3nybhbi3iqa8ino29wqQcBydtNk=",
            "the body follows the values"
        );
    }

    #[test]
    fn signed_requests_verify_and_tampering_does_not() {
        let mut request = RemotingCommand::request(
            RequestCode::SEND_MESSAGE,
            fields(&[("topic", "T"), ("queueId", "3")]),
        );
        request.body = bytes::Bytes::from_static(b"hello");
        sign(
            &mut request,
            &SessionCredentials::new("RocketMQ", "12345678"),
        );
        assert_eq!(request.ext_fields.get(ACCESS_KEY), Some("RocketMQ"));
        let claimed = request
            .ext_fields
            .get(SIGNATURE)
            .expect("signed")
            .to_owned();
        let check = |r: &RemotingCommand, secret: &str| {
            verify(secret, &r.ext_fields, &r.body, Coverage::All, &claimed)
        };
        assert!(check(&request, "12345678"));
        assert!(!check(&request, "12345679"), "wrong secret");
        let mut other_topic = request.clone();
        other_topic.ext_fields.insert("topic", "U");
        assert!(!check(&other_topic, "12345678"), "changed field");
        let mut other_body = request.clone();
        other_body.body = bytes::Bytes::from_static(b"hellO");
        assert!(!check(&other_body, "12345678"), "changed body");
        assert!(!verify(
            "12345678",
            &request.ext_fields,
            &request.body,
            Coverage::All,
            "%%"
        ));
    }

    #[test]
    fn old_java_clients_unique_key_flag_is_not_covered() {
        let mut request = RemotingCommand::request(
            RequestCode::QUERY_MESSAGE,
            fields(&[("topic", "T"), ("key", "k")]),
        );
        sign(&mut request, &SessionCredentials::new("ak", "sk"));
        let claimed = request
            .ext_fields
            .get(SIGNATURE)
            .expect("signed")
            .to_owned();
        request.ext_fields.insert(UNIQUE_KEY_QUERY, "true");
        let covered = Coverage::for_version(373);
        assert!(verify(
            "sk",
            &request.ext_fields,
            &request.body,
            covered,
            &claimed
        ));
        assert!(!verify(
            "sk",
            &request.ext_fields,
            &request.body,
            Coverage::for_version(453),
            &claimed
        ));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let shown = format!("{:?}", SessionCredentials::new("ak", "s3cr3t-value"));
        assert!(!shown.contains("s3cr3t"), "{shown}");
    }

    #[test]
    fn grpc_signatures_are_hex_hmac_of_the_date_time() {
        let signed = grpc_signature("secret", "20240101T000000Z");
        assert_eq!(signed.len(), 40);
        assert!(verify_grpc("secret", "20240101T000000Z", &signed));
        assert!(verify_grpc(
            "secret",
            "20240101T000000Z",
            &signed.to_lowercase()
        ));
        assert!(!verify_grpc("other", "20240101T000000Z", &signed));
        assert!(!verify_grpc("secret", "20240101T000001Z", &signed));
        assert!(!verify_grpc("secret", "20240101T000000Z", "zz"));
        assert!(!verify_grpc("secret", "20240101T000000Z", "é"));
    }
}
