//! The cluster under test: name server, controllers and brokers as the release binaries
//! users run, each in its own namespace (`ip netns exec <ns> mqbroker -c ...`), with the
//! configuration a user of that shape writes. Nodes are killed, restarted, paused and resumed
//! by name.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use stellmq_controller_client::ControllerClient;
use stellmq_remoting::net::{ClientConfig, RemotingClient};
use stellmq_testkit::process::{bin_path, broker_boot_line, namesrv_boot_line};
use stellmq_testkit::Process;

use crate::net::Host;
use crate::ChaosError;

pub const NAMESRV_PORT: u16 = 9876;
pub const CONTROLLER_PORT: u16 = 9878;
pub const BROKER_PORT: u16 = 10911;
pub const PROXY_PORT: u16 = 8081;
/// The broker set every shape runs.
pub const BROKER_NAME: &str = "broker-a";
const CLUSTER: &str = "ChaosCluster";
const CALL: Duration = Duration::from_secs(3);

/// A cluster shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// Three controllers and a broker set of three, `allAckInSyncStateSet=true`.
    Controller,
    /// A SYNC_MASTER and its SLAVE, no controllers.
    Classic,
    /// The controller shape with an mqproxy in front of the brokers (RocketMQ 5 clients
    /// reach the cluster through it).
    Proxy,
}

impl Shape {
    /// Host names of the shape (the name server first; the client is added by the run).
    pub fn host_names(self) -> Vec<&'static str> {
        match self {
            Shape::Controller => vec!["ns", "c0", "c1", "c2", "b0", "b1", "b2"],
            Shape::Classic => vec!["ns", "b0", "b1"],
            Shape::Proxy => vec!["ns", "c0", "c1", "c2", "b0", "b1", "b2", "px"],
        }
    }

    pub fn parse(s: &str) -> Option<Shape> {
        match s {
            "controller" => Some(Shape::Controller),
            "classic" => Some(Shape::Classic),
            "proxy" => Some(Shape::Proxy),
            _ => None,
        }
    }
}

/// What a node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    NameServer,
    Controller,
    Broker,
    Proxy,
}

/// Whether a node runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Paused,
    Killed,
}

pub struct Node {
    pub host: Host,
    pub role: Role,
    conf: PathBuf,
    process: Option<Process>,
    pub state: State,
}

impl Node {
    pub fn addr(&self) -> String {
        let port = match self.role {
            Role::NameServer => NAMESRV_PORT,
            Role::Controller => CONTROLLER_PORT,
            Role::Broker => BROKER_PORT,
            Role::Proxy => PROXY_PORT,
        };
        format!("{}:{port}", self.host.ip)
    }

    /// The last lines the node printed (for a failure report).
    pub fn output(&self) -> Vec<String> {
        self.process
            .as_ref()
            .map(Process::output)
            .unwrap_or_default()
    }
}

pub struct Cluster {
    pub shape: Shape,
    pub nodes: Vec<Node>,
    pub remoting: std::sync::Arc<RemotingClient>,
    pub controllers: Option<ControllerClient>,
    namesrv_addr: String,
    controller_list: String,
    log_dir: Option<PathBuf>,
}

impl Cluster {
    /// Writes every node's configuration under `dir` and starts them all (the name server
    /// and controllers first); returns once each has printed its boot line.
    /// With `log_dir`, every line a node prints is also appended to `<log_dir>/<node>.log`.
    pub async fn start(
        shape: Shape,
        hosts: &[Host],
        dir: &Path,
        log_dir: Option<&Path>,
    ) -> Result<Cluster, ChaosError> {
        let find = |name: &str| {
            hosts
                .iter()
                .find(|h| h.name == name)
                .cloned()
                .ok_or_else(|| ChaosError::Setup(format!("no host {name}")))
        };
        let ns = find("ns")?;
        let namesrv_addr = format!("{}:{NAMESRV_PORT}", ns.ip);
        let controller_hosts: Vec<Host> = hosts
            .iter()
            .filter(|h| h.name.starts_with('c') && h.name != "client")
            .cloned()
            .collect();
        let controller_list = controller_hosts
            .iter()
            .map(|h| format!("{}:{CONTROLLER_PORT}", h.ip))
            .collect::<Vec<_>>()
            .join(";");
        let mut nodes = vec![node(ns.clone(), Role::NameServer, namesrv_conf(dir, &ns)?)];
        for (i, h) in controller_hosts.iter().enumerate() {
            let conf = controller_conf(dir, i, h, &controller_hosts)?;
            nodes.push(node(h.clone(), Role::Controller, conf));
        }
        for h in hosts.iter().filter(|h| h.name.starts_with('b')) {
            let conf = broker_conf(dir, shape, h, &controller_list)?;
            nodes.push(node(h.clone(), Role::Broker, conf));
        }
        if let Some(px) = hosts.iter().find(|h| h.name == "px") {
            nodes.push(node(px.clone(), Role::Proxy, proxy_conf(dir, px)?));
        }
        let remoting = std::sync::Arc::new(RemotingClient::new(ClientConfig::default()));
        let controllers = if controller_hosts.is_empty() {
            None
        } else {
            Some(
                ControllerClient::new(remoting.clone(), &controller_list, CALL)
                    .map_err(|e| ChaosError::Setup(format!("controller list: {e}")))?,
            )
        };
        let mut cluster = Cluster {
            shape,
            nodes,
            remoting,
            controllers,
            namesrv_addr,
            controller_list,
            log_dir: log_dir.map(Path::to_path_buf),
        };
        for i in 0..cluster.nodes.len() {
            cluster.spawn(i).await?;
        }
        Ok(cluster)
    }

    pub fn namesrv_addr(&self) -> &str {
        &self.namesrv_addr
    }

    /// The controllers' addresses, `;`-separated (none in classic mode).
    pub fn controller_list(&self) -> Option<String> {
        (!self.controller_list.is_empty()).then(|| self.controller_list.clone())
    }

    /// The proxy's gRPC endpoint (the proxy shape only).
    pub fn proxy_endpoint(&self) -> Option<String> {
        self.nodes
            .iter()
            .find(|n| n.role == Role::Proxy)
            .map(Node::addr)
    }

    pub fn index(&self, name: &str) -> Result<usize, ChaosError> {
        self.nodes
            .iter()
            .position(|n| n.host.name == name)
            .ok_or_else(|| ChaosError::Setup(format!("no node {name}")))
    }

    /// The node whose address is `addr`.
    pub fn by_addr(&self, addr: &str) -> Option<&Node> {
        self.nodes.iter().find(|n| n.addr() == addr)
    }

    /// Names of the nodes of `role`.
    pub fn names(&self, role: Role) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.role == role)
            .map(|n| n.host.name.clone())
            .collect()
    }

    async fn spawn(&mut self, i: usize) -> Result<(), ChaosError> {
        let namesrv_addr = self.namesrv_addr.clone();
        let Some(node) = self.nodes.get_mut(i) else {
            return Err(ChaosError::Setup(format!("no node {i}")));
        };
        let (bin, boot): (&str, fn(&str) -> Option<String>) = match node.role {
            Role::NameServer => ("mqnamesrv", namesrv_boot_line),
            Role::Controller => ("mqcontroller", namesrv_boot_line),
            Role::Broker => ("mqbroker", broker_boot_line),
            Role::Proxy => ("mqproxy", proxy_boot_line),
        };
        let mut cmd = Command::new("ip");
        // The servers log as users run them (their boot lines included), whatever the
        // harness's own log filter is.
        cmd.env_remove("RUST_LOG");
        cmd.args(["netns", "exec", &node.host.netns])
            .arg(bin_path(bin));
        match node.role {
            Role::Proxy => cmd.arg("--pc"),
            _ => cmd.arg("-c"),
        }
        .arg(&node.conf);
        if matches!(node.role, Role::Broker | Role::Proxy) {
            cmd.args(["-n", &namesrv_addr]);
        }
        let log = self
            .log_dir
            .as_ref()
            .map(|d| d.join(format!("{}.log", node.host.name)));
        let (process, _) = tokio::task::spawn_blocking(move || {
            let log = log.and_then(|path| {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .ok()
            });
            let log = parking_lot::Mutex::new(log.map(std::io::LineWriter::new));
            Process::spawn_until(cmd, move |line| {
                if let Some(file) = log.lock().as_mut() {
                    let _ = writeln!(file, "{line}");
                }
                boot(line)
            })
        })
        .await
        .map_err(|e| ChaosError::Setup(format!("{bin} did not start: {e}")))?;
        node.process = Some(process);
        node.state = State::Running;
        Ok(())
    }

    /// SIGKILL.
    pub fn kill(&mut self, name: &str) -> Result<(), ChaosError> {
        let i = self.index(name)?;
        if let Some(node) = self.nodes.get_mut(i) {
            if let Some(mut p) = node.process.take() {
                p.kill();
            }
            node.state = State::Killed;
        }
        Ok(())
    }

    /// Starts a killed node again, on its old store.
    pub async fn restart(&mut self, name: &str) -> Result<(), ChaosError> {
        let i = self.index(name)?;
        self.spawn(i).await
    }

    /// SIGSTOP, waiting until every thread has stopped.
    pub fn pause(&mut self, name: &str) -> Result<(), ChaosError> {
        let i = self.index(name)?;
        if let Some(node) = self.nodes.get_mut(i) {
            if let Some(p) = &node.process {
                p.signal("-STOP");
                p.wait_until_stopped();
                node.state = State::Paused;
            }
        }
        Ok(())
    }

    /// SIGCONT.
    pub fn resume(&mut self, name: &str) -> Result<(), ChaosError> {
        let i = self.index(name)?;
        if let Some(node) = self.nodes.get_mut(i) {
            if let Some(p) = &node.process {
                p.signal("-CONT");
                node.state = State::Running;
            }
        }
        Ok(())
    }

    /// Resumes paused nodes and restarts killed ones.
    pub async fn revive_all(&mut self) -> Result<(), ChaosError> {
        for i in 0..self.nodes.len() {
            let (name, state) = match self.nodes.get(i) {
                Some(n) => (n.host.name.clone(), n.state),
                None => continue,
            };
            match state {
                State::Paused => self.resume(&name)?,
                State::Killed => self.restart(&name).await?,
                State::Running => {}
            }
        }
        Ok(())
    }

    /// The name of the broker that is master now, as the controllers (controller mode) or
    /// the configuration (classic: b0) say.
    pub async fn master(&self) -> Option<String> {
        match &self.controllers {
            None => Some("b0".to_owned()),
            Some(c) => {
                let (addr, _) = named_master(c).await?;
                self.by_addr(&addr).map(|n| n.host.name.clone())
            }
        }
    }

    /// The address of node `name`.
    pub fn addr_of(&self, name: &str) -> Option<String> {
        self.nodes
            .iter()
            .find(|n| n.host.name == name)
            .map(Node::addr)
    }

    /// The controller that leads the Raft group now.
    pub async fn controller_leader(&self) -> Option<String> {
        let leader = self.controllers.as_ref()?.discover_leader().await.ok()?;
        self.by_addr(&leader).map(|n| n.host.name.clone())
    }

    /// Kills every node (the run is over).
    pub fn stop(&mut self) {
        for node in &mut self.nodes {
            if node.state == State::Paused {
                if let Some(p) = &node.process {
                    p.signal("-CONT");
                }
            }
            if let Some(mut p) = node.process.take() {
                p.kill();
            }
        }
    }
}

/// The address in `mqproxy`'s boot line (`... startup successfully, gRPC address <addr>`).
fn proxy_boot_line(line: &str) -> Option<String> {
    let rest = line.split("gRPC address ").nth(1)?;
    rest.split_whitespace().next().map(str::to_owned)
}

/// The master's address and epoch, as the controllers name them.
pub async fn named_master(controllers: &ControllerClient) -> Option<(String, i32)> {
    let (header, _) = controllers.get_replica_info(BROKER_NAME).await.ok()?;
    let addr = header.master_address.filter(|a| !a.is_empty())?;
    Some((addr, header.master_epoch?))
}

fn node(host: Host, role: Role, conf: PathBuf) -> Node {
    Node {
        host,
        role,
        conf,
        process: None,
        state: State::Killed,
    }
}

fn write(path: PathBuf, text: String) -> Result<PathBuf, ChaosError> {
    std::fs::write(&path, text)
        .map_err(|e| ChaosError::Setup(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

fn namesrv_conf(dir: &Path, host: &Host) -> Result<PathBuf, ChaosError> {
    let text = format!(
        "listenPort={NAMESRV_PORT}\nbindAddress={}\nkvConfigPath={}\nconfigStorePath={}\n",
        host.ip,
        dir.join("namesrv-kv.json").display(),
        dir.join("namesrv.properties").display()
    );
    write(dir.join("namesrv.conf"), text)
}

fn controller_conf(dir: &Path, i: usize, host: &Host, all: &[Host]) -> Result<PathBuf, ChaosError> {
    let peers = all
        .iter()
        .enumerate()
        .map(|(j, h)| format!("n{j}-{}:{CONTROLLER_PORT}", h.ip))
        .collect::<Vec<_>>()
        .join(";");
    let text = format!(
        "controllerDLegerGroup=chaos\ncontrollerDLegerPeers={peers}\ncontrollerDLegerSelfId=n{i}\n\
         listenPort={CONTROLLER_PORT}\nbindAddress={}\ncontrollerStorePath={}\n\
         scanNotActiveBrokerInterval=500\n",
        host.ip,
        dir.join(format!("controller-{}", host.name)).display()
    );
    write(dir.join(format!("controller-{}.conf", host.name)), text)
}

fn proxy_conf(dir: &Path, host: &Host) -> Result<PathBuf, ChaosError> {
    let text = format!(
        "{{\"rocketMQClusterName\": \"{CLUSTER}\", \"grpcServerPort\": {PROXY_PORT}, \
         \"bindAddress\": \"{}\"}}\n",
        host.ip
    );
    write(dir.join("rmq-proxy.json"), text)
}

fn broker_conf(
    dir: &Path,
    shape: Shape,
    host: &Host,
    controllers: &str,
) -> Result<PathBuf, ChaosError> {
    let common = format!(
        "brokerClusterName={CLUSTER}\nbrokerName={BROKER_NAME}\nlistenPort={BROKER_PORT}\n\
         bindAddress={ip}\nbrokerIP1={ip}\nbrokerIP2={ip}\nstorePathRootDir={store}\n\
         mappedFileSizeCommitLog=16777216\nmaxMessageSize=1048576\nautoCreateTopicEnable=true\n",
        ip = host.ip,
        store = dir.join(format!("store-{}", host.name)).display()
    );
    let role = match shape {
        Shape::Controller | Shape::Proxy => format!(
            "enableControllerMode=true\ncontrollerAddr={controllers}\nallAckInSyncStateSet=true\n\
             brokerHeartbeatInterval=300\ncontrollerHeartBeatTimeoutMills=4000\n\
             syncBrokerMetadataPeriod=1000\nhaMaxTimeSlaveNotCatchup=5000\n"
        ),
        Shape::Classic if host.name == "b0" => "brokerId=0\nbrokerRole=SYNC_MASTER\n".to_owned(),
        Shape::Classic => "brokerId=1\nbrokerRole=SLAVE\n".to_owned(),
    };
    write(
        dir.join(format!("broker-{}.properties", host.name)),
        format!("{common}{role}"),
    )
}
