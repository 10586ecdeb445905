//! One process per GPU, on one host or many, started by a launcher that sets the environment
//! variables torchrun sets: `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`.
//! Under Slurm, map its variables onto these (`docs/design.md`, "Several GPUs").

use crate::error::{Result, RuntimeError};

/// Where this process stands in a job of several processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// This process's rank, below `world`.
    pub rank: usize,
    /// The number of processes.
    pub world: usize,
    /// The GPU of this process on its host.
    pub local_rank: usize,
    /// Rank 0's `host:port`, where the ranks meet to share NCCL's unique id.
    pub address: String,
}

impl Launch {
    /// The launch the environment describes: `None` when `WORLD_SIZE` is unset or 1 (one
    /// process, nothing to meet).
    ///
    /// # Errors
    /// A variable that is missing or not a whole number, or a rank not below the world size,
    /// naming the variable.
    pub fn from_env() -> Result<Option<Self>> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Launch::from_env`] over the variables `get` returns.
    fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>> {
        let invalid = |name: &str, reason: String| RuntimeError::Launch {
            variable: name.to_string(),
            reason,
        };
        let text = |name: &str| {
            get(name).ok_or_else(|| {
                invalid(
                    name,
                    "is not set; a launch of several processes needs RANK, WORLD_SIZE, \
                     LOCAL_RANK, MASTER_ADDR and MASTER_PORT"
                        .to_string(),
                )
            })
        };
        let number = |name: &str| -> Result<usize> {
            let value = text(name)?;
            value
                .trim()
                .parse()
                .map_err(|_| invalid(name, format!("`{value}` is not a whole number")))
        };
        if get("WORLD_SIZE").is_none() {
            return Ok(None);
        }
        let world = number("WORLD_SIZE")?;
        if world == 0 {
            return Err(invalid("WORLD_SIZE", "is 0".to_string()));
        }
        if world == 1 {
            return Ok(None);
        }
        let rank = number("RANK")?;
        if rank >= world {
            return Err(invalid(
                "RANK",
                format!("{rank} is not below WORLD_SIZE = {world}"),
            ));
        }
        let local_rank = number("LOCAL_RANK")?;
        let port = number("MASTER_PORT")?;
        if port == 0 || port > usize::from(u16::MAX) {
            return Err(invalid("MASTER_PORT", format!("{port} is not a TCP port")));
        }
        let host = text("MASTER_ADDR")?;
        Ok(Some(Self {
            rank,
            world,
            local_rank,
            address: format!("{}:{port}", host.trim()),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(vars: &[(&str, &str)]) -> Result<Option<Launch>> {
        Launch::from_vars(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        })
    }

    #[test]
    fn the_torchrun_variables_make_a_launch_and_one_process_makes_none() {
        let all = [
            ("RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("LOCAL_RANK", "1"),
            ("MASTER_ADDR", "node7"),
            ("MASTER_PORT", "29500"),
        ];
        assert_eq!(
            launch(&all).expect("launch"),
            Some(Launch {
                rank: 1,
                world: 2,
                local_rank: 1,
                address: "node7:29500".to_string()
            })
        );
        assert_eq!(launch(&[]).expect("none"), None);
        assert_eq!(launch(&[("WORLD_SIZE", "1")]).expect("one"), None);
    }

    #[test]
    fn a_missing_or_bad_variable_is_named() {
        let cases: [(&[(&str, &str)], &str); 4] = [
            (&[("WORLD_SIZE", "2")], "RANK"),
            (&[("WORLD_SIZE", "two")], "WORLD_SIZE"),
            (
                &[("WORLD_SIZE", "2"), ("RANK", "2"), ("LOCAL_RANK", "0")],
                "RANK",
            ),
            (
                &[
                    ("WORLD_SIZE", "2"),
                    ("RANK", "0"),
                    ("LOCAL_RANK", "0"),
                    ("MASTER_PORT", "70000"),
                ],
                "MASTER_PORT",
            ),
        ];
        for (vars, named) in cases {
            let error = launch(vars).expect_err("bad launch").to_string();
            assert!(error.contains(named), "{error}");
        }
    }
}
