//! The servers under attack: `mqnamesrv` and `mqbroker` started as users start them, in a
//! temporary directory, each writing its whole log to a file (every line is searched for
//! panics afterwards), and killed when dropped.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use stellmq_testkit::process::{bin_path, broker_boot_line, namesrv_boot_line};

const BOOT_TIMEOUT: Duration = Duration::from_secs(30);

/// One server process.
pub struct Server {
    pub name: &'static str,
    pub addr: String,
    child: Child,
    log: PathBuf,
}

/// Memory of a process, from `/proc/<pid>/status`, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    pub rss_anon_kib: u64,
    pub peak_rss_kib: u64,
}

impl Server {
    fn spawn(
        name: &'static str,
        args: &[&str],
        log: PathBuf,
        boot: fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let out = File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(bin_path(name))
            .args(args)
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let mut server = Self {
            name,
            addr: String::new(),
            child,
            log,
        };
        let deadline = Instant::now() + BOOT_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(addr) = server.lines().iter().find_map(|l| boot(l)) {
                server.addr = addr;
                return Ok(server);
            }
            if !server.alive() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "{name} did not start; its log:\n{}",
            server.lines().join("\n")
        ))
    }

    /// Every line it has written.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Lines that report a panic (a task that panicked is isolated, but it is a finding).
    pub fn panics(&self) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.contains("panicked at"))
            .collect()
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn memory(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        Memory {
            rss_anon_kib: field("RssAnon"),
            peak_rss_kib: field("VmHWM"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A name server, a broker registered with it and mqproxy in front of them, in a temporary
/// directory.
pub struct Servers {
    pub namesrv: Server,
    pub broker: Server,
    pub proxy: Server,
    _dir: tempfile::TempDir,
}

impl Servers {
    pub fn spawn() -> Result<Self, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let root = dir.path();
        let namesrv_conf = write(
            root,
            "namesrv.conf",
            format!(
                "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\nconfigStorePath={}\n",
                root.join("kv.json").display(),
                root.join("namesrv.properties").display()
            ),
        )?;
        let namesrv = Server::spawn(
            "mqnamesrv",
            &["-c", &namesrv_conf],
            root.join("namesrv.log"),
            namesrv_boot_line,
        )?;
        let broker_conf = write(
            root,
            "broker.conf",
            format!(
                "listenPort=0\nbindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\nstorePathRootDir={}\n\
                 mappedFileSizeCommitLog=67108864\nmaxMessageSize=1048576\n\
                 brokerConfigPath={}\n",
                root.join("store").display(),
                root.join("broker-config.properties").display()
            ),
        )?;
        let broker = Server::spawn(
            "mqbroker",
            &["-c", &broker_conf, "-n", &namesrv.addr],
            root.join("broker.log"),
            broker_boot_line,
        )?;
        let proxy_conf = write(
            root,
            "rmq-proxy.json",
            format!(
                "{{\"rocketMQClusterName\": \"DefaultCluster\", \"namesrvAddr\": \"{}\", \
                 \"grpcServerPort\": 0, \"bindAddress\": \"127.0.0.1\"}}",
                namesrv.addr
            ),
        )?;
        let proxy = Server::spawn(
            "mqproxy",
            &["--pc", &proxy_conf],
            root.join("proxy.log"),
            proxy_boot_line,
        )?;
        Ok(Self {
            namesrv,
            broker,
            proxy,
            _dir: dir,
        })
    }
}

impl Servers {
    pub fn all(&self) -> [&Server; 3] {
        [&self.namesrv, &self.broker, &self.proxy]
    }

    pub fn all_mut(&mut self) -> [&mut Server; 3] {
        [&mut self.namesrv, &mut self.broker, &mut self.proxy]
    }

    /// Copies the logs into `dir` (`mqnamesrv.log`, `mqbroker.log`, `mqproxy.log`).
    pub fn keep_logs(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for server in self.all() {
            let to = dir.join(format!("{}.log", server.name));
            std::fs::copy(&server.log, &to).map_err(|e| format!("{}: {e}", to.display()))?;
        }
        Ok(())
    }
}

/// The address in mqproxy's boot line (`... gRPC address <addr>`).
fn proxy_boot_line(line: &str) -> Option<String> {
    let rest = line.split("gRPC address ").nth(1)?;
    rest.split_whitespace().next().map(str::to_owned)
}

fn write(dir: &Path, name: &str, text: String) -> Result<String, String> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(path.display().to_string())
}
