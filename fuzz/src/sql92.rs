//! SQL92 selectors: parsing, and evaluation against arbitrary properties.

use stellmq_broker::filter::{self, sql92::Selector};
use stellmq_remoting::protocol::message::Properties;

/// `selector NUL properties`: the selector parsed as a subscription's, then evaluated
/// against the properties (a `name\u1value\u2` string), against none, and against
/// properties that all read "1".
pub fn sql92(data: &[u8]) -> bool {
    let text = String::from_utf8_lossy(data);
    let (selector, props) = text.split_once('\0').unwrap_or((&text, ""));
    // The same string as a tag expression, as subscriptions without a type are read.
    let _ = filter::build_subscription("T", selector, 0);
    let Ok(parsed) = Selector::parse(selector) else {
        return false;
    };
    let props = Properties::decode(props);
    let hit = parsed.matches(|k| props.get(k));
    let _ = parsed.matches(|_| None);
    let _ = parsed.matches(|_| Some("1"));
    // Three-valued logic: NOT of a selected message's selector never selects it.
    if hit {
        if let Ok(negated) = Selector::parse(&format!("NOT ({selector}\n)")) {
            assert!(
                !negated.matches(|k| props.get(k)),
                "both {selector:?} and its negation match"
            );
        }
    }
    true
}
