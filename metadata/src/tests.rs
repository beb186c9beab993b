use super::*;

/// RocketMQ's files as a 4.x broker writes them (fastjson: unquoted integer map keys).
const TOPICS_JSON: &str = r#"{
	"dataVersion":{"counter":7,"stateVersion":0,"timestamp":1700000000000},
	"topicConfigTable":{
		"Orders":{"order":false,"perm":6,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"Orders","topicSysFlag":0,"writeQueueNums":8}
	}
}"#;
const GROUPS_JSON: &str = r#"{
	"dataVersion":{"counter":3,"timestamp":1700000000001},
	"subscriptionGroupTable":{
		"billing":{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,"consumeFromMinEnable":true,"groupName":"billing","notifyConsumerIdsChangedEnable":true,"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}
	}
}"#;
const OFFSETS_JSON: &str = r#"{"offsetTable":{"Orders@billing":{0:15,3:42}}}"#;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).expect("write a RocketMQ file");
}

fn topic(name: &str, queues: i32) -> TopicConfig {
    TopicConfig::with_queues(name, queues, queues, 6)
}

#[test]
fn the_first_start_imports_rocketmqs_json_files_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "topics.json", TOPICS_JSON);
    write(dir.path(), "subscriptionGroup.json", GROUPS_JSON);
    write(dir.path(), "consumerOffset.json", OFFSETS_JSON);

    let store = MetadataStore::open(dir.path()).expect("open");
    let (topics, version) = store.topics().expect("topics");
    assert_eq!(topics["Orders"].read_queue_nums, 8);
    assert_eq!(version.map(|v| v.counter), Some(7));
    let (groups, _) = store.groups().expect("groups");
    assert!(groups["billing"].consume_broadcast_enable);
    let offsets = store.offsets().expect("offsets");
    assert_eq!(
        offsets["Orders@billing"],
        BTreeMap::from([(0, 15), (3, 42)])
    );
    drop(store);

    // The files are left as they were, and later starts read the store, not them.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("topics.json")).expect("kept"),
        TOPICS_JSON
    );
    write(dir.path(), "topics.json", r#"{"topicConfigTable":{}}"#);
    let store = MetadataStore::open(dir.path()).expect("reopen");
    assert!(store.topics().expect("topics").0.contains_key("Orders"));
}

#[test]
fn a_store_root_without_files_starts_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MetadataStore::open(&dir.path().join("config")).expect("open");
    assert!(store.topics().expect("topics").0.is_empty());
    assert_eq!(store.groups().expect("groups").1, None);
    assert!(store.offsets().expect("offsets").is_empty());
}

#[test]
fn changes_are_written_by_the_key_and_survive_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MetadataStore::open(dir.path()).expect("open");
    let mut version = DataVersion::new(1);
    let created: Changes<TopicConfig> = (0..100)
        .map(|i| (format!("T{i}"), Some(topic(&format!("T{i}"), 4))))
        .collect();
    store
        .write_named(Named::Topics, &created, &version)
        .expect("create");
    version.next(2);
    let changed = vec![
        ("T1".to_owned(), None),
        ("T2".to_owned(), Some(topic("T2", 16))),
    ];
    store
        .write_named(Named::Topics, &changed, &version)
        .expect("change");
    drop(store);

    let store = MetadataStore::open(dir.path()).expect("reopen");
    let (topics, stored_version) = store.topics().expect("topics");
    assert_eq!(topics.len(), 99);
    assert!(!topics.contains_key("T1"));
    assert_eq!(topics["T2"].write_queue_nums, 16);
    assert_eq!(topics["T3"].write_queue_nums, 4);
    assert_eq!(stored_version, Some(version));
}

#[test]
fn an_offset_change_replaces_the_keys_queues_and_a_removal_drops_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MetadataStore::open(dir.path()).expect("open");
    let first = vec![
        (
            "T@a".to_owned(),
            Some(BTreeMap::from([(0, 1), (1, 2), (2, 3)])),
        ),
        ("T@b".to_owned(), Some(BTreeMap::from([(0, 9)]))),
        // A neighbour whose name starts like another key keeps its offsets.
        ("T@ab".to_owned(), Some(BTreeMap::from([(5, 5)]))),
    ];
    store.write_offsets(&first).expect("first");
    let second = vec![
        ("T@a".to_owned(), Some(BTreeMap::from([(1, 20)]))),
        ("T@b".to_owned(), None),
    ];
    store.write_offsets(&second).expect("second");
    let offsets = store.offsets().expect("offsets");
    assert_eq!(
        offsets,
        BTreeMap::from([
            ("T@a".to_owned(), BTreeMap::from([(1, 20)])),
            ("T@ab".to_owned(), BTreeMap::from([(5, 5)])),
        ])
    );
}

#[test]
fn an_unreadable_entry_is_left_out_and_the_rest_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = MetadataStore::open(dir.path()).expect("open");
    let changes = vec![
        (
            "Good".to_owned(),
            Some(serde_json::to_value(topic("Good", 4)).expect("json")),
        ),
        (
            "Bad".to_owned(),
            Some(serde_json::json!("not a topic config")),
        ),
    ];
    store
        .write_named(Named::Topics, &changes, &DataVersion::new(1))
        .expect("write");
    let (topics, _) = store.topics().expect("topics");
    assert_eq!(topics.keys().collect::<Vec<_>>(), ["Good"]);
}

#[test]
fn a_second_broker_on_the_same_store_is_refused_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let _first = MetadataStore::open(dir.path()).expect("open");
    let second = MetadataStore::open(dir.path());
    let Err(e) = second else {
        panic!("a second open of the same store must fail");
    };
    assert!(e.to_string().contains(FILE_NAME), "{e}");
}

#[test]
fn an_unreadable_json_file_to_import_stops_the_start_and_imports_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("topics.json")).expect("a directory where a file is");
    write(dir.path(), "subscriptionGroup.json", GROUPS_JSON);
    let Err(e) = MetadataStore::open(dir.path()) else {
        panic!("the import must fail");
    };
    assert!(e.to_string().contains("topics.json"), "{e}");

    std::fs::remove_dir(dir.path().join("topics.json")).expect("rmdir");
    write(dir.path(), "topics.json", TOPICS_JSON);
    let store = MetadataStore::open(dir.path()).expect("open once the file is readable");
    assert!(store.topics().expect("topics").0.contains_key("Orders"));
    assert!(store.groups().expect("groups").0.contains_key("billing"));
}

#[test]
fn an_existing_store_opens_as_it_is_and_a_missing_one_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    assert!(
        MetadataStore::open_existing(dir.path()).is_err(),
        "nothing there"
    );
    assert!(!dir.path().join(FILE_NAME).exists(), "and nothing created");
    write(dir.path(), "topics.json", TOPICS_JSON);
    drop(MetadataStore::open(dir.path()).expect("open"));
    let store = MetadataStore::open_existing(&dir.path().join(FILE_NAME)).expect("the file");
    assert!(store.topics().expect("topics").0.contains_key("Orders"));
}
