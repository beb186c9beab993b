//! RocketMQ 5's exporter keys. Only `PROM` (a Prometheus endpoint) is served; `OTLP_GRPC`
//! and `LOG` are accepted in config files and disable the exporter with a warning.

use std::net::SocketAddr;

use stellmq_config::ConfigValue;

/// `metricsExporterType`: DISABLE, OTLP_GRPC, PROM or LOG.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExporterType {
    #[default]
    Disable,
    OtlpGrpc,
    Prom,
    Log,
}

impl ConfigValue for ExporterType {
    const EXPECTED: &'static str = "DISABLE, OTLP_GRPC, PROM or LOG";
    fn parse_value(text: &str) -> Option<Self> {
        match text.trim().to_ascii_uppercase().as_str() {
            "DISABLE" | "" => Some(Self::Disable),
            "OTLP_GRPC" => Some(Self::OtlpGrpc),
            "PROM" => Some(Self::Prom),
            "LOG" => Some(Self::Log),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::Disable => "DISABLE",
            Self::OtlpGrpc => "OTLP_GRPC",
            Self::Prom => "PROM",
            Self::Log => "LOG",
        }
        .to_owned()
    }
}

/// The exporter settings of one process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExporterConfig {
    pub exporter_type: ExporterType,
    /// Address to bind; empty = every interface (as RocketMQ's empty default).
    pub host: String,
    /// Port to bind; 0 picks a free one.
    pub port: u16,
}

impl ExporterConfig {
    /// The address the Prometheus endpoint binds, or `None` when it is off. Other exporter
    /// types are logged and treated as off.
    pub fn prometheus_addr(&self) -> Result<Option<SocketAddr>, String> {
        match self.exporter_type {
            ExporterType::Prom => {}
            ExporterType::Disable => return Ok(None),
            other => {
                tracing::warn!(
                    exporter = %other.render(),
                    "metricsExporterType not supported by StellMQ (only PROM); metrics are off"
                );
                return Ok(None);
            }
        }
        let host = self.host.trim();
        let host = if host.is_empty() { "0.0.0.0" } else { host };
        let text = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        };
        text.parse()
            .map(Some)
            .map_err(|_| format!("invalid metricsPromExporterHost/Port {text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rocketmq_values() {
        assert_eq!(ExporterType::parse_value("prom"), Some(ExporterType::Prom));
        assert_eq!(
            ExporterType::parse_value("OTLP_GRPC"),
            Some(ExporterType::OtlpGrpc)
        );
        assert_eq!(ExporterType::parse_value("nope"), None);
        assert_eq!(ExporterType::Prom.render(), "PROM");
    }

    #[test]
    fn address_only_for_prom() {
        let mut c = ExporterConfig {
            exporter_type: ExporterType::Disable,
            host: String::new(),
            port: 5557,
        };
        assert_eq!(c.prometheus_addr(), Ok(None));
        c.exporter_type = ExporterType::Prom;
        assert_eq!(
            c.prometheus_addr(),
            Ok(Some("0.0.0.0:5557".parse().expect("addr")))
        );
        c.host = "::1".into();
        assert_eq!(
            c.prometheus_addr(),
            Ok(Some("[::1]:5557".parse().expect("addr")))
        );
        c.host = "not a host".into();
        assert!(c.prometheus_addr().is_err());
    }
}
