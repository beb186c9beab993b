//! The console's HTTP side: shared state, the routes and the listener loop.

use std::future::Future;
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::response::Redirect;
use axum::routing::{get, post};
use axum::Router;
use stellmq_client::trace::DEFAULT_TRACE_TOPIC;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::message::id::UniqIdGenerator;
use tokio::net::TcpListener;

use crate::{login, pages};

/// Form bodies larger than this are refused (413) before a handler runs.
pub const MAX_FORM_BYTES: usize = 64 * 1024;

/// What every page shares: the admin client (one connection pool to the name servers and
/// brokers, signing with the configured credentials) and the settings of the console.
pub struct Console {
    pub(crate) admin: AdminClient,
    pub(crate) trace_topic: String,
    pub(crate) ids: UniqIdGenerator,
    /// Who is signed in (with `--loginRequired`).
    pub(crate) sessions: crate::login::Sessions,
}

impl Console {
    pub fn new(admin: AdminClient) -> Self {
        Self {
            admin,
            trace_topic: DEFAULT_TRACE_TOPIC.to_owned(),
            ids: UniqIdGenerator::new(std::net::Ipv4Addr::LOCALHOST.into()),
            sessions: crate::login::Sessions::new(false),
        }
    }

    /// Requires people to sign in with an ACL 2.0 user of the cluster; only super users
    /// may change anything.
    pub fn with_login_required(mut self, required: bool) -> Self {
        self.sessions = crate::login::Sessions::new(required);
        if required {
            crate::html::SIGN_OUT_SHOWN.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self
    }

    /// Reads traces from `topic` instead of RocketMQ's default trace topic.
    pub fn with_trace_topic(mut self, topic: &str) -> Self {
        topic.clone_into(&mut self.trace_topic);
        self
    }
}

/// Shared state of every handler.
pub type AppState = Arc<Console>;

/// Every page and action of the console.
pub fn router(console: Console) -> Router {
    let console = Arc::new(console);
    Router::new()
        .route("/login", get(login::login_form).post(login::login))
        .route("/logout", post(login::logout))
        .route("/users", get(pages::users::users))
        .route("/users/create", post(pages::users::create_user))
        .route("/users/status", post(pages::users::set_status))
        .route("/users/delete", post(pages::users::delete_user))
        .route("/acls", get(pages::users::acls))
        .route("/acls/create", post(pages::users::create_acl))
        .route("/acls/delete", post(pages::users::delete_acl))
        .route("/", get(|| async { Redirect::to("/cluster") }))
        .route("/cluster", get(pages::cluster::page))
        .route("/topics", get(pages::topics::list))
        .route("/topic", get(pages::topic::page))
        .route("/topic/update", post(pages::topic_actions::update))
        .route("/topic/delete", post(pages::topic_actions::delete))
        .route("/topic/send", post(pages::topic_actions::send))
        .route("/groups", get(pages::groups::list))
        .route("/group", get(pages::group::page))
        .route("/group/reset", post(pages::group_actions::reset))
        .route("/group/skip", post(pages::group_actions::skip))
        .route("/messages", get(pages::messages::page))
        .route("/message", get(pages::messages::one))
        .route("/lite", get(pages::lite::page))
        .route("/dlq", get(pages::dlq::page))
        .route("/dlq/resend", post(pages::dlq::resend))
        .route("/explain", get(pages::explain::page))
        .layer(axum::middleware::from_fn_with_state(
            console.clone(),
            login::guard,
        ))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .with_state(console)
}

/// Serves the console on `listener` until `shutdown` completes, then lets the requests in
/// flight finish.
pub async fn serve(
    listener: TcpListener,
    console: Console,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(console))
        .with_graceful_shutdown(shutdown)
        .await
}
