//! `mqbench consumer`: RocketMQ's benchmark Consumer options (`-t`, `-w`, `-g`, `-p`, `-f`,
//! `-e`, `-r`, `-a/-ak/-sk`, `-ri`) plus what a catch-up read needs: where a new group
//! starts (`--consumeFromWhere CONSUME_FROM_FIRST_OFFSET` reads a topic's backlog) and a
//! message count to stop at (`-q`).
//!
//! Two engines: `pull` (default) long-polls every queue directly, one task per queue, with
//! no listener hand-off and no offset commits, so it measures the broker's pull path with as
//! little client cost as possible; `push` runs the client's `PushConsumer` as RocketMQ's
//! benchmark does (consume threads, filters, fail rate, offsets committed for the group).

mod engines;
mod stats;

use std::path::PathBuf;

use stellmq_client::ExpressionType;
use stellmq_remoting::protocol::body::ConsumeFromWhere;

use crate::bench_acl::BenchAclArgs;
use crate::tls_args::TlsArgs;

pub use engines::run;
pub(crate) use engines::watch_until;
pub use stats::{ConsumeStats, Snapshot};

/// RocketMQ benchmark Consumer's default consume threads.
pub const DEFAULT_THREADS: usize = 20;

/// How messages are fetched.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// One long-polling pull loop per queue, no listener, no offset commits.
    #[default]
    Pull,
    /// The client's PushConsumer (RocketMQ's benchmark Consumer).
    Push,
}

#[derive(clap::Args, Debug, Clone)]
pub struct ConsumerArgs {
    #[arg(short = 'n', long = "namesrvAddr")]
    pub namesrv: Option<String>,
    #[arg(short = 't', long = "topic", default_value = "BenchmarkTest")]
    pub topic: String,
    /// Consume threads (push engine; RocketMQ's default 20).
    #[arg(short = 'w', long = "threadCount")]
    pub threads: Option<usize>,
    /// Consumer group (RocketMQ's group prefix).
    #[arg(short = 'g', long = "group", default_value = "benchmark_consumer")]
    pub group: String,
    /// Append `_<millis % 100>` to the group (RocketMQ's `-p`).
    #[arg(short = 'p', long = "groupSuffixEnable", default_value_t = false, action = clap::ArgAction::Set)]
    pub group_suffix: bool,
    /// Filter type, TAG or SQL92 (push engine; needs -e).
    #[arg(short = 'f', long = "filterType", value_parser = parse_filter_type)]
    pub filter_type: Option<ExpressionType>,
    /// File holding the filter expression (push engine; needs -f).
    #[arg(short = 'e', long = "expression")]
    pub expression: Option<PathBuf>,
    /// Fraction of messages answered RECONSUME_LATER (push engine).
    #[arg(short = 'r', long = "failRate", default_value_t = 0.0)]
    pub fail_rate: f64,
    /// Where a group without stored offsets starts: CONSUME_FROM_LAST_OFFSET (RocketMQ's
    /// default), CONSUME_FROM_FIRST_OFFSET (read the backlog) or CONSUME_FROM_TIMESTAMP;
    /// `first`, `last` and `timestamp` for short.
    #[arg(long = "consumeFromWhere", default_value = "CONSUME_FROM_LAST_OFFSET", value_parser = parse_consume_from_where)]
    pub consume_from_where: ConsumeFromWhere,
    /// Start time in ms for CONSUME_FROM_TIMESTAMP (default: half an hour ago, as RocketMQ).
    #[arg(long = "consumeTimestamp")]
    pub consume_timestamp: Option<i64>,
    /// Message trace on (RocketMQ's `-m`; push engine): SubBefore/SubAfter records.
    #[arg(short = 'm', long = "msgTraceEnable", default_value_t = false, action = clap::ArgAction::Set)]
    pub trace: bool,
    /// Stop after this many messages (0 = until --duration).
    #[arg(short = 'q', long = "messageQuantity", default_value_t = 0)]
    pub quantity: u64,
    /// Seconds to run (0 = until --messageQuantity).
    #[arg(long = "duration", default_value_t = 60)]
    pub duration: u64,
    /// Seconds between report lines.
    #[arg(long = "report-interval", default_value_t = 10)]
    pub report_interval: u64,
    /// Milliseconds between report lines (RocketMQ's `-ri`; overrides --report-interval).
    #[arg(long = "reportInterval")]
    pub report_interval_ms: Option<u64>,
    #[arg(long = "engine", value_enum, default_value_t = Engine::Pull)]
    pub engine: Engine,
    #[command(flatten)]
    pub tls: TlsArgs,
    #[command(flatten)]
    pub acl: BenchAclArgs,
}

fn parse_filter_type(text: &str) -> Result<ExpressionType, String> {
    match text.trim().to_ascii_uppercase().as_str() {
        "TAG" => Ok(ExpressionType::Tag),
        "SQL92" => Ok(ExpressionType::Sql92),
        other => Err(format!("Not support filter type! {other} (TAG or SQL92)")),
    }
}

fn parse_consume_from_where(text: &str) -> Result<ConsumeFromWhere, String> {
    let full = match text.trim().to_ascii_lowercase().as_str() {
        "first" => "CONSUME_FROM_FIRST_OFFSET",
        "last" => "CONSUME_FROM_LAST_OFFSET",
        "timestamp" => "CONSUME_FROM_TIMESTAMP",
        _ => text,
    };
    // Ordinals are for the wire, not for people.
    if full.trim().parse::<usize>().is_ok() {
        return Err(format!("unknown consumeFromWhere {text}"));
    }
    ConsumeFromWhere::parse(full).ok_or_else(|| format!("unknown consumeFromWhere {text}"))
}

impl ConsumerArgs {
    /// The group to join: `-g`, with `_<millis % 100>` under `-p true`.
    pub fn group_name(&self, now_ms: i64) -> String {
        if self.group_suffix {
            format!("{}_{}", self.group, now_ms % 100)
        } else {
            self.group.clone()
        }
    }

    /// Consume threads (push engine).
    pub fn thread_count(&self) -> usize {
        self.threads.unwrap_or(DEFAULT_THREADS).max(1)
    }

    /// CONSUME_FROM_TIMESTAMP's start: `--consumeTimestamp`, else half an hour before `now_ms`.
    pub fn start_timestamp(&self, now_ms: i64) -> i64 {
        self.consume_timestamp.unwrap_or(now_ms - 30 * 60 * 1000)
    }

    /// Milliseconds between report lines.
    pub fn report_every_ms(&self) -> u64 {
        self.report_interval_ms
            .unwrap_or(self.report_interval.saturating_mul(1000))
            .max(100)
    }

    /// Options that make no sense together, or not with the chosen engine.
    pub fn validate(&self) -> Result<(), String> {
        if self.filter_type.is_some() != self.expression.is_some() {
            return Err("-f/--filterType and -e/--expression go together".into());
        }
        if !(0.0..=1.0).contains(&self.fail_rate) {
            return Err(format!("-r/--failRate {} is not in 0..1", self.fail_rate));
        }
        if self.duration == 0 && self.quantity == 0 {
            return Err("give --duration or -q/--messageQuantity (or both)".into());
        }
        if self.engine == Engine::Pull {
            let push_only = [
                (self.filter_type.is_some(), "-f/-e"),
                (self.fail_rate > 0.0, "-r"),
                (self.threads.is_some(), "-w"),
            ];
            if let Some((_, name)) = push_only.iter().find(|(given, _)| *given) {
                return Err(format!("{name} needs --engine push"));
            }
        }
        Ok(())
    }

    /// The subscription: (`*` as a tag expression) or `-f` with the contents of the `-e` file.
    pub fn subscription(&self) -> std::io::Result<(ExpressionType, String)> {
        match (&self.filter_type, &self.expression) {
            (Some(kind), Some(path)) => Ok((*kind, std::fs::read_to_string(path)?.trim().into())),
            _ => Ok((ExpressionType::Tag, "*".into())),
        }
    }

    /// RocketMQ's start line.
    pub fn start_line(&self, group: &str) -> String {
        format!(
            "topic: {}, threadCount {}, group: {}, suffix: {}, filterType: {}, expression: {}, aclEnable: {}, reportInterval: {}, engine: {:?}, consumeFromWhere: {}, messageQuantity: {}, duration: {}s",
            self.topic,
            self.thread_count(),
            group,
            self.group_suffix,
            self.filter_type.map_or("null", |t| t.as_str()),
            self.expression
                .as_ref()
                .map_or("null".into(), |p| p.display().to_string()),
            self.acl.acl_enable,
            self.report_every_ms(),
            self.engine,
            self.consume_from_where.name(),
            self.quantity,
            self.duration,
        )
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use clap::Parser;

    use super::*;
    use crate::bench_acl::expand_two_letter_options;

    #[derive(Parser, Debug)]
    struct Bench {
        #[command(flatten)]
        consumer: ConsumerArgs,
    }

    fn try_parse(args: &[&str]) -> Result<ConsumerArgs, String> {
        let argv = std::iter::once("mqbench")
            .chain(args.iter().copied())
            .map(OsString::from);
        Bench::try_parse_from(expand_two_letter_options(argv))
            .map(|b| b.consumer)
            .map_err(|e| e.to_string())
    }

    fn parse(args: &[&str]) -> ConsumerArgs {
        try_parse(args).expect("parses")
    }

    #[test]
    fn defaults_are_rocketmqs() {
        let a = parse(&[]);
        assert_eq!(a.topic, "BenchmarkTest");
        assert_eq!(a.group_name(1234), "benchmark_consumer");
        assert_eq!(a.thread_count(), 20);
        assert_eq!(
            a.consume_from_where,
            ConsumeFromWhere::ConsumeFromLastOffset
        );
        assert_eq!(a.engine, Engine::Pull);
        assert_eq!((a.quantity, a.duration), (0, 60));
        assert_eq!(a.report_every_ms(), 10_000);
        assert_eq!(
            a.subscription().expect("no file"),
            (ExpressionType::Tag, "*".into())
        );
        assert_eq!(a.validate(), Ok(()));
    }

    #[test]
    fn group_and_suffix() {
        let a = parse(&["-g", "g1", "-p", "true"]);
        assert_eq!(a.group_name(1_700_000_000_042), "g1_42");
        assert_eq!(parse(&["--group", "g2"]).group_name(7), "g2");
    }

    #[test]
    fn consume_from_where_names_and_short_forms() {
        for (text, want) in [
            (
                "CONSUME_FROM_FIRST_OFFSET",
                ConsumeFromWhere::ConsumeFromFirstOffset,
            ),
            ("first", ConsumeFromWhere::ConsumeFromFirstOffset),
            (
                "consume_from_last_offset",
                ConsumeFromWhere::ConsumeFromLastOffset,
            ),
            ("last", ConsumeFromWhere::ConsumeFromLastOffset),
            ("timestamp", ConsumeFromWhere::ConsumeFromTimestamp),
            (
                "CONSUME_FROM_MIN_OFFSET",
                ConsumeFromWhere::ConsumeFromMinOffset,
            ),
        ] {
            assert_eq!(
                parse(&["--consumeFromWhere", text]).consume_from_where,
                want,
                "{text}"
            );
        }
        assert!(try_parse(&["--consumeFromWhere", "start"]).is_err());
        assert!(try_parse(&["--consumeFromWhere", "4"]).is_err());
        let a = parse(&["--consumeFromWhere", "timestamp", "--consumeTimestamp", "5"]);
        assert_eq!(a.start_timestamp(1_000_000_000), 5);
        assert_eq!(parse(&[]).start_timestamp(1_800_000), 0);
    }

    #[test]
    fn quantity_duration_and_report_interval() {
        let a = parse(&["-q", "1000000", "--duration", "0", "-ri", "500"]);
        assert_eq!((a.quantity, a.duration), (1_000_000, 0));
        assert_eq!(a.report_every_ms(), 500);
        assert_eq!(a.validate(), Ok(()));
        assert_eq!(parse(&["--report-interval", "2"]).report_every_ms(), 2000);
        assert!(parse(&["--duration", "0"]).validate().is_err());
    }

    #[test]
    fn push_only_options_need_the_push_engine() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("expr");
        std::fs::write(&path, "TagA || TagB\n").expect("writes");
        let file = path.to_str().expect("utf-8 path");
        let a = parse(&[
            "--engine", "push", "-f", "tag", "-e", file, "-w", "4", "-r", "0.1",
        ]);
        assert_eq!(a.validate(), Ok(()));
        assert_eq!(a.thread_count(), 4);
        assert_eq!(
            a.subscription().expect("reads"),
            (ExpressionType::Tag, "TagA || TagB".into())
        );
        let sql = parse(&["--engine", "push", "-f", "SQL92", "-e", file]);
        assert_eq!(sql.filter_type, Some(ExpressionType::Sql92));
        for args in [
            &["-f", "TAG", "-e", file][..],
            &["-r", "0.5"][..],
            &["-w", "4"][..],
        ] {
            let err = parse(args).validate().expect_err("pull engine refuses");
            assert!(err.contains("--engine push"), "{err}");
        }
        assert!(parse(&["--engine", "push", "-f", "TAG"])
            .validate()
            .is_err());
        assert!(parse(&["--engine", "push", "-r", "1.5"])
            .validate()
            .is_err());
        assert!(try_parse(&["-f", "XPATH"]).is_err());
        let missing = parse(&["--engine", "push", "-f", "TAG", "-e", "/nonexistent/expr"]);
        assert!(missing.subscription().is_err());
    }

    #[test]
    fn start_line_names_the_options() {
        let line = parse(&["-t", "T", "--consumeFromWhere", "first", "-q", "9"]).start_line("g");
        assert!(
            line.starts_with("topic: T, threadCount 20, group: g,"),
            "{line}"
        );
        assert!(
            line.contains("consumeFromWhere: CONSUME_FROM_FIRST_OFFSET"),
            "{line}"
        );
        assert!(line.contains("messageQuantity: 9"), "{line}");
    }
}
