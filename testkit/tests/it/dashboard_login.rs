//! mqdashboard with `--loginRequired` in front of a cluster with ACL 2.0: people sign in
//! with the brokers' users, only super users change anything, forms sent from another
//! site are refused, and the users and ACL pages manage what mqadmin manages.

use std::net::SocketAddr;

use stellmq_client::AdminClient;
use stellmq_dashboard::{serve, Console};
use stellmq_remoting::protocol::signature::SessionCredentials;
use stellmq_testkit::{http_send, Scrape, Stack};
use tokio::sync::oneshot;

struct Signed {
    addr: SocketAddr,
    cookie: String,
}

impl Signed {
    fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn get(&self, path: &str) -> Scrape {
        http_send(self.addr, "GET", path, &[("Cookie", &self.cookie)], "").await
    }

    async fn post(&self, path: &str, form: &str) -> Scrape {
        let origin = self.origin();
        http_send(
            self.addr,
            "POST",
            path,
            &[("Cookie", &self.cookie), ("Origin", &origin)],
            form,
        )
        .await
    }
}

async fn sign_in(addr: SocketAddr, user: &str, password: &str) -> Result<Signed, Scrape> {
    let form = format!("username={user}&password={password}");
    let origin = format!("http://{addr}");
    let answer = http_send(addr, "POST", "/login", &[("Origin", &origin)], &form).await;
    let cookie = answer
        .headers
        .lines()
        .find_map(|l| {
            l.strip_prefix("set-cookie: ")
                .or_else(|| l.strip_prefix("Set-Cookie: "))
        })
        .and_then(|c| c.split(';').next())
        .map(str::to_owned);
    match cookie {
        Some(cookie) if answer.status == 303 => Ok(Signed { addr, cookie }),
        _ => Err(answer),
    }
}

/// A name server and a broker with ACL 2.0 on (super user `root`/`r00t`), and the console
/// with sign-in required in front of them.
pub struct LoginConsole {
    pub stack: Stack,
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
}

impl LoginConsole {
    pub async fn start() -> Self {
        let stack = Stack::start_with(|c| {
            c.broker.authentication_enabled = true;
            c.broker.authorization_enabled = true;
            c.broker.init_authentication_user = r#"{"username":"root","password":"r00t"}"#.into();
        })
        .await;
        stack.broker().register_now().await;
        let credentials = SessionCredentials::new("root", "r00t");
        let admin =
            AdminClient::with_credentials(stack.ns_addr(), Some(credentials)).expect("admin");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let console = Console::new(admin).with_login_required(true);
        tokio::spawn(serve(listener, console, async {
            let _ = stopped.await;
        }));
        Self {
            stack,
            addr,
            stop: Some(stop),
        }
    }

    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.stack.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_sign_in_with_cluster_users_and_only_super_users_change_things() {
    let console = LoginConsole::start().await;
    let addr = console.addr;

    let anonymous = http_send(addr, "GET", "/cluster", &[], "").await;
    assert_eq!(anonymous.status, 303, "{}", anonymous.headers);
    assert!(anonymous
        .headers
        .to_ascii_lowercase()
        .contains("location: /login"));
    let refused = sign_in(addr, "root", "wrong").await.err().expect("refused");
    assert_eq!(refused.status, 401);
    assert!(
        refused.body.contains("wrong user or password"),
        "{}",
        refused.body
    );

    let root = sign_in(addr, "root", "r00t")
        .await
        .unwrap_or_else(|a| panic!("root signs in: {} {}", a.status, a.body));
    assert!(root.get("/cluster").await.body.contains("broker"));
    let created = root
        .post(
            "/users/create",
            "username=app&password=app-pass&userType=Normal",
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.body);
    let users = root.get("/users").await.body;
    assert!(
        users.contains(">app<") && !users.contains("app-pass"),
        "{users}"
    );
    let acl = root
        .post(
            "/acls/create",
            "subject=User%3Aapp&resources=Topic%3Aorders&actions=Pub%2CSub&decision=Allow",
        )
        .await;
    assert_eq!(acl.status, 200, "{}", acl.body);
    assert!(root.get("/acls").await.body.contains("Topic:orders"));

    // A form posted from another site, with the session's cookie, changes nothing.
    let forged = http_send(
        addr,
        "POST",
        "/users/create",
        &[("Cookie", &root.cookie), ("Origin", "http://evil.example")],
        "username=mallory&password=x&userType=Super",
    )
    .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert!(!root.get("/users").await.body.contains("mallory"));
    // A forged cookie is no session.
    let guessed = http_send(
        addr,
        "GET",
        "/users",
        &[("Cookie", "stellmq_console=00")],
        "",
    )
    .await;
    assert_eq!(guessed.status, 303);

    // A normal user reads, and may not change.
    let app = sign_in(addr, "app", "app-pass")
        .await
        .unwrap_or_else(|a| panic!("app signs in: {} {}", a.status, a.body));
    assert_eq!(app.get("/topics").await.status, 200);
    let change = app
        .post(
            "/topic/update",
            "topic=AppTopic&readQueueNums=1&writeQueueNums=1&perm=6",
        )
        .await;
    assert_eq!(change.status, 403);
    assert!(change.body.contains("not a super user"), "{}", change.body);

    // Disabled from the users page: the user can no longer sign in.
    let disabled = root
        .post("/users/status", "username=app&status=disable")
        .await;
    assert_eq!(disabled.status, 200, "{}", disabled.body);
    assert!(sign_in(addr, "app", "app-pass").await.is_err());
    let out = root.post("/logout", "").await;
    assert_eq!(out.status, 303);
    assert_eq!(root.get("/cluster").await.status, 303, "signed out");

    console.stop().await;
}
