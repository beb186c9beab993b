//! The checker: what the journal of acknowledgements says must hold once the faults are over.
//!
//! - every acknowledged message is stored, intact, at its acknowledged queue offset on the
//!   broker that is master at the end (a message at another offset, or another message at
//!   its offset, counts as lost: the acknowledgement named a place that no longer holds it);
//! - the acknowledged messages of one sharding key are stored in the order they were sent;
//! - no two brokers of the set acknowledge sends in overlapping windows: a send begun after
//!   another was acknowledged is stored after it in the set's one CommitLog history (its
//!   offsetMsgId's physical offset); classic: only the master acknowledges;
//! - both consumers (clustering and broadcasting) received every acknowledged message;
//! - a real SDK's acknowledged messages (checked by body, see [`crate::sdk`]) are stored by
//!   the final master, and its own consumer received each of them.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;
use stellmq_remoting::net::RemotingClient;
use stellmq_remoting::protocol::message::MessageRecord;
use stellmq_testkit::Pull;

use crate::sdk::{SdkJournal, SdkKind};
use crate::workload::{Ack, Journal, Kind, MasterSample, RouteSample, ORDER_KEYS};

const CALL: Duration = Duration::from_secs(5);
const PULL_NOT_FOUND: i32 = 19;
const PULL_RETRY_IMMEDIATELY: i32 = 20;
const PULL_OFFSET_MOVED: i32 = 21;

/// A queue as the final master stores it: body at each offset.
pub type Stored = BTreeMap<(i32, i64), String>;

/// Reads every message of `queues` queues of `topic` from the broker at `addr`.
pub async fn read_all(
    client: &RemotingClient,
    addr: &str,
    topic: &str,
    queues: i32,
) -> Result<Stored, String> {
    let mut stored = Stored::new();
    for queue in 0..queues {
        let mut offset = 0;
        loop {
            let pull = Pull::new("chaos_checker", topic, queue, offset).subscribe("*");
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
    /// Acknowledgements out of real-time order in the log (overlapping masters).
    pub overlapping: Vec<String>,
    pub skipped_clustering: usize,
    pub skipped_broadcasting: usize,
    /// Some skipped messages, with what the clustering consumer got at their place instead.
    pub skipped_examples: Vec<String>,
    /// Times the name server routed, for longer than the grace, a master other than the one
    /// the controllers named (or none while they named one).
    pub stale_routes: Vec<String>,
    /// The real SDK's sends and receipts, when one ran.
    pub sdk: Option<SdkFindings>,
}

/// What the checker found of a real SDK's messages.
#[derive(Debug, Clone, Serialize)]
pub struct SdkFindings {
    pub client: SdkKind,
    pub acknowledged: usize,
    pub unacknowledged: u64,
    /// Acknowledged bodies the final master does not store.
    pub lost: Vec<String>,
    /// Acknowledged bodies the SDK's consumer has not received.
    pub unreceived: usize,
    pub unreceived_examples: Vec<String>,
}

impl Findings {
    pub fn passed(&self) -> bool {
        self.lost.is_empty()
            && self.order_violations.is_empty()
            && self.overlapping.is_empty()
            && self.skipped_clustering == 0
            && self.skipped_broadcasting == 0
            && self.stale_routes.is_empty()
            && self
                .sdk
                .as_ref()
                .is_none_or(|s| s.lost.is_empty() && s.unreceived == 0)
    }
}

/// Checks a real SDK's acknowledged messages by body against what the final master stores
/// of the SDK's topic and what the SDK's consumer received.
pub fn sdk_findings(client: SdkKind, journal: &SdkJournal, stored: &Stored) -> SdkFindings {
    let bodies: std::collections::HashSet<&str> = stored.values().map(String::as_str).collect();
    let lost = journal
        .acks
        .iter()
        .filter(|a| !bodies.contains(a.body.as_str()))
        .map(|a| format!("{} (acknowledged to the SDK at {} ms)", a.body, a.acked_at))
        .collect();
    let unreceived: Vec<&str> = journal
        .acks
        .iter()
        .filter(|a| !journal.received.contains_key(&a.body))
        .map(|a| a.body.as_str())
        .collect();
    SdkFindings {
        client,
        acknowledged: journal.acks.len(),
        unacknowledged: journal.failures,
        lost,
        unreceived: unreceived.len(),
        unreceived_examples: unreceived.iter().take(5).map(|b| (*b).to_owned()).collect(),
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

/// The log's order agrees with real time: a send begun after another was acknowledged is
/// stored after it in the broker set's CommitLog (offsetMsgId's physical offset). Two
/// masters taking writes at once break it (each writes its own continuation of the log),
/// whichever of them the acknowledged messages came from; so does a master that, elected
/// again, lost acknowledged writes of the one before it.
pub fn log_follows_real_time(acks: &[Ack], findings: &mut Findings) {
    let mut by_end: Vec<&Ack> = acks.iter().collect();
    by_end.sort_by_key(|a| a.acked_at);
    // The acknowledgement with the highest offset among the first i ones to end.
    let mut highest: Vec<&Ack> = Vec::with_capacity(by_end.len());
    for a in &by_end {
        let top = match highest.last() {
            Some(h) if h.physical_offset >= a.physical_offset => *h,
            _ => *a,
        };
        highest.push(top);
    }
    for x in acks {
        let before = by_end.partition_point(|a| a.acked_at < x.sent_at);
        let Some(y) = before.checked_sub(1).and_then(|i| highest.get(i)) else {
            continue;
        };
        if y.physical_offset > x.physical_offset {
            findings.overlapping.push(format!(
                "{} acknowledged by {} in [{}, {}] ms at log offset {}, before {} which {} \
                 acknowledged at {} ms at log offset {}",
                x.body,
                x.broker,
                x.sent_at,
                x.acked_at,
                x.physical_offset,
                y.body,
                y.broker,
                y.acked_at,
                y.physical_offset
            ));
        }
    }
}

/// Controller shapes: the name server routes the master the controllers name, give or take
/// `grace_ms` after each change. Each stretch longer than that (the routed master differs
/// from the named one, or none is routed) is a finding, except inside `excused` windows
/// (the name server cut from the brokers, and a route expiry until the next registrations).
pub fn stale_routes(
    masters: &[MasterSample],
    routes: &[RouteSample],
    excused: &[(u64, u64)],
    grace_ms: u64,
) -> Vec<String> {
    let named_at = |t: u64| {
        let i = masters.partition_point(|m| m.at <= t);
        i.checked_sub(1)
            .and_then(|i| masters.get(i))
            .map(|m| &m.addr)
    };
    let mut found = Vec::new();
    // The start of the current mismatch: when, what was routed, what was named.
    let mut open: Option<(u64, Option<&String>, Option<&String>)> = None;
    let mut close = |open: &mut Option<(u64, Option<&String>, Option<&String>)>, end: u64| {
        if let Some((start, routed, named)) = open.take() {
            if end.saturating_sub(start) > grace_ms {
                found.push(format!(
                    "from {start} to {end} ms the name server routed {} as master while the \
                     controllers named {}",
                    routed.map_or("no broker", String::as_str),
                    named.map_or("none", String::as_str)
                ));
            }
        }
    };
    for r in routes {
        let named = named_at(r.at);
        let is_excused = excused
            .iter()
            .any(|(from, to)| (*from..=*to).contains(&r.at));
        if named.is_none() || r.master.as_ref() == named || is_excused {
            close(&mut open, r.at);
        } else if open.is_none() {
            open = Some((r.at, r.master.as_ref(), named));
        }
    }
    if let Some(last) = routes.last() {
        close(&mut open, last.at);
    }
    found
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
            physical_offset: queue_offset * 100,
            sent_at: at.0,
            acked_at: at.1,
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
    fn an_sdk_message_missing_from_the_master_or_its_consumer_is_found() {
        use crate::sdk::SdkAck;
        let sdk_ack = |body: &str| SdkAck {
            body: body.into(),
            sent_at: 0,
            acked_at: 1,
        };
        let mut journal = SdkJournal::default();
        journal.acks = vec![sdk_ack("g-1"), sdk_ack("g-2"), sdk_ack("g-3")];
        journal.received = [("g-1".to_owned(), 1), ("g-2".to_owned(), 2)].into();
        let stored: Stored = [((0, 0), "g-1".into()), ((3, 7), "g-3".into())].into();
        let f = sdk_findings(SdkKind::Grpc, &journal, &stored);
        assert_eq!(f.acknowledged, 3);
        assert_eq!(f.lost.len(), 1, "{:?}", f.lost);
        assert!(f.lost[0].starts_with("g-2"));
        assert_eq!(
            (f.unreceived, f.unreceived_examples.as_slice()),
            (1, &["g-3".to_owned()][..])
        );
        let findings = Findings {
            sdk: Some(f),
            ..Findings::default()
        };
        assert!(!findings.passed());
    }

    #[test]
    fn a_route_that_lags_the_controllers_past_the_grace_is_found() {
        let m = |at, addr: &str| MasterSample {
            at,
            addr: addr.into(),
            epoch: 1,
        };
        let r = |at, master: Option<&str>| RouteSample {
            at,
            master: master.map(str::to_owned),
        };
        let masters = [m(0, "a"), m(1_000, "b")];
        let brief = [r(500, Some("a")), r(1_200, Some("a")), r(2_000, Some("b"))];
        assert!(stale_routes(&masters, &brief, &[], 3_000).is_empty());
        let long = [
            r(500, Some("a")),
            r(1_200, Some("a")),
            r(3_000, None),
            r(5_000, Some("a")),
            r(5_200, Some("b")),
        ];
        let found = stale_routes(&masters, &long, &[], 3_000);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("from 1200 to 5200 ms"), "{found:?}");
        let cut = [(1_000, 4_000)];
        assert!(
            stale_routes(&masters, &long, &cut, 3_000).is_empty(),
            "a name server cut from the brokers cannot follow them"
        );
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
    fn two_masters_writing_their_own_continuations_of_the_log_overlap() {
        // b took over at offset 3 and acknowledged; a, deposed, then acknowledged a send
        // begun afterwards at an offset of its own branch.
        let acks = vec![
            ack("a1", Kind::Sync, 2, "a", (0, 10)),
            ack("b1", Kind::Sync, 4, "b", (20, 30)),
            ack("a2", Kind::Sync, 3, "a", (40, 50)),
        ];
        let mut f = Findings::default();
        log_follows_real_time(&acks, &mut f);
        assert_eq!(f.overlapping.len(), 1, "{:?}", f.overlapping);
        assert!(f.overlapping[0].starts_with("a2"));
    }

    #[test]
    fn hand_overs_and_concurrent_sends_keep_real_time_order() {
        let acks = vec![
            ack("a1", Kind::Sync, 1, "a", (0, 10)),
            // Concurrent with b1 (begun before it ended): any order is fine.
            ack("a2", Kind::Sync, 3, "a", (5, 40)),
            ack("b1", Kind::Sync, 2, "b", (8, 30)),
            // A fast hand-over back and forth, each after the other's last write.
            ack("b2", Kind::Sync, 4, "b", (41, 50)),
            ack("a3", Kind::Sync, 5, "a", (51, 60)),
        ];
        let mut f = Findings::default();
        log_follows_real_time(&acks, &mut f);
        assert!(f.overlapping.is_empty(), "{:?}", f.overlapping);
    }
}
