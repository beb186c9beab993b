//! `mqdashboard -n <namesrv> [--port 8082] [--host 127.0.0.1]`: StellMQ's web console.
// Bytes from sockets and files reach this crate: no index or slice that can panic (#42).
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

use clap::Parser;
use stellmq_cli::credentials::from_flags_or_tools_yml;
use stellmq_cli::tls_args::TlsArgs;
use stellmq_client::AdminClient;
use stellmq_dashboard::{serve, Console};

#[derive(Parser, Debug)]
#[command(
    name = "mqdashboard",
    about = "StellMQ web console: cluster, topics, consumer groups, messages, DLQ",
    version
)]
struct Cli {
    /// Name server list, ip:port;ip:port (else NAMESRV_ADDR, else 127.0.0.1:9876).
    #[arg(short = 'n', long = "namesrvAddr")]
    namesrv: Option<String>,
    /// HTTP port of the console.
    #[arg(long, default_value_t = 8082)]
    port: u16,
    /// Address to listen on (0.0.0.0 to serve other machines).
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Plain ACL access key (with --secretKey); else conf/tools.yml as mqadmin reads it.
    #[arg(long = "accessKey")]
    access_key: Option<String>,
    #[arg(long = "secretKey")]
    secret_key: Option<String>,
    /// People sign in with an ACL 2.0 user of the cluster (checked against the brokers);
    /// only super users may change anything. The console's own requests are signed with
    /// --accessKey/--secretKey (a super user when the brokers check requests).
    #[arg(long = "loginRequired")]
    login_required: bool,
    /// The topic message traces are read from.
    #[arg(long = "traceTopic", default_value = stellmq_client::trace::DEFAULT_TRACE_TOPIC)]
    trace_topic: String,
    #[command(flatten)]
    tls: TlsArgs,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    stellmq_remoting::net::process::init_logging();
    let cli = Cli::parse();
    match run(cli).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "CONSOLE_FAILED");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
    let namesrv = stellmq_cli::namesrv_addr(&cli.namesrv);
    let credentials =
        from_flags_or_tools_yml(cli.access_key.as_deref(), cli.secret_key.as_deref())?;
    let admin = AdminClient::connect(&namesrv, &cli.tls.client_tls(), credentials)?;
    let console = Console::new(admin)
        .with_trace_topic(&cli.trace_topic)
        .with_login_required(cli.login_required);
    let listener = tokio::net::TcpListener::bind((cli.host.as_str(), cli.port)).await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, %namesrv, "CONSOLE_STARTED");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    serve(listener, console, shutdown).await?;
    tracing::info!("CONSOLE_STOPPED");
    Ok(())
}
