//! ACL 2.0 commands (RocketMQ 5.3+): `createUser`, `updateUser`, `deleteUser`, `getUser`,
//! `listUser`, `copyUser`, `createAcl`, `updateAcl`, `deleteAcl`, `getAcl`, `listAcl`,
//! `copyAcl`, with RocketMQ 5's option letters and output. Changes go to every broker of a
//! cluster, masters and slaves; reads go to its masters (as RocketMQ's tools do).
#![allow(clippy::print_stdout)] // CLI output

use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::body::auth::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};

use super::acl::every_broker;
use super::Target;

const USER_FORMAT_HEADER: [&str; 4] = ["#UserName", "#Password", "#UserType", "#UserStatus"];
const ACL_FORMAT_HEADER: [&str; 6] = [
    "#Subject",
    "#PolicyType",
    "#Resource",
    "#Actions",
    "#SourceIp",
    "#Decision",
];

#[derive(clap::Args, Debug)]
pub struct CreateUser {
    #[command(flatten)]
    target: Target,
    /// the username of user to create.
    #[arg(short = 'u', long = "username")]
    username: String,
    /// the password of user to create
    #[arg(short = 'p', long = "password")]
    password: String,
    /// the userType of user to create (Super or Normal)
    #[arg(short = 't', long = "userType")]
    user_type: Option<String>,
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("change").required(true).multiple(true).args(["password", "user_type", "user_status"])))]
pub struct UpdateUser {
    #[command(flatten)]
    target: Target,
    /// the username of user to update.
    #[arg(short = 'u', long = "username")]
    username: String,
    /// the password of user to update
    #[arg(short = 'p', long = "password")]
    password: Option<String>,
    /// the userType of user to update (Super or Normal)
    #[arg(short = 't', long = "userType")]
    user_type: Option<String>,
    /// the userStatus of user to update (enable or disable)
    #[arg(short = 's', long = "userStatus")]
    user_status: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct UserName {
    #[command(flatten)]
    target: Target,
    /// the username of the user.
    #[arg(short = 'u', long = "username")]
    username: String,
}

#[derive(clap::Args, Debug)]
pub struct ListUser {
    #[command(flatten)]
    target: Target,
    /// the filter of user names (a part of them).
    #[arg(short = 'f', long = "filter")]
    filter: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct CopyUser {
    /// the source broker that the users copy from
    #[arg(short = 'f', long = "fromBroker")]
    from: String,
    /// the target broker that the users copy to
    #[arg(short = 't', long = "toBroker")]
    to: String,
    /// the usernames of users to copy (comma-separated; all when absent)
    #[arg(short = 'u', long = "usernames")]
    usernames: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct PutAcl {
    #[command(flatten)]
    target: Target,
    /// the subject of acl, e.g. User:alice.
    #[arg(short = 's', long = "subject")]
    subject: String,
    /// the resources of acl (comma-separated), e.g. Topic:orders,Group:app-*.
    #[arg(short = 'r', long = "resources")]
    resources: String,
    /// the actions of acl (comma-separated): Pub, Sub, Create, Update, Delete, Get, List, All.
    #[arg(short = 'a', long = "actions")]
    actions: String,
    /// the source ips of acl (comma-separated addresses or networks).
    #[arg(short = 'i', long = "sourceIp")]
    source_ip: Option<String>,
    /// the decision of acl: Allow or Deny.
    #[arg(short = 'd', long = "decision")]
    decision: String,
}

#[derive(clap::Args, Debug)]
pub struct DeleteAcl {
    #[command(flatten)]
    target: Target,
    /// the subject of acl to delete.
    #[arg(short = 's', long = "subject")]
    subject: String,
    /// the resource of the entry to delete (the whole acl when absent).
    #[arg(short = 'r', long = "resources")]
    resource: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct GetAcl {
    #[command(flatten)]
    target: Target,
    /// the subject of acl to get.
    #[arg(short = 's', long = "subject")]
    subject: String,
}

#[derive(clap::Args, Debug)]
pub struct ListAcl {
    #[command(flatten)]
    target: Target,
    /// the subject filter of acl.
    #[arg(short = 's', long = "subject")]
    subject: Option<String>,
    /// the resource filter of acl.
    #[arg(short = 'r', long = "resource")]
    resource: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct CopyAcl {
    /// the source broker that the acls copy from
    #[arg(short = 'f', long = "fromBroker")]
    from: String,
    /// the target broker that the acls copy to
    #[arg(short = 't', long = "toBroker")]
    to: String,
    /// the subjects of acls to copy (comma-separated; all when absent)
    #[arg(short = 's', long = "subjects")]
    subjects: Option<String>,
}

fn trimmed(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect()
}

pub async fn create_user(admin: &AdminClient, a: CreateUser) -> Result<(), ClientError> {
    let user = UserInfo {
        username: Some(a.username.trim().to_owned()),
        password: Some(a.password.trim().to_owned()),
        user_type: trimmed(&a.user_type),
        user_status: None,
    };
    for addr in every_broker(admin, &a.target).await? {
        admin.create_user(&addr, &user).await?;
        crate::outln!("create user to {addr} success.");
    }
    Ok(())
}

pub async fn update_user(admin: &AdminClient, a: UpdateUser) -> Result<(), ClientError> {
    let user = UserInfo {
        username: Some(a.username.trim().to_owned()),
        password: trimmed(&a.password),
        user_type: trimmed(&a.user_type),
        user_status: trimmed(&a.user_status),
    };
    for addr in every_broker(admin, &a.target).await? {
        admin.update_user(&addr, &user).await?;
        crate::outln!("update user to {addr} success.");
    }
    Ok(())
}

pub async fn delete_user(admin: &AdminClient, a: UserName) -> Result<(), ClientError> {
    for addr in every_broker(admin, &a.target).await? {
        admin.delete_user(&addr, a.username.trim()).await?;
        crate::outln!("delete user to {addr} success.");
    }
    Ok(())
}

fn print_user_row(cells: [&str; 4]) {
    crate::outln!(
        "{:<16}  {:<22}  {:<22}  {:<22}",
        cells[0],
        cells[1],
        cells[2],
        cells[3]
    );
}

fn print_user(user: &UserInfo) {
    let cell = |v: &Option<String>| v.clone().unwrap_or_else(|| "null".to_owned());
    let cells = [
        cell(&user.username),
        cell(&user.password),
        cell(&user.user_type),
        cell(&user.user_status),
    ];
    print_user_row([&cells[0], &cells[1], &cells[2], &cells[3]]);
}

/// The first master that has the user answers.
pub async fn get_user(admin: &AdminClient, a: UserName) -> Result<(), ClientError> {
    print_user_row(USER_FORMAT_HEADER);
    for addr in a.target.addrs(admin).await? {
        if let Some(user) = admin.get_user(&addr, a.username.trim()).await? {
            print_user(&user);
            break;
        }
    }
    Ok(())
}

/// The first master with users answers.
pub async fn list_user(admin: &AdminClient, a: ListUser) -> Result<(), ClientError> {
    print_user_row(USER_FORMAT_HEADER);
    let filter = trimmed(&a.filter).unwrap_or_default();
    for addr in a.target.addrs(admin).await? {
        let users = admin.list_users(&addr, &filter).await?;
        if users.is_empty() {
            continue;
        }
        users.iter().for_each(print_user);
        crate::outln!("get user from {addr} success.");
        break;
    }
    Ok(())
}

/// Creates each user the target lacks and updates the others.
pub async fn copy_user(admin: &AdminClient, a: CopyUser) -> Result<(), ClientError> {
    let (from, to) = (a.from.trim(), a.to.trim());
    let users = match trimmed(&a.usernames) {
        None => admin.list_users(from, "").await?,
        Some(names) => {
            let mut users = Vec::new();
            for name in list(&names) {
                match admin.get_user(from, &name).await? {
                    Some(user) => users.push(user),
                    None => crate::outln!("user {name} is not on {from}; skipped."),
                }
            }
            users
        }
    };
    for user in users {
        let name = user.username.clone().unwrap_or_default();
        if admin.get_user(to, &name).await?.is_none() {
            admin.create_user(to, &user).await?;
        } else {
            admin.update_user(to, &user).await?;
        }
        crate::outln!("copy user of {name} from {from} to {to} success.");
    }
    Ok(())
}

impl PutAcl {
    /// One policy (of the broker's default type, Custom) with an entry per resource, all
    /// sharing the actions, source addresses and decision, as RocketMQ's tool builds it.
    fn acl(&self) -> AclInfo {
        let actions = list(&self.actions);
        let source_ips = self.source_ip.as_deref().map(list);
        let decision = self.decision.trim().to_owned();
        let entries = list(&self.resources)
            .into_iter()
            .map(|resource| PolicyEntryInfo {
                resource: Some(resource),
                actions: Some(actions.clone()),
                source_ips: source_ips.clone(),
                decision: Some(decision.clone()),
            })
            .collect();
        AclInfo {
            subject: Some(self.subject.trim().to_owned()),
            policies: Some(vec![PolicyInfo {
                policy_type: None,
                entries: Some(entries),
            }]),
        }
    }
}

pub async fn create_acl(admin: &AdminClient, a: PutAcl) -> Result<(), ClientError> {
    let acl = a.acl();
    for addr in every_broker(admin, &a.target).await? {
        admin.create_acl(&addr, &acl).await?;
        crate::outln!("create acl to {addr} success.");
    }
    Ok(())
}

pub async fn update_acl(admin: &AdminClient, a: PutAcl) -> Result<(), ClientError> {
    let acl = a.acl();
    for addr in every_broker(admin, &a.target).await? {
        admin.update_acl(&addr, &acl).await?;
        crate::outln!("update acl to {addr} success.");
    }
    Ok(())
}

pub async fn delete_acl(admin: &AdminClient, a: DeleteAcl) -> Result<(), ClientError> {
    let resource = trimmed(&a.resource);
    for addr in every_broker(admin, &a.target).await? {
        admin
            .delete_acl(&addr, a.subject.trim(), resource.as_deref())
            .await?;
        crate::outln!("delete acl to {addr} success.");
    }
    Ok(())
}

fn print_acl_row(cells: [&str; 6]) {
    crate::outln!(
        "{:<16}  {:<10}  {:<22}  {:<20}  {:<24}  {:<10}",
        cells[0],
        cells[1],
        cells[2],
        cells[3],
        cells[4],
        cells[5]
    );
}

/// Java's `List.toString()`: `[Pub, Sub]`; an absent list is `null`.
fn java_list(items: &Option<Vec<String>>) -> String {
    match items {
        None => "null".to_owned(),
        Some(items) => format!("[{}]", items.join(", ")),
    }
}

fn print_acl(acl: &AclInfo) {
    let subject = acl.subject.clone().unwrap_or_default();
    for policy in acl.policies.iter().flatten() {
        let policy_type = policy.policy_type.clone().unwrap_or_default();
        for entry in policy.entries.iter().flatten() {
            let cells = [
                entry.resource.clone().unwrap_or_default(),
                java_list(&entry.actions),
                java_list(&entry.source_ips),
                entry.decision.clone().unwrap_or_default(),
            ];
            print_acl_row([
                &subject,
                &policy_type,
                &cells[0],
                &cells[1],
                &cells[2],
                &cells[3],
            ]);
        }
    }
}

/// Every master's answer.
pub async fn get_acl(admin: &AdminClient, a: GetAcl) -> Result<(), ClientError> {
    print_acl_row(ACL_FORMAT_HEADER);
    for addr in a.target.addrs(admin).await? {
        if let Some(acl) = admin.get_acl(&addr, a.subject.trim()).await? {
            print_acl(&acl);
        }
    }
    Ok(())
}

pub async fn list_acl(admin: &AdminClient, a: ListAcl) -> Result<(), ClientError> {
    print_acl_row(ACL_FORMAT_HEADER);
    let subject = trimmed(&a.subject).unwrap_or_default();
    let resource = trimmed(&a.resource).unwrap_or_default();
    for addr in a.target.addrs(admin).await? {
        for acl in admin.list_acls(&addr, &subject, &resource).await? {
            print_acl(&acl);
        }
    }
    Ok(())
}

/// Creates each subject's ACL on the target, or merges into the one there.
pub async fn copy_acl(admin: &AdminClient, a: CopyAcl) -> Result<(), ClientError> {
    let (from, to) = (a.from.trim(), a.to.trim());
    let acls = match trimmed(&a.subjects) {
        None => admin.list_acls(from, "", "").await?,
        Some(subjects) => {
            let mut acls = Vec::new();
            for subject in list(&subjects) {
                match admin.get_acl(from, &subject).await? {
                    Some(acl) => acls.push(acl),
                    None => crate::outln!("acl of {subject} is not on {from}; skipped."),
                }
            }
            acls
        }
    };
    for acl in acls {
        let subject = acl.subject.clone().unwrap_or_default();
        if admin.get_acl(to, &subject).await.ok().flatten().is_none() {
            admin.create_acl(to, &acl).await?;
        } else {
            admin.update_acl(to, &acl).await?;
        }
        crate::outln!("copy acl of {subject} from {from} to {to} success.");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    use crate::admin::{Cli, Command};

    #[test]
    fn acl_options_build_one_policy_with_an_entry_per_resource() {
        let cli = Cli::try_parse_from([
            "mqadmin",
            "createAcl",
            "-c",
            "DefaultCluster",
            "-s",
            "User:app",
            "-r",
            "Topic:orders, Group:g*",
            "-a",
            "Pub,Sub",
            "-i",
            "10.0.0.0/8",
            "-d",
            "Allow",
        ])
        .expect("parses");
        let Command::CreateAcl(a) = cli.command else {
            panic!("createAcl");
        };
        let acl = a.acl();
        assert_eq!(acl.subject.as_deref(), Some("User:app"));
        let entries = acl.policies.expect("policies")[0]
            .entries
            .clone()
            .expect("entries");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].resource.as_deref(), Some("Group:g*"));
        assert_eq!(
            entries[1].actions,
            Some(vec!["Pub".to_owned(), "Sub".to_owned()])
        );
        assert_eq!(entries[1].source_ips, Some(vec!["10.0.0.0/8".to_owned()]));
    }

    #[test]
    fn update_user_needs_something_to_change() {
        assert!(Cli::try_parse_from(["mqadmin", "updateUser", "-b", "x:1", "-u", "a"]).is_err());
        assert!(Cli::try_parse_from([
            "mqadmin",
            "updateUser",
            "-b",
            "x:1",
            "-u",
            "a",
            "-s",
            "disable"
        ])
        .is_ok());
        assert_eq!(
            java_list(&Some(vec!["Pub".into(), "Sub".into()])),
            "[Pub, Sub]"
        );
        assert_eq!(java_list(&None), "null");
    }
}
