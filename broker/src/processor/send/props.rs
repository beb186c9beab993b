//! A send's properties: read in place from the request, copied into a map only when the
//! broker rewrites them (transaction halves, timers, delay levels, the dead-letter queue).
//! The common send stores its properties again without building a map of owned strings.

use stellmq_remoting::protocol::message::{
    delay_level_of, property, Properties, PropertyLookup, PropertyView,
};

pub(super) struct SendProperties<'a> {
    /// The request's properties while unchanged; `owned` is empty meanwhile.
    view: Option<PropertyView<'a>>,
    owned: Properties,
}

impl<'a> SendProperties<'a> {
    pub fn read(text: &'a str) -> Self {
        match PropertyView::parse(text) {
            Some(view) => Self {
                view: Some(view),
                owned: Properties::new(),
            },
            None => Self {
                view: None,
                owned: Properties::decode(text),
            },
        }
    }

    /// The properties to change (copied out of the request on first use).
    pub fn to_mut(&mut self) -> &mut Properties {
        if let Some(view) = self.view.take() {
            self.owned = view.to_properties();
        }
        &mut self.owned
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.view
            .iter()
            .flat_map(|view| view.iter())
            .chain(self.owned.iter())
    }

    /// What the broker stores: the sender's properties without `WAIT` and without the
    /// light message queues a sender may not name itself, with its `CLUSTER`, and with
    /// `lmq` (a lite topic's light message queue) as the one to dispatch to.
    pub fn encode_stored(mut self, cluster: &str, lmq: Option<&str>) -> String {
        let mut added = vec![(property::CLUSTER, cluster)];
        if let Some(lmq) = lmq {
            added.push((property::INNER_MULTI_DISPATCH, lmq));
        }
        match &self.view {
            Some(view) => view.encode_with(STRIPPED, &added),
            None => {
                for name in STRIPPED {
                    self.owned.remove(name);
                }
                for (name, value) in added {
                    self.owned.insert(name, value);
                }
                self.owned.encode()
            }
        }
    }
}

/// Properties a sender's message never keeps: `WAIT` (for this broker only) and the
/// light message queues with their offsets (the broker names them, for lite topics).
const STRIPPED: &[&str] = &[
    property::WAIT,
    property::INNER_MULTI_DISPATCH,
    property::INNER_MULTI_QUEUE_OFFSET,
];

/// A batch item's properties as stored: its own, with the batch's `shared` ones replacing
/// any of the same name. None for an item with a delay level (batches cannot be delayed).
pub(super) fn batch_item_properties(text: &str, shared: &[(&str, &str)]) -> Option<String> {
    match PropertyView::parse(text) {
        Some(view) if delay_level_of(view.get(property::DELAY)) > 0 => None,
        Some(view) => Some(view.encode_with(STRIPPED, shared)),
        None => {
            let mut props = Properties::decode(text);
            if props.delay_level() > 0 {
                return None;
            }
            for name in STRIPPED {
                props.remove(name);
            }
            for (name, value) in shared {
                props.insert(*name, *value);
            }
            Some(props.encode())
        }
    }
}

impl PropertyLookup for SendProperties<'_> {
    fn get(&self, name: &str) -> Option<&str> {
        match &self.view {
            Some(view) => view.get(name),
            None => self.owned.get(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(text: &str) -> Properties {
        Properties::decode(&SendProperties::read(text).encode_stored("c1", None))
    }

    #[test]
    fn stored_properties_drop_wait_and_carry_the_cluster() {
        let p = stored("WAIT\u{1}true\u{2}CLUSTER\u{1}theirs\u{2}TAGS\u{1}t\u{2}");
        let expected: Properties = [("CLUSTER", "c1"), ("TAGS", "t")].into_iter().collect();
        assert_eq!(p, expected);
    }

    #[test]
    fn many_properties_are_stored_the_same_way() {
        let text: String = (0..40).map(|i| format!("k{i}\u{1}v{i}\u{2}")).collect();
        let text = format!("{text}WAIT\u{1}false\u{2}");
        let p = stored(&text);
        assert_eq!(p.iter().count(), 41);
        assert_eq!(p.get("CLUSTER"), Some("c1"));
        assert_eq!(p.get("k39"), Some("v39"));
        assert!(!p.contains("WAIT"));
    }

    #[test]
    fn batch_items_take_the_shared_properties_and_refuse_delays() {
        let shared = [("CLUSTER", "c1"), ("K", "batch")];
        let item = batch_item_properties("K\u{1}own\u{2}T\u{1}t\u{2}", &shared).expect("kept");
        let expected: Properties = [("CLUSTER", "c1"), ("K", "batch"), ("T", "t")]
            .into_iter()
            .collect();
        assert_eq!(Properties::decode(&item), expected);
        assert_eq!(batch_item_properties("DELAY\u{1}2\u{2}", &shared), None);
        let many: String = (0..40).map(|i| format!("k{i}\u{1}v\u{2}")).collect();
        let many_delayed = format!("{many}DELAY\u{1}2\u{2}");
        assert_eq!(batch_item_properties(&many_delayed, &shared), None);
        let stored = batch_item_properties(&many, &shared).expect("kept");
        assert_eq!(Properties::decode(&stored).get("K"), Some("batch"));
    }

    #[test]
    fn a_change_copies_the_view_first() {
        let mut props = SendProperties::read("A\u{1}1\u{2}DELAY\u{1}3\u{2}");
        props.to_mut().remove("DELAY");
        assert_eq!(props.get("A"), Some("1"));
        assert_eq!(props.get("DELAY"), None);
        assert_eq!(props.iter().count(), 1);
        assert_eq!(
            Properties::decode(&props.encode_stored("c", None)).get("CLUSTER"),
            Some("c")
        );
    }
}
