//! Admin requests, one module per area (never one admin file).

pub mod acl;
pub mod config;
pub mod group;
pub mod offset;
pub mod stats;
pub mod store;
pub mod topic;
