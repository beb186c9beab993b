//! QUERY_MESSAGE (by key or unique key) and VIEW_MESSAGE_BY_ID (protocol.md 2.6).

use std::sync::Arc;

use bytes::Bytes;
use stellmq_remoting::net::{ProcessResult, ProcessorError};
use stellmq_remoting::protocol::headers::{
    CommandHeader, QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use stellmq_remoting::protocol::{RemotingCommand, ResponseCode};
use stellmq_store::MessageStore;

use super::header;

pub struct QueryProcessor {
    pub store: Arc<MessageStore>,
    pub default_query_max_num: i32,
}

impl QueryProcessor {
    pub(crate) fn query(&self, request: &RemotingCommand) -> ProcessResult {
        let h: QueryMessageRequestHeader = header(request)?;
        let max = if h.unique_key_query.unwrap_or(false) {
            self.default_query_max_num
        } else {
            h.max_num
        };
        let found = self.store.query_message(
            &h.topic,
            &h.key,
            max.clamp(1, 64 * 1024) as usize,
            h.begin_timestamp,
            h.end_timestamp,
        );
        if found.messages.is_empty() {
            return Err(ProcessorError::new(
                ResponseCode::QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
            ));
        }
        let mut body = Vec::with_capacity(found.messages.iter().map(Bytes::len).sum());
        for m in &found.messages {
            body.extend_from_slice(m);
        }
        let fields = QueryMessageResponseHeader {
            index_last_update_timestamp: found.index_last_update_timestamp,
            index_last_update_phyoffset: found.index_last_update_phyoffset,
        }
        .to_ext_fields();
        Ok(Some(
            request.success_to().with_ext_fields(fields).with_body(body),
        ))
    }

    pub(crate) fn view(&self, request: &RemotingCommand) -> ProcessResult {
        let h: ViewMessageRequestHeader = header(request)?;
        match self.store.look_message_by_offset(h.offset) {
            Some(record) => Ok(Some(request.success_to().with_body(record))),
            None => Err(ProcessorError::system(format!(
                "can not find message by the offset, {}",
                h.offset
            ))),
        }
    }
}

#[cfg(test)]
mod tests;
