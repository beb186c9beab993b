//! Scraping a Prometheus endpoint over plain HTTP/1.1 and reading values back, for the
//! metrics tests.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// One HTTP answer.
#[derive(Debug, Clone)]
pub struct Scrape {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

/// `GET path` on `addr` (connection closed after the answer), within 10 s.
pub async fn http_get(addr: SocketAddr, path: &str) -> Scrape {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    http_exchange(addr, request.into_bytes()).await
}

/// `POST path` on `addr` with an `application/x-www-form-urlencoded` body, as a browser
/// submits a form (connection closed after the answer), within 10 s.
pub async fn http_post(addr: SocketAddr, path: &str, form: &str) -> Scrape {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{form}",
        form.len()
    );
    http_exchange(addr, request.into_bytes()).await
}

/// `method path` on `addr` with extra `headers` (cookies, `Origin`) and a form `body`
/// (connection closed after the answer), within 10 s.
pub async fn http_send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Scrape {
    let mut request = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        request.push_str(&format!(
            "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body);
    http_exchange(addr, request.into_bytes()).await
}

/// Writes `request` and reads the answer to the end.
async fn http_exchange(addr: SocketAddr, request: Vec<u8>) -> Scrape {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.write_all(&request).await.expect("write");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("read");
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .expect("the endpoint answers within 10 s");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Scrape {
        status,
        headers: head.to_owned(),
        body: body.to_owned(),
    }
}

/// `GET /metrics` on `addr`, which must answer 200.
pub async fn scrape(addr: SocketAddr) -> Scrape {
    let s = http_get(addr, "/metrics").await;
    assert_eq!(s.status, 200, "scrape of {addr}: {}", s.headers);
    s
}

impl Scrape {
    /// The value of the first sample `name{...}` that carries every label of `labels`.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples(name, labels).first().copied()
    }

    /// Every sample `name{...}` carrying every label of `labels`.
    pub fn samples(&self, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
        self.body
            .lines()
            .filter(|line| {
                line.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
            })
            .filter(|line| {
                labels
                    .iter()
                    .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
            })
            .filter_map(|line| line.rsplit(' ').next()?.parse().ok())
            .collect()
    }
}
