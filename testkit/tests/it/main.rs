//! The integration and process tests of StellMQ, as one test binary: each module was a
//! binary of its own, and forty binaries each linking the whole stack filled CI disks and
//! spent minutes linking. Run one module with `cargo test -p stellmq-testkit --test it <module>::`.

mod admin_extras;
mod broker_acl;
mod broker_admin;
mod broker_faults_process;
mod broker_ha;
mod broker_ha_hostile;
mod broker_ha_process;
mod broker_hostile_clients;
mod broker_hostile_names;
mod broker_messaging;
mod broker_pop;
mod broker_pop_process;
mod broker_process;
mod broker_reply;
mod broker_sql_filter;
mod broker_timer;
mod broker_transaction;
mod broker_with_namesrv_process;
mod client_consumer;
mod client_probes;
mod client_producer;
mod client_pull_consumer;
mod client_push_options;
mod client_request_reply;
mod client_slave_read;
mod client_sql_filter;
mod client_transaction;
mod conf_samples;
mod namesrv_acl;
mod namesrv_in_process;
mod namesrv_process;
mod proxy_grpc;
mod testkit_embedded;
mod tls_modes;
mod tls_process;
mod tls_replication;
mod tls_trust;
mod tools_mqadmin;
mod tools_mqadmin_acl;
mod tools_mqadmin_extras;
mod tools_mqadmin_help;
mod tools_mqadmin_letters;
mod tools_mqadmin_monitor;
mod tools_mqadmin_print;
