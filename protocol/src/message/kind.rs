//! A message's kind as RocketMQ 5 reads it from its properties
//! (`TopicMessageType.parseFromMessageProperty`), and its priority (RocketMQ 5.4).

use super::properties::{keys as property, PropertyLookup};

/// The kinds a message can be, which a topic's `message.type` attribute must accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    Normal,
    Fifo,
    Delay,
    Transaction,
    Priority,
    Lite,
}

/// The properties that make a message a delayed one.
const DELAY_KEYS: [&str; 4] = [
    property::DELAY,
    property::TIMER_DELIVER_MS,
    property::TIMER_DELAY_SEC,
    property::TIMER_DELAY_MS,
];

impl MessageKind {
    /// The kind of a message with `props`, first match wins: transaction, delay, FIFO
    /// (a message group), priority, lite, normal. The kinds therefore exclude each other.
    pub fn of(props: &impl PropertyLookup) -> Self {
        if props
            .get(property::TRAN_MSG)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        {
            Self::Transaction
        } else if DELAY_KEYS.iter().any(|k| props.contains(k)) {
            Self::Delay
        } else if props.contains(property::SHARDING_KEY) {
            Self::Fifo
        } else if props.contains(property::PRIORITY) {
            Self::Priority
        } else if props.contains(property::LITE_TOPIC) {
            Self::Lite
        } else {
            Self::Normal
        }
    }

    /// The name RocketMQ gives the kind (`message.type` values, upper case).
    pub fn name(self) -> &'static str {
        match self {
            Self::Normal => "NORMAL",
            Self::Fifo => "FIFO",
            Self::Delay => "DELAY",
            Self::Transaction => "TRANSACTION",
            Self::Priority => "PRIORITY",
            Self::Lite => "LITE",
        }
    }
}

/// A message's priority: its `_SYS_MSG_PRIORITY_` property when that is a number >= 0
/// (`Message.getPriority`; anything else means no priority).
pub fn priority_of(props: &impl PropertyLookup) -> Option<i32> {
    props
        .get(property::PRIORITY)
        .and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|p| *p >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Properties;

    fn props(entries: &[(&str, &str)]) -> Properties {
        let mut p = Properties::new();
        for (k, v) in entries {
            p.insert(*k, *v);
        }
        p
    }

    #[test]
    fn kinds_follow_rocketmqs_order() {
        assert_eq!(MessageKind::of(&props(&[])), MessageKind::Normal);
        let priority = props(&[(property::PRIORITY, "3")]);
        assert_eq!(MessageKind::of(&priority), MessageKind::Priority);
        let fifo_priority = props(&[(property::PRIORITY, "3"), (property::SHARDING_KEY, "g")]);
        assert_eq!(MessageKind::of(&fifo_priority), MessageKind::Fifo);
        let delayed_fifo = props(&[(property::DELAY, "2"), (property::SHARDING_KEY, "g")]);
        assert_eq!(MessageKind::of(&delayed_fifo), MessageKind::Delay);
        let half = props(&[(property::TRAN_MSG, "TRUE"), (property::DELAY, "2")]);
        assert_eq!(MessageKind::of(&half), MessageKind::Transaction);
        let lite = props(&[(property::LITE_TOPIC, "chat-1")]);
        assert_eq!(MessageKind::of(&lite), MessageKind::Lite);
    }

    #[test]
    fn a_priority_is_a_number_not_below_zero() {
        assert_eq!(priority_of(&props(&[(property::PRIORITY, "7")])), Some(7));
        assert_eq!(priority_of(&props(&[(property::PRIORITY, "0")])), Some(0));
        assert_eq!(priority_of(&props(&[(property::PRIORITY, "-1")])), None);
        assert_eq!(priority_of(&props(&[(property::PRIORITY, "high")])), None);
        assert_eq!(priority_of(&props(&[])), None);
    }
}
