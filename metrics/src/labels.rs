//! The labels RocketMQ puts on every metric of a process, and its system-group rule.

use std::borrow::Cow;

use prometheus_client::registry::Registry;

/// `cluster`, `node_type` and `node_id` (RocketMQ: the cluster name, `broker` / `proxy`,
/// and the broker or proxy name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLabels {
    pub cluster: String,
    pub node_type: &'static str,
    pub node_id: String,
}

impl NodeLabels {
    /// A registry whose every metric carries these labels.
    pub fn registry(&self) -> Registry {
        let labels: Vec<(Cow<'static, str>, Cow<'static, str>)> = vec![
            ("cluster".into(), self.cluster.clone().into()),
            ("node_type".into(), self.node_type.into()),
            ("node_id".into(), self.node_id.clone().into()),
        ];
        Registry::with_labels(labels.into_iter())
    }
}

/// Whether `group` is one of RocketMQ's own consumer groups (`CID_RMQ_SYS_`, any case).
pub fn is_system_group(group: &str) -> bool {
    group
        .get(..12)
        .is_some_and(|p| p.eq_ignore_ascii_case("CID_RMQ_SYS_"))
}
