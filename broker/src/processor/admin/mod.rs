//! Admin requests, one module per area (never one admin file).

pub mod acl;
pub mod auth;
pub mod config;
pub mod consumer_call;
pub mod epoch;
pub mod group;
pub mod half;
pub mod lists;
pub mod offset;
pub mod progress;
pub mod role_notice;
pub mod stats;
pub mod store;
pub mod topic;
