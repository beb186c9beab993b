//! Log lines that no client can forge: every value a server logs may come from a socket (a
//! broker name, a KV key, a topic), and a newline in one would start a line of the sender's
//! choosing. The servers' log writer escapes control characters, and the Unicode characters
//! that break or reorder a line in a viewer, in every event it writes; only the event's own
//! final newline is kept.

use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// Whether `c` must not reach a log line as it is: C0 and C1 controls (newlines, escape
/// sequences for terminals) and DEL, but not tab; the Unicode line and paragraph separators;
/// and the bidirectional controls that reorder what a reader sees.
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{200E}' | '\u{200F}'
        )
}

/// `line` with every character [`needs_escape`] picks written as `\n`, `\r` or `\u{..}`,
/// except one newline at its very end.
pub fn escape_line(line: &str) -> std::borrow::Cow<'_, str> {
    let (body, end) = match line.strip_suffix('\n') {
        Some(body) => (body, "\n"),
        None => (line, ""),
    };
    if !body.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in body.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out.push_str(end);
    std::borrow::Cow::Owned(out)
}

/// Whether a line is plain printable ASCII (with tabs) up to its final newline: the common
/// case, checked by bytes before anything is decoded.
fn is_plain(line: &[u8]) -> bool {
    let body = line.strip_suffix(b"\n").unwrap_or(line);
    body.iter().all(|b| (0x20..0x7f).contains(b) || *b == b'\t')
}

/// A writer that escapes each event it is given (tracing's fmt layer writes an event with
/// one `write_all` of the whole formatted line).
pub struct EscapingWriter<W>(W);

impl<W: Write> Write for EscapingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if is_plain(buf) {
            self.0.write_all(buf)?;
        } else {
            let text = String::from_utf8_lossy(buf);
            self.0.write_all(escape_line(&text).as_bytes())?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Makes [`EscapingWriter`]s around what `M` makes.
pub struct Escaping<M>(pub M);

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for Escaping<M> {
    type Writer = EscapingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        EscapingWriter(self.0.make_writer())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newlines_and_escapes_inside_a_line_are_escaped_and_the_end_is_kept() {
        let forged = "INFO broker registered broker=x\n2026-12-07T00:00:00Z ERROR FORGED\n";
        assert_eq!(
            escape_line(forged),
            "INFO broker registered broker=x\\n2026-12-07T00:00:00Z ERROR FORGED\n"
        );
        assert_eq!(
            escape_line("a\rb\u{1b}[31mc\u{7f}\n"),
            "a\\rb\\u{1b}[31mc\\u{7f}\n"
        );
        assert_eq!(
            escape_line("key=\u{2028}x\u{202E}y\u{85}\n"),
            "key=\\u{2028}x\\u{202e}y\\u{85}\n"
        );
    }

    #[test]
    fn plain_and_non_ascii_text_stays_as_it_is() {
        for line in [
            "INFO plain line\n",
            "tab\tstays\n",
            "caf\u{e9} \u{1f600}\n",
            "",
        ] {
            assert_eq!(escape_line(line), line);
        }
        assert!(is_plain(b"INFO x=1\n"));
        assert!(!is_plain(b"x\ny\n"));
        assert!(!is_plain("caf\u{e9}\n".as_bytes()));
    }

    #[test]
    fn the_writer_writes_one_line_per_event() {
        let mut out = Vec::new();
        let mut writer = EscapingWriter(&mut out);
        writer.write_all(b"one\ntwo\n").expect("write");
        writer.write_all("three\u{0}\n".as_bytes()).expect("write");
        assert_eq!(
            String::from_utf8(out).expect("utf8"),
            "one\\ntwo\nthree\\u{0}\n"
        );
    }
}
