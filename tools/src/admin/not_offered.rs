//! RocketMQ 5.x mqadmin commands StellMQ does not serve. Each is known by name, so that a
//! script calling one gets the reason and a failing exit status instead of "The sub command
//! ... not exist.", and `mqadmin` lists them apart.

const COLD_DATA: &str = "StellMQ does not throttle cold-data reads by group: there is no cold \
                         data flow control to show or change";
const CONTAINER: &str = "StellMQ runs one broker per process: there is no BrokerContainer to \
                         add brokers to or remove them from";
const STATIC_TOPIC: &str =
    "static topics (logical queues, RIP-21) are not served by StellMQ; use updateTopic";

/// Each command not served, with the reason.
pub const NOT_OFFERED: &[(&str, &str)] = &[
    ("addBroker", CONTAINER),
    ("removeBroker", CONTAINER),
    (
        "checkRocksdbCqWriteProgress",
        "StellMQ's ConsumeQueues are files (idle queues unmapped), not RocksDB: there is no \
         RocksDB ConsumeQueue to check",
    ),
    (
        "dumpCompactionLog",
        "StellMQ has no compaction topics (cleanup.policy=COMPACTION)",
    ),
    ("getColdDataFlowCtrInfo", COLD_DATA),
    ("updateColdDataFlowCtrGroupConfig", COLD_DATA),
    ("removeColdDataFlowCtrGroupConfig", COLD_DATA),
    ("updateStaticTopic", STATIC_TOPIC),
    ("remappingStaticTopic", STATIC_TOPIC),
    (
        "resetMasterFlushOffset",
        "a StellMQ slave replicates from the end of the CommitLog it holds: there is no master \
         flush offset to reset",
    ),
    (
        "setCommitLogReadAheadMode",
        "StellMQ chooses its read-ahead itself (sequential for the CommitLog, none for sparse \
         files)",
    ),
    (
        "setConsumeMode",
        "StellMQ consumers choose pull or POP by the requests they send: there is no per-group \
         consume mode to set",
    ),
    (
        "exportPopRecord",
        "POP checkpoints live in the revive log (rmq_sys_REVIVE_LOG_<cluster>, readable with \
         printMsg): there is no separate POP record export",
    ),
];

/// What `mqadmin <name>` says when `name` (any case) is a command StellMQ does not serve.
pub fn refusal(name: &str) -> Option<String> {
    NOT_OFFERED
        .iter()
        .find(|(command, _)| command.eq_ignore_ascii_case(name))
        .map(|(command, reason)| format!("mqadmin {command} is not available in StellMQ: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_not_served_is_named_with_its_reason_in_any_case() {
        let said = refusal("addbroker").expect("known");
        assert!(
            said.starts_with(
                "mqadmin addBroker is not available in StellMQ: StellMQ runs one broker"
            ),
            "{said}"
        );
        assert!(refusal("updateTopic").is_none());
        assert!(refusal("noSuchThing").is_none());
    }
}
