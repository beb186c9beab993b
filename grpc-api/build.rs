//! Compiles the apache.rocketmq.v2 protos with a pure-Rust protobuf compiler (protox), so the
//! build needs no system `protoc`, then generates prost messages and tonic services from them.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = [
        "proto/apache/rocketmq/v2/definition.proto",
        "proto/apache/rocketmq/v2/service.proto",
        "proto/apache/rocketmq/v2/admin.proto",
    ];
    for proto in protos {
        println!("cargo:rerun-if-changed={proto}");
    }
    let descriptors = protox::compile(protos, ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
