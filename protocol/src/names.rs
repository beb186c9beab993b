//! Topic and group names: RocketMQ's rules, checked in one place.
//!
//! Names become directory names in the store (`consumequeue/<topic>/`) and, for groups,
//! topic names (`%RETRY%<group>`, `%DLQ%<group>`), so every name a client sends is checked
//! here before it is used. A valid name matches `^[%|a-zA-Z0-9_-]+$`: no `/`, no `.`, no
//! NUL, so it can never leave the directory it is joined to.

use thiserror::Error;

/// RocketMQ's pattern for topic and group names.
pub const VALID_NAME_PATTERN: &str = "^[%|a-zA-Z0-9_-]+$";
/// Longest topic a client may name (RocketMQ's `TOPIC_MAX_LENGTH`).
pub const TOPIC_MAX_LEN: usize = 127;
/// Longest retry or dead-letter topic (`%RETRY%<group>`, `%DLQ%<group>`): a file name.
pub const DERIVED_TOPIC_MAX_LEN: usize = 255;
/// Longest group name (RocketMQ's `CHARACTER_MAX_LENGTH`).
pub const GROUP_MAX_LEN: usize = 255;

pub const RETRY_PREFIX: &str = "%RETRY%";
pub const DLQ_PREFIX: &str = "%DLQ%";
/// Topics the broker creates for itself (5.x `rmq_sys_` topics); clients may not create,
/// delete or send to them.
pub const SYSTEM_TOPIC_PREFIX: &str = "rmq_sys_";
/// Groups the broker uses for itself (`CID_RMQ_SYS_TRANS` ...).
pub const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// What a name names, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    Topic,
    Group,
}

impl std::fmt::Display for NameKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameKind::Topic => "topic",
            NameKind::Group => "group",
        })
    }
}

/// Why a name is refused; the messages are RocketMQ's remarks.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NameError {
    #[error("The specified {kind} is blank.")]
    Blank { kind: NameKind },
    #[error("The specified {kind}[{shown}] contains illegal characters, allowing only {VALID_NAME_PATTERN}")]
    IllegalCharacters { kind: NameKind, shown: String },
    #[error("The specified {kind} is longer than {kind} max length {max}.")]
    TooLong { kind: NameKind, max: usize },
}

/// At most this many characters of a refused name are echoed back (escaped).
const SHOWN_CHARS: usize = 64;

fn shown(name: &str) -> String {
    let mut out: String = name
        .chars()
        .take(SHOWN_CHARS)
        .flat_map(char::escape_default)
        .collect();
    if name.chars().nth(SHOWN_CHARS).is_some() {
        out.push_str("...");
    }
    out
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-')
}

fn check(name: &str, kind: NameKind, max: usize) -> Result<(), NameError> {
    if name.trim().is_empty() {
        return Err(NameError::Blank { kind });
    }
    if !name.bytes().all(is_name_byte) {
        return Err(NameError::IllegalCharacters {
            kind,
            shown: shown(name),
        });
    }
    if name.len() > max {
        return Err(NameError::TooLong { kind, max });
    }
    Ok(())
}

/// Checks a topic name: RocketMQ's pattern, at most 127 characters, or 255 for retry and
/// dead-letter topics (whose names embed a group name).
pub fn check_topic(name: &str) -> Result<(), NameError> {
    let max = if is_retry_or_dlq(name) {
        DERIVED_TOPIC_MAX_LEN
    } else {
        TOPIC_MAX_LEN
    };
    check(name, NameKind::Topic, max)
}

/// Checks a consumer or producer group name: RocketMQ's pattern, at most 255 characters.
pub fn check_group(name: &str) -> Result<(), NameError> {
    check(name, NameKind::Group, GROUP_MAX_LEN)
}

/// Whether `name` is usable as one directory name inside the store (the last defence of the
/// store itself: the pattern excludes `/`, `.` and NUL, and the length fits a file name).
pub fn is_safe_file_name(name: &str) -> bool {
    // `$` is no topic's, but lite topics' LMQs are named with it (`%LMQ%$parent$lite`).
    !name.is_empty()
        && name.len() <= DERIVED_TOPIC_MAX_LEN
        && name.bytes().all(|b| is_name_byte(b) || b == b'$')
}

pub fn is_retry_or_dlq(topic: &str) -> bool {
    topic.starts_with(RETRY_PREFIX) || topic.starts_with(DLQ_PREFIX)
}

/// `%RETRY%<group>`, checked: a group near the length limit has no room for the prefix.
pub fn retry_topic(group: &str) -> Result<String, NameError> {
    let topic = format!("{RETRY_PREFIX}{group}");
    check_topic(&topic)?;
    Ok(topic)
}

/// `%DLQ%<group>`, checked like [`retry_topic`].
pub fn dlq_topic(group: &str) -> Result<String, NameError> {
    let topic = format!("{DLQ_PREFIX}{group}");
    check_topic(&topic)?;
    Ok(topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rocketmq_pattern_and_lengths() {
        for ok in ["TopicTest", "%RETRY%g", "a|b", "A-b_9", "%DLQ%CID_x"] {
            assert_eq!(check_topic(ok), Ok(()), "{ok}");
        }
        for bad in [
            "../commitlog",
            "/some/dir",
            "a.b",
            "a b",
            "a\0b",
            "t\u{e9}",
            "a/b",
        ] {
            assert!(
                matches!(check_topic(bad), Err(NameError::IllegalCharacters { .. })),
                "{bad:?}"
            );
            assert!(!is_safe_file_name(bad), "{bad:?}");
        }
        assert_eq!(
            check_topic(" "),
            Err(NameError::Blank {
                kind: NameKind::Topic
            })
        );
        assert!(check_topic(&"t".repeat(127)).is_ok());
        assert!(matches!(
            check_topic(&"t".repeat(128)),
            Err(NameError::TooLong { max: 127, .. })
        ));
        assert!(check_group(&"g".repeat(255)).is_ok());
        assert!(check_group(&"g".repeat(256)).is_err());
        assert!(
            retry_topic(&"g".repeat(200)).is_ok(),
            "retry topics may exceed 127"
        );
        assert!(
            retry_topic(&"g".repeat(249)).is_err(),
            "but must stay a file name"
        );
        assert!(dlq_topic(&"g".repeat(250)).is_ok());
    }

    #[test]
    fn refusals_echo_a_bounded_escaped_name() {
        let long = format!("{}\n/", "x".repeat(100));
        let message = check_topic(&long).expect_err("refused").to_string();
        assert!(message.starts_with("The specified topic[xxxx"), "{message}");
        assert!(
            message.ends_with("allowing only ^[%|a-zA-Z0-9_-]+$"),
            "{message}"
        );
        assert!(message.len() < 160, "{message}");
        let message = check_group("a\nb").expect_err("refused").to_string();
        assert!(message.contains("group[a\\nb]"), "{message}");
    }
}
