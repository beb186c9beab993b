//! `netfuzz`: mutated requests of every code from many connections against a live name
//! server and broker it starts itself (the binaries next to it, or in `STELLMQ_BIN_DIR`);
//! prints the figures and exits non-zero when a promise was broken (see `fuzz/README.md`).
#![allow(clippy::print_stdout)] // The report is the program's output.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use stellmq_fuzz::net::{run, Options};

#[derive(Parser)]
#[command(
    name = "netfuzz",
    about = "Network-level fuzzing of a live name server and broker"
)]
struct Cli {
    /// How long to attack.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Attacking connections (half to the broker, half to the name server).
    #[arg(long, default_value_t = 16)]
    connections: usize,
    /// The same seed sends the same requests on each connection.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Messages the broker acknowledges before the attack and must keep intact.
    #[arg(long, default_value_t = 200)]
    canaries: usize,
    /// Copy the servers' logs into this directory afterwards.
    #[arg(long = "keep-logs")]
    keep_logs: Option<std::path::PathBuf>,
    /// Instead of a run: replay the gRPC calls of this connection seed (`seed * 1000 +
    /// connection`) until mqproxy dies, and write the call that killed it to `fatal-call.bin`.
    #[arg(long = "find-fatal-grpc-call")]
    find_fatal_grpc_call: Option<u64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let options = Options {
        duration: Duration::from_secs(cli.seconds),
        connections: cli.connections,
        seed: cli.seed,
        canary_messages: cli.canaries,
        keep_logs: cli.keep_logs,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("netfuzz: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(seed) = cli.find_fatal_grpc_call {
        return match runtime.block_on(stellmq_fuzz::net::find_fatal_grpc_call(seed, 100_000)) {
            Ok(Some((i, call))) => {
                println!(
                    "call {i} ({}) killed mqproxy; its body is in fatal-call.bin",
                    call.method
                );
                let _ = std::fs::write("fatal-call.bin", &call.body);
                ExitCode::FAILURE
            }
            Ok(None) => {
                println!("mqproxy lived through 100,000 calls");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("netfuzz: {e}");
                ExitCode::FAILURE
            }
        };
    }
    match runtime.block_on(run(&options)) {
        Ok(report) => {
            print!("{report}");
            if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(e) => {
            eprintln!("netfuzz: {e}");
            ExitCode::FAILURE
        }
    }
}
