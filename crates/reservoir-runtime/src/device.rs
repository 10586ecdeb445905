//! The [`Device`] a user asks a job to run on.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A device as users name it: `auto`, `cpu`, `cuda` (GPU 0) or `cuda:N` (GPU N).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Device {
    /// GPU 0 when one is usable and the reservoir is one a GPU runs (f32), otherwise the CPU,
    /// with the reason said once.
    #[default]
    Auto,
    /// The CPU.
    Cpu,
    /// GPU `ordinal`; an error when it is not usable.
    Cuda(usize),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Auto => f.write_str("auto"),
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(0) => f.write_str("cuda"),
            Device::Cuda(ordinal) => write!(f, "cuda:{ordinal}"),
        }
    }
}

impl FromStr for Device {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        let expected = "expected auto, cpu, cuda or cuda:N";
        match text {
            "auto" => Ok(Device::Auto),
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            other => other
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(|| format!("unknown device `{other}`: {expected}")),
        }
    }
}

impl TryFrom<String> for Device {
    type Error = String;
    fn try_from(text: String) -> std::result::Result<Self, String> {
        text.parse()
    }
}

impl From<Device> for String {
    fn from(device: Device) -> Self {
        device.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_and_print_as_users_write_them() {
        for (text, device) in [
            ("auto", Device::Auto),
            ("cpu", Device::Cpu),
            ("cuda", Device::Cuda(0)),
            ("cuda:1", Device::Cuda(1)),
        ] {
            assert_eq!(text.parse::<Device>(), Ok(device));
            assert_eq!(device.to_string(), text);
        }
        assert_eq!("cuda:0".parse::<Device>(), Ok(Device::Cuda(0)));
        for bad in ["gpu", "cuda:", "cuda:x", "cuda:-1", "CPU", ""] {
            let error = bad.parse::<Device>().unwrap_err();
            assert!(
                error.contains("expected auto, cpu, cuda or cuda:N"),
                "{error}"
            );
        }
    }
}
