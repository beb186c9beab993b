//! mqdashboard over HTTP: the console served in process on an ephemeral port against an
//! in-process name server and broker, its pages read as a person would read them (the
//! brokers, a topic created from the form in the route, a sent message with its body) and
//! hostile names and bodies shown escaped.

use std::net::SocketAddr;

use stellmq_client::AdminClient;
use stellmq_dashboard::{serve, Console};
use stellmq_remoting::protocol::body::SubscriptionGroupConfig;
use stellmq_remoting::protocol::message::id;
use stellmq_remoting::protocol::RequestCode;
use stellmq_testkit::{http_get, http_post, request, Scrape, Stack};
use tokio::sync::oneshot;

/// A name server, a broker and the console in front of them.
pub struct ConsoleStack {
    pub stack: Stack,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl ConsoleStack {
    pub async fn start() -> Self {
        let stack = Stack::start().await;
        let admin = AdminClient::new(stack.ns_addr()).expect("admin client");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(serve(listener, Console::new(admin), async {
            let _ = stopped.await;
        }));
        Self {
            stack,
            addr,
            stop: Some(stop),
        }
    }

    pub async fn get(&self, path: &str) -> Scrape {
        http_get(self.addr, path).await
    }

    pub async fn post(&self, path: &str, form: &str) -> Scrape {
        http_post(self.addr, path, form).await
    }

    /// `GET path`, which must answer 200.
    pub async fn page(&self, path: &str) -> String {
        let s = self.get(path).await;
        assert_eq!(s.status, 200, "GET {path}: {}\n{}", s.headers, s.body);
        s.body
    }

    /// `GET path` until it answers 200 (the index is written just after a send), for up to
    /// 10 s.
    pub async fn page_eventually(&self, path: &str) -> String {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let s = self.get(path).await;
            if s.status == 200 || tokio::time::Instant::now() > deadline {
                assert_eq!(s.status, 200, "GET {path}: {}\n{}", s.headers, s.body);
                return s.body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// `GET path` until its body contains `text` (what the index or a registration makes
    /// visible a moment later), for up to 10 s; the last body either way.
    pub async fn page_containing(&self, path: &str, text: &str) -> String {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let s = self.get(path).await;
            if s.body.contains(text) || tokio::time::Instant::now() > deadline {
                return s.body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    }

    /// Creates `topic` through the form and waits until its route is served.
    pub async fn create_topic(&self, topic: &str) {
        let form = format!("topic={topic}&readQueueNums=4&writeQueueNums=4&perm=6");
        let created = self.post("/topic/update", &form).await;
        assert_eq!(created.status, 200, "{}", created.body);
        self.stack.broker().register_now().await;
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.stack.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_page_shows_the_broker_with_role_address_and_figures() {
    let c = ConsoleStack::start().await;
    let root = c.get("/").await;
    assert_eq!(root.status, 303, "{}", root.headers);
    let body = c.page("/cluster").await;
    assert!(body.contains("broker-a"), "{body}");
    assert!(body.contains("DefaultCluster"), "{body}");
    assert!(body.contains("MASTER"), "{body}");
    assert!(body.contains(c.stack.addr()), "{body}");
    assert!(
        body.contains("Put TPS") && body.contains("Replication lag"),
        "{body}"
    );
    assert!(
        body.contains("V5_") || body.contains("V4_"),
        "version shown: {body}"
    );
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_created_from_the_form_appears_in_the_route_and_takes_a_test_message() {
    let c = ConsoleStack::start().await;
    c.create_topic("ConsoleTopic").await;
    let list = c.page("/topics?q=Console").await;
    assert!(list.contains("href=\"/topic?name=ConsoleTopic\""), "{list}");
    let topic = c.page("/topic?name=ConsoleTopic").await;
    let route = section(&topic, "id=\"route\"");
    assert!(route.contains("<td>broker-a</td>"), "{route}");
    assert!(route.contains("<td>4</td>"), "{route}");
    let status = section(&topic, "id=\"status\"");
    assert_eq!(
        status.matches("<tr>").count(),
        1 + 4,
        "a row per queue: {status}"
    );

    let sent = c
        .post(
            "/topic/send",
            "topic=ConsoleTopic&tag=TagA&key=order-1&body=hello+console",
        )
        .await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    assert!(sent.body.contains("SEND_OK"), "{}", sent.body);
    let topic = c.page("/topic?name=ConsoleTopic").await;
    let status = section(&topic, "id=\"status\"");
    assert!(
        status.contains("<td>1</td>"),
        "one message in a queue: {status}"
    );

    let deleted = c.post("/topic/delete", "topic=ConsoleTopic").await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(c.get("/topic?name=ConsoleTopic").await.status, 502);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_topic_and_group_lists_are_shown_a_page_at_a_time() {
    let c = ConsoleStack::start().await;
    let admin = AdminClient::new(c.stack.ns_addr()).expect("admin client");
    for i in 0..150 {
        let name = format!("Paged{i:03}");
        let topic = stellmq_remoting::protocol::body::TopicConfig::with_queues(&name, 1, 1, 6);
        admin
            .create_topic(c.stack.addr(), &topic)
            .await
            .expect("topic");
        let group = SubscriptionGroupConfig::new(format!("paged-g{i:03}"));
        admin
            .create_group(c.stack.addr(), &group)
            .await
            .expect("group");
    }
    admin.shutdown().await;
    c.stack.broker().register_now().await;

    let first = c.page("/topics?q=Paged").await;
    assert!(first.contains("1-100 of 150"), "{first}");
    assert!(first.contains("name=Paged099") && !first.contains("name=Paged100"));
    assert!(
        first.contains("href=\"/topics?q=Paged&amp;page=2&amp;size=100\""),
        "{first}"
    );
    let second = c.page("/topics?q=Paged&page=2").await;
    assert!(second.contains("101-150 of 150") && second.contains("name=Paged149"));
    assert!(!second.contains("name=Paged099") && !second.contains(">next<"));

    let groups = c.page("/groups?q=paged-g&size=40&page=4").await;
    assert!(groups.contains("121-150 of 150"), "{groups}");
    assert!(groups.contains("name=paged-g120\"") && !groups.contains("name=paged-g119\""));
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_input_is_escaped_and_bad_requests_are_answered() {
    let c = ConsoleStack::start().await;
    let hostile = "%3Cscript%3Ealert(1)%3C%2Fscript%3E";
    let page = c.get(&format!("/topic?name={hostile}")).await;
    assert!(page.status >= 400, "{}", page.headers);
    assert!(page.body.contains("&lt;script&gt;"), "{}", page.body);
    assert!(!page.body.contains("<script>"), "{}", page.body);
    let created = c.post("/topic/update", &format!("topic={hostile}")).await;
    assert!(!created.body.contains("<script>"), "{}", created.body);

    assert_eq!(c.get("/topic").await.status, 400, "missing name");
    let bad = c.post("/topic/update", "topic=T&readQueueNums=x").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    let huge = "a".repeat(100 * 1024);
    let too_big = c.post("/topic/send", &format!("topic=T&body={huge}")).await;
    assert_eq!(too_big.status, 413, "{}", too_big.headers);
    assert_eq!(c.get("/cluster").await.status, 200, "still serving");
    c.stop().await;
}

/// The part of `page` from the element with `marker` to the end of its table.
pub fn section<'a>(page: &'a str, marker: &str) -> &'a str {
    let start = page.find(marker).unwrap_or(page.len());
    let rest = &page[start..];
    let end = rest.find("</table>").unwrap_or(rest.len());
    &rest[..end]
}

/// Commits `group`'s offset of queue `queue_id` of `topic`, as a consumer would.
pub async fn commit(c: &ConsoleStack, group: &str, topic: &str, queue_id: i32, offset: i64) {
    let admin = AdminClient::new(c.stack.ns_addr()).expect("admin client");
    admin
        .update_consumer_offset(c.stack.addr(), group, topic, queue_id, offset)
        .await
        .expect("commit");
    admin.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_groups_lag_shows_per_queue_and_moves_with_skip_and_reset() {
    let c = ConsoleStack::start().await;
    c.create_topic("LagTopic").await;
    let admin = AdminClient::new(c.stack.ns_addr()).expect("admin client");
    admin
        .create_group(c.stack.addr(), &SubscriptionGroupConfig::new("LagGroup"))
        .await
        .expect("group");
    for i in 0..5 {
        c.stack.send("LagTopic", 0, &format!("m{i}"), &[]).await;
    }
    // Sends are acknowledged before their ConsumeQueue entries exist (dispatch is
    // asynchronous); the lag is counted from the queue's end.
    stellmq_testkit::eventually("the 5 messages are dispatched", async || {
        admin
            .max_offset(c.stack.addr(), "LagTopic", 0)
            .await
            .is_ok_and(|max| max == 5)
    })
    .await;
    admin.shutdown().await;
    commit(&c, "LagGroup", "LagTopic", 0, 2).await;

    let list = c.page("/groups?q=LagGroup").await;
    let row = section(&list, "id=\"groups\"");
    assert!(row.contains("href=\"/group?name=LagGroup\""), "{row}");
    assert!(row.contains("<td>3</td>"), "the group's lag: {row}");

    let group = c.page("/group?name=LagGroup").await;
    assert!(group.contains("Total lag: 3 message(s)"), "{group}");
    let progress = section(&group, "id=\"progress\"");
    assert!(
        progress.contains("<td>0</td><td>5</td><td>2</td><td>3</td>"),
        "queue 0: broker offset 5, consumer offset 2, lag 3: {progress}"
    );
    assert!(
        group.contains("No consumer of this group is online."),
        "{group}"
    );

    let skipped = c.post("/group/skip", "group=LagGroup&topic=LagTopic").await;
    assert_eq!(skipped.status, 200, "{}", skipped.body);
    let group = c.page("/group?name=LagGroup").await;
    assert!(group.contains("Total lag: 0 message(s)"), "{group}");

    let reset = c
        .post("/group/reset", "group=LagGroup&topic=LagTopic&time=0")
        .await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    let group = c.page("/group?name=LagGroup").await;
    assert!(group.contains("Total lag: 5 message(s)"), "{group}");
    let bad = c
        .post("/group/reset", "group=LagGroup&topic=LagTopic&time=soon")
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);
    c.stop().await;
}

/// The text of the first cell of the first body row of the table with `id`.
pub fn first_cell(page: &str, id: &str) -> String {
    let table = section(page, &format!("id=\"{id}\""));
    let row = table.split("<tbody><tr><td>").nth(1).unwrap_or("");
    row.split("</td>").next().unwrap_or("").to_owned()
}

/// Sends a message through the topic page's form; returns its message id (UNIQ_KEY).
pub async fn send_from_form(c: &ConsoleStack, topic: &str, key: &str, body: &str) -> String {
    let form = format!("topic={topic}&tag=TagA&key={key}&body={body}");
    let sent = c.post("/topic/send", &form).await;
    assert_eq!(sent.status, 200, "{}", sent.body);
    first_cell(&sent.body, "sent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_sent_is_found_by_key_id_and_time_and_shown_with_its_body_escaped() {
    let c = ConsoleStack::start().await;
    c.create_topic("FindTopic").await;
    // <b>hello</b> & "quoted", form-encoded.
    let body = "%3Cb%3Ehello%3C%2Fb%3E+%26+%22quoted%22";
    let id = send_from_form(&c, "FindTopic", "order-7", body).await;
    assert_eq!(id.len(), 32, "a UNIQ_KEY: {id}");
    send_from_form(&c, "FindTopic", "order-8", "other").await;

    let by_key = c
        .page_containing(
            "/messages?by=key&topic=FindTopic&key=order-7",
            "1 message(s)",
        )
        .await;
    assert!(by_key.contains("1 message(s) found"), "{by_key}");
    let results = section(&by_key, "id=\"results\"");
    assert!(
        results.contains(&id) && results.contains("order-7"),
        "{results}"
    );
    assert!(!results.contains("order-8"), "{results}");

    let by_id = c
        .page_containing(
            &format!("/messages?by=id&id={id}&topic=FindTopic"),
            "1 message(s)",
        )
        .await;
    assert!(by_id.contains("1 message(s) found"), "{by_id}");
    let by_time = c
        .page_containing("/messages?by=time&topic=FindTopic", "2 message(s)")
        .await;
    assert!(by_time.contains("2 message(s) found"), "{by_time}");

    let one = c.page(&format!("/message?id={id}&topic=FindTopic")).await;
    assert!(
        one.contains("<pre id=\"body\">&lt;b&gt;hello&lt;/b&gt; &amp; &quot;quoted&quot;</pre>"),
        "{one}"
    );
    assert!(!one.contains("<b>hello"), "{one}");
    let stored = section(&one, "id=\"message\"");
    assert!(stored.contains("broker-a"), "{stored}");
    assert!(
        stored.contains("<td>Queue offset</td><td>0</td>"),
        "{stored}"
    );
    assert!(stored.contains("<td>CommitLog offset</td>"), "{stored}");
    assert!(one.contains("No trace recorded"), "{one}");

    let missing = c.get("/message?id=0123&topic=FindTopic").await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    let no_topic = c.get("/messages?by=key&key=x").await;
    assert_eq!(no_topic.status, 400, "{}", no_topic.body);
    c.stop().await;
}

/// Gives the message at `offset_id` back for `group` as a failed consumer would:
/// `delay_level` -1 sends it to the DLQ at once, 0 to a retry.
pub async fn send_back(c: &ConsoleStack, group: &str, offset_id: &str, delay_level: i32) {
    let (_, phys) = id::decode_offset_msg_id(offset_id).expect("an offset id");
    let (phys, level) = (phys.to_string(), delay_level.to_string());
    let back = request(
        RequestCode::CONSUMER_SEND_MSG_BACK,
        &[
            ("offset", &phys),
            ("group", group),
            ("delayLevel", &level),
            ("originMsgId", offset_id),
        ],
    );
    let r = c.stack.call(back).await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
}

/// The offsetMsgId of message `id` of `topic`, from the message page.
pub async fn offset_id_of(c: &ConsoleStack, topic: &str, id: &str) -> String {
    let one = c
        .page_eventually(&format!("/message?id={id}&topic={topic}"))
        .await;
    let table = section(&one, "id=\"message\"");
    let after = table
        .split("<td>Offset message id</td><td>")
        .nth(1)
        .unwrap_or("");
    after.split("</td>").next().unwrap_or("").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_is_listed_and_resent_to_its_original_topic() {
    let c = ConsoleStack::start().await;
    c.create_topic("DlqTopic").await;
    let id = send_from_form(&c, "DlqTopic", "dead-1", "poison").await;
    let offset_id = offset_id_of(&c, "DlqTopic", &id).await;
    send_back(&c, "DlqGroup", &offset_id, -1).await;
    c.stack.broker().register_now().await;

    let all = c.page_containing("/dlq", "DlqGroup").await;
    assert!(all.contains("href=\"/dlq?group=DlqGroup\""), "{all}");
    let dead = c
        .page_containing("/dlq?group=DlqGroup", "1 dead letter(s)")
        .await;
    assert!(dead.contains("1 dead letter(s) of DlqGroup"), "{dead}");
    let resend = section(&dead, "id=\"resend\"");
    assert!(
        resend.contains(&id) && resend.contains("<td>DlqTopic</td>"),
        "{resend}"
    );
    let dead_offset_id = first_cell(&dead, "results");
    assert!(dead_offset_id.contains(&id), "{dead_offset_id}");
    let dead_id = resend
        .split("name=\"id\" value=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the resend form's id");

    let resent = c
        .post("/dlq/resend", &format!("id={dead_id}&group=DlqGroup"))
        .await;
    assert_eq!(resent.status, 200, "{}", resent.body);
    assert!(
        resent.body.contains("Resent to DlqTopic"),
        "{}",
        resent.body
    );
    let found = c
        .page_containing("/messages?by=key&topic=DlqTopic&key=dead-1", "2 message(s)")
        .await;
    assert!(
        found.contains("2 message(s) found"),
        "original and resent: {found}"
    );
    c.stop().await;
}

/// The value of the row `field` of the message table of `page`.
pub fn message_field(page: &str, field: &str) -> String {
    let table = section(page, "id=\"message\"");
    let after = table
        .split(&format!("<td>{field}</td><td>"))
        .nth(1)
        .unwrap_or("");
    after.split("</td>").next().unwrap_or("").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_tells_where_a_message_is_who_consumed_it_its_retries_and_dead_letter() {
    let c = ConsoleStack::start().await;
    c.create_topic("StoryTopic").await;
    let id = send_from_form(&c, "StoryTopic", "story-1", "once+upon+a+time").await;
    let one = c
        .page_eventually(&format!("/message?id={id}&topic=StoryTopic"))
        .await;
    let offset_id = message_field(&one, "Offset message id");
    let queue: i32 = message_field(&one, "Queue").parse().expect("queue id");
    commit(&c, "DoneGroup", "StoryTopic", queue, 1).await;
    commit(&c, "BehindGroup", "StoryTopic", queue, 0).await;
    send_back(&c, "RetryGroup", &offset_id, 0).await;
    send_back(&c, "DeadGroup", &offset_id, -1).await;
    c.stack.broker().register_now().await;

    let path = "/explain?topic=StoryTopic&key=story-1";
    let story = c.page_containing(path, "1 retry copy(ies)").await;
    let summary = section(&story, "id=\"summary\"");
    assert!(
        summary.contains(&format!("Message {id} of topic StoryTopic")),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("broker-a queue {queue} at offset 0")),
        "{summary}"
    );
    assert!(
        summary.contains("1 retry copy(ies); 1 dead letter(s)"),
        "{summary}"
    );
    let groups = section(&story, "id=\"consumption\"");
    assert!(
        groups.contains("DoneGroup</a></td><td>consumed</td>"),
        "{groups}"
    );
    assert!(
        groups.contains("BehindGroup</a></td><td>not yet: 0 message(s) before it</td>"),
        "{groups}"
    );
    let retries = section(&story, "id=\"results\"");
    assert!(retries.contains("%RETRY%RetryGroup"), "{retries}");
    assert!(story.contains("%DLQ%DeadGroup"), "{story}");
    assert!(
        story.contains("<pre id=\"body\">once upon a time</pre>"),
        "{story}"
    );

    let by_id = c.page(&format!("/explain?id={offset_id}")).await;
    assert!(by_id.contains("1 dead letter(s)"), "{by_id}");
    let missing = c.get("/explain?id=nope").await;
    assert_eq!(missing.status, 404, "{}", missing.body);
    c.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lite_page_shows_parents_lags_and_a_lite_topics_subscribers() {
    use stellmq_remoting::protocol::body::fastjson;
    use stellmq_remoting::protocol::body::lite::{
        LiteSubscriptionCtlRequestBody, LiteSubscriptionDto,
    };
    let c = ConsoleStack::start().await;
    let s = &c.stack;
    let topic = request(
        RequestCode::UPDATE_AND_CREATE_TOPIC,
        &[
            ("topic", "Chat"),
            ("defaultTopic", "TBW102"),
            ("readQueueNums", "4"),
            ("writeQueueNums", "4"),
            ("perm", "6"),
            ("topicFilterType", "SINGLE_TAG"),
            ("attributes", "+message.type=LITE,+lite.topic.expiration=30"),
        ],
    );
    assert_eq!(s.call(topic).await.code, 0);
    let mut group = SubscriptionGroupConfig::new("readers");
    group
        .attributes
        .insert("+lite.bind.topic".into(), "Chat".into());
    let r = s
        .call(
            request(RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, &[])
                .with_body(fastjson::encode(&group)),
        )
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    s.broker().register_now().await;
    let ctl = LiteSubscriptionCtlRequestBody {
        subscription_set: vec![LiteSubscriptionDto {
            action: "PARTIAL_ADD".into(),
            client_id: "client-7".into(),
            group: "readers".into(),
            topic: "Chat".into(),
            lite_topic_set: vec!["room-1".into()],
            version: None,
        }],
    };
    let r = s
        .call(request(RequestCode::LITE_SUBSCRIPTION_CTL, &[]).with_body(fastjson::encode(&ctl)))
        .await;
    assert_eq!(r.code, 0, "{}", r.remark_str());
    for body in ["hello", "again"] {
        assert_eq!(
            s.send("Chat", 0, body, &[("__LITE_TOPIC", "room-1")])
                .await
                .code,
            0
        );
    }
    // The group has an offset once it popped: a POP of the lite topic starts it.
    let pop = request(
        RequestCode::POP_LITE_MESSAGE,
        &[
            ("clientId", "client-7"),
            ("consumerGroup", "readers"),
            ("topic", "Chat"),
            ("maxMsgNum", "1"),
            ("invisibleTime", "60000"),
            ("pollTime", "3000"),
            ("bornTime", "0"),
        ],
    );
    assert_eq!(s.call(pop).await.code, 0);

    let list = c.page("/lite").await;
    assert!(
        list.contains("Chat") && list.contains("readers") && list.contains(">30<"),
        "{list}"
    );
    let parent = c.page("/lite?parent=Chat").await;
    assert!(
        parent.contains("Group readers: 2 messages not consumed"),
        "{parent}"
    );
    assert!(parent.contains("room-1"), "{parent}");
    let one = c.page("/lite?parent=Chat&lite=room-1").await;
    assert!(one.contains("client-7@readers"), "{one}");
    c.stop().await;
}
