//! RocketMQ 5 controller request and response headers (codes 1001-1013 and 904), with the
//! `extFields` keys of Java's field names (`remoting/.../header/controller/`).

use super::command_header;

command_header! {
    /// CONTROLLER_ALTER_SYNC_STATE_SET (1001); the body is the new [`SyncStateSet`]
    /// carrying the epoch the master last saw.
    ///
    /// [`SyncStateSet`]: crate::body::SyncStateSet
    pub struct AlterSyncStateSetRequestHeader {
        required broker_name: String = "brokerName",
        required master_broker_id: i64 = "masterBrokerId",
        required master_epoch: i32 = "masterEpoch",
        optional invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// Response to CONTROLLER_ALTER_SYNC_STATE_SET.
    pub struct AlterSyncStateSetResponseHeader {
        required new_sync_state_set_epoch: i32 = "newSyncStateSetEpoch",
    }
}

command_header! {
    /// CONTROLLER_ELECT_MASTER (1002). `brokerId` -1 (or absent) lets the controller choose;
    /// `designateElect` true asks for exactly `brokerId` (an admin's choice).
    pub struct ElectMasterRequestHeader {
        optional cluster_name: String = "clusterName",
        required broker_name: String = "brokerName",
        optional broker_id: i64 = "brokerId",
        optional designate_elect: bool = "designateElect",
        optional invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// Response to CONTROLLER_ELECT_MASTER; the body is an `ElectMasterResponseBody`.
    pub struct ElectMasterResponseHeader {
        optional master_broker_id: i64 = "masterBrokerId",
        optional master_address: String = "masterAddress",
        optional master_epoch: i32 = "masterEpoch",
        optional sync_state_set_epoch: i32 = "syncStateSetEpoch",
    }
}

command_header! {
    /// CONTROLLER_REGISTER_BROKER (1003): a broker with an applied id announces its address.
    pub struct RegisterBrokerToControllerRequestHeader {
        optional cluster_name: String = "clusterName",
        required broker_name: String = "brokerName",
        required broker_id: i64 = "brokerId",
        required broker_address: String = "brokerAddress",
        optional invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// Response to CONTROLLER_REGISTER_BROKER; the master fields are set when a live master
    /// exists. The body is the broker set's `SyncStateSet`.
    pub struct RegisterBrokerToControllerResponseHeader {
        optional cluster_name: String = "clusterName",
        optional broker_name: String = "brokerName",
        optional master_broker_id: i64 = "masterBrokerId",
        optional master_address: String = "masterAddress",
        optional master_epoch: i32 = "masterEpoch",
        optional sync_state_set_epoch: i32 = "syncStateSetEpoch",
    }
}

command_header! {
    /// CONTROLLER_GET_REPLICA_INFO (1004).
    pub struct GetReplicaInfoRequestHeader {
        required broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to CONTROLLER_GET_REPLICA_INFO; the body is the `SyncStateSet`.
    pub struct GetReplicaInfoResponseHeader {
        optional master_broker_id: i64 = "masterBrokerId",
        optional master_address: String = "masterAddress",
        optional master_epoch: i32 = "masterEpoch",
    }
}

command_header! {
    /// Response to CONTROLLER_GET_METADATA_INFO (1005): the controller group and its leader.
    /// `isLeader` is the name Java's `isLeader` boolean field travels under.
    pub struct GetMetaDataResponseHeader {
        optional group: String = "group",
        optional controller_leader_id: String = "controllerLeaderId",
        optional controller_leader_address: String = "controllerLeaderAddress",
        required is_leader: bool = "isLeader",
        optional peers: String = "peers",
    }
}

command_header! {
    /// NOTIFY_BROKER_ROLE_CHANGED (1008), controller to broker; the body is an
    /// `ElectMasterResponseBody` (member group and SyncStateSet).
    pub struct NotifyBrokerRoleChangedRequestHeader {
        optional master_address: String = "masterAddress",
        optional master_epoch: i32 = "masterEpoch",
        optional sync_state_set_epoch: i32 = "syncStateSetEpoch",
        optional master_broker_id: i64 = "masterBrokerId",
    }
}

command_header! {
    /// CLEAN_BROKER_DATA (1011). `brokerControllerIdsToClean` is `;`-separated ids; absent
    /// cleans the whole broker set.
    pub struct CleanControllerBrokerDataRequestHeader {
        optional cluster_name: String = "clusterName",
        required broker_name: String = "brokerName",
        optional broker_controller_ids_to_clean: String = "brokerControllerIdsToClean",
        optional is_clean_living_broker: bool = "isCleanLivingBroker",
        optional invoke_time: i64 = "invokeTime",
    }
}

command_header! {
    /// CONTROLLER_GET_NEXT_BROKER_ID (1012).
    pub struct GetNextBrokerIdRequestHeader {
        optional cluster_name: String = "clusterName",
        required broker_name: String = "brokerName",
    }
}

command_header! {
    /// Response to CONTROLLER_GET_NEXT_BROKER_ID.
    pub struct GetNextBrokerIdResponseHeader {
        optional cluster_name: String = "clusterName",
        optional broker_name: String = "brokerName",
        optional next_broker_id: i64 = "nextBrokerId",
    }
}

command_header! {
    /// CONTROLLER_APPLY_BROKER_ID (1013). `registerCheckCode` is `address;timestamp`: the
    /// same broker applying again is recognised by it.
    pub struct ApplyBrokerIdRequestHeader {
        optional cluster_name: String = "clusterName",
        required broker_name: String = "brokerName",
        required applied_broker_id: i64 = "appliedBrokerId",
        required register_check_code: String = "registerCheckCode",
    }
}

command_header! {
    /// Response to CONTROLLER_APPLY_BROKER_ID.
    pub struct ApplyBrokerIdResponseHeader {
        optional cluster_name: String = "clusterName",
        optional broker_name: String = "brokerName",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::headers::CommandHeader;
    use crate::ExtFields;

    #[test]
    fn alter_sync_state_set_reads_java_names() {
        let fields: ExtFields = [
            ("brokerName", "b"),
            ("masterBrokerId", "1"),
            ("masterEpoch", "3"),
            ("invokeTime", "1700000000000"),
        ]
        .into_iter()
        .collect();
        let h = AlterSyncStateSetRequestHeader::from_ext_fields(&fields).expect("decodes");
        assert_eq!(h.master_broker_id, 1);
        assert_eq!(h.master_epoch, 3);
        assert_eq!(h.to_ext_fields().get("masterEpoch"), Some("3"));
    }

    #[test]
    fn metadata_header_round_trips() {
        let h = GetMetaDataResponseHeader {
            group: Some("g".into()),
            controller_leader_id: Some("n1".into()),
            controller_leader_address: Some("127.0.0.1:9868".into()),
            is_leader: false,
            peers: Some("n0-127.0.0.1:9878;n1-127.0.0.1:9868".into()),
        };
        let fields = h.to_ext_fields();
        assert_eq!(fields.get("isLeader"), Some("false"));
        assert_eq!(
            fields.get("controllerLeaderAddress"),
            Some("127.0.0.1:9868")
        );
        assert_eq!(GetMetaDataResponseHeader::from_ext_fields(&fields), Ok(h));
    }

    #[test]
    fn apply_broker_id_requires_check_code() {
        let fields: ExtFields = [("brokerName", "b"), ("appliedBrokerId", "1")]
            .into_iter()
            .collect();
        assert!(ApplyBrokerIdRequestHeader::from_ext_fields(&fields).is_err());
    }
}
