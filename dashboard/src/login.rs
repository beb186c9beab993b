//! Who may use the console. Every POST is refused when its `Origin` (else `Referer`) names
//! another site than the console's own, so another page a person has open cannot act
//! through their browser (cross-site request forgery). With `--loginRequired` a person
//! signs in with an ACL 2.0 user of the cluster (checked against the brokers' users): the
//! session lives in an HttpOnly, SameSite=Strict cookie, expires after 30 idle minutes,
//! and only super users may change anything (normal users read).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use parking_lot::Mutex;
use rand::RngCore;
use stellmq_remoting::protocol::body::auth::UserInfo;

use crate::form::Fields;
use crate::html::{esc, Form, Page};
use crate::server::AppState;

pub const SESSION_COOKIE: &str = "stellmq_console";
const IDLE: Duration = Duration::from_secs(30 * 60);
/// The most sessions held; the oldest idle ones go first beyond it.
const MAX_SESSIONS: usize = 10_000;

/// A signed-in person.
#[derive(Debug, Clone)]
pub struct Session {
    pub user: String,
    pub super_user: bool,
    last_seen: Instant,
}

#[derive(Default)]
pub struct Sessions {
    required: bool,
    by_token: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    pub fn new(required: bool) -> Self {
        Self {
            required,
            by_token: Mutex::default(),
        }
    }

    pub fn required(&self) -> bool {
        self.required
    }

    fn open(&self, user: &str, super_user: bool) -> String {
        let mut bytes = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut bytes);
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let mut sessions = self.by_token.lock();
        sessions.retain(|_, s| s.last_seen.elapsed() < IDLE);
        if sessions.len() >= MAX_SESSIONS {
            if let Some(oldest) = sessions
                .iter()
                .min_by_key(|(_, s)| s.last_seen)
                .map(|(t, _)| t.clone())
            {
                sessions.remove(&oldest);
            }
        }
        sessions.insert(
            token.clone(),
            Session {
                user: user.to_owned(),
                super_user,
                last_seen: Instant::now(),
            },
        );
        token
    }

    fn find(&self, token: &str) -> Option<Session> {
        let mut sessions = self.by_token.lock();
        let session = sessions.get_mut(token)?;
        if session.last_seen.elapsed() >= IDLE {
            sessions.remove(token);
            return None;
        }
        session.last_seen = Instant::now();
        Some(session.clone())
    }

    fn close(&self, token: &str) {
        self.by_token.lock().remove(token);
    }
}

fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value.to_owned())
}

/// Whether a POST comes from the console's own pages: its `Origin`, else its `Referer`,
/// names the host it was sent to. A request with neither is not a browser's cross-site
/// form (browsers send `Origin` with every cross-site POST) and passes.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let from = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .map(|v| v.to_str().unwrap_or("null"));
    match from {
        None => true,
        Some(from) => {
            let rest = from
                .strip_prefix("http://")
                .or_else(|| from.strip_prefix("https://"));
            rest.map(|r| r.split('/').next().unwrap_or_default()) == Some(host)
        }
    }
}

fn refused(status: StatusCode, why: &str) -> Response {
    let mut page = Page::new("Refused");
    page.error(why);
    (status, Html(page.finish())).into_response()
}

/// In front of every route: the origin check of POSTs and, with login, the session.
pub async fn guard(State(console): State<AppState>, mut request: Request, next: Next) -> Response {
    let post = request.method() == Method::POST;
    if post && !same_origin(request.headers()) {
        tracing::warn!(path = %request.uri().path(), "CONSOLE_CROSS_SITE_REQUEST_REFUSED");
        return refused(
            StatusCode::FORBIDDEN,
            "cross-site request refused: this form must be sent from the console's own pages",
        );
    }
    let sessions = &console.sessions;
    if !sessions.required() {
        return next.run(request).await;
    }
    let path = request.uri().path();
    if path == "/login" || path == "/logout" {
        return next.run(request).await;
    }
    let session = cookie_token(request.headers()).and_then(|t| sessions.find(&t));
    let Some(session) = session else {
        if post {
            return refused(StatusCode::UNAUTHORIZED, "sign in first");
        }
        return Redirect::to("/login").into_response();
    };
    if post && !session.super_user {
        return refused(
            StatusCode::FORBIDDEN,
            &format!(
                "{} is not a super user: only super users may change the cluster from the console",
                session.user
            ),
        );
    }
    request.extensions_mut().insert(session);
    next.run(request).await
}

fn login_page(error: Option<&str>) -> Html<String> {
    let mut page = Page::new("Sign in");
    if let Some(error) = error {
        page.error(error);
    }
    page.raw(
        &Form::post("/login", "login")
            .input("User", "username", "")
            .password("Password", "password")
            .submit("Sign in"),
    );
    Html(page.finish())
}

pub async fn login_form() -> Html<String> {
    login_page(None)
}

/// Checks the user against the cluster's masters: it must exist, be enabled, and have this
/// password.
pub async fn login(State(console): State<AppState>, body: String) -> Response {
    let fields = Fields::parse(&body);
    let username = fields.get("username").unwrap_or_default().trim().to_owned();
    let password = fields.get("password").unwrap_or_default().to_owned();
    match known_user(&console, &username).await {
        Ok(Some(user)) if matches(&user, &password) => {
            let super_user = user
                .user_type
                .as_deref()
                .is_some_and(|t| t.eq_ignore_ascii_case("Super"));
            let token = console.sessions.open(&username, super_user);
            tracing::info!(user = %username, super_user, "CONSOLE_SIGNED_IN");
            let cookie = format!("{SESSION_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
            ([(header::SET_COOKIE, cookie)], Redirect::to("/cluster")).into_response()
        }
        Ok(_) => {
            tracing::warn!(user = %esc(&username), "CONSOLE_SIGN_IN_REFUSED");
            (
                StatusCode::UNAUTHORIZED,
                login_page(Some("wrong user or password, or the user is disabled")),
            )
                .into_response()
        }
        Err(e) => (
            StatusCode::BAD_GATEWAY,
            login_page(Some(&format!("the brokers cannot be asked: {e}"))),
        )
            .into_response(),
    }
}

pub async fn logout(State(console): State<AppState>, headers: HeaderMap) -> Response {
    if let Some(token) = cookie_token(&headers) {
        console.sessions.close(&token);
    }
    let expired = format!("{SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0");
    ([(header::SET_COOKIE, expired)], Redirect::to("/login")).into_response()
}

async fn known_user(
    console: &crate::server::Console,
    username: &str,
) -> Result<Option<UserInfo>, stellmq_client::ClientError> {
    if username.is_empty() {
        return Ok(None);
    }
    let mut last_error = None;
    for (_, addr) in console.admin.master_addrs(None).await? {
        match console.admin.get_user(&addr, username).await {
            Ok(user) => return Ok(user),
            Err(e) => last_error = Some(e),
        }
    }
    match last_error {
        Some(e) => Err(e),
        None => Ok(None),
    }
}

/// Enabled, and the password equal (compared in constant time).
fn matches(user: &UserInfo, password: &str) -> bool {
    let enabled = !user
        .user_status
        .as_deref()
        .is_some_and(|s| s.eq_ignore_ascii_case("disable"));
    let stored = user.password.as_deref().unwrap_or_default().as_bytes();
    let given = password.as_bytes();
    let same_length = stored.len() == given.len();
    let differences = stored
        .iter()
        .zip(given.iter().cycle())
        .fold(0u8, |acc, (a, b)| acc | (a ^ b));
    enabled && same_length && differences == 0 && !given.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).expect("value"));
        }
        map
    }

    #[test]
    fn only_the_consoles_own_pages_may_post() {
        let host = (header::HOST, "127.0.0.1:8082");
        assert!(same_origin(&headers(&[
            host.clone(),
            (header::ORIGIN, "http://127.0.0.1:8082")
        ])));
        assert!(same_origin(&headers(&[
            host.clone(),
            (header::REFERER, "http://127.0.0.1:8082/topic?x=1")
        ])));
        assert!(
            same_origin(&headers(std::slice::from_ref(&host))),
            "not a browser"
        );
        assert!(!same_origin(&headers(&[
            host.clone(),
            (header::ORIGIN, "http://evil.example")
        ])));
        assert!(!same_origin(&headers(&[
            host.clone(),
            (header::ORIGIN, "null")
        ])));
        assert!(!same_origin(&headers(&[
            host,
            (header::ORIGIN, "http://127.0.0.1:8082.evil.example")
        ])));
    }

    #[test]
    fn passwords_match_exactly_and_disabled_users_never() {
        let user = |password: &str, status: &str| UserInfo {
            username: Some("u".into()),
            password: Some(password.into()),
            user_type: Some("Normal".into()),
            user_status: Some(status.into()),
        };
        assert!(matches(&user("secret", "enable"), "secret"));
        assert!(!matches(&user("secret", "enable"), "secret2"));
        assert!(!matches(&user("secret", "enable"), "secre"));
        assert!(!matches(&user("secret", "disable"), "secret"));
        assert!(!matches(&user("", "enable"), ""));
    }

    #[test]
    fn sessions_are_found_by_their_token_and_closed() {
        let sessions = Sessions::new(true);
        let token = sessions.open("alice", false);
        assert_eq!(token.len(), 64);
        assert_eq!(
            sessions.find(&token).map(|s| s.user),
            Some("alice".to_owned())
        );
        assert!(sessions.find("forged").is_none());
        sessions.close(&token);
        assert!(sessions.find(&token).is_none());
    }
}
