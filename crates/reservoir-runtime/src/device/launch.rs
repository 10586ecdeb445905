//! One process per GPU, on one host or many, started by torchrun, Slurm's `srun` or Open
//! MPI's `mpirun`: which rank this process is, and where and with which token the ranks meet
//! (the meeting itself: `meeting.rs`). `docs/gpu.md`, "Several GPUs", lists the variables.

use std::fmt;
use std::time::Duration;

use crate::error::{Result, RuntimeError};

/// The launcher that started the processes of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// PyTorch's `torchrun` (or anything setting its variables).
    Torchrun,
    /// Open MPI's `mpirun`.
    OpenMpi,
    /// Slurm's `srun`, inside a job step.
    Slurm,
}

impl Launcher {
    /// The variables of this launcher that hold the world size, the rank and the local rank.
    fn places(self) -> [&'static str; 3] {
        match self {
            Launcher::Torchrun => ["WORLD_SIZE", "RANK", "LOCAL_RANK"],
            Launcher::OpenMpi => [
                "OMPI_COMM_WORLD_SIZE",
                "OMPI_COMM_WORLD_RANK",
                "OMPI_COMM_WORLD_LOCAL_RANK",
            ],
            Launcher::Slurm => ["SLURM_NTASKS", "SLURM_PROCID", "SLURM_LOCALID"],
        }
    }
}

impl fmt::Display for Launcher {
    /// The command users type: `torchrun`, `mpirun`, `srun`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Launcher::Torchrun => "torchrun",
            Launcher::OpenMpi => "mpirun",
            Launcher::Slurm => "srun",
        })
    }
}

/// How long the ranks wait for each other without `RESERVOIR_MEET_TIMEOUT`: long enough for
/// the slowest rank of a large job to start.
pub const DEFAULT_MEET_TIMEOUT: Duration = Duration::from_secs(300);

/// The first port of the range a Slurm step meets in without `RESERVOIR_MEET_PORT` or
/// `MASTER_PORT`: below Linux's ephemeral ports, so no outgoing connection holds it.
pub const SLURM_PORT_BASE: u16 = 20000;

/// The longest token sent to rank 0.
pub const MAX_TOKEN_BYTES: usize = 256;

/// The most processes of a launch (rank 0 keeps a slot for each).
pub const MAX_WORLD: usize = 1 << 20;

/// Where this process stands in a job of several processes, and where the ranks meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The launcher that started the processes (for messages).
    pub launcher: Launcher,
    /// This process's rank, below `world`.
    pub rank: usize,
    /// The number of processes.
    pub world: usize,
    /// The GPU of this process on its host.
    pub local_rank: usize,
    /// The `host:port` rank 0 listens on, where the ranks meet to share NCCL's unique id.
    pub address: String,
    /// What every rank of this job, and no other job, sends to rank 0, which ignores
    /// connections without it.
    pub token: String,
    /// How long a rank waits for the others before it gives up.
    pub timeout: Duration,
}

impl Launch {
    /// The launch the environment describes: `None` when no launcher's variables are set or
    /// the world size is 1 (one process, nothing to meet). Where several launchers' variables
    /// are set (torchrun or mpirun inside a Slurm allocation), torchrun's come first, then
    /// Open MPI's, then Slurm's.
    ///
    /// # Errors
    /// A variable that is missing, not a number, out of range or unparsable, naming it.
    pub fn from_env() -> Result<Option<Self>> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Launch::from_env`] over the variables `get` returns.
    fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Option<Self>> {
        let vars = Vars(&get);
        let Some(launcher) = vars.launcher() else {
            return Ok(None);
        };
        let [world_name, rank_name, local_name] = launcher.places();
        let world = vars.number(world_name)?;
        if world == 0 || world > MAX_WORLD {
            return Err(invalid(
                world_name,
                format!("{world} is not a number of processes from 1 to {MAX_WORLD}"),
            ));
        }
        if world == 1 {
            return Ok(None);
        }
        let rank = vars.number(rank_name)?;
        if rank >= world {
            return Err(invalid(
                rank_name,
                format!("{rank} is not below {world_name} = {world}"),
            ));
        }
        let local_rank = vars.number(local_name)?;
        let host = vars.host(launcher)?;
        let port = vars.port(launcher)?;
        // An IPv6 address is written in brackets before the port.
        let address = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        Ok(Some(Self {
            launcher,
            rank,
            world,
            local_rank,
            address,
            token: vars.token(launcher)?,
            timeout: vars.timeout()?,
        }))
    }
}

/// A variable's error.
fn invalid(variable: &str, reason: String) -> RuntimeError {
    RuntimeError::Launch {
        variable: variable.to_string(),
        reason,
    }
}

/// A variable's error with `hint` added: what to do about it under this launcher.
fn hinted(error: RuntimeError, hint: &str) -> RuntimeError {
    match error {
        RuntimeError::Launch { variable, reason } => RuntimeError::Launch {
            variable,
            reason: format!("{reason}; {hint}"),
        },
        other => other,
    }
}

/// The environment, read through a lookup (the process's, or a test's table).
struct Vars<'a, F: Fn(&str) -> Option<String>>(&'a F);

impl<F: Fn(&str) -> Option<String>> Vars<'_, F> {
    /// The variable `name`, trimmed; `None` when unset or blank.
    fn get(&self, name: &str) -> Option<String> {
        (self.0)(name)
            .map(|value| value.trim().to_string())
            .filter(|value| !value.is_empty())
    }

    /// The variable `name`, which the launch needs.
    fn text(&self, name: &str, needed_for: &str) -> Result<String> {
        self.get(name)
            .ok_or_else(|| invalid(name, format!("is not set; {needed_for}")))
    }

    /// The variable `name` as a whole number (a rank, a port, a job id).
    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<T> {
        let value = self.text(name, "the launcher sets it for every process it starts")?;
        value
            .parse()
            .map_err(|_| invalid(name, format!("`{value}` is not a whole number")))
    }

    /// The launcher whose variables are set: torchrun's `WORLD_SIZE`, Open MPI's
    /// `OMPI_COMM_WORLD_SIZE`, or a Slurm job step's `SLURM_STEP_ID` (which `srun` sets for
    /// the tasks it starts, but an `sbatch` script or an `salloc` shell has not, although
    /// they do have `SLURM_PROCID` and `SLURM_NTASKS`).
    fn launcher(&self) -> Option<Launcher> {
        [
            (Launcher::Torchrun, "WORLD_SIZE"),
            (Launcher::OpenMpi, "OMPI_COMM_WORLD_SIZE"),
            (Launcher::Slurm, "SLURM_STEP_ID"),
        ]
        .into_iter()
        .find(|(_, name)| self.get(name).is_some())
        .map(|(launcher, _)| launcher)
    }

    /// The host rank 0 listens on: `RESERVOIR_MEET_ADDR`, else `MASTER_ADDR`, else (srun)
    /// the first host of the step's nodes, where `srun` puts rank 0.
    fn host(&self, launcher: Launcher) -> Result<String> {
        if let Some(host) = self
            .get("RESERVOIR_MEET_ADDR")
            .or_else(|| self.get("MASTER_ADDR"))
        {
            return Ok(host);
        }
        match launcher {
            Launcher::Torchrun => Err(invalid(
                "MASTER_ADDR",
                "is not set; torchrun sets it to rank 0's host".to_string(),
            )),
            Launcher::OpenMpi => Err(invalid(
                "MASTER_ADDR",
                "is not set; under mpirun pass rank 0's host with `-x MASTER_ADDR=host` \
                 (or set RESERVOIR_MEET_ADDR)"
                    .to_string(),
            )),
            Launcher::Slurm => {
                let name = ["SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"]
                    .into_iter()
                    .find(|name| self.get(name).is_some())
                    .unwrap_or("SLURM_STEP_NODELIST");
                let list = self.text(name, "srun sets it to the step's nodes")?;
                first_host(&list)
                    .ok_or_else(|| invalid(name, format!("`{list}` is not a Slurm node list")))
            }
        }
    }

    /// The port rank 0 listens on: `RESERVOIR_MEET_PORT`, else under torchrun
    /// `MASTER_PORT` + 1 (its agent's store listens at `MASTER_PORT`), else `MASTER_PORT`,
    /// else (srun) [`SLURM_PORT_BASE`] + 10 × (job id mod 1000) + (step id mod 10).
    fn port(&self, launcher: Launcher) -> Result<u16> {
        if self.get("RESERVOIR_MEET_PORT").is_some() {
            return self.port_of("RESERVOIR_MEET_PORT", 0);
        }
        match launcher {
            Launcher::Torchrun => self.port_of("MASTER_PORT", 1).map_err(|error| {
                hinted(
                    error,
                    "the ranks meet at MASTER_PORT + 1, beside torchrun's store; \
                     RESERVOIR_MEET_PORT sets another port",
                )
            }),
            Launcher::OpenMpi => self.port_of("MASTER_PORT", 0).map_err(|error| {
                hinted(
                    error,
                    "under mpirun pass a free port with `-x MASTER_PORT=port` \
                     (or set RESERVOIR_MEET_PORT)",
                )
            }),
            Launcher::Slurm if self.get("MASTER_PORT").is_some() => self.port_of("MASTER_PORT", 0),
            Launcher::Slurm => {
                let job = self.number::<u64>("SLURM_JOB_ID")? % 1000;
                let step = self.number::<u64>("SLURM_STEP_ID")? % 10;
                Ok(SLURM_PORT_BASE + 10 * job as u16 + step as u16)
            }
        }
    }

    /// The variable `name`, a TCP port, plus `offset`.
    fn port_of(&self, name: &str, offset: u16) -> Result<u16> {
        let port = self.number::<u64>(name)?;
        u16::try_from(port)
            .ok()
            .filter(|&port| port > 0)
            .and_then(|port| port.checked_add(offset))
            .ok_or_else(|| {
                let shown = match offset {
                    0 => port.to_string(),
                    _ => format!("{port} + {offset}"),
                };
                invalid(name, format!("{shown} is not a TCP port"))
            })
    }

    /// The token of this job: `RESERVOIR_MEET_TOKEN`, else torchrun's run id, Open MPI's
    /// namespace (or, before Open MPI 5, its job id), or Slurm's `job.step`.
    fn token(&self, launcher: Launcher) -> Result<String> {
        let shared = "set RESERVOIR_MEET_TOKEN to a value every rank of the job shares";
        let (name, token) = match self.get("RESERVOIR_MEET_TOKEN") {
            Some(token) => ("RESERVOIR_MEET_TOKEN", token),
            None => match launcher {
                Launcher::Torchrun => (
                    "TORCHELASTIC_RUN_ID",
                    self.text(
                        "TORCHELASTIC_RUN_ID",
                        &format!("torchrun sets it; under a launcher that does not, {shared}"),
                    )?,
                ),
                Launcher::OpenMpi => ["PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"]
                    .into_iter()
                    .find_map(|name| Some((name, self.get(name)?)))
                    .ok_or_else(|| {
                        invalid(
                            "PMIX_NAMESPACE",
                            format!("is not set, nor OMPI_MCA_ess_base_jobid; {shared}"),
                        )
                    })?,
                Launcher::Slurm => (
                    "SLURM_JOB_ID",
                    format!(
                        "{}.{}",
                        self.text("SLURM_JOB_ID", "srun sets it for every task")?,
                        self.text("SLURM_STEP_ID", "srun sets it for every task")?
                    ),
                ),
            },
        };
        if token.len() > MAX_TOKEN_BYTES {
            return Err(invalid(
                name,
                format!("is longer than {MAX_TOKEN_BYTES} bytes"),
            ));
        }
        Ok(token)
    }

    /// `RESERVOIR_MEET_TIMEOUT` in seconds, else [`DEFAULT_MEET_TIMEOUT`].
    fn timeout(&self) -> Result<Duration> {
        let Some(value) = self.get("RESERVOIR_MEET_TIMEOUT") else {
            return Ok(DEFAULT_MEET_TIMEOUT);
        };
        value
            .parse::<f64>()
            .ok()
            .filter(|seconds| *seconds > 0.0)
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
            .ok_or_else(|| {
                invalid(
                    "RESERVOIR_MEET_TIMEOUT",
                    format!("`{value}` is not a positive number of seconds"),
                )
            })
    }
}

/// The first host of a Slurm node list, as `scontrol show hostnames` would print it first:
/// `gpu[01-04,07],login2` gives `gpu01`, `rack[2-3]-n[5,1]` gives `rack2-n5`. `None` for a
/// list that is empty or whose brackets do not close or hold no number.
fn first_host(list: &str) -> Option<String> {
    let mut host = String::new();
    let mut rest = list;
    loop {
        match rest.find([',', '[', ']']) {
            None => {
                host.push_str(rest);
                break;
            }
            Some(at) => {
                host.push_str(&rest[..at]);
                match rest.as_bytes()[at] {
                    b',' => break,
                    b'[' => {
                        let (ranges, after) = rest[at + 1..].split_once(']')?;
                        let first = ranges.split([',', '-']).next()?.trim();
                        if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
                            return None;
                        }
                        host.push_str(first);
                        rest = after;
                    }
                    _ => return None,
                }
            }
        }
    }
    (!host.is_empty()).then_some(host)
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

    fn some(vars: &[(&str, &str)]) -> Launch {
        launch(vars).expect("launch").expect("a launch")
    }

    fn error(vars: &[(&str, &str)]) -> String {
        launch(vars).expect_err("a bad launch").to_string()
    }

    const TORCHRUN: [(&str, &str); 6] = [
        ("RANK", "1"),
        ("WORLD_SIZE", "2"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "node7"),
        ("MASTER_PORT", "29500"),
        ("TORCHELASTIC_RUN_ID", "run-42"),
    ];

    const MPIRUN: [(&str, &str); 6] = [
        ("OMPI_COMM_WORLD_RANK", "3"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("PMIX_NAMESPACE", "prterun-host-1234@1"),
        ("MASTER_ADDR", "10.0.0.1"),
        ("MASTER_PORT", "6000"),
    ];

    const SRUN: [(&str, &str); 7] = [
        ("SLURM_PROCID", "5"),
        ("SLURM_NTASKS", "8"),
        ("SLURM_LOCALID", "1"),
        ("SLURM_JOB_ID", "123456"),
        ("SLURM_STEP_ID", "2"),
        ("SLURM_STEP_NODELIST", "gpu[03-04,07],login2"),
        ("SLURM_JOB_NODELIST", "gpu[01-08]"),
    ];

    fn with<'a>(
        base: &[(&'a str, &'a str)],
        extra: &[(&'a str, &'a str)],
    ) -> Vec<(&'a str, &'a str)> {
        let mut vars: Vec<_> = extra.to_vec();
        vars.extend(
            base.iter()
                .filter(|(n, _)| !extra.iter().any(|(e, _)| e == n)),
        );
        vars
    }

    fn without<'a>(base: &[(&'a str, &'a str)], name: &str) -> Vec<(&'a str, &'a str)> {
        base.iter().copied().filter(|(n, _)| *n != name).collect()
    }

    #[test]
    fn torchrun_meets_one_port_above_its_store() {
        assert_eq!(
            some(&TORCHRUN),
            Launch {
                launcher: Launcher::Torchrun,
                rank: 1,
                world: 2,
                local_rank: 1,
                address: "node7:29501".to_string(),
                token: "run-42".to_string(),
                timeout: DEFAULT_MEET_TIMEOUT,
            }
        );
        let moved = some(&with(
            &TORCHRUN,
            &[
                ("RESERVOIR_MEET_ADDR", "127.0.0.1"),
                ("RESERVOIR_MEET_PORT", "4000"),
                ("RESERVOIR_MEET_TOKEN", "mine"),
                ("RESERVOIR_MEET_TIMEOUT", "2.5"),
            ],
        ));
        assert_eq!(moved.address, "127.0.0.1:4000");
        assert_eq!(moved.token, "mine");
        assert_eq!(moved.timeout, Duration::from_millis(2500));
        let v6 = some(&with(&TORCHRUN, &[("MASTER_ADDR", "::1")]));
        assert_eq!(v6.address, "[::1]:29501");
        let bracketed = some(&with(&TORCHRUN, &[("MASTER_ADDR", "[::1]")]));
        assert_eq!(bracketed.address, "[::1]:29501");
    }

    #[test]
    fn one_process_or_no_launcher_makes_no_launch() {
        assert_eq!(launch(&[]).expect("none"), None);
        assert_eq!(launch(&[("WORLD_SIZE", "1")]).expect("one"), None);
        assert_eq!(launch(&[("OMPI_COMM_WORLD_SIZE", "1")]).expect("one"), None);
        // An sbatch script or an salloc shell: SLURM_PROCID and SLURM_NTASKS but no step.
        let batch = without(&SRUN, "SLURM_STEP_ID");
        assert_eq!(launch(&batch).expect("batch script"), None);
    }

    #[test]
    fn mpirun_takes_its_ranks_and_the_address_passed_with_it() {
        assert_eq!(
            some(&MPIRUN),
            Launch {
                launcher: Launcher::OpenMpi,
                rank: 3,
                world: 4,
                local_rank: 1,
                address: "10.0.0.1:6000".to_string(),
                token: "prterun-host-1234@1".to_string(),
                timeout: DEFAULT_MEET_TIMEOUT,
            }
        );
        let older = with(
            &without(&MPIRUN, "PMIX_NAMESPACE"),
            &[("OMPI_MCA_ess_base_jobid", "3735617537")],
        );
        assert_eq!(some(&older).token, "3735617537");
        for name in ["MASTER_ADDR", "MASTER_PORT", "PMIX_NAMESPACE"] {
            let message = error(&without(&MPIRUN, name));
            assert!(message.contains(name), "{message}");
        }
        let message = error(&without(&MPIRUN, "MASTER_ADDR"));
        assert!(message.contains("-x MASTER_ADDR"), "{message}");
    }

    #[test]
    fn srun_meets_on_the_first_node_of_the_step_at_a_port_of_the_job() {
        assert_eq!(
            some(&SRUN),
            Launch {
                launcher: Launcher::Slurm,
                rank: 5,
                world: 8,
                local_rank: 1,
                address: "gpu03:24562".to_string(),
                token: "123456.2".to_string(),
                timeout: DEFAULT_MEET_TIMEOUT,
            }
        );
        let job_list = some(&without(&SRUN, "SLURM_STEP_NODELIST"));
        assert_eq!(job_list.address, "gpu01:24562");
        let exported = some(&with(
            &SRUN,
            &[("MASTER_ADDR", "head"), ("MASTER_PORT", "29500")],
        ));
        assert_eq!(exported.address, "head:29500");
    }

    #[test]
    fn torchrun_comes_before_mpirun_before_srun() {
        let all: Vec<_> = TORCHRUN
            .iter()
            .chain(&MPIRUN[..4])
            .chain(&SRUN)
            .copied()
            .collect();
        assert_eq!(some(&all).launcher, Launcher::Torchrun);
        let mpi_in_slurm: Vec<_> = MPIRUN.iter().chain(&SRUN).copied().collect();
        assert_eq!(some(&mpi_in_slurm).launcher, Launcher::OpenMpi);
        assert_eq!(some(&mpi_in_slurm).rank, 3);
    }

    #[test]
    fn slurm_node_lists_give_their_first_host() {
        for (list, first) in [
            ("gpu[01-04,07],login2", Some("gpu01")),
            ("node7", Some("node7")),
            ("a1,b2", Some("a1")),
            ("n[9,1-2]", Some("n9")),
            ("rack[2-3]-n[05,1]", Some("rack2-n05")),
            ("gpu[007]", Some("gpu007")),
            ("", None),
            ("gpu[01-04", None),
            ("gpu01]", None),
            ("gpu[]", None),
            ("gpu[a-b]", None),
            (",node1", None),
        ] {
            assert_eq!(first_host(list).as_deref(), first, "{list}");
        }
        let message = error(&with(&SRUN, &[("SLURM_STEP_NODELIST", "gpu[01-")]));
        assert!(message.contains("SLURM_STEP_NODELIST"), "{message}");
    }

    #[test]
    fn a_missing_or_bad_variable_is_named() {
        let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
            (vec![("WORLD_SIZE", "2")], "RANK"),
            (vec![("WORLD_SIZE", "two")], "WORLD_SIZE"),
            (vec![("WORLD_SIZE", "0")], "WORLD_SIZE"),
            (vec![("WORLD_SIZE", "99999999999")], "WORLD_SIZE"),
            (with(&TORCHRUN, &[("RANK", "2")]), "RANK"),
            (without(&TORCHRUN, "LOCAL_RANK"), "LOCAL_RANK"),
            (without(&TORCHRUN, "MASTER_ADDR"), "MASTER_ADDR"),
            (without(&TORCHRUN, "MASTER_PORT"), "MASTER_PORT"),
            (with(&TORCHRUN, &[("MASTER_PORT", "70000")]), "MASTER_PORT"),
            (with(&TORCHRUN, &[("MASTER_PORT", "65535")]), "MASTER_PORT"),
            (
                without(&TORCHRUN, "TORCHELASTIC_RUN_ID"),
                "TORCHELASTIC_RUN_ID",
            ),
            (
                with(&TORCHRUN, &[("RESERVOIR_MEET_PORT", "0")]),
                "RESERVOIR_MEET_PORT",
            ),
            (
                with(&TORCHRUN, &[("RESERVOIR_MEET_TIMEOUT", "-1")]),
                "RESERVOIR_MEET_TIMEOUT",
            ),
            (
                with(&TORCHRUN, &[("RESERVOIR_MEET_TIMEOUT", "soon")]),
                "RESERVOIR_MEET_TIMEOUT",
            ),
            (
                with(&MPIRUN, &[("OMPI_COMM_WORLD_RANK", "x")]),
                "OMPI_COMM_WORLD_RANK",
            ),
            (with(&SRUN, &[("SLURM_PROCID", "8")]), "SLURM_PROCID"),
            (without(&SRUN, "SLURM_LOCALID"), "SLURM_LOCALID"),
            (without(&SRUN, "SLURM_JOB_ID"), "SLURM_JOB_ID"),
            (
                without(&without(&SRUN, "SLURM_STEP_NODELIST"), "SLURM_JOB_NODELIST"),
                "SLURM_STEP_NODELIST",
            ),
        ];
        for (vars, named) in cases {
            let message = error(&vars);
            assert!(message.contains(named), "{named}: {message}");
            assert!(!message.contains('\n'), "{message}");
        }
        let long = "x".repeat(MAX_TOKEN_BYTES + 1);
        let message = error(&with(&TORCHRUN, &[("RESERVOIR_MEET_TOKEN", &long)]));
        assert!(message.contains("RESERVOIR_MEET_TOKEN"), "{message}");
    }
}
