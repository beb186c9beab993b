//! `RemotingCommand`: one request or response, header plus body.

use bytes::Bytes;

use super::codes::{request_code_not_supported_remark, RequestCode, ResponseCode};
use super::ext_fields::ExtFields;
use super::language::LanguageCode;
use super::version::CURRENT_VERSION;

/// Bit 0 of `flag`: set on responses.
pub const FLAG_RESPONSE: i32 = 0x1;
/// Bit 1 of `flag`: a request that expects no response.
pub const FLAG_ONEWAY: i32 = 0x2;

/// How the header of a frame is encoded (top byte of the header-length word).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SerializeType {
    #[default]
    Json = 0,
    RocketMq = 1,
}

impl SerializeType {
    pub fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            0 => Some(SerializeType::Json),
            1 => Some(SerializeType::RocketMq),
            _ => None,
        }
    }
}

/// One remoting command as it travels on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code for requests, response code for responses.
    pub code: i32,
    pub language: LanguageCode,
    pub version: i32,
    pub opaque: i32,
    pub flag: i32,
    pub remark: Option<String>,
    pub ext_fields: ExtFields,
    pub body: Bytes,
    /// More body bytes, written after `body` as they are: a pull answer made of stored
    /// records goes out without first being copied into one buffer. The peer sees one
    /// body; decoded frames never have parts.
    pub body_parts: Vec<Bytes>,
    /// The header encoding this command arrived in, or will be written in.
    pub serialize_type: SerializeType,
}

impl RemotingCommand {
    /// A new request from this process (JSON header, language JAVA, StellMQ's version).
    pub fn request(code: RequestCode, ext_fields: ExtFields) -> Self {
        Self::request_code(code.as_i32(), ext_fields)
    }

    /// A request by raw code, for codes outside the typed table.
    pub fn request_code(code: i32, ext_fields: ExtFields) -> Self {
        Self {
            code,
            language: LanguageCode::Java,
            version: CURRENT_VERSION,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields,
            body: Bytes::new(),
            body_parts: Vec::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A response not yet tied to a request (opaque 0, JSON); see [`Self::response_to`].
    pub fn new_response(code: ResponseCode, remark: Option<String>) -> Self {
        Self {
            code: code.as_i32(),
            language: LanguageCode::Java,
            version: CURRENT_VERSION,
            opaque: 0,
            flag: FLAG_RESPONSE,
            remark,
            ext_fields: ExtFields::new(),
            body: Bytes::new(),
            body_parts: Vec::new(),
            serialize_type: SerializeType::Json,
        }
    }

    /// A response to `self` with the given code and remark: same opaque and header encoding.
    pub fn response_to(&self, code: ResponseCode, remark: impl Into<Option<String>>) -> Self {
        let mut response = Self::new_response(code, remark.into());
        response.opaque = self.opaque;
        response.serialize_type = self.serialize_type;
        response
    }

    /// A success response with no remark.
    pub fn success_to(&self) -> Self {
        self.response_to(ResponseCode::SUCCESS, None)
    }

    /// RocketMQ's answer to a request code nobody serves.
    pub fn not_supported_to(&self) -> Self {
        self.response_to(
            ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
            Some(request_code_not_supported_remark(self.code)),
        )
    }

    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self.body_parts.clear();
        self
    }

    /// The body as pieces written back to back (see [`Self::body_parts`]).
    pub fn with_body_parts(mut self, mut parts: Vec<Bytes>) -> Self {
        if parts.len() == 1 {
            self.body = parts.swap_remove(0);
        } else {
            self.body = Bytes::new();
        }
        self.body_parts = parts;
        self
    }

    /// Length of the whole body, parts included.
    pub fn body_len(&self) -> usize {
        self.body.len() + self.body_parts.iter().map(Bytes::len).sum::<usize>()
    }

    pub fn with_ext_fields(mut self, ext_fields: ExtFields) -> Self {
        self.ext_fields = ext_fields;
        self
    }

    pub fn with_remark(mut self, remark: impl Into<String>) -> Self {
        self.remark = Some(remark.into());
        self
    }

    pub fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    pub fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// The typed request code, if known.
    pub fn request_code_typed(&self) -> Option<RequestCode> {
        RequestCode::from_i32(self.code)
    }

    /// The typed response code, if known.
    pub fn response_code(&self) -> Option<ResponseCode> {
        ResponseCode::from_i32(self.code)
    }

    /// The remark, or "" when absent.
    pub fn remark_str(&self) -> &str {
        self.remark.as_deref().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_keeps_opaque_and_encoding() {
        let mut req = RemotingCommand::request(RequestCode::HEART_BEAT, ExtFields::new());
        req.opaque = -7;
        req.serialize_type = SerializeType::RocketMq;
        let resp = req.response_to(ResponseCode::SYSTEM_BUSY, Some("busy".into()));
        assert_eq!(resp.opaque, -7);
        assert!(resp.is_response());
        assert!(!resp.is_oneway());
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
        assert_eq!(resp.response_code(), Some(ResponseCode::SYSTEM_BUSY));
    }

    #[test]
    fn not_supported_has_rocketmq_remark() {
        let req = RemotingCommand::request_code(4242, ExtFields::new());
        let resp = req.not_supported_to();
        assert_eq!(resp.code, 3);
        assert_eq!(resp.remark_str(), " request type 4242 not supported");
    }
}
