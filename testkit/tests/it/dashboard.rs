//! mqdashboard over HTTP: the console served in process on an ephemeral port against an
//! in-process name server and broker, its pages read as a person would read them (the
//! brokers, a topic created from the form in the route, a sent message with its body) and
//! hostile names and bodies shown escaped.

use std::net::SocketAddr;

use stellmq_client::AdminClient;
use stellmq_dashboard::{serve, Console};
use stellmq_remoting::protocol::body::SubscriptionGroupConfig;
use stellmq_testkit::{http_get, http_post, Scrape, Stack};
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
async fn commit(c: &ConsoleStack, group: &str, topic: &str, queue_id: i32, offset: i64) {
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
    admin.shutdown().await;
    for i in 0..5 {
        c.stack.send("LagTopic", 0, &format!("m{i}"), &[]).await;
    }
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

    let by_key = c.page("/messages?by=key&topic=FindTopic&key=order-7").await;
    assert!(by_key.contains("1 message(s) found"), "{by_key}");
    let results = section(&by_key, "id=\"results\"");
    assert!(
        results.contains(&id) && results.contains("order-7"),
        "{results}"
    );
    assert!(!results.contains("order-8"), "{results}");

    let by_id = c
        .page(&format!("/messages?by=id&id={id}&topic=FindTopic"))
        .await;
    assert!(by_id.contains("1 message(s) found"), "{by_id}");
    let by_time = c.page("/messages?by=time&topic=FindTopic").await;
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
