//! The `text` target: every header and body field the servers parse as text, one parser per
//! input. The first byte picks the parser ([`PARSERS`], modulo their number) and the rest is
//! the field's text, as a client would put it in a header (`attributes`, `subscription`,
//! `extraInfo`, `startOffsetInfo`, `whiteRemoteAddress`, ...) or a body (config changes, ACL
//! files, KV tables).

use std::collections::BTreeMap;

use stellmq_remoting::protocol::body::topic::{apply_attribute_changes, attributes_as_changes};
use stellmq_remoting::protocol::body::{fastjson, KvTable, SubscriptionData, TopicConfig};
use stellmq_remoting::protocol::{names, pop};

/// One parser: its name (for seeds) and how it reads a text; true when the text was valid.
pub struct TextParser {
    pub name: &'static str,
    pub run: fn(&str) -> bool,
}

pub const PARSERS: &[TextParser] = &[
    TextParser {
        name: "topic_attributes",
        run: topic_attributes,
    },
    TextParser {
        name: "tag_expression",
        run: tag_expression,
    },
    TextParser {
        name: "pop_extra_info",
        run: pop_extra_info,
    },
    TextParser {
        name: "pop_offset_infos",
        run: pop_offset_infos,
    },
    TextParser {
        name: "acl_address",
        run: acl_address,
    },
    TextParser {
        name: "acl_perms",
        run: acl_perms,
    },
    TextParser {
        name: "acl_file",
        run: acl_file,
    },
    TextParser {
        name: "config_changes",
        run: config_changes,
    },
    TextParser {
        name: "delay_levels",
        run: delay_levels,
    },
    TextParser {
        name: "topic_compact",
        run: topic_compact,
    },
    TextParser {
        name: "names",
        run: name_checks,
    },
    TextParser {
        name: "kv_table",
        run: kv_table,
    },
];

/// The target: the first byte picks the parser, the rest is its text (lossy UTF-8, as a
/// header value arrives after decoding).
pub fn text(data: &[u8]) -> bool {
    let Some((pick, rest)) = data.split_first() else {
        return false;
    };
    let parser = &PARSERS[usize::from(*pick) % PARSERS.len()];
    let text = String::from_utf8_lossy(rest);
    (parser.run)(&text)
}

/// An input for `parser` (its index in [`PARSERS`]) holding `text`.
pub fn input(parser: &str, text: &str) -> Vec<u8> {
    let index = PARSERS
        .iter()
        .position(|p| p.name == parser)
        .unwrap_or_else(|| panic!("no text parser {parser}"));
    let mut out = vec![index as u8];
    out.extend_from_slice(text.as_bytes());
    out
}

/// `+k=v,-k` changes: what applied re-applies from the written changes to the same map.
fn topic_attributes(text: &str) -> bool {
    let Ok(applied) = apply_attribute_changes(&BTreeMap::new(), text) else {
        return false;
    };
    if let Some(written) = attributes_as_changes(&applied) {
        let again = apply_attribute_changes(&BTreeMap::new(), &written);
        assert_eq!(again.as_ref(), Ok(&applied), "attributes {written:?}");
    }
    true
}

/// A TAG subscription expression (`a || b`): every tag it holds is in the expression.
fn tag_expression(text: &str) -> bool {
    let data = SubscriptionData::tags("T", text, 1);
    for tag in &data.tags_set {
        assert!(text.contains(tag.as_str()), "tag {tag:?} of {text:?}");
        let code = stellmq_remoting::protocol::message::java_string_hash(tag);
        assert!(data.code_set.contains(&code), "the code of {tag:?}");
    }
    !data.tags_set.is_empty()
}

/// A POP receipt handle (`extraInfo`), and a retry topic's normal topic.
fn pop_extra_info(text: &str) -> bool {
    let _ = pop::parse_normal_topic(text, "g");
    let Ok(info) = pop::ExtraInfo::parse(text) else {
        return false;
    };
    assert_eq!(pop::ExtraInfo::parse(&info.to_string()).as_ref(), Ok(&info));
    true
}

/// `startOffsetInfo`, `msgOffsetInfo` and `orderCountInfo` of a POP response.
fn pop_offset_infos(text: &str) -> bool {
    let starts = pop::parse_start_offset_info(text).is_ok();
    let offsets = pop::parse_msg_offset_info(text).is_ok();
    let counts = pop::parse_order_count_info(text).is_ok();
    starts || offsets || counts
}

/// A plain ACL address pattern (`whiteRemoteAddress`, `globalWhiteRemoteAddresses`).
fn acl_address(text: &str) -> bool {
    match stellmq_acl::address::AddressPattern::parse(text) {
        Ok(pattern) => {
            let _ = pattern.matches("127.0.0.1".parse().expect("an address"));
            true
        }
        Err(_) => false,
    }
}

/// Permissions: a default permission and `resource=PERM` lists (`topicPerms`).
fn acl_perms(text: &str) -> bool {
    let default = stellmq_acl::rules::parse_default_perm(Some(text)).is_ok();
    let items: Vec<String> = text.split(',').map(str::to_owned).collect();
    let listed = stellmq_acl::rules::parse_resource_perms(&items, "topic").is_ok();
    default || listed
}

/// A `plain_acl.yml` file, as UPDATE_GLOBAL_WHITE_ADDRS_CONFIG and the ACL watcher read it.
fn acl_file(text: &str) -> bool {
    stellmq_acl::file::PlainAclFile::parse(text, std::path::Path::new("plain_acl.yml")).is_ok()
}

/// UPDATE_BROKER_CONFIG / UPDATE_NAMESRV_CONFIG bodies, and each value read as a number, a
/// flag and a duration-like text.
fn config_changes(text: &str) -> bool {
    let Ok(changes) = stellmq_config::parse_config_changes(text.as_bytes()) else {
        return false;
    };
    for (key, value) in &changes {
        let _ = stellmq_config::parse_config_value::<i64>(key, value);
        let _ = stellmq_config::parse_config_value::<bool>(key, value);
        let _ = stellmq_config::parse_config_value::<u16>(key, value);
    }
    let _ = stellmq_config::parse_properties(text);
    true
}

/// `messageDelayLevel` (`1s 5s 10s ...`): every level is positive.
fn delay_levels(text: &str) -> bool {
    match stellmq_store::config::parse_delay_levels(text) {
        Ok(levels) => {
            assert!(
                levels.iter().all(|l| *l > 0),
                "levels {levels:?} of {text:?}"
            );
            true
        }
        Err(_) => false,
    }
}

/// A topic line of a compressed registration; what decodes re-encodes to the same topic.
fn topic_compact(text: &str) -> bool {
    let Some(config) = TopicConfig::decode_compact(text) else {
        return false;
    };
    let again = TopicConfig::decode_compact(&config.encode_compact()).expect("re-decodes");
    assert_eq!(again.topic_name, config.topic_name);
    true
}

/// Topic and group names; a valid one is safe as a file name.
fn name_checks(text: &str) -> bool {
    let topic = names::check_topic(text).is_ok();
    let group = names::check_group(text).is_ok();
    if topic && !names::is_retry_or_dlq(text) {
        assert!(names::is_safe_file_name(text), "{text:?}");
    }
    let _ = names::retry_topic(text);
    let _ = names::dlq_topic(text);
    topic || group
}

/// A KV table body (name server KV values, ORDER_TOPIC_CONFIG entries).
fn kv_table(text: &str) -> bool {
    match fastjson::decode::<KvTable>(text.as_bytes()) {
        Ok(table) => {
            let again: KvTable = fastjson::decode(&fastjson::encode(&table)).expect("re-decodes");
            assert_eq!(again.table, table.table);
            true
        }
        Err(_) => false,
    }
}
