//! Fuzz targets for every StellMQ decoder that takes bytes from the network or the disk.
//!
//! Each target takes arbitrary bytes and feeds them to a decoder the way the servers do,
//! asserting cheap invariants on the way: decoding never panics, and where an encoder
//! exists, whatever decoded survives `decode(encode(x)) == x`. A target returns whether the
//! input was accepted (decoded); the stable driver keeps accepted inputs to mutate further.
//!
//! Three ways to run them (see `fuzz/README.md`):
//! * `tests/corpus.rs` replays `fuzz/corpus/<target>/*` on stable in `cargo test` (CI);
//! * the `fuzz` binary mutates the corpus on stable for as long as asked;
//! * `fuzz/libfuzzer/` wraps each target for `cargo +nightly fuzz` (coverage-guided).

pub mod body;
pub mod ha;
pub mod message;
pub mod mutate;
pub mod net;
pub mod recovery;
pub mod seeds;
pub mod sql92;
pub mod text;
pub mod wire;

/// One fuzz target.
pub struct Target {
    /// Also the name of its corpus directory and its libFuzzer harness.
    pub name: &'static str,
    /// Feeds the input to the decoder; true when it decoded. Panics are findings.
    pub run: fn(&[u8]) -> bool,
    /// Tokens the driver splices into inputs (the format's keywords and punctuation).
    pub dictionary: &'static [&'static [u8]],
}

const NO_TOKENS: &[&[u8]] = &[];

const JSON_TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b"null",
    b"true",
    b"false",
    b"0",
    b"-1",
    b"1e999",
    b"\\u0000",
    b"\\",
    b"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}",
];

const SQL_TOKENS: &[&[u8]] = &[
    b"(",
    b")",
    b" NOT ",
    b" AND ",
    b" OR ",
    b" BETWEEN ",
    b" IN ",
    b" IS ",
    b" NULL ",
    b" TRUE ",
    b" CONTAINS ",
    b" STARTSWITH ",
    b" ENDSWITH ",
    b"'",
    b"''",
    b" = ",
    b" <> ",
    b" >= ",
    b" < ",
    b"-",
    b"+",
    b"--",
    b"/*",
    b"*/",
    b"1.5e3",
    b"9223372036854775808",
    b"a",
    b"\0",
    b"\x01",
    b"\x02",
];

const PROPERTY_TOKENS: &[&[u8]] = &[b"\x01", b"\x02", b"KEYS", b"TAGS", b"DELAY", b"WAIT"];

/// Every target, by name.
///
/// Targets still to come (their modules are being changed now; add them here and give each
/// a `fuzz/corpus/<name>/` directory, seeds in [`seeds`], and a `fuzz/libfuzzer` harness):
/// * `ha_frame`: the HA port's handshake and transfer frames (`stellmq_broker::ha`).
/// * `recovery`: CommitLog recovery over arbitrary segment bytes (`stellmq_store`).
pub const TARGETS: &[Target] = &[
    Target {
        name: "frame",
        run: wire::frame,
        dictionary: NO_TOKENS,
    },
    Target {
        name: "header_json",
        run: wire::header_json,
        dictionary: JSON_TOKENS,
    },
    Target {
        name: "header_binary",
        run: wire::header_binary,
        dictionary: NO_TOKENS,
    },
    Target {
        name: "record",
        run: message::record,
        dictionary: NO_TOKENS,
    },
    Target {
        name: "batch",
        run: message::batch,
        dictionary: NO_TOKENS,
    },
    Target {
        name: "properties",
        run: message::properties,
        dictionary: PROPERTY_TOKENS,
    },
    Target {
        name: "message_id",
        run: message::message_id,
        dictionary: NO_TOKENS,
    },
    Target {
        name: "json_body",
        run: body::json_body,
        dictionary: JSON_TOKENS,
    },
    Target {
        name: "register_compressed",
        run: body::register_compressed,
        dictionary: NO_TOKENS,
    },
    Target {
        name: "sql92",
        run: sql92::sql92,
        dictionary: SQL_TOKENS,
    },
    Target {
        name: "ha_frame",
        run: ha::ha_frame,
        dictionary: HA_TOKENS,
    },
    Target {
        name: "recovery",
        run: recovery::recovery,
        dictionary: RECORD_TOKENS,
    },
    Target {
        name: "text",
        run: text::text,
        dictionary: TEXT_TOKENS,
    },
];

/// Separators and edge characters of the text fields (multibyte ones included: slicing by
/// byte once panicked on them).
const TEXT_TOKENS: &[&[u8]] = &[
    b"+",
    b"-",
    b"=",
    b",",
    b";",
    b" ",
    b"||",
    b"*",
    b"{",
    b"}",
    b".",
    b":",
    b"%RETRY%",
    b"%DLQ%",
    b"message.type",
    b"\\u00e9",
    "\u{e9}".as_bytes(),
    "\u{1f600}".as_bytes(),
    b"\n",
    b"\0",
];

/// The hello's magic, and record magics that transfer frames carry.
const HA_TOKENS: &[&[u8]] = &[
    &[0xFF, b'S', b'M', b'Q', b'H', b'A', 0x00, 0x01],
    &[0xDA, 0xA3, 0x20, 0xA7],
    &[0xCB, 0xD4, 0x31, 0x94],
];

/// Record and blank magics.
const RECORD_TOKENS: &[&[u8]] = &[
    &[0xDA, 0xA3, 0x20, 0xA7],
    &[0xDA, 0xA3, 0x20, 0xAB],
    &[0xCB, 0xD4, 0x31, 0x94],
];

/// The target called `name`.
pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}
