//! The [`Device`] a user asks a job to run on, and the [`Devices`] it may spread over, as
//! users write them.

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

/// The GPUs a job may spread over (a sweep's lanes): `all`, or a list of ordinals (`0,1` on
/// the command line, `[0, 1]` in a config).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "DevicesValue", into = "DevicesValue")]
pub enum Devices {
    /// Every GPU the driver lists.
    All,
    /// These GPUs, by ordinal.
    List(Vec<usize>),
}

/// `devices` as a config writes it, before it is checked.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum DevicesValue {
    Text(String),
    List(Vec<i64>),
    #[serde(skip_serializing)]
    Other(serde::de::IgnoredAny),
}

impl TryFrom<DevicesValue> for Devices {
    type Error = String;
    fn try_from(value: DevicesValue) -> std::result::Result<Self, String> {
        let expected = "devices: expected \"all\" or a list of GPU ordinals such as [0, 1]";
        match value {
            DevicesValue::Text(text) if text == "all" => Ok(Devices::All),
            DevicesValue::List(list) => list
                .into_iter()
                .map(|ordinal| usize::try_from(ordinal).map_err(|_| ordinal))
                .collect::<std::result::Result<Vec<usize>, i64>>()
                .map(Devices::List)
                .map_err(|ordinal| format!("{expected}, got the ordinal {ordinal}")),
            DevicesValue::Text(text) => Err(format!("{expected}, got \"{text}\"")),
            DevicesValue::Other(_) => Err(expected.to_string()),
        }
    }
}

impl From<Devices> for DevicesValue {
    fn from(devices: Devices) -> Self {
        match devices {
            Devices::All => DevicesValue::Text("all".to_string()),
            Devices::List(list) => DevicesValue::List(list.into_iter().map(|o| o as i64).collect()),
        }
    }
}

impl Devices {
    /// The ordinals, with `all` as `0..count` (`count`: the GPUs the driver lists).
    ///
    /// # Errors
    /// An empty list, or an ordinal listed twice.
    pub fn ordinals(&self, count: usize) -> std::result::Result<Vec<usize>, String> {
        let list = match self {
            Devices::All => (0..count).collect(),
            Devices::List(list) => list.clone(),
        };
        if list.is_empty() {
            return Err("no GPU listed".to_string());
        }
        let mut sorted = list.clone();
        sorted.sort_unstable();
        if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(format!("GPU {} is listed twice", pair[0]));
        }
        Ok(list)
    }
}

impl fmt::Display for Devices {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Devices::All => f.write_str("all"),
            Devices::List(list) => {
                let names: Vec<String> = list.iter().map(ToString::to_string).collect();
                f.write_str(&names.join(","))
            }
        }
    }
}

impl FromStr for Devices {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        if text == "all" {
            return Ok(Devices::All);
        }
        let list = text
            .split(',')
            .map(|part| {
                part.trim().parse().map_err(|_| {
                    format!("unknown devices `{text}`: expected all or GPU ordinals such as 0,1")
                })
            })
            .collect::<std::result::Result<Vec<usize>, String>>()?;
        let devices = Devices::List(list);
        devices.ordinals(0)?;
        Ok(devices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_parse_and_print_as_users_write_them() {
        assert_eq!("all".parse::<Devices>(), Ok(Devices::All));
        assert_eq!("0,1".parse::<Devices>(), Ok(Devices::List(vec![0, 1])));
        assert_eq!("1, 3".parse::<Devices>(), Ok(Devices::List(vec![1, 3])));
        assert_eq!(Devices::List(vec![0, 1]).to_string(), "0,1");
        for bad in ["", "0,", "a", "-1", "0,0", "ALL"] {
            assert!(bad.parse::<Devices>().is_err(), "{bad:?} parsed");
        }
        assert_eq!(Devices::All.ordinals(3), Ok(vec![0, 1, 2]));
        assert!(Devices::All.ordinals(0).is_err());
        assert!(Devices::List(vec![2, 2]).ordinals(4).is_err());
    }

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
