//! The checker: what the journal of acknowledgements says must hold once the faults are over.
//!
//! - every acknowledged message is stored, intact, at its acknowledged queue offset on the
//!   broker that is master at the end (a message at another offset, or another message at
//!   its offset, counts as lost: the acknowledgement named a place that no longer holds it);
//! - the acknowledged messages of one sharding key are stored in the order they were sent;
//! - after mastership moved, no two brokers acknowledge sends in overlapping windows: the old
//!   master acknowledges no send begun after the new one acknowledged one, unless elected
//!   again; classic: only the master acknowledges;
//! - both consumers (clustering and broadcasting) received every acknowledged message.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;
use stellmq_remoting::net::RemotingClient;
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_testkit::Pull;

use crate::workload::{Ack, Journal, Kind, MasterSample, ORDER_KEYS, TOPIC};

const CALL: Duration = Duration::from_secs(5);
const PULL_NOT_FOUND: i32 = 19;
const PULL_RETRY_IMMEDIATELY: i32 = 20;
const PULL_OFFSET_MOVED: i32 = 21;

/// A queue as the final master stores it: body at each offset.
pub type Stored = BTreeMap<(i32, i64), String>;

/// Reads every message of `queues` queues of the topic from the broker at `addr`.
pub async fn read_all(client: &RemotingClient, addr: &str, queues: i32) -> Result<Stored, String> {
    let mut stored = Stored::new();
    for queue in 0..queues {
        let mut offset = 0;
        loop {
            let pull = Pull::new("chaos_checker", TOPIC, queue, offset).subscribe("*");
            let r = client
                .invoke(addr, pull.to_request(), CALL)
                .await
                .map_err(|e| format!("pull {addr} queue {queue} at {offset}: {e}"))?;
            match r.code {
                0 => {
                    let records = MessageRecord::decode_all(r.body.clone(), true)
                        .map_err(|e| format!("a pulled batch does not decode: {e}"))?;
                    let found = !records.is_empty();
                    for record in records {
                        stored.insert(
                            (queue, record.head.queue_offset),
                            String::from_utf8_lossy(&record.body).into_owned(),
                        );
                    }
                    let next = next_offset(&r, offset)?;
                    if next <= offset && !found {
                        break;
                    }
                    offset = next;
                }
                PULL_NOT_FOUND => break,
                PULL_RETRY_IMMEDIATELY | PULL_OFFSET_MOVED => {
                    let next = next_offset(&r, offset)?;
                    if next <= offset {
                        break;
                    }
                    offset = next;
                }
                code => {
                    return Err(format!(
                        "pull {addr} queue {queue} at {offset}: code {code} {}",
                        r.remark.as_deref().unwrap_or("")
                    ))
                }
            }
        }
    }
    Ok(stored)
}

fn next_offset(
    r: &stellmq_remoting::protocol::RemotingCommand,
    offset: i64,
) -> Result<i64, String> {
    r.ext_fields
        .get("nextBeginOffset")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("a pull answer at {offset} has no nextBeginOffset"))
}

/// What the checker found.
#[derive(Debug, Default, Clone, Serialize)]
pub struct Findings {
    pub acknowledged: usize,
    pub unacknowledged: u64,
    /// Acknowledged messages not at their acknowledged place on the final master.
    pub lost: Vec<String>,
    /// Bodies stored more than once on the final master (client retries after a timeout).
    pub duplicated: usize,
    pub order_violations: Vec<String>,
    /// Acknowledgements by a deposed master after its successor took writes.
    pub overlapping: Vec<String>,
    pub skipped_clustering: usize,
    pub skipped_broadcasting: usize,
    /// Some skipped messages, with what the clustering consumer got at their place instead.
    pub skipped_examples: Vec<String>,
}

impl Findings {
    pub fn passed(&self) -> bool {
        self.lost.is_empty()
            && self.order_violations.is_empty()
            && self.overlapping.is_empty()
            && self.skipped_clustering == 0
            && self.skipped_broadcasting == 0
    }
}

/// Checks what the final master stores against the acknowledgements.
pub fn stored_matches(acks: &[Ack], stored: &Stored, findings: &mut Findings) {
    findings.acknowledged = acks.len();
    for ack in acks {
        match stored.get(&(ack.queue_id, ack.queue_offset)) {
            Some(body) if *body == ack.body => {}
            Some(other) => findings.lost.push(format!(
                "{} (acknowledged by {} at queue {} offset {}, which holds {other})",
                ack.body, ack.broker, ack.queue_id, ack.queue_offset
            )),
            None => findings.lost.push(format!(
                "{} (acknowledged by {} at queue {} offset {}, which is empty)",
                ack.body, ack.broker, ack.queue_id, ack.queue_offset
            )),
        }
    }
    let mut copies: HashMap<&str, u32> = HashMap::new();
    for body in stored.values() {
        *copies.entry(body.as_str()).or_default() += 1;
    }
    findings.duplicated = copies.values().filter(|n| **n > 1).count();
}

/// Checks that each sharding key's acknowledged messages sit in its queue in send order.
pub fn order_holds(acks: &[Ack], findings: &mut Findings) {
    for key in 0..ORDER_KEYS {
        let mut of_key: Vec<(u64, i32, i64)> = acks
            .iter()
            .filter_map(|a| match a.kind {
                Kind::Orderly { key: k, seq } if k == key => {
                    Some((seq, a.queue_id, a.queue_offset))
                }
                _ => None,
            })
            .collect();
        of_key.sort_unstable();
        for pair in of_key.windows(2) {
            if let [(s1, q1, o1), (s2, q2, o2)] = pair {
                if q1 != q2 || o1 >= o2 {
                    findings.order_violations.push(format!(
                        "key {key}: seq {s1} at queue {q1} offset {o1}, seq {s2} at queue {q2} \
                         offset {o2}"
                    ));
                }
            }
        }
    }
}

/// Controller mode: after mastership moved, the old master acknowledges no send begun after
/// the new one acknowledged one, unless the controllers elected it again (a newer epoch) in
/// between. The check looks, for each acknowledgement, at the last acknowledgement that
/// ended before its send began: by another broker, it is an overlap unless a sample names
/// this broker master with an epoch newer than any the other was seen master with by then.
/// (A deposed master whose slaves still follow it may finish writes after the controllers
/// elected another one; until the new master takes writes, those are in its log: no
/// overlap.)
pub fn no_overlapping_masters(acks: &[Ack], masters: &[MasterSample], findings: &mut Findings) {
    let mut by_end: Vec<&Ack> = acks.iter().collect();
    by_end.sort_by_key(|a| a.acked_at);
    for x in acks {
        // The last acknowledgement that ended before x's send began.
        let before = by_end.partition_point(|a| a.acked_at < x.sent_at);
        let Some(y) = before.checked_sub(1).and_then(|i| by_end.get(i)) else {
            continue;
        };
        if y.broker == x.broker {
            continue;
        }
        let other_epoch = masters
            .iter()
            .filter(|m| m.addr == y.broker && m.at <= y.acked_at)
            .map(|m| m.epoch)
            .max()
            .unwrap_or(i32::MIN);
        let elected_again = masters
            .iter()
            .any(|m| m.addr == x.broker && m.epoch > other_epoch && m.at <= x.acked_at);
        if !elected_again {
            findings.overlapping.push(format!(
                "{} acknowledged by {} in [{}, {}] ms, after {} had acknowledged {} at {} ms \
                 (master of epoch {other_epoch}) and no newer election of {}",
                x.body, x.broker, x.sent_at, x.acked_at, y.broker, y.body, y.acked_at, x.broker
            ));
        }
    }
}

/// Classic mode: only the master (`master_addr`) acknowledges.
pub fn only_master_acks(acks: &[Ack], master_addr: &str, findings: &mut Findings) {
    for ack in acks.iter().filter(|a| a.broker != master_addr) {
        findings.overlapping.push(format!(
            "{} acknowledged by {}, not the master {master_addr}",
            ack.body, ack.broker
        ));
    }
}

/// Up to `n` acknowledged messages the clustering consumer did not receive, each with what
/// it received at that queue offset instead.
pub fn skipped_examples(journal: &Journal, n: usize) -> Vec<String> {
    journal
        .acks
        .iter()
        .filter(|a| !journal.clustering.contains_key(&a.body))
        .take(n)
        .map(|a| {
            let instead = journal
                .clustering_at
                .get(&(a.queue_id, a.queue_offset))
                .map_or("nothing", String::as_str);
            format!(
                "{} (queue {} offset {}, acknowledged by {} at {} ms): the consumer got {instead} there",
                a.body, a.queue_id, a.queue_offset, a.broker, a.acked_at
            )
        })
        .collect()
}

/// How many acknowledged messages each consumer has not received.
pub fn skipped(journal: &Journal) -> (usize, usize) {
    let missing = |seen: &HashMap<String, u32>| {
        journal
            .acks
            .iter()
            .filter(|a| !seen.contains_key(&a.body))
            .count()
    };
    (missing(&journal.clustering), missing(&journal.broadcasting))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(body: &str, kind: Kind, queue_offset: i64, broker: &str, at: (u64, u64)) -> Ack {
        Ack {
            body: body.into(),
            kind,
            queue_id: 1,
            queue_offset,
            broker: broker.into(),
            sent_at: at.0,
            acked_at: at.1,
        }
    }

    fn sample(at: u64, addr: &str, epoch: i32) -> MasterSample {
        MasterSample {
            at,
            addr: addr.into(),
            epoch,
        }
    }

    #[test]
    fn a_message_displaced_from_its_offset_is_lost() {
        let acks = vec![
            ack("a", Kind::Sync, 0, "m", (0, 1)),
            ack("b", Kind::Sync, 1, "m", (0, 1)),
            ack("c", Kind::Sync, 2, "m", (0, 1)),
        ];
        let stored: Stored = [((1, 0), "a".into()), ((1, 1), "x".into())].into();
        let mut f = Findings::default();
        stored_matches(&acks, &stored, &mut f);
        assert_eq!(f.lost.len(), 2, "{:?}", f.lost);
        assert!(f.lost[0].contains("holds x"));
        assert!(f.lost[1].contains("empty"));
        assert!(!f.passed());
    }

    #[test]
    fn orderly_messages_out_of_send_order_are_found() {
        let o = |seq| Kind::Orderly { key: 2, seq };
        let acks = vec![
            ack("o-2-0", o(0), 5, "m", (0, 1)),
            ack("o-2-2", o(2), 4, "m", (0, 1)),
        ];
        let mut f = Findings::default();
        order_holds(&acks, &mut f);
        assert_eq!(f.order_violations.len(), 1);
    }

    #[test]
    fn a_deposed_master_acknowledging_after_the_new_one_is_an_overlap() {
        let masters = vec![sample(0, "a", 1), sample(100, "b", 2), sample(300, "b", 2)];
        let first_of_b = ack("b1", Kind::Sync, 7, "b", (110, 150));
        let late = ack("late", Kind::Sync, 9, "a", (200, 250));
        let mut f = Findings::default();
        no_overlapping_masters(&[first_of_b.clone(), late], &masters, &mut f);
        assert_eq!(f.overlapping.len(), 1, "{:?}", f.overlapping);
        assert!(f.overlapping[0].starts_with("late"));

        // Elected again (a newer epoch) before it answered: not an overlap.
        let masters = vec![sample(0, "a", 1), sample(100, "b", 2), sample(220, "a", 3)];
        let again = ack("again", Kind::Sync, 9, "a", (200, 250));
        let mut f = Findings::default();
        no_overlapping_masters(&[first_of_b, again], &masters, &mut f);
        assert!(f.overlapping.is_empty(), "{:?}", f.overlapping);
    }

    #[test]
    fn a_deposed_master_finishing_writes_before_the_new_one_takes_any_is_no_overlap() {
        // The controllers named b at 100, but b took its first write at 400: a's writes
        // until then were followed by b (its slave until it switched).
        let masters = vec![sample(0, "a", 1), sample(100, "b", 2)];
        let acks = vec![
            ack("a1", Kind::Sync, 1, "a", (150, 180)),
            ack("a2", Kind::Sync, 2, "a", (190, 220)),
            ack("b1", Kind::Sync, 3, "b", (400, 420)),
            ack("b2", Kind::Sync, 4, "b", (430, 440)),
        ];
        let mut f = Findings::default();
        no_overlapping_masters(&acks, &masters, &mut f);
        assert!(f.overlapping.is_empty(), "{:?}", f.overlapping);
    }
}
