//! Light message queues (RocketMQ's LMQ, which lite topics are made of): a message that
//! names LMQs in `INNER_MULTI_DISPATCH` is stored once and dispatched to its own queue and
//! to queue 0 of each LMQ, at an offset the store assigns and records in
//! `INNER_MULTI_QUEUE_OFFSET`; the offsets continue across restarts, clean or not.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{decode, message, small_config};
use stellmq_protocol::message::{property, Properties};
use stellmq_store::{AcceptAll, GetMessageStatus, MessageStore, PutMessage, PutMessageStatus};

const T: Duration = Duration::from_secs(10);
const A: &str = "%LMQ%$Parent$a";
const B: &str = "%LMQ%$Parent$b";

fn to_lmqs(body: &str, lmqs: &str) -> PutMessage {
    let mut m = message("Parent", 1, body.as_bytes(), "", "TagA");
    let mut props = Properties::decode(&m.properties);
    props.insert(property::INNER_MULTI_DISPATCH, lmqs);
    m.properties = props.encode();
    m
}

async fn put(store: &MessageStore, m: PutMessage) {
    let r = store.put_message(m).await;
    assert_eq!(r.status, PutMessageStatus::PutOk, "{:?}", r.remark);
}

/// (body, INNER_MULTI_QUEUE_OFFSET) of every message of `topic`'s queue `queue`.
fn read(store: &MessageStore, topic: &str, queue: i32) -> Vec<(String, String)> {
    let r = store.get_messages(topic, queue, 0, 32, &AcceptAll);
    if r.status != GetMessageStatus::Found {
        return Vec::new();
    }
    r.messages
        .iter()
        .map(|m| {
            let rec = decode(m);
            (
                String::from_utf8_lossy(&rec.body).into_owned(),
                rec.properties
                    .get(property::INNER_MULTI_QUEUE_OFFSET)
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

fn crash_marker(dir: &Path) {
    std::fs::write(dir.join("abort"), b"").expect("abort");
}

#[tokio::test]
async fn a_message_goes_to_its_queue_and_to_each_light_queue_it_names() {
    let dir = tempfile::tempdir().expect("dir");
    {
        let store = MessageStore::open(small_config(dir.path())).expect("open");
        put(&store, to_lmqs("one", A)).await;
        put(&store, to_lmqs("two", &format!("{A},{B}"))).await;
        put(&store, message("Parent", 1, b"plain", "", "")).await;
        assert!(store.wait_dispatched(T));
        assert_eq!(read(&store, A, 0), pairs(&[("one", "0"), ("two", "1,0")]));
        assert_eq!(read(&store, B, 0), pairs(&[("two", "1,0")]));
        let parent: Vec<String> = read(&store, "Parent", 1)
            .into_iter()
            .map(|(b, _)| b)
            .collect();
        assert_eq!(parent, ["one", "two", "plain"]);
        store.shutdown();
    }
    // A clean restart and a crash restart: each light queue continues where it was.
    {
        let store = MessageStore::open(small_config(dir.path())).expect("reopen");
        put(&store, to_lmqs("three", B)).await;
        assert!(store.wait_dispatched(T));
        assert_eq!(
            read(&store, B, 0).last(),
            Some(&("three".into(), "1".into()))
        );
        store.shutdown();
    }
    crash_marker(dir.path());
    let store = MessageStore::open(small_config(dir.path())).expect("recover");
    put(&store, to_lmqs("four", A)).await;
    assert!(store.wait_dispatched(T));
    assert_eq!(
        read(&store, A, 0),
        pairs(&[("one", "0"), ("two", "1,0"), ("four", "2")])
    );
    assert_eq!(store.max_offset_in_queue(B, 0), 2);
    store.shutdown();
}

#[tokio::test]
async fn bad_light_queue_names_and_batches_to_light_queues_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    let store = MessageStore::open(small_config(dir.path())).expect("open");
    let r = store
        .put_message(to_lmqs("x", "%LMQ%$Parent$../../etc"))
        .await;
    assert_eq!(r.status, PutMessageStatus::MessageIllegal);
    let r = store
        .put_messages(vec![to_lmqs("x", A), to_lmqs("y", A)])
        .await;
    assert_eq!(r.status, PutMessageStatus::MessageIllegal);
    assert!(store.wait_dispatched(T));
    assert_eq!(store.max_offset_in_queue("Parent", 1), 0);
    store.shutdown();
}
