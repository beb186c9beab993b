//! One module per page; `*_actions` modules hold the POST handlers of a page's forms.

pub mod cluster;
pub mod dlq;
pub mod explain;
pub mod group;
pub mod group_actions;
pub mod groups;
pub mod message_view;
pub mod messages;
pub mod topic;
pub mod topic_actions;
pub mod topics;

use crate::form::Fields;

/// The fields of a request's query string.
pub(crate) fn query_fields(query: Option<String>) -> Fields {
    Fields::parse(query.as_deref().unwrap_or(""))
}
