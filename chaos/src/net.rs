//! The private network of a run: every node in a Linux network namespace of its own, joined by
//! a veth pair to a bridge in a hub namespace, on a /24 that exists only inside those
//! namespaces (no default route, nothing joined to the host's namespace: no packet can leave
//! the machine).
//!
//! Faults cut links by dropping what a node *receives* from the peers it is cut from, with a
//! policy-routing rule (`ip rule ... iif eth0 blackhole`) ahead of the local table: a cut peer
//! sees silence, as behind a real partition (an outgoing blackhole route would instead fail
//! the sender's `connect` at once). Kernels without netem or nftables (this machine's) still
//! have policy routing. Neighbours are static, so a healed link answers at once (ARP would
//! otherwise stay failed for seconds after a cut).
//!
//! A congested link is a token-bucket qdisc (`tc ... tbf`) on both ends of a node's veth: it
//! delays what queues and drops what would queue too long (netem's delay and loss are not
//! built into every kernel; tbf is).
//!
//! Everything is removed when the [`Net`] is dropped, also on panic; [`Net::sweep`] removes
//! what a killed run left behind.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};

use crate::ChaosError;

/// The /24 of every run (it exists only inside the run's namespaces).
pub const SUBNET: &str = "10.77.0";

/// Namespace names of every run start with this.
const PREFIX: &str = "smqchaos";

/// A node's place on the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Short name (`ns`, `c0`, `b1`, `client`, ...).
    pub name: String,
    /// The network namespace it runs in.
    pub netns: String,
    /// Its address on the run's /24.
    pub ip: String,
}

/// The namespaces of one run.
pub struct Net {
    hub: String,
    hosts: Vec<Host>,
    /// Cuts in force: (receiver, sender) pairs whose packets the receiver drops.
    cuts: BTreeSet<(usize, usize)>,
    /// Hosts whose link is congested.
    congested: BTreeSet<usize>,
}

/// Runs `ip` with `args`; an error names the command and what it printed.
pub fn ip(args: &[&str]) -> Result<(), ChaosError> {
    run("ip", args)
}

/// Runs `tc` with `args`; an error names the command and what it printed.
fn tc(args: &[&str]) -> Result<(), ChaosError> {
    run("tc", args)
}

fn run(program: &str, args: &[&str]) -> Result<(), ChaosError> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ChaosError::Setup(format!("cannot run {program}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ChaosError::Setup(format!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Whether this process may create network namespaces (root, with `ip` installed); the
/// reason when not.
pub fn can_build() -> Result<(), String> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid != "0" {
        return Err(format!(
            "network namespaces need root (effective uid {euid})"
        ));
    }
    let probe = format!("{PREFIX}-probe-{}", std::process::id());
    ip(&["netns", "add", &probe]).map_err(|e| e.to_string())?;
    let _ = ip(&["netns", "del", &probe]);
    Ok(())
}

impl Net {
    /// Builds the hub and one namespace per name in `names` (addresses .10, .11, ... in
    /// order). The run's namespaces are named after `run` (unique per run on a machine).
    pub fn build(run: &str, names: &[&str]) -> Result<Net, ChaosError> {
        let hub = format!("{PREFIX}-{run}-hub");
        let mut net = Net {
            hub: hub.clone(),
            hosts: Vec::new(),
            cuts: BTreeSet::new(),
            congested: BTreeSet::new(),
        };
        ip(&["netns", "add", &hub])?;
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &hub, "link", "set", "br0", "up"])?;
        for (i, name) in names.iter().enumerate() {
            let host = Host {
                name: (*name).to_owned(),
                netns: format!("{PREFIX}-{run}-{name}"),
                ip: format!("{SUBNET}.{}", 10 + i),
            };
            net.hosts.push(host.clone());
            net.attach(i, &host)?;
        }
        net.add_neighbours()?;
        Ok(net)
    }

    /// The hosts, in the order given to [`Net::build`].
    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    /// The host named `name`.
    pub fn host(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }

    fn attach(&self, i: usize, host: &Host) -> Result<(), ChaosError> {
        let ns = host.netns.as_str();
        let port = format!("p{i}");
        let mac = mac_of(i);
        ip(&["netns", "add", ns])?;
        ip(&[
            "link", "add", "eth0", "address", &mac, "netns", ns, "type", "veth", "peer", "name",
            &port, "netns", &self.hub,
        ])?;
        ip(&["-n", &self.hub, "link", "set", &port, "master", "br0"])?;
        ip(&["-n", &self.hub, "link", "set", &port, "up"])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        ip(&[
            "-n",
            ns,
            "addr",
            "add",
            &format!("{}/24", host.ip),
            "dev",
            "eth0",
        ])?;
        ip(&["-n", ns, "link", "set", "eth0", "up"])?;
        // The local table moves behind the cut rules (pref 10..): they must see a packet
        // before it is delivered.
        ip(&["-n", ns, "rule", "add", "pref", "100", "lookup", "local"])?;
        ip(&["-n", ns, "rule", "del", "pref", "0"])?;
        Ok(())
    }

    fn add_neighbours(&self) -> Result<(), ChaosError> {
        for host in &self.hosts {
            for (j, peer) in self.hosts.iter().enumerate() {
                if peer != host {
                    ip(&[
                        "-n",
                        &host.netns,
                        "neigh",
                        "add",
                        &peer.ip,
                        "lladdr",
                        &mac_of(j),
                        "dev",
                        "eth0",
                        "nud",
                        "permanent",
                    ])?;
                }
            }
        }
        Ok(())
    }

    fn index(&self, name: &str) -> Result<usize, ChaosError> {
        self.hosts
            .iter()
            .position(|h| h.name == name)
            .ok_or_else(|| ChaosError::Setup(format!("no host named {name}")))
    }

    /// Cuts every link between a host of `a` and a host of `b`, both ways.
    pub fn cut(&mut self, a: &[&str], b: &[&str]) -> Result<(), ChaosError> {
        for x in a {
            for y in b {
                let (i, j) = (self.index(x)?, self.index(y)?);
                if i != j {
                    self.drop_from(i, j)?;
                    self.drop_from(j, i)?;
                }
            }
        }
        Ok(())
    }

    /// Cuts `name` from every other host.
    pub fn isolate(&mut self, name: &str) -> Result<(), ChaosError> {
        let others: Vec<String> = self
            .hosts
            .iter()
            .filter(|h| h.name != name)
            .map(|h| h.name.clone())
            .collect();
        let others: Vec<&str> = others.iter().map(String::as_str).collect();
        self.cut(&[name], &others)
    }

    /// Shapes `name`'s link, both ways, to `kbit` kilobits per second, dropping what would
    /// queue longer than `latency_ms`.
    pub fn congest(&mut self, name: &str, kbit: u32, latency_ms: u32) -> Result<(), ChaosError> {
        let i = self.index(name)?;
        if self.congested.contains(&i) {
            return Ok(());
        }
        let rate = format!("{kbit}kbit");
        let latency = format!("{latency_ms}ms");
        // A bucket of a few full frames: a burst never outruns the rate for long.
        let shape = [
            "root", "tbf", "rate", &rate, "burst", "6kb", "latency", &latency,
        ];
        let ns = self.hosts[i].netns.clone();
        let port = format!("p{i}");
        let mut out = vec!["-n", &ns, "qdisc", "add", "dev", "eth0"];
        out.extend(shape);
        tc(&out)?;
        self.congested.insert(i);
        let mut back = vec!["-n", &self.hub, "qdisc", "add", "dev", &port];
        back.extend(shape);
        tc(&back)
    }

    /// Removes every cut and every congestion.
    pub fn heal(&mut self) -> Result<(), ChaosError> {
        let congested: Vec<usize> = self.congested.iter().copied().collect();
        for i in congested {
            let ns = self.hosts[i].netns.clone();
            let port = format!("p{i}");
            tc(&["-n", &ns, "qdisc", "del", "dev", "eth0", "root"])?;
            // Absent when the first half of `congest` failed.
            let _ = tc(&["-n", &self.hub, "qdisc", "del", "dev", &port, "root"]);
            self.congested.remove(&i);
        }
        let cuts: Vec<(usize, usize)> = self.cuts.iter().copied().collect();
        for (receiver, sender) in cuts {
            let (ns, from) = self.rule_parts(receiver, sender)?;
            ip(&[
                "-n", &ns, "rule", "del", "pref", "10", "from", &from, "iif", "eth0",
            ])?;
            self.cuts.remove(&(receiver, sender));
        }
        Ok(())
    }

    fn drop_from(&mut self, receiver: usize, sender: usize) -> Result<(), ChaosError> {
        if self.cuts.contains(&(receiver, sender)) {
            return Ok(());
        }
        let (ns, from) = self.rule_parts(receiver, sender)?;
        ip(&[
            "-n",
            &ns,
            "rule",
            "add",
            "pref",
            "10",
            "from",
            &from,
            "iif",
            "eth0",
            "blackhole",
        ])?;
        self.cuts.insert((receiver, sender));
        Ok(())
    }

    fn rule_parts(&self, receiver: usize, sender: usize) -> Result<(String, String), ChaosError> {
        let (Some(r), Some(s)) = (self.hosts.get(receiver), self.hosts.get(sender)) else {
            return Err(ChaosError::Setup("a cut names an unknown host".into()));
        };
        Ok((r.netns.clone(), s.ip.clone()))
    }

    /// Kills every process left in the run's namespaces, then removes them.
    fn tear_down(&mut self) {
        for host in &self.hosts {
            kill_all_in(&host.netns);
        }
        for host in &self.hosts {
            let _ = ip(&["netns", "del", &host.netns]);
        }
        let _ = ip(&["netns", "del", &self.hub]);
    }

    /// Removes the namespaces of earlier runs on this machine that did not end (a run killed
    /// with SIGKILL cannot tear down); returns how many it removed.
    pub fn sweep() -> usize {
        let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
            return 0;
        };
        let mut removed = 0;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Some(name) = line.split_whitespace().next() else {
                continue;
            };
            if name.starts_with(PREFIX) && run_is_gone(name) {
                kill_all_in(name);
                if ip(&["netns", "del", name]).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        self.tear_down();
    }
}

/// A stable MAC per host index (locally administered).
fn mac_of(i: usize) -> String {
    format!("02:77:00:00:{:02x}:{:02x}", (i >> 8) & 0xff, i & 0xff)
}

/// SIGKILL to every process in namespace `netns`.
fn kill_all_in(netns: &str) {
    let Ok(out) = Command::new("ip").args(["netns", "pids", netns]).output() else {
        return;
    };
    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
        let _ = Command::new("kill")
            .args(["-KILL", pid])
            .stderr(Stdio::null())
            .status();
    }
}

/// Whether the run that named namespace `name` (`smqchaos-<pid>-...`) has ended.
fn run_is_gone(name: &str) -> bool {
    let pid = name
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.split('-').next())
        .and_then(|pid| pid.parse::<u32>().ok());
    match pid {
        Some(pid) => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        None => false,
    }
}
