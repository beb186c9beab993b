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

    /// What the broker stores: the sender's properties without `WAIT`, with its `CLUSTER`.
    pub fn encode_stored(mut self, cluster: &str) -> String {
        match &self.view {
            Some(view) => view.encode_with(&[property::WAIT], &[(property::CLUSTER, cluster)]),
            None => {
                self.owned.remove(property::WAIT);
                self.owned.insert(property::CLUSTER, cluster);
                self.owned.encode()
            }
        }
    }
}

/// A batch item's properties as stored: its own, with the batch's `shared` ones replacing
/// any of the same name. None for an item with a delay level (batches cannot be delayed).
pub(super) fn batch_item_properties(text: &str, shared: &[(&str, &str)]) -> Option<String> {
    match PropertyView::parse(text) {
        Some(view) if delay_level_of(view.get(property::DELAY)) > 0 => None,
        Some(view) => Some(view.encode_with(&[], shared)),
        None => {
            let mut props = Properties::decode(text);
            if props.delay_level() > 0 {
                return None;
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
        Properties::decode(&SendProperties::read(text).encode_stored("c1"))
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
            Properties::decode(&props.encode_stored("c")).get("CLUSTER"),
            Some("c")
        );
    }
}
