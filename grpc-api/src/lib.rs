//! RocketMQ 5's gRPC API (`apache.rocketmq.v2`: messages and the MessagingService client and
//! server), generated from the protos under `proto/` at build time. Shared by mqproxy, which
//! serves it, and mqbench, which drives it, so the tools need not link the proxy.

/// The generated apache.rocketmq.v2 messages and services.
pub mod pb {
    #![allow(clippy::all, clippy::pedantic, missing_docs)]
    tonic::include_proto!("apache.rocketmq.v2");
}
