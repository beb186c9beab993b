//! Cluster: every broker the name servers know, by cluster and broker name, with its role,
//! version, traffic, disk and replication lag from GET_BROKER_RUNTIME_INFO.

use std::collections::BTreeMap;

use axum::extract::State;
use axum::response::Html;

use crate::error::PageResult;
use crate::html::{cell, esc, Page, Table};
use crate::server::AppState;

type RuntimeInfo = BTreeMap<String, String>;

const HEADERS: &[&str] = &[
    "Cluster",
    "Broker",
    "BID",
    "Role",
    "Address",
    "Version",
    "Put TPS",
    "Get TPS",
    "Put today",
    "Get today",
    "Put yesterday",
    "Get yesterday",
    "Disk used",
    "CommitLog max offset",
    "Replication lag (bytes)",
];

pub async fn page(State(console): State<AppState>) -> PageResult {
    let info = console.admin.cluster_info().await?;
    let mut table = Table::new("brokers", HEADERS);
    let mut brokers = 0;
    for (cluster, names) in &info.cluster_addr_table {
        for name in names {
            let Some(data) = info.broker_addr_table.get(name) else {
                continue;
            };
            let mut infos = Vec::new();
            for (id, addr) in &data.broker_addrs.0 {
                infos.push((*id, addr, console.admin.broker_runtime_info(addr).await));
            }
            let master_max = infos
                .iter()
                .find(|(id, _, _)| *id == 0)
                .and_then(|(_, _, rt)| rt.as_ref().ok())
                .and_then(|rt| number(rt, "commitLogMaxOffset"));
            for (id, addr, rt) in &infos {
                brokers += 1;
                let lead = [
                    cell(cluster),
                    cell(name),
                    cell(id),
                    cell(role(*id)),
                    cell(addr),
                ];
                let rest = match rt {
                    Ok(rt) => runtime_cells(rt, *id, master_max),
                    Err(e) => vec![format!(
                        "<span class=\"error\">{}</span>",
                        esc(&e.to_string())
                    )],
                };
                table.row_html(&[lead.to_vec(), rest].concat());
            }
        }
    }
    let mut page = Page::new("Cluster");
    page.text(&format!(
        "{brokers} broker(s) registered with {}",
        console.admin.name_servers().join(";")
    ));
    page.raw(&table.finish());
    Ok(Html(page.finish()))
}

fn role(id: i64) -> &'static str {
    if id == 0 {
        "MASTER"
    } else {
        "SLAVE"
    }
}

/// The runtime-info columns of one broker.
fn runtime_cells(rt: &RuntimeInfo, id: i64, master_max: Option<i64>) -> Vec<String> {
    let text = |key: &str| rt.get(key).map_or("-", String::as_str).to_owned();
    let max = number(rt, "commitLogMaxOffset");
    vec![
        cell(text("brokerVersionDesc")),
        cell(first_word(rt, "putTps")),
        cell(first_word(rt, "getTransferedTps")),
        cell(difference(
            rt,
            "msgPutTotalTodayNow",
            "msgPutTotalTodayMorning",
        )),
        cell(difference(
            rt,
            "msgGetTotalTodayNow",
            "msgGetTotalTodayMorning",
        )),
        cell(difference(
            rt,
            "msgPutTotalTodayMorning",
            "msgPutTotalYesterdayMorning",
        )),
        cell(difference(
            rt,
            "msgGetTotalTodayMorning",
            "msgGetTotalYesterdayMorning",
        )),
        cell(disk_used(rt)),
        cell(max.map_or("-".into(), |m| m.to_string())),
        cell(replication_lag(rt, id, max, master_max)),
    ]
}

fn number(rt: &RuntimeInfo, key: &str) -> Option<i64> {
    rt.get(key)?.trim().parse().ok()
}

/// The first figure of a `"x y z"` TPS entry (RocketMQ's last-10s, 1min, 10min figures).
fn first_word(rt: &RuntimeInfo, key: &str) -> String {
    rt.get(key)
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or("-")
        .to_owned()
}

fn difference(rt: &RuntimeInfo, later: &str, earlier: &str) -> String {
    match (number(rt, later), number(rt, earlier)) {
        (Some(a), Some(b)) => a.saturating_sub(b).to_string(),
        _ => "-".into(),
    }
}

/// `commitLogDiskRatio` (a fraction) as a percentage.
fn disk_used(rt: &RuntimeInfo) -> String {
    rt.get("commitLogDiskRatio")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
}

/// A slave's distance behind its master's CommitLog; a master's report of its slaves'.
fn replication_lag(rt: &RuntimeInfo, id: i64, max: Option<i64>, master_max: Option<i64>) -> String {
    if id == 0 {
        return rt
            .get("haSlaveFallBehindBytes")
            .cloned()
            .unwrap_or_else(|| "-".into());
    }
    match (master_max, max) {
        (Some(m), Some(s)) => m.saturating_sub(s).max(0).to_string(),
        _ => "-".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt(pairs: &[(&str, &str)]) -> RuntimeInfo {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn figures_from_runtime_info() {
        let info = rt(&[
            ("putTps", "12.5 10.0 9.0"),
            ("msgPutTotalTodayNow", "150"),
            ("msgPutTotalTodayMorning", "100"),
            ("commitLogDiskRatio", "0.25"),
            ("commitLogMaxOffset", "900"),
        ]);
        assert_eq!(first_word(&info, "putTps"), "12.5");
        assert_eq!(
            difference(&info, "msgPutTotalTodayNow", "msgPutTotalTodayMorning"),
            "50"
        );
        assert_eq!(difference(&info, "missing", "msgPutTotalTodayMorning"), "-");
        assert_eq!(disk_used(&info), "25.0%");
        assert_eq!(replication_lag(&info, 1, Some(900), Some(1000)), "100");
        assert_eq!(replication_lag(&info, 0, Some(900), Some(900)), "-");
    }
}
