//! mqdashboard in a real browser: headless Chromium driven through chromedriver's WebDriver
//! API (plain HTTP and JSON), loading each main page against a live stack and checking the
//! text a person sees; the topic form creates a topic that then shows in its route, a
//! message sent from the page is found by key with its body, a group's lag is shown.
//!
//! Needs `chromium` and `chromedriver` (Debian: `apt-get install chromium chromium-driver`,
//! as `.ci/run` does); without them the test says so and passes, unless
//! `STELLMQ_REQUIRE_BROWSER=1`. With `STELLMQ_CONSOLE_SCREENSHOTS=<dir>` it saves a
//! screenshot of each page there (docs/console/*.png were taken so).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::dashboard::{commit, ConsoleStack};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// The W3C key of an element reference in WebDriver answers.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver child process and one browser session of it.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Browser {
    async fn start() -> Self {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let mut browser = Self {
            driver,
            port,
            session: String::new(),
        };
        browser.wait_ready().await;
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1400,900"]
            }
        }}});
        let created = browser.call("POST", "/session", Some(caps)).await;
        browser.session = created["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("a session: {created}"))
            .to_owned();
        // Elements of a page still loading after a click are waited for, not missed.
        let timeouts = browser.session_path("/timeouts");
        let waits = json!({"implicit": 10_000, "pageLoad": 30_000});
        browser.call("POST", &timeouts, Some(waits)).await;
        browser
    }

    async fn wait_ready(&self) {
        for _ in 0..100 {
            if let Some(status) = self.try_call("GET", "/status", None).await {
                if status["ready"].as_bool() == Some(true) {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("chromedriver did not become ready");
    }

    /// A WebDriver command; its `value`.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body.clone())
            .await
            .unwrap_or_else(|| panic!("{method} {path} {body:?}: no answer from chromedriver"))
    }

    async fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Option<Value> {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        );
        let exchange = async {
            let mut stream = TcpStream::connect(("127.0.0.1", self.port)).await.ok()?;
            stream.write_all(request.as_bytes()).await.ok()?;
            read_answer(&mut stream).await
        };
        let json = tokio::time::timeout(Duration::from_secs(60), exchange)
            .await
            .ok()??;
        let answer: Value = serde_json::from_slice(&json).ok()?;
        Some(answer["value"].clone())
    }

    fn session_path(&self, tail: &str) -> String {
        format!("/session/{}{tail}", self.session)
    }

    async fn open(&self, url: &str) {
        let path = self.session_path("/url");
        self.call("POST", &path, Some(json!({ "url": url }))).await;
    }

    async fn find(&self, css: &str) -> String {
        let path = self.session_path("/element");
        let found = self
            .call(
                "POST",
                &path,
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        found[ELEMENT_KEY]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_owned()
    }

    /// The visible text of the element `css` (the page's: `body`).
    async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        let path = self.session_path(&format!("/element/{element}/text"));
        self.call("GET", &path, None)
            .await
            .as_str()
            .unwrap_or("")
            .to_owned()
    }

    /// Types `text` into the field `css`, after clearing it.
    async fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        let clear = self.session_path(&format!("/element/{element}/clear"));
        self.call("POST", &clear, Some(json!({}))).await;
        let path = self.session_path(&format!("/element/{element}/value"));
        self.call("POST", &path, Some(json!({ "text": text })))
            .await;
    }

    async fn click(&self, css: &str) {
        let element = self.find(css).await;
        let path = self.session_path(&format!("/element/{element}/click"));
        self.call("POST", &path, Some(json!({}))).await;
    }

    /// The page's text once it contains `expected` (reloading `url` while it does not,
    /// for what the index or a registration shows a moment later), for up to 10 s.
    async fn text_eventually(&self, url: &str, expected: &str) -> String {
        for _ in 0..50 {
            self.open(url).await;
            let text = self.text("body").await;
            if text.contains(expected) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!(
            "{url} never showed {expected:?}: {}",
            self.text("body").await
        );
    }

    /// The current page's body once it shows `expected` (a form's answer page may still be
    /// loading when the click returns); never reloads, so a POST is not sent twice.
    async fn text_shown(&self, expected: &str) -> String {
        let mut text = String::new();
        for _ in 0..100 {
            text = self.text("body").await;
            if text.contains(expected) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the page never showed {expected:?}: {text}");
    }

    /// Saves a PNG of the viewport to `dir/name.png` when screenshots are asked for.
    async fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("STELLMQ_CONSOLE_SCREENSHOTS") else {
            return;
        };
        let path = self.session_path("/screenshot");
        let png = self.call("GET", &path, None).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap_or(""))
            .expect("a base64 PNG");
        let file: PathBuf = Path::new(&dir).join(format!("{name}.png"));
        std::fs::create_dir_all(&dir).expect("screenshot dir");
        std::fs::write(&file, bytes).expect("write the screenshot");
    }

    async fn quit(self) {
        let path = self.session_path("");
        let _ = self.try_call("DELETE", &path, None).await;
    }
}

impl Drop for Browser {
    /// chromedriver (and the browser it started) must not outlive a failed test: it would
    /// keep the test's inherited file descriptors open.
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The body of one HTTP answer, by its Content-Length (chromedriver keeps connections
/// open, so reading to the end would wait).
async fn read_answer(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut raw = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())?;
            while raw.len() < end + 4 + length {
                let n = stream.read(&mut chunk).await.ok()?;
                if n == 0 {
                    return None;
                }
                raw.extend_from_slice(&chunk[..n]);
            }
            return Some(raw[end + 4..end + 4 + length].to_vec());
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        raw.extend_from_slice(&chunk[..n]);
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

fn browser_installed() -> bool {
    let installed = Path::new(CHROMEDRIVER).exists() && Path::new(CHROMIUM).exists();
    if !installed {
        assert!(
            std::env::var_os("STELLMQ_REQUIRE_BROWSER").is_none(),
            "STELLMQ_REQUIRE_BROWSER is set but {CHROMEDRIVER} or {CHROMIUM} is missing"
        );
        eprintln!(
            "skipped: no {CHROMEDRIVER} and {CHROMIUM} (apt-get install chromium chromium-driver)"
        );
    }
    installed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_main_page_shows_what_an_operator_needs_in_chromium() {
    if !browser_installed() {
        return;
    }
    let c = ConsoleStack::start().await;
    let base = format!("http://{}", c.addr);
    let b = Browser::start().await;

    b.open(&format!("{base}/cluster")).await;
    let cluster = b.text("body").await;
    assert!(
        cluster.contains("broker-a") && cluster.contains("MASTER"),
        "{cluster}"
    );
    assert!(cluster.contains(c.stack.addr()), "{cluster}");
    b.screenshot("cluster").await;

    // A topic created from the form shows in its route.
    b.open(&format!("{base}/topics")).await;
    b.type_into("#create-topic input[name=topic]", "BrowserTopic")
        .await;
    b.type_into("#create-topic input[name=readQueueNums]", "4")
        .await;
    b.type_into("#create-topic input[name=writeQueueNums]", "4")
        .await;
    b.click("#create-topic button").await;
    b.text_shown("Topic BrowserTopic created or updated on broker-a")
        .await;
    c.stack.broker().register_now().await;
    let topics = b
        .text_eventually(&format!("{base}/topics"), "BrowserTopic")
        .await;
    assert!(topics.contains("normal"), "{topics}");
    b.screenshot("topics").await;
    b.open(&format!("{base}/topic?name=BrowserTopic")).await;
    let route = b.text("#route").await;
    assert!(
        route.contains("broker-a") && route.contains("RW (6)"),
        "{route}"
    );

    // A message sent from the topic page is found by key, with its body.
    b.type_into("#send-message input[name=key]", "browser-1")
        .await;
    b.type_into(
        "#send-message textarea[name=body]",
        "hello <from> the browser",
    )
    .await;
    b.click("#send-message button").await;
    b.text_shown("SEND_OK").await;
    b.open(&format!("{base}/topic?name=BrowserTopic")).await;
    b.screenshot("topic").await;
    let search = format!("{base}/messages?by=key&topic=BrowserTopic&key=browser-1");
    let found = b.text_eventually(&search, "1 message(s) found").await;
    assert!(found.contains("browser-1"), "{found}");
    b.screenshot("messages").await;
    b.click("#results tbody a").await;
    let body = b.text("#body").await;
    assert_eq!(body, "hello <from> the browser");
    let stored = b.text("#message").await;
    assert!(stored.contains("CommitLog offset"), "{stored}");
    b.screenshot("message").await;

    // A group's lag.
    let text = b.text("#message").await;
    let queue = text
        .lines()
        .find_map(|l| l.strip_prefix("Queue "))
        .and_then(|q| q.trim().parse::<i32>().ok())
        .expect("the queue row");
    commit(&c, "BrowserGroup", "BrowserTopic", queue, 0).await;
    b.open(&format!("{base}/group?name=BrowserGroup")).await;
    let group = b.text("body").await;
    assert!(group.contains("Total lag: 1 message(s)"), "{group}");
    b.screenshot("group").await;
    let groups = b
        .text_eventually(&format!("{base}/groups"), "BrowserGroup")
        .await;
    assert!(groups.contains("Online consumers"), "{groups}");
    b.screenshot("groups").await;

    b.open(&format!("{base}/dlq")).await;
    assert!(b.text("body").await.contains("dead letter topic(s)"));
    b.screenshot("dlq").await;

    // The story of the message, from its key.
    b.open(&format!("{base}/explain")).await;
    b.type_into("#explain input[name=key]", "browser-1").await;
    b.type_into("#explain input[name=topic]", "BrowserTopic")
        .await;
    b.click("#explain button").await;
    let summary = b.text("#summary").await;
    assert!(
        summary.contains("of topic BrowserTopic is stored on broker-a"),
        "{summary}"
    );
    assert!(summary.contains("Consumed by 0 of 1 group(s)"), "{summary}");
    b.screenshot("explain").await;

    b.quit().await;
    c.stop().await;
}

/// Sign-in and a cross-site form in a real browser: the console sends an anonymous visitor
/// to its sign-in page, takes a cluster user's password, and refuses a form another page
/// posts to it (Chromium sends `Origin: null` from a data: page).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_works_and_a_cross_site_form_is_refused_in_chromium() {
    if !browser_installed() {
        return;
    }
    let c = super::dashboard_login::LoginConsole::start().await;
    let base = format!("http://{}", c.addr);
    let b = Browser::start().await;

    b.open(&format!("{base}/cluster")).await;
    b.text_shown("Sign in").await;
    b.type_into("#login input[name=username]", "root").await;
    b.type_into("#login input[name=password]", "wrong").await;
    b.click("#login button").await;
    b.text_shown("wrong user or password").await;
    b.type_into("#login input[name=username]", "root").await;
    b.type_into("#login input[name=password]", "r00t").await;
    b.click("#login button").await;
    let cluster = b.text_shown("broker-a").await;
    assert!(cluster.contains("MASTER"), "{cluster}");
    b.screenshot("login").await;

    let forged = format!(
        "data:text/html,<form id=f method=post action='{base}/users/create'>\
         <input name=username value=mallory><input name=password value=x>\
         <input name=userType value=Super></form>\
         <script>document.getElementById('f').submit()</script>"
    )
    .replace(' ', "%20");
    b.open(&forged).await;
    b.text_shown("cross-site request refused").await;
    b.open(&format!("{base}/users")).await;
    let users = b.text("body").await;
    assert!(
        users.contains("root") && !users.contains("mallory"),
        "{users}"
    );
    b.quit().await;
    c.stop().await;
}
