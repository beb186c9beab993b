//! Plain-ACL commands (RocketMQ 4.x ACL 1.0): `updateAclConfig`, `deleteAclConfig`,
//! `updateGlobalWhiteAddr`, `clusterAclConfigVersion`, `getAclConfig`, with RocketMQ's
//! option letters and output. Changes go to every broker of a cluster, masters and slaves;
//! reads go to its masters (as RocketMQ's tools do).
//!
//! `--accessKey`/`--secretKey` are the global signing credentials; the account an ACL
//! command creates or deletes is given with `-a` (and `-s`), short letters only (RocketMQ's
//! long names for them, `--accessKey`/`--secretKey`, are taken by the signing options).
#![allow(clippy::print_stdout)] // CLI output

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::{AclConfig, ClusterAclVersionInfo, PlainAccessConfig};
use stellmq_remoting::protocol::message::UtcTime;

use super::Target;

#[derive(clap::Args, Debug)]
pub struct UpdateAclConfig {
    #[command(flatten)]
    target: Target,
    /// Set accessKey in acl config file.
    #[arg(short = 'a', value_name = "accessKey")]
    account_access_key: String,
    /// Set secretKey in acl config file.
    #[arg(short = 's', value_name = "secretKey")]
    account_secret_key: String,
    /// Set white ip Address for account in acl config file.
    #[arg(short = 'w', long = "whiteRemoteAddress")]
    white_remote_address: Option<String>,
    /// Set default topicPerm in acl config file.
    #[arg(short = 'i', long = "defaultTopicPerm")]
    default_topic_perm: Option<String>,
    /// Set default GroupPerm in acl config file.
    #[arg(short = 'u', long = "defaultGroupPerm")]
    default_group_perm: Option<String>,
    /// Set topicPerms list, eg: topicA=DENY,topicD=SUB.
    #[arg(short = 't', long = "topicPerms")]
    topic_perms: Option<String>,
    /// Set groupPerms list, eg: groupD=DENY,groupD=SUB.
    #[arg(short = 'g', long = "groupPerms")]
    group_perms: Option<String>,
    /// Set admin flag in acl config file (true or false).
    #[arg(short = 'm', long = "admin")]
    admin: Option<String>,
}

impl UpdateAclConfig {
    /// The account as RocketMQ's tool builds it: values trimmed, lists split at `,`,
    /// `admin` true only for `true` (any case).
    fn account(&self) -> PlainAccessConfig {
        let text = |v: &Option<String>| v.as_deref().map(|s| s.trim().to_owned());
        let list = |v: &Option<String>| {
            v.as_deref()
                .map(|s| s.trim().split(',').map(str::to_owned).collect())
        };
        PlainAccessConfig {
            access_key: Some(self.account_access_key.trim().to_owned()),
            secret_key: Some(self.account_secret_key.trim().to_owned()),
            white_remote_address: text(&self.white_remote_address),
            admin: self
                .admin
                .as_deref()
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            default_topic_perm: text(&self.default_topic_perm),
            default_group_perm: text(&self.default_group_perm),
            topic_perms: list(&self.topic_perms),
            group_perms: list(&self.group_perms),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct DeleteAclConfig {
    #[command(flatten)]
    target: Target,
    /// The accessKey of the account to delete.
    #[arg(short = 'a', value_name = "accessKey")]
    account_access_key: String,
}

#[derive(clap::Args, Debug)]
pub struct UpdateGlobalWhiteAddr {
    #[command(flatten)]
    target: Target,
    /// Set globalWhiteRemoteAddress list, eg: 10.10.103.*,192.168.0.*.
    #[arg(short = 'g', long = "globalWhiteRemoteAddresses")]
    addresses: String,
    /// Update global white address of specified acl file, eg: /xxx/plain_test.yml.
    #[arg(short = 'p', long = "aclFileFullPath")]
    acl_file_full_path: Option<String>,
}

/// `-b` alone, or every broker (masters and slaves) of `-c`'s cluster.
pub(super) async fn every_broker(
    admin: &AdminClient,
    t: &Target,
) -> Result<Vec<String>, ClientError> {
    if let Some(b) = &t.broker {
        return Ok(vec![b.trim().to_owned()]);
    }
    let Some(cluster) = &t.cluster else {
        return Err(ClientError::Invalid(
            "give -b brokerAddr or -c clusterName".into(),
        ));
    };
    let addrs = admin.master_and_slave_addrs(cluster.trim()).await?;
    if addrs.is_empty() {
        return Err(ClientError::Invalid(format!(
            "no broker in cluster {cluster}"
        )));
    }
    Ok(addrs)
}

pub async fn update_acl_config(admin: &AdminClient, a: UpdateAclConfig) -> Result<(), ClientError> {
    let account = a.account();
    for addr in every_broker(admin, &a.target).await? {
        admin
            .create_and_update_plain_access_config(&addr, &account)
            .await?;
        crate::outln!("create or update plain access config to {addr} success.");
    }
    crate::outln!("{}", java_to_string(&account));
    Ok(())
}

pub async fn delete_acl_config(admin: &AdminClient, a: DeleteAclConfig) -> Result<(), ClientError> {
    let access_key = a.account_access_key.trim();
    for addr in every_broker(admin, &a.target).await? {
        admin.delete_plain_access_config(&addr, access_key).await?;
        crate::outln!("delete plain access config account from {addr} success.");
    }
    crate::outln!("account's accessKey is:{access_key}");
    Ok(())
}

pub async fn update_global_white_addr(
    admin: &AdminClient,
    a: UpdateGlobalWhiteAddr,
) -> Result<(), ClientError> {
    let addresses = a.addresses.trim();
    let file = a.acl_file_full_path.as_deref().map(str::trim);
    for addr in every_broker(admin, &a.target).await? {
        admin
            .update_global_white_addr_config(&addr, addresses, file)
            .await?;
        crate::outln!("update global white remote addresses to {addr} success.");
    }
    Ok(())
}

pub async fn cluster_acl_config_version(admin: &AdminClient, t: Target) -> Result<(), ClientError> {
    if let Some(addr) = &t.broker {
        let addr = addr.trim();
        let info = admin.examine_broker_cluster_acl_version_info(addr).await?;
        for row in version_rows(&info) {
            crate::outln!("{row}");
        }
        crate::outln!("get broker's plain access config version success. Address:{addr} ");
        return Ok(());
    }
    let masters = t.addrs(admin).await?;
    crate::outln!(
        "{}",
        version_row(
            "#Cluster Name",
            "#Broker Name",
            "#Broker Addr",
            "#AclFilePath",
            "#AclConfigVersionNum",
            "#AclLastUpdateTime"
        )
    );
    for addr in masters {
        let info = admin.examine_broker_cluster_acl_version_info(&addr).await?;
        for row in version_rows(&info) {
            crate::outln!("{row}");
        }
    }
    crate::outln!("get cluster's plain access config version success.");
    Ok(())
}

pub async fn get_acl_config(admin: &AdminClient, t: Target) -> Result<(), ClientError> {
    for addr in t.addrs(admin).await? {
        let config = admin.examine_broker_cluster_acl_config(addr.trim()).await?;
        for line in acl_config_lines(&config) {
            crate::outln!("{line}");
        }
    }
    Ok(())
}

fn version_row(c: &str, b: &str, a: &str, path: &str, counter: &str, time: &str) -> String {
    format!("{c:<16}  {b:<22}  {a:<22}  {path:<20}  {counter:<22}  {time:<22}")
}

/// One row per ACL file of a broker (`clusterAclConfigVersion`).
fn version_rows(info: &ClusterAclVersionInfo) -> Vec<String> {
    info.all_acl_config_data_version
        .iter()
        .map(|(path, version)| {
            version_row(
                &info.cluster_name,
                &info.broker_name,
                &info.broker_addr,
                path,
                &version.counter.to_string(),
                &format_seconds(version.timestamp),
            )
        })
        .collect()
}

/// `yyyy-MM-dd HH:mm:ss` (UTC) of a millisecond timestamp.
fn format_seconds(ms: i64) -> String {
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute, t.second
    )
}

/// Java's `List.toString()`: `[a, b]`; an absent list is `null`.
fn java_list(list: &Option<Vec<String>>) -> String {
    match list {
        Some(items) => format!("[{}]", items.join(", ")),
        None => "null".into(),
    }
}

/// RocketMQ's `PlainAccessConfig.toString()` (the secret left out, as there).
fn java_to_string(a: &PlainAccessConfig) -> String {
    let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "null".into());
    format!(
        "PlainAccessConfig{{accessKey='{}', whiteRemoteAddress='{}', admin={}, defaultTopicPerm='{}', defaultGroupPerm='{}', topicPerms={}, groupPerms={}}}",
        text(&a.access_key),
        text(&a.white_remote_address),
        a.admin,
        text(&a.default_topic_perm),
        text(&a.default_group_perm),
        java_list(&a.topic_perms),
        java_list(&a.group_perms),
    )
}

/// `getAclConfig`'s listing: the global white list, then each account field by field.
fn acl_config_lines(config: &AclConfig) -> Vec<String> {
    let mut lines = vec![
        String::new(),
        format!(
            "{:<20}: [{}]",
            "globalWhiteRemoteAddresses",
            config.global_white_addrs.join(", ")
        ),
        String::new(),
        "accounts:".to_owned(),
    ];
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let list = |v: &Option<Vec<String>>| v.as_ref().map(|_| java_list(v)).unwrap_or_default();
    for a in &config.plain_access_configs {
        let fields = [
            ("accessKey", text(&a.access_key)),
            ("secretKey", text(&a.secret_key)),
            ("whiteRemoteAddress", text(&a.white_remote_address)),
            ("admin", a.admin.to_string()),
            ("defaultTopicPerm", text(&a.default_topic_perm)),
            ("defaultGroupPerm", text(&a.default_group_perm)),
            ("topicPerms", list(&a.topic_perms)),
            ("groupPerms", list(&a.group_perms)),
        ];
        for (name, value) in fields {
            lines.push(format!("{:<1} {name:<18}: {value}", ""));
        }
        lines.push(String::new());
    }
    lines
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::Parser;
    use stellmq_remoting::protocol::body::DataVersion;

    use super::*;
    use crate::admin::{Cli, Command};

    fn parse(args: &[&str]) -> Command {
        let mut argv = vec!["mqadmin"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).expect("parses").command
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn update_acl_config_builds_the_account_as_rocketmq() {
        let Command::UpdateAclConfig(a) = parse(&[
            "updateAclConfig",
            "-b",
            "127.0.0.1:10911",
            "-a",
            " RocketMQ ",
            "-s",
            "1234567809123",
            "-t",
            "topicA=DENY,topicD=SUB",
            "-m",
            "TRUE",
            "-w",
            "192.168.0.*",
        ]) else {
            panic!("updateAclConfig");
        };
        let account = a.account();
        assert_eq!(account.access_key.as_deref(), Some("RocketMQ"));
        assert_eq!(
            account.topic_perms,
            Some(vec!["topicA=DENY".into(), "topicD=SUB".into()])
        );
        assert_eq!(account.group_perms, None);
        assert!(account.admin);
        assert_eq!(
            java_to_string(&account),
            "PlainAccessConfig{accessKey='RocketMQ', whiteRemoteAddress='192.168.0.*', admin=true, defaultTopicPerm='null', defaultGroupPerm='null', topicPerms=[topicA=DENY, topicD=SUB], groupPerms=null}"
        );
    }

    #[test]
    fn signing_flags_and_the_account_do_not_mix() {
        let cli = Cli::try_parse_from([
            "mqadmin",
            "deleteAclConfig",
            "-c",
            "DefaultCluster",
            "-a",
            "oldUser",
            "--accessKey",
            "rocketmq2",
            "--secretKey",
            "12345678",
        ])
        .expect("parses");
        assert_eq!(cli.access_key.as_deref(), Some("rocketmq2"));
        assert_eq!(cli.secret_key.as_deref(), Some("12345678"));
        let Command::DeleteAclConfig(d) = cli.command else {
            panic!("deleteAclConfig");
        };
        assert_eq!(d.account_access_key, "oldUser");
        assert_eq!(d.target.cluster.as_deref(), Some("DefaultCluster"));
        assert!(
            Cli::try_parse_from(["mqadmin", "updateAclConfig", "-b", "x:1", "-a", "k"]).is_err(),
            "-s is required"
        );
    }

    #[test]
    fn white_addr_options() {
        let Command::UpdateGlobalWhiteAddr(w) = parse(&[
            "updateGlobalWhiteAddr",
            "-b",
            "127.0.0.1:10911",
            "-g",
            "10.10.103.*,192.168.0.*",
            "-p",
            "/opt/rocketmq/conf/plain_acl.yml",
        ]) else {
            panic!("updateGlobalWhiteAddr");
        };
        assert_eq!(w.addresses, "10.10.103.*,192.168.0.*");
        assert_eq!(
            w.acl_file_full_path.as_deref(),
            Some("/opt/rocketmq/conf/plain_acl.yml")
        );
    }

    #[test]
    fn version_rows_are_laid_out_as_rocketmq() {
        let info = ClusterAclVersionInfo {
            broker_name: "broker-a".into(),
            broker_addr: "127.0.0.1:10911".into(),
            cluster_name: "DefaultCluster".into(),
            acl_config_data_version: DataVersion::default(),
            all_acl_config_data_version: BTreeMap::from([(
                "/opt/conf/plain_acl.yml".to_owned(),
                DataVersion {
                    counter: 4,
                    state_version: 0,
                    timestamp: 1_700_000_000_000,
                },
            )]),
        };
        assert_eq!(
            version_rows(&info),
            ["DefaultCluster    broker-a                127.0.0.1:10911         /opt/conf/plain_acl.yml  4                       2023-11-14 22:13:20   "]
        );
    }

    #[test]
    fn acl_config_is_listed_field_by_field() {
        let config = AclConfig {
            global_white_addrs: vec!["10.10.103.*".into(), "192.168.0.*".into()],
            plain_access_configs: vec![PlainAccessConfig {
                access_key: Some("RocketMQ".into()),
                secret_key: Some("12345678".into()),
                admin: false,
                default_topic_perm: Some("DENY".into()),
                topic_perms: Some(vec!["topicA=DENY".into(), "topicB=PUB|SUB".into()]),
                ..PlainAccessConfig::default()
            }],
        };
        let lines = acl_config_lines(&config);
        assert_eq!(
            lines,
            [
                "",
                "globalWhiteRemoteAddresses: [10.10.103.*, 192.168.0.*]",
                "",
                "accounts:",
                "  accessKey         : RocketMQ",
                "  secretKey         : 12345678",
                "  whiteRemoteAddress: ",
                "  admin             : false",
                "  defaultTopicPerm  : DENY",
                "  defaultGroupPerm  : ",
                "  topicPerms        : [topicA=DENY, topicB=PUB|SUB]",
                "  groupPerms        : ",
                "",
            ]
        );
    }
}
