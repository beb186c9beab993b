//! The server binaries as users run them: `mqnamesrv`, `mqbroker` and `mqadmin` as child
//! processes, found next to the test executable, started until their boot line, and killed
//! when their [`Process`] guard is dropped, whether the test passed or failed.
//!
//! `cargo test --workspace` builds the binaries before it runs any test; `cargo test -p
//! stellmq-testkit` alone does not, so build them first (`cargo build --bins`) or point
//! `STELLMQ_BIN_DIR` at a directory that holds them.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use parking_lot::Mutex;

/// The environment variable naming the directory of the binaries, instead of the directory
/// of the running test executable.
pub const BIN_DIR_ENV: &str = "STELLMQ_BIN_DIR";

/// How long a server may take to print its boot line.
const BOOT_TIMEOUT: Duration = Duration::from_secs(30);

/// Output lines kept per process, printed when a test fails.
const KEPT_LINES: usize = 300;

/// The path of the workspace binary `name` (`mqbroker`, `mqnamesrv`, `mqadmin`, ...,
/// `examples/<name>` for an example): in
/// `$STELLMQ_BIN_DIR` if set, else in the cargo profile directory of the running test
/// (`target/<profile>/`). Panics, naming the command that builds it, when it is missing.
pub fn bin_path(name: &str) -> PathBuf {
    let dir = match std::env::var_os(BIN_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => profile_dir(),
    };
    let path = dir.join(name);
    assert!(
        path.is_file(),
        "{name} is not built: no {}. Build the binaries with `cargo build --bins` (examples: \
         `cargo build --examples`; `cargo test --workspace --all-targets` builds both before \
         its tests), or set {BIN_DIR_ENV} to the directory that holds them.",
        path.display()
    );
    path
}

/// `target/<profile>/`: test executables live in its `deps/` (examples in `examples/`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the path of the test executable");
    let mut dir = exe
        .parent()
        .expect("the test executable's directory")
        .to_owned();
    if dir
        .file_name()
        .is_some_and(|n| n == "deps" || n == "examples")
    {
        dir.pop();
    }
    dir
}

/// A command running binary `name` (see [`bin_path`]).
pub fn command(name: &str) -> Command {
    Command::new(bin_path(name))
}

/// A child process that is killed (SIGKILL) and reaped when dropped. Its stdout and stderr
/// are read all along (a server never blocks on a full pipe) and their last lines are
/// printed if the test panics.
pub struct Process {
    child: Child,
    name: String,
    output: Arc<Mutex<VecDeque<String>>>,
}

impl Process {
    /// Spawns `command` and waits, blocking, for the first output line `boot` recognises;
    /// returns the process and what `boot` extracted from that line (e.g. an address).
    pub fn spawn_until(
        mut command: Command,
        boot: impl Fn(&str) -> Option<String> + Send + 'static,
    ) -> (Self, String) {
        let name = Path::new(command.get_program())
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let output = Arc::new(Mutex::new(VecDeque::new()));
        let (booted, boot_line) = mpsc::channel();
        let stdout = child.stdout.take().expect("piped stdout");
        keep_lines(stdout, output.clone(), move |line| {
            if let Some(found) = boot(line) {
                let _ = booted.send(found);
            }
        });
        let stderr = child.stderr.take().expect("piped stderr");
        keep_lines(stderr, output.clone(), |_| {});
        let process = Self {
            child,
            name,
            output,
        };
        match boot_line.recv_timeout(BOOT_TIMEOUT) {
            Ok(found) => (process, found),
            Err(e) => panic!(
                "{} printed no boot line ({e}); its output:\n{}",
                process.name,
                process.output().join("\n")
            ),
        }
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The last lines it printed (stdout and stderr, interleaved as read).
    pub fn output(&self) -> Vec<String> {
        self.output.lock().iter().cloned().collect()
    }

    /// Sends `signal` (`-TERM`, `-STOP`, `-CONT`, ...) without waiting for its effect.
    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(signal)
            .arg(self.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} {}", self.id());
    }

    /// SIGKILL, then reaps it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then waits (blocking) up to `timeout` for it to exit; its exit status.
    pub fn terminate(&mut self, timeout: Duration) -> ExitStatus {
        self.signal("-TERM");
        self.wait_exit(timeout)
    }

    /// Waits, blocking, up to `timeout` for it to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let mut status = None;
        crate::wait::wait_for_blocking(&format!("{} exits", self.name), timeout, || {
            status = self.child.try_wait().expect("try_wait");
            status.is_some()
        });
        status.expect("exited")
    }

    /// Waits up to `timeout` for it to exit, without blocking the runtime.
    pub async fn exit(&mut self, timeout: Duration) -> ExitStatus {
        let mut status = None;
        crate::wait::wait_for(&format!("{} exits", self.name), timeout, || {
            status = self.child.try_wait().expect("try_wait");
            status.is_some()
        })
        .await;
        status.expect("exited")
    }

    /// Blocks until every thread of the process is stopped: `kill -STOP` returns before a
    /// thread running on another core has noticed the signal, and such a thread may still
    /// answer a request.
    pub fn wait_until_stopped(&self) {
        let tasks = format!("/proc/{}/task", self.id());
        crate::wait::wait_for_blocking(
            &format!("every thread of {} stops", self.name),
            crate::wait::TIMEOUT,
            || {
                std::fs::read_dir(&tasks)
                    .expect("the process's threads")
                    .flatten()
                    .all(|task| {
                        // The state is the field after the parenthesised command name.
                        std::fs::read_to_string(task.path().join("stat"))
                            .ok()
                            .and_then(|stat| {
                                stat.rsplit_once(')')
                                    .map(|(_, rest)| rest.trim_start().starts_with('T'))
                            })
                            .unwrap_or(false)
                    })
            },
        );
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let running = matches!(self.child.try_wait(), Ok(None));
        if running {
            self.kill();
        }
        if std::thread::panicking() {
            eprintln!(
                "---- last output of {} (pid {}) ----\n{}\n---- end of {} ----",
                self.name,
                self.id(),
                self.output().join("\n"),
                self.name
            );
        }
    }
}

/// Reads `stream` line by line on a thread of its own until it closes, keeping the last
/// lines in `kept` and showing each to `watch`.
fn keep_lines(
    stream: impl Read + Send + 'static,
    kept: Arc<Mutex<VecDeque<String>>>,
    watch: impl Fn(&str) + Send + 'static,
) {
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            watch(&line);
            let mut kept = kept.lock();
            if kept.len() == KEPT_LINES {
                kept.pop_front();
            }
            kept.push_back(line);
        }
    });
}

/// The address in `mqbroker`'s boot line (`The broker[<addr>] boot success...`).
pub fn broker_boot_line(line: &str) -> Option<String> {
    let rest = line.split("The broker[").nth(1)?;
    rest.split(']').next().map(str::to_owned)
}

/// The address in `mqnamesrv`'s boot line (`The Name Server boot success... address <addr>`).
pub fn namesrv_boot_line(line: &str) -> Option<String> {
    let rest = line.split("boot success").nth(1)?;
    rest.rsplit(' ').next().map(|addr| addr.trim().to_owned())
}

/// Starts `mqbroker -c <conf> -n <ns_addr>` and waits for its boot line; returns the process
/// and the broker's address.
pub async fn spawn_mqbroker(conf: &Path, ns_addr: &str) -> (Process, String) {
    let mut mqbroker = command("mqbroker");
    mqbroker.arg("-c").arg(conf).args(["-n", ns_addr]);
    spawn_broker_command(mqbroker).await
}

/// Runs a command that ends up exec'ing `mqbroker` (e.g. through `unshare`) and waits for
/// the broker's boot line; returns the process and the broker's address.
pub async fn spawn_broker_command(command: Command) -> (Process, String) {
    tokio::task::spawn_blocking(move || Process::spawn_until(command, broker_boot_line))
        .await
        .expect("the broker process starts")
}

/// Starts `mqnamesrv` on loopback and an ephemeral port, keeping its files in `dir`
/// ([`spawn_mqnamesrv`] with a `namesrv.conf` written there).
pub fn spawn_mqnamesrv_in(dir: &Path) -> (Process, String) {
    let conf = dir.join("namesrv.conf");
    std::fs::write(
        &conf,
        format!(
            "listenPort=0\nbindAddress=127.0.0.1\nkvConfigPath={}\nconfigStorePath={}\n",
            dir.join("kv.json").display(),
            dir.join("namesrv.properties").display()
        ),
    )
    .unwrap_or_else(|e| panic!("cannot write {}: {e}", conf.display()));
    spawn_mqnamesrv(&conf)
}

/// Starts `mqnamesrv -c <conf>` and waits (blocking) for its boot line; returns the process
/// and the name server's address.
pub fn spawn_mqnamesrv(conf: &Path) -> (Process, String) {
    let mut mqnamesrv = command("mqnamesrv");
    mqnamesrv.arg("-c").arg(conf);
    Process::spawn_until(mqnamesrv, namesrv_boot_line)
}
