//! A run's figures, and what it found.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use stellmq_remoting::protocol::{RequestCode, ResponseCode};

use super::grpc::CallOutcome;
use super::servers::Memory;
use super::Outcome;

/// Acknowledged canary messages and how many read back intact.
#[derive(Debug, Default)]
pub struct Integrity {
    pub acknowledged: usize,
    pub intact: usize,
    pub problems: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub connections: u64,
    pub connect_failures: Vec<String>,
    /// Well-formed requests sent, to the broker and to the name server.
    pub requests: [u64; 2],
    pub request_codes: BTreeSet<i32>,
    /// Answers by response code.
    pub answers: BTreeMap<i32, u64>,
    pub oneway: u64,
    /// Well-formed requests after which the server closed the connection, by request code.
    pub closed: BTreeMap<i32, u64>,
    /// Well-formed requests not answered in time, by request code.
    pub unanswered: BTreeMap<i32, u64>,
    /// Raw attacks by kind, and how many of them the server answered by closing.
    pub raw: BTreeMap<&'static str, (u64, u64)>,
    /// gRPC calls to mqproxy, by method.
    pub calls: BTreeMap<&'static str, u64>,
    /// Their endings by `grpc-status` (-1: an HTTP status other than 200).
    pub statuses: BTreeMap<i32, u64>,
    /// Calls whose HTTP/2 stream or connection was reset, and calls not answered in time.
    pub resets: u64,
    pub unanswered_calls: BTreeMap<&'static str, u64>,
    pub health_checks: u64,
    pub slowest_health: Duration,
    /// Each server's memory before the attack and after it.
    pub before: Vec<(&'static str, Memory)>,
    pub after: Vec<(&'static str, Memory)>,
    pub integrity: Integrity,
    /// Broken promises: a server died, panicked, stopped serving others, or lost data.
    pub findings: Vec<String>,
}

impl Report {
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            ..Self::default()
        }
    }

    pub(super) fn note_request(&mut self, broker: bool, code: i32, outcome: Outcome) {
        self.requests[usize::from(!broker)] += 1;
        self.request_codes.insert(code);
        match outcome {
            Outcome::Answered(answer) => *self.answers.entry(answer).or_default() += 1,
            Outcome::Oneway => self.oneway += 1,
            Outcome::Closed => *self.closed.entry(code).or_default() += 1,
            Outcome::Unanswered => *self.unanswered.entry(code).or_default() += 1,
        }
    }

    pub(super) fn note_call(&mut self, method: &'static str, outcome: CallOutcome) {
        *self.calls.entry(method).or_default() += 1;
        match outcome {
            CallOutcome::Status(status) => *self.statuses.entry(status).or_default() += 1,
            CallOutcome::Reset => self.resets += 1,
            CallOutcome::Unanswered => *self.unanswered_calls.entry(method).or_default() += 1,
        }
    }

    pub(super) fn note_raw(&mut self, kind: &'static str, closed: bool) {
        let entry = self.raw.entry(kind).or_default();
        entry.0 += 1;
        entry.1 += u64::from(closed);
    }

    /// Whether the run kept every promise.
    pub fn passed(&self) -> bool {
        self.findings.is_empty()
            && self.integrity.problems.is_empty()
            && self.integrity.intact == self.integrity.acknowledged
    }
}

fn request_name(code: i32) -> String {
    RequestCode::from_i32(code).map_or_else(|| code.to_string(), |c| c.name().to_owned())
}

fn response_name(code: i32) -> String {
    ResponseCode::from_i32(code).map_or_else(|| code.to_string(), |c| c.name().to_owned())
}

fn by_request(map: &BTreeMap<i32, u64>) -> String {
    map.iter()
        .map(|(code, n)| format!("{} {n}", request_name(*code)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [broker, namesrv] = self.requests;
        writeln!(f, "seed {}", self.seed)?;
        writeln!(
            f,
            "requests: {} well-formed ({broker} to the broker, {namesrv} to the name server), {} request codes, {} oneway",
            broker + namesrv,
            self.request_codes.len(),
            self.oneway
        )?;
        let answers: Vec<String> = self
            .answers
            .iter()
            .map(|(code, n)| format!("{} {n}", response_name(*code)))
            .collect();
        writeln!(f, "answers by code: {}", answers.join(", "))?;
        writeln!(
            f,
            "connections: {} opened; closed by a server after a well-formed request: {} ({})",
            self.connections,
            self.closed.values().sum::<u64>(),
            by_request(&self.closed)
        )?;
        writeln!(
            f,
            "unanswered within 10 s: {} ({})",
            self.unanswered.values().sum::<u64>(),
            by_request(&self.unanswered)
        )?;
        for (kind, (sent, closed)) in &self.raw {
            writeln!(f, "raw {kind}: {sent} sent, {closed} answered by closing")?;
        }
        writeln!(
            f,
            "health requests: {}, slowest answer {:.1} ms",
            self.health_checks,
            self.slowest_health.as_secs_f64() * 1000.0
        )?;
        let statuses: Vec<String> = self
            .statuses
            .iter()
            .map(|(status, n)| format!("{status}: {n}"))
            .collect();
        writeln!(
            f,
            "gRPC calls to mqproxy: {} over {} methods; grpc-status {}; reset {}, unanswered within 25 s {:?}",
            self.calls.values().sum::<u64>(),
            self.calls.len(),
            statuses.join(", "),
            self.resets,
            self.unanswered_calls
        )?;
        for ((name, before), (_, after)) in self.before.iter().zip(&self.after) {
            writeln!(
                f,
                "{name} memory: RssAnon {} KiB before, {} KiB after; peak RSS {} KiB",
                before.rss_anon_kib, after.rss_anon_kib, after.peak_rss_kib
            )?;
        }
        writeln!(
            f,
            "acknowledged messages: {}, intact afterwards: {}",
            self.integrity.acknowledged, self.integrity.intact
        )?;
        for problem in &self.integrity.problems {
            writeln!(f, "  data: {problem}")?;
        }
        if !self.connect_failures.is_empty() {
            writeln!(f, "connect failures: {}", self.connect_failures.len())?;
        }
        if self.findings.is_empty() {
            writeln!(f, "findings: none")
        } else {
            writeln!(f, "findings:")?;
            for finding in &self.findings {
                writeln!(f, "  {finding}")?;
            }
            Ok(())
        }
    }
}
