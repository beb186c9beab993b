//! Consumer groups: every subscription group of every master, a page at a time (`page`,
//! `size`), with the online consumers and lag of the groups shown.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{RawQuery, State};
use axum::response::Html;
use stellmq_client::AdminClient;

use super::{query_fields, Paging};
use crate::error::PageResult;
use crate::html::{cell, link, Form, Page, Table};
use crate::server::AppState;

/// Groups RocketMQ's brokers create for themselves.
fn is_system_group(group: &str) -> bool {
    group.starts_with("CID_RMQ_SYS_")
        || group.starts_with("TOOLS_CONSUMER")
        || matches!(
            group,
            "SELF_TEST_C_GROUP"
                | "FILTERSRV_CONSUMER"
                | "CID_ONSAPI_OWNER"
                | "CID_ONSAPI_PERMISSION"
                | "CID_ONSAPI_PULL"
                | "CID_ONS-HTTP-PROXY"
                | "CID_SYS_RMQ_TRANS"
        )
}

pub async fn list(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let filter = fields.get("q").unwrap_or("");
    let with_system = fields.get("system").is_some();
    let mut page = Page::new("Consumer groups");
    let groups = groups_by_broker(&console.admin, &mut page).await?;
    page.raw(
        &Form::get("/groups", "filter")
            .input("Filter", "q", filter)
            .input(
                "Show system groups (any value)",
                "system",
                if with_system { "1" } else { "" },
            )
            .submit("Filter"),
    );
    let matching: Vec<_> = groups
        .iter()
        .filter(|(group, _)| group.contains(filter) && (with_system || !is_system_group(group)))
        .collect();
    let paging = Paging::from(&fields);
    let system = if with_system { "1" } else { "" };
    let nav = paging.nav(
        "/groups",
        &[("q", filter), ("system", system)],
        matching.len(),
    );
    page.raw(&nav);
    // Consumers and lag are asked for the groups shown only.
    let mut table = Table::new("groups", &["Group", "Brokers", "Online consumers", "Lag"]);
    for (group, brokers) in paging.slice(&matching) {
        let (online, lag) = summary(&console.admin, group, brokers).await;
        table.row_html(&[
            link("/group", &[("name", group)], group),
            cell(
                brokers
                    .iter()
                    .map(|(name, _)| name.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            cell(online),
            cell(lag),
        ]);
    }
    page.raw(&table.finish());
    page.raw(&nav);
    Ok(Html(page.finish()))
}

/// Group name -> (broker name, address) of the masters that have it.
type GroupBrokers = BTreeMap<String, BTreeSet<(String, String)>>;

async fn groups_by_broker(
    admin: &AdminClient,
    page: &mut Page,
) -> Result<GroupBrokers, crate::ConsoleError> {
    let mut groups = GroupBrokers::new();
    for (name, addr) in admin.master_addrs(None).await? {
        match admin.all_subscription_groups(&addr).await {
            Ok(all) => {
                for group in all.subscription_group_table.into_keys() {
                    groups
                        .entry(group)
                        .or_default()
                        .insert((name.clone(), addr.clone()));
                }
            }
            Err(e) => page.error(&format!("{name}: {e}")),
        }
    }
    Ok(groups)
}

/// Online consumers (from the first broker that knows of any) and the total lag, as text.
async fn summary(
    admin: &AdminClient,
    group: &str,
    brokers: &BTreeSet<(String, String)>,
) -> (usize, String) {
    let mut online = 0;
    let mut lag = 0i64;
    let mut any_offsets = false;
    for (_, addr) in brokers {
        if online == 0 {
            if let Ok(c) = admin.consumer_connection(addr, group).await {
                online = c.connection_set.len();
            }
        }
        if let Ok(stats) = admin.consume_stats(addr, group, None).await {
            any_offsets |= !stats.offset_table.0.is_empty();
            lag += stats
                .offset_table
                .0
                .values()
                .map(|o| (o.broker_offset - o.consumer_offset).max(0))
                .sum::<i64>();
        }
    }
    let lag = if any_offsets {
        lag.to_string()
    } else {
        "-".into()
    };
    (online, lag)
}
