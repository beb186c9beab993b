//! `mqadmin`: RocketMQ's subcommands, options and output layout (protocol.md 11), over
//! [`stellmq_client::AdminClient`].

mod acl;
mod allocate;
mod auth;
mod broker;
mod broker_stats;
mod consume;
mod consumer;
mod controller;
mod export;
mod group;
pub mod help;
mod housekeeping;
mod lists;
mod lite;
mod message;
mod metadata_store;
mod monitor;
mod msg_actions;
mod namesrv;
mod not_offered;
mod print_queue;
mod producer;
mod progress;
mod reset;
mod running_info;
mod send_check;
mod session;
mod stats;
mod topic;
mod trace;

use clap::{Parser, Subcommand};
use stellmq_client::{AdminClient, ClientError};
use stellmq_remoting::protocol::message::UtcTime;

use crate::tls_args::TlsArgs;
use housekeeping::{Housekeeping, HousekeepingTarget};
pub use session::Session;

/// `-b broker` or `-c cluster`: the brokers a command acts on.
#[derive(clap::Args, Debug, Clone)]
pub struct Target {
    /// Broker address ip:port.
    #[arg(short = 'b', long = "brokerAddr")]
    pub broker: Option<String>,
    /// Cluster name: every master of the cluster.
    #[arg(short = 'c', long = "clusterName")]
    pub cluster: Option<String>,
}

impl Target {
    /// Broker addresses named by `-b`, or the masters of `-c`.
    pub async fn addrs(&self, admin: &AdminClient) -> Result<Vec<String>, ClientError> {
        if let Some(b) = &self.broker {
            return Ok(vec![b.clone()]);
        }
        let Some(cluster) = &self.cluster else {
            return Err(ClientError::Invalid(
                "give -b brokerAddr or -c clusterName".into(),
            ));
        };
        let masters = admin.master_addrs(Some(cluster)).await?;
        if masters.is_empty() {
            return Err(ClientError::Invalid(format!(
                "no master broker in cluster {cluster}"
            )));
        }
        Ok(masters.into_iter().map(|(_, addr)| addr).collect())
    }
}

/// The master addresses of the brokers serving `topic`, in route order.
async fn masters_of(admin: &AdminClient, topic: &str) -> Result<Vec<String>, ClientError> {
    let route = admin.topic_route(topic).await?;
    Ok(route
        .broker_datas
        .iter()
        .filter_map(|b| b.master_addr().map(str::to_owned))
        .collect())
}

#[derive(Parser, Debug)]
#[command(
    name = "mqadmin",
    about = "StellMQ admin tool (RocketMQ's mqadmin commands)",
    version
)]
pub struct Cli {
    /// Name server address list, e.g. 127.0.0.1:9876;127.0.0.2:9876 (default: NAMESRV_ADDR).
    #[arg(short = 'n', long = "namesrvAddr", global = true)]
    pub namesrv: Option<String>,
    #[command(flatten)]
    pub tls: TlsArgs,
    /// Access key to sign requests with when the brokers run with ACL (with --secretKey;
    /// default: accessKey of $ROCKETMQ_HOME/conf/tools.yml or $STELLMQ_HOME/conf/tools.yml).
    #[arg(long = "accessKey", global = true, value_name = "accessKey")]
    pub access_key: Option<String>,
    /// Secret key to sign requests with (with --accessKey; default: tools.yml's secretKey).
    #[arg(long = "secretKey", global = true, value_name = "secretKey")]
    pub secret_key: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
#[allow(non_camel_case_types, clippy::enum_variant_names)]
pub enum Command {
    #[command(name = "updateTopic", about = "Update or create topic")]
    UpdateTopic(topic::UpdateTopic),
    #[command(
        name = "deleteTopic",
        about = "Delete topic from brokers and name servers"
    )]
    DeleteTopic(topic::DeleteTopic),
    #[command(name = "topicList", about = "Fetch all topics from the name server")]
    TopicList(topic::TopicListArgs),
    #[command(name = "topicRoute", about = "Examine topic route info")]
    TopicRoute(topic::TopicRouteArgs),
    #[command(name = "topicStatus", about = "Examine topic status info")]
    TopicStatus(topic::TopicArg),
    #[command(name = "topicClusterList", about = "Get the clusters a topic is on")]
    TopicClusterList(topic::TopicArg),
    #[command(name = "updateTopicPerm", about = "Update topic perm")]
    UpdateTopicPerm(topic::UpdateTopicPerm),
    #[command(
        name = "updateOrderConf",
        about = "Create, get or delete an order topic config"
    )]
    UpdateOrderConf(topic::UpdateOrderConf),
    #[command(name = "queryCq", about = "Query a consume queue's raw entries")]
    QueryCq(topic::QueryCq),
    #[command(name = "clusterList", about = "List the brokers of each cluster")]
    ClusterList(broker::ClusterListArgs),
    #[command(
        name = "brokerConsumeStats",
        about = "Consume progress of every group on a broker"
    )]
    BrokerConsumeStats(broker_stats::BrokerConsumeStats),
    #[command(name = "clusterRT", about = "Send round trip per broker of a cluster")]
    ClusterRT(broker::ClusterRt),
    #[command(name = "brokerStatus", about = "Fetch broker runtime status data")]
    BrokerStatus(Target),
    #[command(
        name = "haStatus",
        about = "Replication state: a master's slaves and their lag, or a slave's master"
    )]
    HaStatus(Target),
    #[command(name = "getBrokerConfig", about = "Get broker config")]
    GetBrokerConfig(Target),
    #[command(name = "updateBrokerConfig", about = "Update broker's config")]
    UpdateBrokerConfig(broker::UpdateBrokerConfig),
    #[command(name = "updateSubGroup", about = "Update or create subscription group")]
    UpdateSubGroup(group::UpdateSubGroup),
    #[command(
        name = "deleteSubGroup",
        about = "Delete subscription group from brokers"
    )]
    DeleteSubGroup(group::DeleteSubGroup),
    #[command(
        name = "cloneGroupOffset",
        about = "Clone a consumer group's offsets to another group"
    )]
    CloneGroupOffset(group::CloneGroupOffset),
    #[command(name = "consumerProgress", about = "Query consumer's progress")]
    ConsumerProgress(progress::ConsumerProgress),
    #[command(
        name = "consumerConnection",
        about = "Query consumer's socket connections and subscriptions"
    )]
    ConsumerConnection(group::GroupArg),
    #[command(
        name = "producerConnection",
        about = "Query producer's socket connections"
    )]
    ProducerConnection(group::ProducerConnection),
    #[command(
        name = "resetOffsetByTime",
        about = "Reset consumer offsets by timestamp"
    )]
    ResetOffsetByTime(reset::ResetOffsetByTime),
    #[command(
        name = "skipAccumulatedMessage",
        about = "Skip all messages that are accumulated (not consumed) currently"
    )]
    SkipAccumulatedMessage(reset::SkipAccumulatedMessage),
    #[command(
        name = "consumerStatus",
        about = "Query consumer's internal data structure"
    )]
    ConsumerStatus(consumer::ConsumerStatus),
    #[command(name = "getConsumerStatus", about = "Get consumer status from client")]
    GetConsumerStatus(consumer::GetConsumerStatus),
    #[command(
        name = "getConsumerConfig",
        about = "Get consumer config by subscription group name"
    )]
    GetConsumerConfig(consumer::GetConsumerConfig),
    #[command(
        name = "producer",
        about = "Query producer's instances, connection, status, etc."
    )]
    Producer(producer::ProducerArgs),
    #[command(name = "allocateMQ", about = "Allocate MQ")]
    AllocateMQ(allocate::AllocateMq),
    #[command(
        name = "cleanExpiredCQ",
        about = "Clean expired ConsumeQueue on broker"
    )]
    CleanExpiredCQ(HousekeepingTarget),
    #[command(name = "cleanUnusedTopic", about = "Clean unused topic on broker")]
    CleanUnusedTopic(HousekeepingTarget),
    #[command(
        name = "deleteExpiredCommitLog",
        about = "Delete expired CommitLog files"
    )]
    DeleteExpiredCommitLog(HousekeepingTarget),
    #[command(
        name = "sendMsgStatus",
        about = "Send messages to a broker and show each send"
    )]
    SendMsgStatus(send_check::SendMsgStatus),
    #[command(name = "checkMsgSendRT", about = "Check message send response time")]
    CheckMsgSendRT(send_check::CheckMsgSendRt),
    #[command(name = "printMsgByQueue", about = "Print the messages of one queue")]
    PrintMsgByQueue(print_queue::PrintMsgByQueue),
    #[command(name = "queryMsgByKey", about = "Query message by key")]
    QueryMsgByKey(message::QueryByKey),
    #[command(name = "queryMsgById", about = "Query message by offset message id")]
    QueryMsgById(message::QueryById),
    #[command(name = "queryMsgTraceById", about = "Query a message trace")]
    QueryMsgTraceById(trace::QueryMsgTraceById),
    #[command(name = "queryMsgByUniqueKey", about = "Query message by unique key")]
    QueryMsgByUniqueKey(message::QueryByUniqueKey),
    #[command(name = "queryMsgByOffset", about = "Query message by queue offset")]
    QueryMsgByOffset(message::QueryByOffset),
    #[command(name = "printMsg", about = "Print the messages of a topic")]
    PrintMsg(consume::PrintMsg),
    #[command(name = "sendMessage", about = "Send a message")]
    SendMessage(message::SendMessage),
    #[command(name = "consumeMessage", about = "Pull and print messages")]
    ConsumeMessage(consume::ConsumeMessage),
    #[command(
        name = "wipeWritePerm",
        about = "Wipe write perm of a broker in every name server"
    )]
    WipeWritePerm(namesrv::BrokerNameArg),
    #[command(
        name = "addWritePerm",
        about = "Add write perm of a broker in every name server"
    )]
    AddWritePerm(namesrv::BrokerNameArg),
    #[command(name = "exportMetadata", about = "export metadata")]
    ExportMetadata(export::ExportMetadata),
    #[command(
        name = "rocksDBConfigToJson",
        visible_alias = "exportMetadataInRocksDB",
        about = "Print a stopped broker's metadata store (topics, subscriptionGroups, consumerOffsets) as RocketMQ's JSON"
    )]
    RocksDbConfigToJson(metadata_store::ConfigToJson),
    #[command(
        name = "updateTopicList",
        about = "create or update topics in batch from a JSON file"
    )]
    UpdateTopicList(lists::UpdateList),
    #[command(
        name = "updateSubGroupList",
        about = "create or update subscription groups in batch from a JSON file"
    )]
    UpdateSubGroupList(lists::UpdateList),
    #[command(name = "exportConfigs", about = "export configs")]
    ExportConfigs(export::ExportCluster),
    #[command(name = "exportMetrics", about = "export metrics")]
    ExportMetrics(export::ExportCluster),
    #[command(name = "startMonitoring", about = "Start Monitoring")]
    StartMonitoring(monitor::StartMonitoring),
    #[command(
        name = "statsAll",
        about = "Topic and consumer TPS and 24-hour message counts"
    )]
    StatsAll(stats::StatsAll),
    #[command(name = "getNamesrvConfig", about = "Get configs of name servers")]
    GetNamesrvConfig,
    #[command(name = "updateNamesrvConfig", about = "Update configs of name servers")]
    UpdateNamesrvConfig(namesrv::KeyValue),
    #[command(name = "updateKvConfig", about = "Create or update a KV config")]
    UpdateKvConfig(namesrv::KvArgs),
    #[command(name = "deleteKvConfig", about = "Delete a KV config")]
    DeleteKvConfig(namesrv::KvKey),
    #[command(
        name = "updateAclConfig",
        about = "Update acl config yaml file in broker"
    )]
    UpdateAclConfig(acl::UpdateAclConfig),
    #[command(
        name = "deleteAclConfig",
        visible_alias = "deleteAccessConfig",
        about = "Delete Acl Config Account in broker"
    )]
    DeleteAclConfig(acl::DeleteAclConfig),
    #[command(
        name = "updateGlobalWhiteAddr",
        about = "Update global white address for acl Config File in broker"
    )]
    UpdateGlobalWhiteAddr(acl::UpdateGlobalWhiteAddr),
    #[command(
        name = "clusterAclConfigVersion",
        about = "List all of acl config version information in cluster"
    )]
    ClusterAclConfigVersion(Target),
    #[command(
        name = "getAclConfig",
        visible_alias = "getAccessConfigSubCommand",
        about = "List all of acl config information in cluster"
    )]
    GetAclConfig(Target),
    #[command(name = "createUser", about = "Create user to cluster.")]
    CreateUser(auth::CreateUser),
    #[command(name = "updateUser", about = "Update user to cluster.")]
    UpdateUser(auth::UpdateUser),
    #[command(name = "deleteUser", about = "Delete user from cluster.")]
    DeleteUser(auth::UserName),
    #[command(name = "getUser", about = "Get user from cluster.")]
    GetUser(auth::UserName),
    #[command(name = "listUser", about = "List user from cluster.")]
    ListUser(auth::ListUser),
    #[command(name = "copyUser", about = "Copy user to cluster.")]
    CopyUser(auth::CopyUser),
    #[command(name = "createAcl", about = "Create acl to cluster.")]
    CreateAcl(auth::PutAcl),
    #[command(name = "updateAcl", about = "Update acl to cluster.")]
    UpdateAcl(auth::PutAcl),
    #[command(name = "deleteAcl", about = "Delete acl from cluster.")]
    DeleteAcl(auth::DeleteAcl),
    #[command(name = "getAcl", about = "Get acl from cluster.")]
    GetAcl(auth::GetAcl),
    #[command(name = "listAcl", about = "List acl from cluster.")]
    ListAcl(auth::ListAcl),
    #[command(name = "copyAcl", about = "Copy acl to cluster.")]
    CopyAcl(auth::CopyAcl),
    #[command(name = "getBrokerLiteInfo", about = "Get broker lite info.")]
    GetBrokerLiteInfo(lite::BrokerLiteInfo),
    #[command(name = "getParentTopicInfo", about = "Get parent topic info.")]
    GetParentTopicInfo(lite::ParentTopicInfo),
    #[command(name = "getLiteTopicInfo", about = "Get lite topic info.")]
    GetLiteTopicInfo(lite::LiteTopicInfo),
    #[command(name = "getLiteClientInfo", about = "Get lite client info.")]
    GetLiteClientInfo(lite::LiteClientInfo),
    #[command(name = "getLiteGroupInfo", about = "Get lite group info.")]
    GetLiteGroupInfo(lite::LiteGroupInfo),
    #[command(name = "triggerLiteDispatch", about = "Trigger Lite Dispatch.")]
    TriggerLiteDispatch(lite::TriggerLiteDispatch),
    #[command(
        name = "getControllerMetaData",
        about = "Get controller cluster's metadata."
    )]
    GetControllerMetaData(controller::ControllerAddr),
    #[command(
        name = "getSyncStateSet",
        about = "Fetch syncStateSet for target brokers."
    )]
    GetSyncStateSet(controller::GetSyncStateSet),
    #[command(
        name = "electMaster",
        about = "Re-elect the specified broker as master."
    )]
    ElectMaster(controller::ElectMaster),
    #[command(
        name = "cleanBrokerMetadata",
        about = "Clean metadata of broker on controller."
    )]
    CleanBrokerMetadata(controller::CleanBrokerMetadata),
    #[command(name = "getBrokerEpoch", about = "Fetch broker epoch entries.")]
    GetBrokerEpoch(controller::GetBrokerEpoch),
    #[command(name = "getControllerConfig", about = "Get controller config.")]
    GetControllerConfig(controller::ControllerAddr),
    #[command(name = "updateControllerConfig", about = "Update controller config.")]
    UpdateControllerConfig(controller::UpdateControllerConfig),
}

/// Runs one command; errors come back for `main` to print.
pub async fn run(cli: Cli) -> Result<(), ClientError> {
    let namesrv_flag = cli
        .namesrv
        .clone()
        .or_else(|| std::env::var("NAMESRV_ADDR").ok());
    let tls = cli.tls.client_tls();
    let command = match run_controller_command(namesrv_flag, tls, cli.command).await {
        Ok(result) => return result,
        Err(command) => command,
    };
    let namesrv = cli
        .namesrv
        .or_else(|| std::env::var("NAMESRV_ADDR").ok())
        .ok_or(ClientError::NoNameServer)?;
    let credentials = crate::credentials::from_flags_or_tools_yml(
        cli.access_key.as_deref(),
        cli.secret_key.as_deref(),
    )
    .map_err(|e| ClientError::Invalid(e.to_string()))?;
    let session = Session {
        namesrv,
        tls: cli.tls.client_tls(),
        credentials,
    };
    let admin = AdminClient::connect(&session.namesrv, &session.tls, session.credentials.clone())?;
    let result = dispatch(&admin, &session, command).await;
    admin.shutdown().await;
    result
}

/// Runs a controller or offline command (no name server needed); any other command
/// comes back.
async fn run_controller_command(
    namesrv: Option<String>,
    tls: stellmq_client::ClientTlsConfig,
    command: Command,
) -> Result<Result<(), ClientError>, Command> {
    use Command::*;
    Ok(match command {
        GetControllerMetaData(a) => controller::get_controller_metadata(a).await,
        GetSyncStateSet(a) => {
            let session = Session {
                namesrv: namesrv.unwrap_or_default(),
                tls,
                credentials: None,
            };
            controller::get_sync_state_set(a, &session).await
        }
        ElectMaster(a) => controller::elect_master(a).await,
        CleanBrokerMetadata(a) => controller::clean_broker_metadata(a).await,
        GetControllerConfig(a) => controller::get_controller_config(a).await,
        UpdateControllerConfig(a) => controller::update_controller_config(a).await,
        RocksDbConfigToJson(a) => metadata_store::config_to_json(a),
        other => return Err(other),
    })
}

async fn dispatch(
    admin: &AdminClient,
    session: &Session,
    command: Command,
) -> Result<(), ClientError> {
    use Command::*;
    match command {
        UpdateTopic(a) => topic::update_topic(admin, a).await,
        DeleteTopic(a) => topic::delete_topic(admin, a).await,
        TopicList(a) => topic::topic_list(admin, a).await,
        TopicRoute(a) => topic::topic_route(admin, a).await,
        TopicStatus(a) => topic::topic_status(admin, a).await,
        TopicClusterList(a) => topic::topic_cluster_list(admin, a).await,
        UpdateTopicPerm(a) => topic::update_topic_perm(admin, a).await,
        UpdateOrderConf(a) => topic::update_order_conf(admin, a).await,
        QueryCq(a) => topic::query_cq(admin, a).await,
        ClusterList(a) => broker::cluster_list(admin, a).await,
        BrokerStatus(t) => broker::broker_status(admin, t).await,
        HaStatus(t) => broker::ha_status(admin, t).await,
        BrokerConsumeStats(a) => broker_stats::broker_consume_stats(admin, a).await,
        ClusterRT(a) => broker::cluster_rt(admin, a).await,
        GetBrokerConfig(t) => broker::get_broker_config(admin, t).await,
        UpdateBrokerConfig(a) => broker::update_broker_config(admin, a).await,
        UpdateSubGroup(a) => group::update_sub_group(admin, a).await,
        UpdateTopicList(a) => lists::update_topic_list(admin, a).await,
        UpdateSubGroupList(a) => lists::update_sub_group_list(admin, a).await,
        DeleteSubGroup(a) => group::delete_sub_group(admin, a).await,
        CloneGroupOffset(a) => group::clone_group_offset(admin, a).await,
        ConsumerProgress(a) => progress::consumer_progress(admin, a).await,
        ConsumerConnection(a) => group::consumer_connection(admin, a).await,
        ProducerConnection(a) => group::producer_connection(admin, a).await,
        ResetOffsetByTime(a) => reset::reset_offset_by_time(admin, a).await,
        SkipAccumulatedMessage(a) => reset::skip_accumulated_message(admin, a).await,
        ConsumerStatus(a) => consumer::consumer_status(admin, a).await,
        GetConsumerStatus(a) => consumer::get_consumer_status(admin, a).await,
        GetConsumerConfig(a) => consumer::get_consumer_config(admin, a).await,
        Producer(a) => producer::producer(admin, a).await,
        AllocateMQ(a) => allocate::allocate_mq(admin, a).await,
        CleanExpiredCQ(t) => {
            housekeeping::run(admin, Housekeeping::CleanExpiredConsumeQueue, t).await
        }
        CleanUnusedTopic(t) => housekeeping::run(admin, Housekeeping::CleanUnusedTopic, t).await,
        DeleteExpiredCommitLog(t) => {
            housekeeping::run(admin, Housekeeping::DeleteExpiredCommitLog, t).await
        }
        SendMsgStatus(a) => send_check::send_msg_status(session, a).await,
        CheckMsgSendRT(a) => send_check::check_msg_send_rt(admin, session, a).await,
        PrintMsgByQueue(a) => print_queue::print_msg_by_queue(admin, a).await,
        QueryMsgByKey(a) => message::query_by_key(admin, a).await,
        QueryMsgTraceById(a) => trace::query_msg_trace_by_id(admin, a).await,
        QueryMsgById(a) => message::query_by_id(admin, session, a).await,
        QueryMsgByUniqueKey(a) => message::query_by_unique_key(admin, a).await,
        QueryMsgByOffset(a) => message::query_by_offset(admin, a).await,
        PrintMsg(a) => consume::print_msg(admin, a).await,
        SendMessage(a) => message::send_message(admin, session, a).await,
        ConsumeMessage(a) => consume::consume_message(admin, a).await,
        WipeWritePerm(a) => namesrv::wipe_write_perm(admin, a).await,
        AddWritePerm(a) => namesrv::add_write_perm(admin, a).await,
        StartMonitoring(a) => monitor::start_monitoring(admin, a).await,
        ExportMetadata(a) => export::export_metadata(admin, a).await,
        ExportConfigs(a) => export::export_configs(admin, &session.namesrv, a).await,
        ExportMetrics(a) => export::export_metrics(admin, a).await,
        StatsAll(a) => stats::stats_all(admin, a).await,
        GetNamesrvConfig => namesrv::get_namesrv_config(admin).await,
        UpdateNamesrvConfig(a) => namesrv::update_namesrv_config(admin, a).await,
        UpdateKvConfig(a) => namesrv::update_kv_config(admin, a).await,
        DeleteKvConfig(a) => namesrv::delete_kv_config(admin, a).await,
        CreateUser(a) => auth::create_user(admin, a).await,
        UpdateUser(a) => auth::update_user(admin, a).await,
        DeleteUser(a) => auth::delete_user(admin, a).await,
        GetUser(a) => auth::get_user(admin, a).await,
        ListUser(a) => auth::list_user(admin, a).await,
        CopyUser(a) => auth::copy_user(admin, a).await,
        GetBrokerLiteInfo(a) => lite::broker_lite_info(admin, a).await,
        GetParentTopicInfo(a) => lite::parent_topic_info(admin, a).await,
        GetLiteTopicInfo(a) => lite::lite_topic_info(admin, a).await,
        GetLiteClientInfo(a) => lite::lite_client_info(admin, a).await,
        GetLiteGroupInfo(a) => lite::lite_group_info(admin, a).await,
        TriggerLiteDispatch(a) => lite::trigger_lite_dispatch(admin, a).await,
        CreateAcl(a) => auth::create_acl(admin, a).await,
        UpdateAcl(a) => auth::update_acl(admin, a).await,
        DeleteAcl(a) => auth::delete_acl(admin, a).await,
        GetAcl(a) => auth::get_acl(admin, a).await,
        ListAcl(a) => auth::list_acl(admin, a).await,
        CopyAcl(a) => auth::copy_acl(admin, a).await,
        UpdateAclConfig(a) => acl::update_acl_config(admin, a).await,
        DeleteAclConfig(a) => acl::delete_acl_config(admin, a).await,
        UpdateGlobalWhiteAddr(a) => acl::update_global_white_addr(admin, a).await,
        ClusterAclConfigVersion(t) => acl::cluster_acl_config_version(admin, t).await,
        GetAclConfig(t) => acl::get_acl_config(admin, t).await,
        GetBrokerEpoch(a) => controller::get_broker_epoch(admin, a).await,
        GetControllerMetaData(_)
        | GetSyncStateSet(_)
        | ElectMaster(_)
        | CleanBrokerMetadata(_)
        | GetControllerConfig(_)
        | UpdateControllerConfig(_)
        | RocksDbConfigToJson(_) => Err(ClientError::Invalid(
            "controller and offline commands are run before connecting to a name server".into(),
        )),
    }
}

/// `yyyy-MM-dd HH:mm:ss,SSS` (UTC) of a millisecond timestamp, as RocketMQ prints times.
pub fn format_time(ms: i64) -> String {
    if ms <= 0 {
        return "-".into();
    }
    let t = UtcTime::from_ms(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02},{:03}",
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.millis
    )
}
