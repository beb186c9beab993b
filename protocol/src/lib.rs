//! Sans-IO RocketMQ remoting protocol: everything that turns bytes into typed values and back.

pub mod body;
pub mod codes;
pub mod command;
pub mod error;
pub mod ext_fields;
pub mod frame;
pub mod header_binary;
pub mod header_json;
pub mod headers;
pub mod language;
pub mod lite;
pub mod message;
pub mod names;
pub mod pop;
mod reader;
pub mod recall;
pub mod signature;
pub mod version;

pub use codes::{RequestCode, ResponseCode};
pub use command::{RemotingCommand, SerializeType};
pub use error::{FrameError, HeaderError};
pub use ext_fields::ExtFields;
pub use language::LanguageCode;
pub use reader::{i32_at, i64_at};
