//! GET_BROKER_RUNTIME_INFO as mqadmin's brokerStatus sees it, over an in-memory connection
//! to a real broker.

use stellmq_remoting::protocol::body::{fastjson, KvTable};
use stellmq_remoting::protocol::RequestCode;

use crate::testing::{assert_success, request, send_request, Fixture};

#[tokio::test]
async fn runtime_info_carries_the_keys_mqadmin_prints_and_counts_puts() {
    let broker = Fixture::start().await;
    assert_success(&broker.call(send_request("Rt", 0, b"m", "")).await);
    let info = broker
        .call(request(RequestCode::GET_BROKER_RUNTIME_INFO, &[]))
        .await;
    assert_success(&info);
    let table: KvTable = fastjson::decode(&info.body).expect("a kv table");
    for key in [
        "brokerVersionDesc",
        "msgPutTotalTodayNow",
        "putTps",
        "getTransferedTps",
        "commitLogDiskRatio",
        "earliestMessageTimeStamp",
        "commitLogDirCapacity",
        "runtime",
    ] {
        assert!(table.table.contains_key(key), "{key}");
    }
    assert_eq!(table.table["msgPutTotalTodayNow"], "1");
}
