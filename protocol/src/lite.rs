//! RocketMQ 5.5's lite topics: a lite topic is a light message queue (LMQ) named after its
//! parent topic, `%LMQ%$<parent>$<lite>`, queue 0; a message to the parent that names a lite
//! topic is stored once and dispatched to both the parent's queue and the LMQ.

/// The prefix of every lite topic's LMQ (`LiteUtil.LITE_TOPIC_PREFIX`).
pub const LITE_TOPIC_PREFIX: &str = "%LMQ%$";
/// The LMQ's only queue (`MixAll.LMQ_QUEUE_ID`).
pub const LMQ_QUEUE_ID: i32 = 0;
/// Separates the LMQs of `INNER_MULTI_DISPATCH` and their offsets.
pub const LMQ_DISPATCH_SEPARATOR: char = ',';
/// RocketMQ's proxy's `maxLiteTopicSize`: the longest lite topic name, in bytes.
pub const MAX_LITE_TOPIC_SIZE: usize = 64;

/// The LMQ of lite topic `lite` under `parent`.
pub fn lmq_name(parent: &str, lite: &str) -> String {
    format!("{LITE_TOPIC_PREFIX}{parent}${lite}")
}

/// The parent and lite topic of an LMQ name; `None` for anything else (exactly one `$`
/// after the prefix, both parts non-empty, as `LiteUtil` reads it).
pub fn split_lmq_name(name: &str) -> Option<(&str, &str)> {
    let rest = name.strip_prefix(LITE_TOPIC_PREFIX)?;
    let (parent, lite) = rest.split_once('$')?;
    (!parent.is_empty() && !lite.is_empty() && !lite.contains('$')).then_some((parent, lite))
}

/// RocketMQ's rule for a lite topic name (`GrpcValidator.validateLiteTopic`): not blank, at
/// most `max_size` bytes, only letters, digits, `-` and `_`. The reason when it is not.
pub fn check_lite_topic(name: &str, max_size: usize) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("lite topic cannot be the char sequence of whitespace".into());
    }
    if name.len() > max_size {
        return Err(format!("lite topic exceed the max size {max_size}"));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return Err(
            "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)"
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lmq_names_round_trip() {
        let name = lmq_name("Chat", "session-42");
        assert_eq!(name, "%LMQ%$Chat$session-42");
        assert_eq!(split_lmq_name(&name), Some(("Chat", "session-42")));
        assert_eq!(split_lmq_name("%LMQ%$p$l$x"), None);
        assert_eq!(split_lmq_name("%LMQ%$p$"), None);
        assert_eq!(split_lmq_name("Chat"), None);
    }

    #[test]
    fn lite_topic_names_follow_rocketmqs_rule() {
        assert!(check_lite_topic("user_7-a", 64).is_ok());
        assert!(check_lite_topic(" ", 64).is_err());
        assert!(check_lite_topic("a$b", 64).is_err());
        assert!(check_lite_topic("../x", 64).is_err());
        assert!(check_lite_topic(&"x".repeat(65), 64).is_err());
    }
}
