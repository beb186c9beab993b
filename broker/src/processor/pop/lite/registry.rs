//! Who subscribed to which lite topics (RocketMQ 5.5's `LiteSubscriptionRegistry`), and
//! each client's lite topics with news (its events): a message arriving in a lite topic
//! goes to one subscribed client of each group, which its next POP_LITE_MESSAGE reads.
//!
//! Bounded: `maxLiteSubscriptionCount` (client, lite topic) pairs on the broker, a client's
//! events up to [`MAX_EVENTS`] (beyond, a POP finds the rest by looking at every lite topic
//! the client subscribed to).

use std::collections::{HashMap, HashSet, VecDeque};

use parking_lot::Mutex;

/// A client's events kept at most (RocketMQ's hard cap of a client's event queue).
pub const MAX_EVENTS: usize = 100_000;

/// What a client subscribed to: lite topics (their LMQ names) of one parent for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSubscription {
    pub group: String,
    pub parent: String,
    pub lmqs: HashSet<String>,
    /// When it last changed (ms): clients silent for long are forgotten.
    pub updated_ms: i64,
}

/// Why a subscription was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubscribeError {
    #[error("lite subscription quota exceeded {0}")]
    Quota(usize),
    #[error("client {client} subscribes to lite topics of {bound} for group {group}; one client serves one group and parent topic")]
    OtherBinding {
        client: String,
        group: String,
        bound: String,
    },
}

#[derive(Default)]
struct ClientEvents {
    queue: VecDeque<String>,
    queued: HashSet<String>,
}

impl ClientEvents {
    fn push(&mut self, lmq: &str) {
        if self.queue.len() < MAX_EVENTS && self.queued.insert(lmq.to_owned()) {
            self.queue.push_back(lmq.to_owned());
        }
    }

    fn pop(&mut self) -> Option<String> {
        let lmq = self.queue.pop_front()?;
        self.queued.remove(&lmq);
        Some(lmq)
    }
}

#[derive(Default)]
struct Inner {
    clients: HashMap<String, ClientSubscription>,
    /// LMQ -> clients subscribed to it.
    by_lmq: HashMap<String, Vec<String>>,
    pairs: usize,
    events: HashMap<String, ClientEvents>,
    /// Rotates which client of a group gets an event.
    turn: usize,
    /// When each client last popped (ms).
    accessed: HashMap<String, i64>,
}

impl Inner {
    fn link(&mut self, client: &str, lmq: &str) {
        let clients = self.by_lmq.entry(lmq.to_owned()).or_default();
        if !clients.iter().any(|c| c == client) {
            clients.push(client.to_owned());
        }
    }

    fn unlink(&mut self, client: &str, lmq: &str) {
        if let Some(clients) = self.by_lmq.get_mut(lmq) {
            clients.retain(|c| c != client);
            if clients.is_empty() {
                self.by_lmq.remove(lmq);
            }
        }
    }
}

/// The lite subscriptions of a broker.
pub struct LiteRegistry {
    inner: Mutex<Inner>,
    max_pairs: usize,
}

impl LiteRegistry {
    pub fn new(max_pairs: usize) -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            max_pairs: max_pairs.max(1),
        }
    }

    /// PARTIAL_ADD (COMPLETE_ADD with `replace`): `client` of `group` subscribes to `lmqs`
    /// of `parent`; with `replace` they become its whole set. Refused past the broker's
    /// quota (checked for additions only, as RocketMQ does) or for a client already bound
    /// to another group or parent.
    pub fn add(
        &self,
        client: &str,
        group: &str,
        parent: &str,
        lmqs: &[String],
        replace: bool,
        now_ms: i64,
    ) -> Result<(), SubscribeError> {
        let mut inner = self.inner.lock();
        if let Some(current) = inner.clients.get(client) {
            if current.group != group || current.parent != parent {
                return Err(SubscribeError::OtherBinding {
                    client: client.to_owned(),
                    group: current.group.clone(),
                    bound: current.parent.clone(),
                });
            }
        }
        let current: HashSet<String> = inner
            .clients
            .get(client)
            .map(|c| c.lmqs.clone())
            .unwrap_or_default();
        let wanted: HashSet<String> = lmqs.iter().cloned().collect();
        if wanted.is_empty() && !inner.clients.contains_key(client) {
            // Nothing to keep: an unknown client naming no lite topic costs no entry.
            return Ok(());
        }
        let added: Vec<&String> = wanted.difference(&current).collect();
        let removed: Vec<String> = if replace {
            current.difference(&wanted).cloned().collect()
        } else {
            Vec::new()
        };
        if inner.pairs - removed.len() + added.len() > self.max_pairs {
            return Err(SubscribeError::Quota(self.max_pairs));
        }
        for lmq in &added {
            inner.link(client, lmq);
        }
        for lmq in &removed {
            inner.unlink(client, lmq);
        }
        inner.pairs = inner.pairs - removed.len() + added.len();
        let entry = inner
            .clients
            .entry(client.to_owned())
            .or_insert_with(|| ClientSubscription {
                group: group.to_owned(),
                parent: parent.to_owned(),
                lmqs: HashSet::new(),
                updated_ms: now_ms,
            });
        for lmq in &removed {
            entry.lmqs.remove(lmq);
        }
        for lmq in added {
            entry.lmqs.insert(lmq.clone());
        }
        entry.updated_ms = now_ms;
        Ok(())
    }

    /// PARTIAL_REMOVE: `client` no longer receives `lmqs`.
    pub fn remove(&self, client: &str, lmqs: &[String], now_ms: i64) {
        let mut inner = self.inner.lock();
        let Some(mut sub) = inner.clients.remove(client) else {
            return;
        };
        for lmq in lmqs {
            if sub.lmqs.remove(lmq) {
                inner.unlink(client, lmq);
                inner.pairs -= 1;
            }
        }
        sub.updated_ms = now_ms;
        inner.clients.insert(client.to_owned(), sub);
    }

    /// COMPLETE_REMOVE (or a client gone silent): everything of `client`.
    pub fn remove_client(&self, client: &str) {
        let mut inner = self.inner.lock();
        if let Some(sub) = inner.clients.remove(client) {
            for lmq in &sub.lmqs {
                inner.unlink(client, lmq);
            }
            inner.pairs -= sub.lmqs.len();
        }
        inner.events.remove(client);
        inner.accessed.remove(client);
    }

    /// Forgets clients whose subscription did not change since `before_ms`; how many.
    pub fn expire(&self, before_ms: i64) -> usize {
        let stale: Vec<String> = self
            .inner
            .lock()
            .clients
            .iter()
            .filter(|(_, s)| s.updated_ms < before_ms)
            .map(|(c, _)| c.clone())
            .collect();
        for client in &stale {
            self.remove_client(client);
        }
        stale.len()
    }

    pub fn subscription(&self, client: &str) -> Option<ClientSubscription> {
        self.inner.lock().clients.get(client).cloned()
    }

    /// A message arrived in `lmq`: one subscribed client of each group gets the event
    /// (`only_group`: of that group only). The clients to wake.
    pub fn arrived(&self, lmq: &str, only_group: Option<&str>) -> Vec<String> {
        let mut inner = self.inner.lock();
        let Some(clients) = inner.by_lmq.get(lmq).cloned() else {
            return Vec::new();
        };
        let mut by_group: HashMap<String, Vec<String>> = HashMap::new();
        for client in clients {
            if let Some(sub) = inner.clients.get(&client) {
                if only_group.is_none_or(|g| g == sub.group) {
                    by_group.entry(sub.group.clone()).or_default().push(client);
                }
            }
        }
        inner.turn = inner.turn.wrapping_add(1);
        let turn = inner.turn;
        let mut woken = Vec::with_capacity(by_group.len());
        for (_, members) in by_group {
            let Some(chosen) = members.get(turn % members.len().max(1)).cloned() else {
                continue;
            };
            inner.events.entry(chosen.clone()).or_default().push(lmq);
            woken.push(chosen);
        }
        woken
    }

    /// A deleted lite topic: no client receives it any more.
    pub fn forget_lmq(&self, lmq: &str) {
        let mut inner = self.inner.lock();
        let Some(clients) = inner.by_lmq.remove(lmq) else {
            return;
        };
        for client in clients {
            if let Some(sub) = inner.clients.get_mut(&client) {
                if sub.lmqs.remove(lmq) {
                    inner.pairs -= 1;
                }
            }
        }
    }

    /// `lmq` has news for `client` itself (what a lite topic held when it subscribed).
    pub fn notify(&self, client: &str, lmq: &str) {
        self.inner
            .lock()
            .events
            .entry(client.to_owned())
            .or_default()
            .push(lmq);
    }

    /// The next lite topic with news for `client`.
    pub fn next_event(&self, client: &str) -> Option<String> {
        self.inner.lock().events.get_mut(client)?.pop()
    }

    pub fn has_events(&self, client: &str) -> bool {
        self.inner
            .lock()
            .events
            .get(client)
            .is_some_and(|e| !e.queue.is_empty())
    }

    /// `client` popped at `now_ms`.
    pub fn touch(&self, client: &str, now_ms: i64) {
        let mut inner = self.inner.lock();
        if inner.clients.contains_key(client) {
            inner.accessed.insert(client.to_owned(), now_ms);
        }
    }

    /// When `client` last popped (-1: never, or unknown).
    pub fn last_access(&self, client: &str) -> i64 {
        self.inner
            .lock()
            .accessed
            .get(client)
            .copied()
            .unwrap_or(-1)
    }

    /// The (client, group) pairs subscribed to `lmq`.
    pub fn subscribers(&self, lmq: &str) -> Vec<(String, String)> {
        let inner = self.inner.lock();
        inner
            .by_lmq
            .get(lmq)
            .into_iter()
            .flatten()
            .filter_map(|c| inner.clients.get(c).map(|s| (c.clone(), s.group.clone())))
            .collect()
    }

    /// Clients with events waiting.
    pub fn event_clients(&self) -> usize {
        self.inner
            .lock()
            .events
            .values()
            .filter(|e| !e.queue.is_empty())
            .count()
    }

    /// Every lite topic `client` (of `group`) subscribed to is news again (RocketMQ's full
    /// dispatch): what `has_backlog` says has messages left.
    pub fn renotify(&self, client: &str, has_backlog: impl Fn(&str) -> bool) -> bool {
        let Some(sub) = self.subscription(client) else {
            return false;
        };
        let mut any = false;
        for lmq in sub.lmqs.iter().filter(|l| has_backlog(l)) {
            self.notify(client, lmq);
            any = true;
        }
        any
    }

    /// The clients of `group`.
    pub fn clients_of_group(&self, group: &str) -> Vec<String> {
        self.inner
            .lock()
            .clients
            .iter()
            .filter(|(_, s)| s.group == group)
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// (client, lite topic) pairs on the broker.
    pub fn pairs(&self) -> usize {
        self.inner.lock().pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lmqs(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| format!("%LMQ%$P${n}")).collect()
    }

    #[test]
    fn subscriptions_are_counted_bounded_and_replaced() {
        let r = LiteRegistry::new(3);
        r.add("c1", "g", "P", &lmqs(&["a", "b"]), false, 1).unwrap();
        r.add("c2", "g", "P", &lmqs(&["a"]), false, 1).unwrap();
        assert_eq!(r.pairs(), 3);
        assert_eq!(
            r.add("c2", "g", "P", &lmqs(&["c"]), false, 1),
            Err(SubscribeError::Quota(3))
        );
        r.add("c1", "g", "P", &lmqs(&["b"]), true, 2).unwrap();
        assert_eq!(r.pairs(), 2);
        r.remove("c1", &lmqs(&["b"]), 3);
        assert_eq!(r.pairs(), 1);
        assert!(matches!(
            r.add("c2", "other", "P", &lmqs(&["x"]), false, 4),
            Err(SubscribeError::OtherBinding { .. })
        ));
        r.remove_client("c2");
        assert_eq!(r.pairs(), 0);
        // Client ids naming nothing leave nothing behind.
        r.add("ghost", "g", "P", &[], true, 5).unwrap();
        assert!(r.subscription("ghost").is_none());
    }

    #[test]
    fn an_arrival_reaches_one_client_of_each_group() {
        let r = LiteRegistry::new(100);
        r.add("c1", "g1", "P", &lmqs(&["a"]), false, 1).unwrap();
        r.add("c2", "g1", "P", &lmqs(&["a"]), false, 1).unwrap();
        r.add("c3", "g2", "P", &lmqs(&["a"]), false, 1).unwrap();
        let woken = r.arrived("%LMQ%$P$a", None);
        assert_eq!(woken.len(), 2);
        assert!(woken.contains(&"c3".to_owned()));
        let g1 = woken.iter().find(|c| *c != "c3").unwrap().clone();
        assert_eq!(r.next_event(&g1).as_deref(), Some("%LMQ%$P$a"));
        assert_eq!(r.next_event(&g1), None);
        assert!(r.arrived("%LMQ%$P$zzz", None).is_empty());
    }

    #[test]
    fn silent_clients_are_forgotten() {
        let r = LiteRegistry::new(100);
        r.add("old", "g", "P", &lmqs(&["a"]), false, 1).unwrap();
        r.add("new", "g", "P", &lmqs(&["a"]), false, 50).unwrap();
        assert_eq!(r.expire(10), 1);
        assert!(r.subscription("old").is_none());
        assert_eq!(r.pairs(), 1);
    }
}
