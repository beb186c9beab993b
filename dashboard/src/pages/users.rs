//! ACL 2.0's users and policies: lists read from a master, and forms that change every
//! broker the name servers know (masters and slaves), as `mqadmin ... -c` does. Passwords
//! are never shown.

use axum::extract::State;
use axum::response::Html;
use stellmq_client::AdminClient;
use stellmq_remoting::protocol::body::auth::{AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo};

use crate::error::{ConsoleError, PageResult};
use crate::form::Fields;
use crate::html::{cell, esc, link, Form, Page, Table};
use crate::server::AppState;

/// A master that answers the lists.
async fn a_master(admin: &AdminClient) -> Result<String, ConsoleError> {
    admin
        .master_addrs(None)
        .await?
        .into_iter()
        .map(|(_, addr)| addr)
        .next()
        .ok_or_else(|| ConsoleError::NotFound("no master broker is registered".into()))
}

/// Every broker the name servers know, masters and slaves.
async fn every_broker(admin: &AdminClient) -> Result<Vec<String>, ConsoleError> {
    let info = admin.cluster_info().await?;
    let addrs: Vec<String> = info
        .broker_addr_table
        .values()
        .flat_map(|b| b.broker_addrs.0.values().cloned())
        .collect();
    if addrs.is_empty() {
        return Err(ConsoleError::NotFound("no broker is registered".into()));
    }
    Ok(addrs)
}

fn list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .collect()
}

fn done(title: &str, note: &str, back: &str) -> PageResult {
    let mut page = Page::new(title);
    page.ok(note);
    page.raw(&link(back, &[], "Back"));
    Ok(Html(page.finish()))
}

pub async fn users(State(console): State<AppState>) -> PageResult {
    let admin = &console.admin;
    let users = admin.list_users(&a_master(admin).await?, "").await?;
    let mut page = Page::new("Users");
    let mut table = Table::new("users", &["User", "Type", "Status", ""]);
    for user in &users {
        let name = user.username.clone().unwrap_or_default();
        let status = user.user_status.clone().unwrap_or_default();
        let flip = if status.eq_ignore_ascii_case("disable") {
            "enable"
        } else {
            "disable"
        };
        let actions = format!(
            "{}{}",
            Form::post("/users/status", &format!("status-{name}"))
                .hidden("username", &name)
                .hidden("status", flip)
                .submit(flip),
            Form::post("/users/delete", &format!("delete-{name}"))
                .hidden("username", &name)
                .submit("delete"),
        );
        table.row_html(&[
            cell(&name),
            cell(user.user_type.as_deref().unwrap_or_default()),
            cell(&status),
            actions,
        ]);
    }
    page.raw(&table.finish());
    page.heading("New user");
    page.raw(
        &Form::post("/users/create", "create-user")
            .input("User", "username", "")
            .password("Password", "password")
            .input("Type (Normal or Super)", "userType", "Normal")
            .submit("Create"),
    );
    Ok(Html(page.finish()))
}

pub async fn create_user(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let user = UserInfo {
        username: Some(fields.required("username")?.trim().to_owned()),
        password: Some(fields.required("password")?.to_owned()),
        user_type: fields.get("userType").map(|t| t.trim().to_owned()),
        user_status: None,
    };
    for addr in every_broker(&console.admin).await? {
        console.admin.create_user(&addr, &user).await?;
    }
    let name = user.username.unwrap_or_default();
    tracing::info!(user = %name, "CONSOLE_USER_CREATED");
    done("Users", &format!("User {name} created"), "/users")
}

pub async fn set_status(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let name = fields.required("username")?.trim().to_owned();
    let status = fields.required("status")?.trim().to_owned();
    let user = UserInfo {
        username: Some(name.clone()),
        user_status: Some(status.clone()),
        ..UserInfo::default()
    };
    for addr in every_broker(&console.admin).await? {
        console.admin.update_user(&addr, &user).await?;
    }
    tracing::info!(user = %name, %status, "CONSOLE_USER_STATUS_CHANGED");
    done("Users", &format!("User {name}: {status}"), "/users")
}

pub async fn delete_user(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let name = fields.required("username")?.trim().to_owned();
    for addr in every_broker(&console.admin).await? {
        console.admin.delete_user(&addr, &name).await?;
    }
    tracing::info!(user = %name, "CONSOLE_USER_DELETED");
    done("Users", &format!("User {name} deleted"), "/users")
}

/// Java's `List.toString()` of a list, or empty.
fn shown(items: &Option<Vec<String>>) -> String {
    items
        .as_ref()
        .map(|i| format!("[{}]", i.join(", ")))
        .unwrap_or_default()
}

pub async fn acls(State(console): State<AppState>) -> PageResult {
    let admin = &console.admin;
    let acls = admin.list_acls(&a_master(admin).await?, "", "").await?;
    let mut page = Page::new("ACLs");
    let mut table = Table::new(
        "acls",
        &[
            "Subject",
            "Policy",
            "Resource",
            "Actions",
            "Source IPs",
            "Decision",
            "",
        ],
    );
    for acl in &acls {
        let subject = acl.subject.clone().unwrap_or_default();
        for policy in acl.policies.iter().flatten() {
            for entry in policy.entries.iter().flatten() {
                let resource = entry.resource.clone().unwrap_or_default();
                let delete = Form::post("/acls/delete", &format!("delete-{subject}-{resource}"))
                    .hidden("subject", &subject)
                    .hidden("resource", &resource)
                    .submit("delete");
                table.row_html(&[
                    cell(&subject),
                    cell(policy.policy_type.as_deref().unwrap_or_default()),
                    cell(&resource),
                    cell(shown(&entry.actions)),
                    cell(shown(&entry.source_ips)),
                    cell(entry.decision.as_deref().unwrap_or_default()),
                    delete,
                ]);
            }
        }
    }
    page.raw(&table.finish());
    page.heading("New policy entries");
    page.text("One entry per resource, all with the same actions, source IPs and decision.");
    page.raw(
        &Form::post("/acls/create", "create-acl")
            .input("Subject (User:name)", "subject", "User:")
            .input("Resources (Topic:t, Group:g*, ...)", "resources", "")
            .input(
                "Actions (Pub, Sub, Create, Update, Delete, Get, List, All)",
                "actions",
                "Pub,Sub",
            )
            .input("Source IPs (optional)", "sourceIps", "")
            .input("Decision (Allow or Deny)", "decision", "Allow")
            .submit("Create"),
    );
    Ok(Html(page.finish()))
}

pub async fn create_acl(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let subject = fields.required("subject")?.trim().to_owned();
    let actions = list(fields.required("actions")?);
    let ips = list(fields.get("sourceIps").unwrap_or_default());
    let decision = fields.required("decision")?.trim().to_owned();
    let entries: Vec<PolicyEntryInfo> = list(fields.required("resources")?)
        .into_iter()
        .map(|resource| PolicyEntryInfo {
            resource: Some(resource),
            actions: Some(actions.clone()),
            source_ips: (!ips.is_empty()).then(|| ips.clone()),
            decision: Some(decision.clone()),
        })
        .collect();
    let acl = AclInfo {
        subject: Some(subject.clone()),
        policies: Some(vec![PolicyInfo {
            policy_type: None,
            entries: Some(entries),
        }]),
    };
    for addr in every_broker(&console.admin).await? {
        console.admin.create_acl(&addr, &acl).await?;
    }
    tracing::info!(subject = %esc(&subject), "CONSOLE_ACL_CREATED");
    done("ACLs", &format!("Policies of {subject} changed"), "/acls")
}

pub async fn delete_acl(State(console): State<AppState>, body: String) -> PageResult {
    let fields = Fields::parse(&body);
    let subject = fields.required("subject")?.trim().to_owned();
    let resource = fields
        .get("resource")
        .map(str::trim)
        .filter(|r| !r.is_empty());
    for addr in every_broker(&console.admin).await? {
        console.admin.delete_acl(&addr, &subject, resource).await?;
    }
    tracing::info!(subject = %esc(&subject), "CONSOLE_ACL_DELETED");
    done(
        "ACLs",
        &format!("Policy entry of {subject} deleted"),
        "/acls",
    )
}
