//! The request header fields StellMQ reads (every key of `remoting::protocol::headers`), with
//! values that let a request reach its processor and values that attack it.
//!
//! A fuzzed request carries most of these fields whatever its code: processors read the
//! keys they know and ignore the rest, so one superset header gets every request kind past
//! its header checks.

use super::super::mutate::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Long,
    Bool,
}

/// Every header key of `remoting::protocol::headers` and its type (a test keeps this in
/// step with the header definitions).
pub const FIELDS: &[(&str, Kind)] = &[
    ("MSG_REGION", Kind::Text),
    ("TRACE_ON", Kind::Text),
    ("_UNIQUE_KEY_QUERY", Kind::Bool),
    ("a", Kind::Text),
    ("acceptStandardJsonOnly", Kind::Bool),
    ("accessKey", Kind::Text),
    ("aclFileFullPath", Kind::Text),
    ("addTopicCount", Kind::Int),
    ("admin", Kind::Bool),
    ("allAclFileVersion", Kind::Text),
    ("appliedBrokerId", Kind::Long),
    ("attemptId", Kind::Text),
    ("attributes", Kind::Text),
    ("b", Kind::Text),
    ("batch", Kind::Bool),
    ("batchUniqId", Kind::Text),
    ("beginTimestamp", Kind::Long),
    ("bname", Kind::Text),
    ("bodyCrc32", Kind::Int),
    ("bornHost", Kind::Text),
    ("bornTime", Kind::Long),
    ("bornTimestamp", Kind::Long),
    ("boundaryType", Kind::Text),
    ("brokerAddr", Kind::Text),
    ("brokerAddress", Kind::Text),
    ("brokerControllerIdsToClean", Kind::Text),
    ("brokerId", Kind::Long),
    ("brokerName", Kind::Text),
    ("c", Kind::Text),
    ("changed", Kind::Bool),
    ("cleanOffset", Kind::Bool),
    ("clientAddr", Kind::Text),
    ("clientID", Kind::Text),
    ("clientId", Kind::Text),
    ("cluster", Kind::Text),
    ("clusterName", Kind::Text),
    ("commitLogOffset", Kind::Long),
    ("commitOffset", Kind::Long),
    ("commitOrRollback", Kind::Int),
    ("committed", Kind::Bool),
    ("compareGroup", Kind::Text),
    ("compressed", Kind::Bool),
    ("confirmOffset", Kind::Long),
    ("consumerGroup", Kind::Text),
    ("controllerLeaderAddress", Kind::Text),
    ("controllerLeaderId", Kind::Text),
    ("count", Kind::Int),
    ("d", Kind::Int),
    ("dataVersion", Kind::Text),
    ("defaultGroupPerm", Kind::Text),
    ("defaultTopic", Kind::Text),
    ("defaultTopicPerm", Kind::Text),
    ("defaultTopicQueueNums", Kind::Int),
    ("delayLevel", Kind::Int),
    ("designateElect", Kind::Bool),
    ("destGroup", Kind::Text),
    ("e", Kind::Int),
    ("electionPriority", Kind::Int),
    ("enableActingMaster", Kind::Bool),
    ("endTimestamp", Kind::Long),
    ("epoch", Kind::Int),
    ("exp", Kind::Text),
    ("expType", Kind::Text),
    ("expressionType", Kind::Text),
    ("extraInfo", Kind::Text),
    ("f", Kind::Int),
    ("filter", Kind::Text),
    ("filterGroups", Kind::Text),
    ("flag", Kind::Int),
    ("force", Kind::Bool),
    ("fromTransactionCheck", Kind::Bool),
    ("g", Kind::Long),
    ("globalWhiteAddrs", Kind::Text),
    ("group", Kind::Text),
    ("groupName", Kind::Text),
    ("groupPerms", Kind::Text),
    ("groupSeq", Kind::Int),
    ("groupSysFlag", Kind::Int),
    ("h", Kind::Int),
    ("haServerAddr", Kind::Text),
    ("hasMsg", Kind::Bool),
    ("heartbeatTimeoutMillis", Kind::Long),
    ("heartbeatTimeoutMills", Kind::Long),
    ("i", Kind::Text),
    ("index", Kind::Long),
    ("indexLastUpdatePhyoffset", Kind::Long),
    ("indexLastUpdateTimestamp", Kind::Long),
    ("initMode", Kind::Int),
    ("invisibleTime", Kind::Long),
    ("invokeTime", Kind::Long),
    ("isCleanLivingBroker", Kind::Bool),
    ("isForce", Kind::Bool),
    ("isLeader", Kind::Bool),
    ("isOrder", Kind::Bool),
    ("j", Kind::Int),
    ("jstackEnable", Kind::Bool),
    ("k", Kind::Bool),
    ("key", Kind::Text),
    ("l", Kind::Int),
    ("liteTopic", Kind::Text),
    ("lo", Kind::Bool),
    ("m", Kind::Bool),
    ("masterAddr", Kind::Text),
    ("masterAddress", Kind::Text),
    ("masterBrokerId", Kind::Long),
    ("masterEpoch", Kind::Int),
    ("maxGroupNum", Kind::Int),
    ("maxCount", Kind::Int),
    ("maxMsgBytes", Kind::Int),
    ("maxMsgNum", Kind::Int),
    ("maxMsgNums", Kind::Int),
    ("maxNum", Kind::Int),
    ("maxOffset", Kind::Long),
    ("maxReconsumeTimes", Kind::Int),
    ("maxTopicNum", Kind::Int),
    ("minOffset", Kind::Long),
    ("msgId", Kind::Text),
    ("msgOffsetInfo", Kind::Text),
    ("n", Kind::Text),
    ("namespace", Kind::Text),
    ("newSyncStateSetEpoch", Kind::Int),
    ("nextBeginOffset", Kind::Long),
    ("nextBrokerId", Kind::Long),
    ("offline", Kind::Bool),
    ("offset", Kind::Long),
    ("offsetMsgId", Kind::Text),
    ("order", Kind::Bool),
    ("orderCountInfo", Kind::Text),
    ("originMsgId", Kind::Text),
    ("originTopic", Kind::Text),
    ("peers", Kind::Text),
    ("perm", Kind::Int),
    ("policyType", Kind::Text),
    ("parentTopic", Kind::Text),
    ("pollTime", Kind::Long),
    ("pollingNum", Kind::Int),
    ("popTime", Kind::Long),
    ("producerGroup", Kind::Text),
    ("properties", Kind::Text),
    ("queueId", Kind::Int),
    ("queueOffset", Kind::Long),
    ("readQueueNums", Kind::Int),
    ("recallHandle", Kind::Text),
    ("reconsumeTimes", Kind::Int),
    ("registerCheckCode", Kind::Text),
    ("removeOffset", Kind::Bool),
    ("resource", Kind::Text),
    ("resourceFilter", Kind::Text),
    ("restNum", Kind::Long),
    ("reviveQid", Kind::Int),
    ("secretKey", Kind::Text),
    ("setZeroIfNotFound", Kind::Bool),
    ("srcGroup", Kind::Text),
    ("startOffsetInfo", Kind::Text),
    ("statsKey", Kind::Text),
    ("statsName", Kind::Text),
    ("storeHost", Kind::Text),
    ("storeTimestamp", Kind::Long),
    ("subVersion", Kind::Long),
    ("subject", Kind::Text),
    ("subjectFilter", Kind::Text),
    ("subscription", Kind::Text),
    ("suggestWhichBrokerId", Kind::Long),
    ("suspendTimeoutMillis", Kind::Long),
    ("syncStateSetEpoch", Kind::Int),
    ("sysFlag", Kind::Int),
    ("timeoutMillis", Kind::Long),
    ("timestamp", Kind::Long),
    ("topK", Kind::Int),
    ("topic", Kind::Text),
    ("topicFilterType", Kind::Text),
    ("topicPerms", Kind::Text),
    ("topicSeq", Kind::Int),
    ("topicSysFlag", Kind::Int),
    ("totalGroupNum", Kind::Int),
    ("totalTopicNum", Kind::Int),
    ("tranStateTableOffset", Kind::Long),
    ("transactionId", Kind::Text),
    ("unitMode", Kind::Bool),
    ("username", Kind::Text),
    ("value", Kind::Text),
    ("version", Kind::Text),
    ("whiteRemoteAddress", Kind::Text),
    ("wipeTopicCount", Kind::Int),
    ("writeQueueNums", Kind::Int),
];

/// The topic every fuzzed request names; never the canary topic.
pub const TOPIC: &str = "NetFuzzTopic";
/// The group every fuzzed request names.
pub const GROUP: &str = "NetFuzzGroup";

/// A value of `name` that a processor accepts, for the broker at `broker_addr`.
pub fn plausible(name: &str, kind: Kind, rng: &mut Rng, broker_addr: &str, now_ms: i64) -> String {
    let value = match name {
        "topic" | "b" | "originTopic" => TOPIC,
        "defaultTopic" | "c" => "TBW102",
        "producerGroup" | "a" | "consumerGroup" | "group" | "groupName" | "srcGroup"
        | "destGroup" | "compareGroup" => GROUP,
        "brokerName" | "bname" => "broker-a",
        "cluster" | "clusterName" => "DefaultCluster",
        "brokerAddr"
        | "brokerAddress"
        | "clientAddr"
        | "storeHost"
        | "bornHost"
        | "masterAddr"
        | "masterAddress"
        | "haServerAddr"
        | "controllerLeaderAddress" => broker_addr,
        "properties" | "i" => "KEYS\u{1}k1\u{2}TAGS\u{1}TagA\u{2}WAIT\u{1}true\u{2}",
        "subscription" | "exp" => "*",
        "expressionType" | "expType" => "TAG",
        "attributes" => "+message.type=NORMAL",
        "topicFilterType" => "SINGLE_TAG",
        "namespace" => "NetFuzzNs",
        "username" => "netfuzz-user",
        "subject" => "User:netfuzz-user",
        "resource" => "Topic:NetFuzzTopic",
        "policyType" => "Custom",
        "key" => "NetFuzzKey",
        "value" => "v",
        "perm" => "6",
        "readQueueNums" | "writeQueueNums" | "defaultTopicQueueNums" | "d" => "4",
        "queueId" | "e" => return rng.below(4).to_string(),
        "maxMsgNums" | "maxMsgNum" | "maxNum" | "count" => "8",
        "suspendTimeoutMillis" | "pollTime" | "timeoutMillis" => "200",
        "invisibleTime" => "10000",
        "bornTimestamp" | "g" | "timestamp" | "beginTimestamp" | "popTime" | "invokeTime" => {
            return now_ms.to_string()
        }
        "endTimestamp" => return (now_ms + 1).to_string(),
        _ => match kind {
            Kind::Text => "x",
            Kind::Int | Kind::Long => return rng.below(3).to_string(),
            Kind::Bool => {
                return if rng.one_in(2) { "true" } else { "false" }.to_owned();
            }
        },
    };
    value.to_owned()
}

/// Values that sit on the edges of what a field's parser and its users handle: multibyte
/// text where a byte index is taken, control characters for logs, numbers at their limits,
/// paths, separators and sizes.
pub const HOSTILE: &[&str] = &[
    "",
    " ",
    "\u{e9}",
    "\u{e9}+message.type=FIFO",
    "+\u{e9}=\u{e9}",
    "\u{1f600}",
    "\u{202e}x",
    "a\nb",
    "x\n2026-12-07T00:00:00.000000Z ERROR FORGED",
    "\r\u{1b}[2K",
    "\u{0}",
    "../../../../tmp/x",
    "%RETRY%",
    "%DLQ%",
    "%RETRY%\u{e9}",
    "rmq_sys_x",
    "TBW102",
    "-1",
    "-2147483648",
    "2147483647",
    "2147483648",
    "-9223372036854775808",
    "9223372036854775807",
    "99999999999999999999",
    "1e308",
    "NaN",
    "0x10",
    "true",
    "{",
    "[]",
    "{\"a\":1}",
    ";",
    "=",
    ",,,",
    "||",
    "a b c d e f",
    "0 1 2;0 1 3",
    "@",
    "\u{1}\u{2}\u{1}",
];

/// A hostile value: one of [`HOSTILE`], or a long repetition of one.
pub fn hostile(rng: &mut Rng) -> String {
    let value = HOSTILE[rng.below(HOSTILE.len())];
    if rng.one_in(16) {
        let times = [128, 4096, 70_000][rng.below(3)];
        value.repeat(times.max(1) / value.len().max(1))
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_SOURCES: &[&str] = &[
        include_str!("../../../protocol/src/headers/acl.rs"),
        include_str!("../../../protocol/src/headers/admin.rs"),
        include_str!("../../../protocol/src/headers/auth.rs"),
        include_str!("../../../protocol/src/headers/consumer.rs"),
        include_str!("../../../protocol/src/headers/controller.rs"),
        include_str!("../../../protocol/src/headers/namesrv.rs"),
        include_str!("../../../protocol/src/headers/pop.rs"),
        include_str!("../../../protocol/src/headers/producer.rs"),
        include_str!("../../../protocol/src/headers/query.rs"),
    ];

    /// Every `required x: T = "key"` / `optional x: T = "key"` of the header definitions is
    /// a field here, with its kind.
    #[test]
    fn the_vocabulary_holds_every_header_key() {
        let mut seen = 0;
        for source in HEADER_SOURCES {
            for line in source.lines().map(str::trim) {
                let Some(rest) = line
                    .strip_prefix("required ")
                    .or_else(|| line.strip_prefix("optional "))
                else {
                    continue;
                };
                let Some((declared, key)) = rest.split_once(" = \"") else {
                    continue;
                };
                let key = key.trim_end_matches(['"', ',']);
                let kind = match declared.rsplit(": ").next() {
                    Some("String") => Kind::Text,
                    Some("i32") => Kind::Int,
                    Some("i64") => Kind::Long,
                    Some("bool") => Kind::Bool,
                    other => panic!("unknown field type {other:?} of {key}"),
                };
                assert!(
                    FIELDS.contains(&(key, kind)),
                    "header key {key} ({kind:?}) is missing from FIELDS"
                );
                seen += 1;
            }
        }
        assert!(seen >= FIELDS.len(), "read {seen} header fields");
    }
}
