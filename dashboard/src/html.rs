//! HTML building blocks: escaping, query-string encoding for links, tables and the page
//! layout. Every value that comes from a broker, a name server or a request is written
//! through [`esc`] (text and attribute values) or [`url_value`] (inside a link).

use std::fmt::Write as _;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use stellmq_remoting::protocol::message::UtcTime;

/// Escapes text for an HTML text node or a quoted attribute value.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Bytes left as they are in a query value: RFC 3986's unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Percent-encodes a value for a query string.
pub fn url_value(value: &str) -> String {
    utf8_percent_encode(value, QUERY_VALUE).to_string()
}

/// A link `<a href="path?k=v&...">text</a>`, every part encoded or escaped.
pub fn link(path: &str, params: &[(&str, &str)], text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(&href(path, params)), esc(text))
}

/// `path?k=v&...` with encoded values.
pub fn href(path: &str, params: &[(&str, &str)]) -> String {
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{}={}", url_value(k), url_value(v)))
        .collect();
    if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", query.join("&"))
    }
}

/// `yyyy-MM-dd HH:mm:ss.SSS` UTC, or `-` for no time.
pub fn format_time(ms: i64) -> String {
    if ms <= 0 {
        return "-".into();
    }
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}

/// A table: header cells are plain text, row cells are HTML already escaped by the caller
/// (use [`cell`] for plain values).
pub struct Table {
    html: String,
}

impl Table {
    pub fn new(id: &str, headers: &[&str]) -> Self {
        let mut html = format!("<table id=\"{}\"><thead><tr>", esc(id));
        for h in headers {
            let _ = write!(html, "<th>{}</th>", esc(h));
        }
        html.push_str("</tr></thead><tbody>");
        Self { html }
    }

    /// A row of cells that are HTML already (escaped values, links).
    pub fn row_html(&mut self, cells: &[String]) {
        self.html.push_str("<tr>");
        for c in cells {
            let _ = write!(self.html, "<td>{c}</td>");
        }
        self.html.push_str("</tr>");
    }

    /// A row of plain-text cells.
    pub fn row(&mut self, cells: &[&str]) {
        let escaped: Vec<String> = cells.iter().map(|c| esc(c)).collect();
        self.row_html(&escaped);
    }

    pub fn finish(mut self) -> String {
        self.html.push_str("</tbody></table>");
        self.html
    }
}

/// A plain value as a table cell.
pub fn cell(value: impl std::fmt::Display) -> String {
    esc(&value.to_string())
}

const STYLE: &str = "body{font-family:sans-serif;margin:0;color:#222}\
nav{background:#1f3a5f;padding:8px 16px}nav a{color:#fff;margin-right:18px;text-decoration:none;font-weight:bold}\
main{padding:12px 16px}table{border-collapse:collapse;margin:8px 0 16px}\
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;font-size:14px;vertical-align:top}\
th{background:#eef2f7}.error{color:#a00;font-weight:bold}.ok{color:#070;font-weight:bold}\
form{margin:6px 0 14px;padding:8px;border:1px solid #ddd;background:#fafafa}\
input,select{margin:0 8px 4px 2px}pre{background:#f4f4f4;padding:8px;white-space:pre-wrap;word-break:break-all;max-width:1100px}\
h2{margin-top:22px;font-size:18px}";

const NAV: &[(&str, &str)] = &[
    ("/cluster", "Cluster"),
    ("/topics", "Topics"),
    ("/groups", "Consumer groups"),
    ("/messages", "Messages"),
    ("/lite", "Lite topics"),
    ("/dlq", "DLQ"),
    ("/explain", "Explain a message"),
    ("/users", "Users"),
    ("/acls", "ACLs"),
];

/// Set when a console that requires sign-in starts: pages then offer to sign out.
pub static SIGN_OUT_SHOWN: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// One page: the layout (title, navigation, style) around a body built piece by piece.
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    pub fn new(title: &str) -> Self {
        Self {
            title: title.to_owned(),
            body: String::new(),
        }
    }

    /// Appends HTML that is already safe (built from escaped values).
    pub fn raw(&mut self, html: &str) {
        self.body.push_str(html);
    }

    /// Appends a heading with plain text.
    pub fn heading(&mut self, text: &str) {
        let _ = write!(self.body, "<h2>{}</h2>", esc(text));
    }

    /// Appends a paragraph of plain text.
    pub fn text(&mut self, text: &str) {
        let _ = write!(self.body, "<p>{}</p>", esc(text));
    }

    /// Appends a success note.
    pub fn ok(&mut self, text: &str) {
        let _ = write!(self.body, "<p class=\"ok\">{}</p>", esc(text));
    }

    /// Appends an error note (a part of the page that failed).
    pub fn error(&mut self, text: &str) {
        let _ = write!(self.body, "<p class=\"error\">{}</p>", esc(text));
    }

    pub fn finish(self) -> String {
        let mut nav = String::new();
        for (path, name) in NAV {
            let _ = write!(nav, "<a href=\"{path}\">{name}</a>");
        }
        if SIGN_OUT_SHOWN.load(std::sync::atomic::Ordering::Relaxed) {
            nav.push_str(
                "<form method=\"post\" action=\"/logout\" class=\"logout\"><button>Sign out</button></form>",
            );
        }
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title} - StellMQ console</title>\
             <style>{STYLE}</style></head><body><nav>{nav}</nav><main><h1>{title}</h1>{body}</main></body></html>",
            title = esc(&self.title),
            body = self.body
        )
    }
}

/// A form builder: `GET` for lookups, `POST` for actions.
pub struct Form {
    html: String,
}

impl Form {
    pub fn get(action: &str, id: &str) -> Self {
        Self::open("get", action, id)
    }

    pub fn post(action: &str, id: &str) -> Self {
        Self::open("post", action, id)
    }

    fn open(method: &str, action: &str, id: &str) -> Self {
        Self {
            html: format!(
                "<form method=\"{method}\" action=\"{}\" id=\"{}\">",
                esc(action),
                esc(id)
            ),
        }
    }

    /// A labelled text input.
    pub fn input(mut self, label: &str, name: &str, value: &str) -> Self {
        let _ = write!(
            self.html,
            "<label>{}<input name=\"{}\" value=\"{}\"></label>",
            esc(label),
            esc(name),
            esc(value)
        );
        self
    }

    /// A password field (never pre-filled).
    pub fn password(mut self, label: &str, name: &str) -> Self {
        let _ = write!(
            self.html,
            "<label>{}<input type=\"password\" name=\"{}\" autocomplete=\"current-password\"></label>",
            esc(label),
            esc(name)
        );
        self
    }

    /// A hidden field.
    pub fn hidden(mut self, name: &str, value: &str) -> Self {
        let _ = write!(
            self.html,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            esc(name),
            esc(value)
        );
        self
    }

    /// A labelled multi-line text field.
    pub fn textarea(mut self, label: &str, name: &str, value: &str) -> Self {
        let _ = write!(
            self.html,
            "<label>{}<textarea name=\"{}\" rows=\"2\" cols=\"40\">{}</textarea></label>",
            esc(label),
            esc(name),
            esc(value)
        );
        self
    }

    pub fn submit(mut self, text: &str) -> String {
        let _ = write!(
            self.html,
            "<button type=\"submit\">{}</button></form>",
            esc(text)
        );
        self.html
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_in_text_and_attributes() {
        assert_eq!(
            esc("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
        let a = link("/topic", &[("name", "a&b\"<>")], "<b>");
        assert_eq!(a, "<a href=\"/topic?name=a%26b%22%3C%3E\">&lt;b&gt;</a>");
    }

    #[test]
    fn times_print_in_utc() {
        assert_eq!(format_time(0), "-");
        assert_eq!(format_time(1_000), "1970-01-01 00:00:01.000");
    }
}
