//! Lite topics (RocketMQ 5.5): the LITE parent topics of every master with their expiration
//! and bound groups; for one parent (`parent`), its lite topics per broker and each bound
//! group's largest lags; and one lite topic (`lite`) with its offsets and subscribers.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{RawQuery, State};
use axum::response::Html;

use super::query_fields;
use crate::error::PageResult;
use crate::html::{cell, format_time, link, Form, Page, Table};
use crate::server::AppState;

/// The lite topics by lag a group's table shows.
const TOP_K: i32 = 20;

pub async fn page(State(console): State<AppState>, RawQuery(query): RawQuery) -> PageResult {
    let fields = query_fields(query);
    let parent = fields.get("parent").unwrap_or("").trim().to_owned();
    let lite = fields.get("lite").unwrap_or("").trim().to_owned();
    let admin = &console.admin;
    let mut page = Page::new("Lite topics");
    let masters = admin.master_addrs(None).await?;

    // Every LITE parent: expiration and bound groups, from each master.
    let mut parents: BTreeMap<String, (i32, BTreeSet<String>, BTreeSet<String>)> = BTreeMap::new();
    for (name, addr) in &masters {
        match admin.broker_lite_info(addr).await {
            Ok(info) => {
                for (topic, ttl) in info.topic_meta {
                    let entry = parents.entry(topic.clone()).or_default();
                    entry.0 = ttl;
                    entry.2.insert(name.clone());
                    if let Some(groups) = info.group_meta.get(&topic) {
                        entry.1.extend(groups.iter().cloned());
                    }
                }
            }
            Err(e) => page.error(&format!("{name}: {e}")),
        }
    }
    let mut table = Table::new(
        "parents",
        &[
            "Parent topic",
            "Expiration (minutes)",
            "Bound groups",
            "Brokers",
        ],
    );
    for (topic, (ttl, groups, brokers)) in &parents {
        let ttl = if *ttl > 0 {
            ttl.to_string()
        } else {
            "never".to_owned()
        };
        table.row_html(&[
            link("/lite", &[("parent", topic)], topic),
            cell(ttl),
            cell(groups.iter().cloned().collect::<Vec<_>>().join(" ")),
            cell(brokers.iter().cloned().collect::<Vec<_>>().join(" ")),
        ]);
    }
    page.raw(&table.finish());
    if parent.is_empty() {
        return Ok(Html(page.finish()));
    }

    page.heading(&format!("Parent topic {parent}"));
    let mut table = Table::new(
        "parent",
        &[
            "Broker",
            "Lite topics with messages",
            "Light queues (broker)",
            "Groups",
        ],
    );
    for (name, addr) in &masters {
        match admin.parent_topic_info(addr, &parent).await {
            Ok(info) => table.row(&[
                name,
                &info.lite_topic_count.to_string(),
                &info.lmq_num.to_string(),
                &info
                    .groups
                    .map(|g| g.into_iter().collect::<Vec<_>>().join(" "))
                    .unwrap_or_default(),
            ]),
            Err(e) => page.error(&format!("{name}: {e}")),
        }
    }
    page.raw(&table.finish());
    let groups = parents
        .get(&parent)
        .map(|p| p.1.clone())
        .unwrap_or_default();
    for group in &groups {
        let mut lags = Vec::new();
        let mut total = 0;
        for (name, addr) in &masters {
            match admin.lite_group_info(addr, group, None, TOP_K).await {
                Ok(info) => {
                    total += info.total_lag_count.max(0);
                    lags.extend(info.lag_count_top_k);
                }
                Err(e) => page.error(&format!("{name}: {e}")),
            }
        }
        lags.sort_by_key(|l| std::cmp::Reverse(l.lag_count));
        lags.truncate(TOP_K as usize);
        page.heading(&format!("Group {group}: {total} messages not consumed"));
        let mut table = Table::new("lags", &["Lite topic", "Backlog", "Oldest unconsumed"]);
        for l in &lags {
            table.row_html(&[
                link(
                    "/lite",
                    &[("parent", &parent), ("lite", &l.lite_topic)],
                    &l.lite_topic,
                ),
                cell(l.lag_count),
                cell(format_time(l.earliest_unconsumed_timestamp)),
            ]);
        }
        page.raw(&table.finish());
    }
    page.raw(
        &Form::get("/lite", "lite")
            .hidden("parent", &parent)
            .input("Lite topic", "lite", &lite)
            .submit("Show"),
    );
    if lite.is_empty() {
        return Ok(Html(page.finish()));
    }
    page.heading(&format!("Lite topic {lite}"));
    let mut table = Table::new(
        "lite",
        &[
            "Broker",
            "Min offset",
            "Max offset",
            "Last message",
            "Subscribers",
        ],
    );
    for (name, addr) in &masters {
        match admin.lite_topic_info(addr, &parent, &lite).await {
            Ok(info) => table.row(&[
                name,
                &info.topic_offset.min_offset.to_string(),
                &info.topic_offset.max_offset.to_string(),
                &format_time(info.topic_offset.last_update_timestamp),
                &info
                    .subscriber
                    .iter()
                    .map(|c| format!("{}@{}", c.client_id, c.group))
                    .collect::<Vec<_>>()
                    .join(" "),
            ]),
            Err(e) => page.error(&format!("{name}: {e}")),
        }
    }
    page.raw(&table.finish());
    Ok(Html(page.finish()))
}
