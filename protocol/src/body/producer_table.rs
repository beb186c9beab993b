//! GET_ALL_PRODUCER_INFO (328) body: every producer connected to a broker, by group
//! (`ProducerTableInfo` of `ProducerInfo`s).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One producer connection.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProducerInfo {
    pub client_id: String,
    #[serde(rename = "remoteIP")]
    pub remote_ip: String,
    /// `LanguageCode` name, e.g. `JAVA`.
    pub language: String,
    pub version: i32,
    /// When its last heartbeat arrived (ms since the epoch).
    pub last_update_timestamp: i64,
}

/// Producers by group.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ProducerTableInfo {
    pub data: BTreeMap<String, Vec<ProducerInfo>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::fastjson;

    #[test]
    fn producer_table_golden() {
        let table = ProducerTableInfo {
            data: [(
                "pg".to_owned(),
                vec![ProducerInfo {
                    client_id: "10.0.0.1@1".into(),
                    remote_ip: "10.0.0.1:5000".into(),
                    language: "JAVA".into(),
                    version: 401,
                    last_update_timestamp: 9,
                }],
            )]
            .into_iter()
            .collect(),
        };
        let text = String::from_utf8(fastjson::encode(&table)).expect("utf8");
        assert_eq!(
            text,
            r#"{"data":{"pg":[{"clientId":"10.0.0.1@1","language":"JAVA","lastUpdateTimestamp":9,"remoteIP":"10.0.0.1:5000","version":401}]}}"#
        );
        assert_eq!(
            fastjson::decode::<ProducerTableInfo>(text.as_bytes()).expect("decodes"),
            table
        );
    }
}
