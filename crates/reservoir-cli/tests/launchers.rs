//! Launches of several `reservoir info --meet` processes, with the variables torchrun, Slurm's
//! `srun` and Open MPI's `mpirun` set, each rank checked to have met the others; and, where
//! `torchrun` is on the path, the real torchrun (`RESERVOIR_REQUIRE_TORCHRUN=1` fails the
//! test without it).

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest a launch of these tests may take before its processes are killed.
const LAUNCH_LIMIT: Duration = Duration::from_secs(120);

/// The variables of every launcher, which the processes must not inherit from the test's
/// environment (a test run inside a Slurm job, say).
const LAUNCHER_PREFIXES: [&str; 6] = [
    "SLURM_",
    "OMPI_",
    "PMIX_",
    "TORCHELASTIC_",
    "RESERVOIR_MEET_",
    "MASTER_",
];
const LAUNCHER_NAMES: [&str; 3] = ["WORLD_SIZE", "RANK", "LOCAL_RANK"];

/// A command with this test's environment less every launcher's variables.
fn clean(program: impl Into<PathBuf>) -> Command {
    let mut command = Command::new(program.into());
    for (name, _) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if LAUNCHER_PREFIXES.iter().any(|p| text.starts_with(p))
            || LAUNCHER_NAMES.contains(&text.as_ref())
        {
            command.env_remove(&name);
        }
    }
    command
        .current_dir(std::env::temp_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// What a finished process printed.
struct Finished {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Waits for `child` at most [`LAUNCH_LIMIT`], killing it then.
fn finish(mut child: Child) -> Finished {
    let deadline = Instant::now() + LAUNCH_LIMIT;
    while child.try_wait().expect("waiting").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Finished {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `world` ranks of `reservoir info --meet --json` at once, rank r with `vars(r)`, and
/// returns each one's report; every rank must succeed.
fn launch(world: usize, vars: impl Fn(usize) -> Vec<(&'static str, String)>) -> Vec<Value> {
    let children: Vec<Child> = (0..world)
        .map(|rank| {
            clean(env!("CARGO_BIN_EXE_reservoir"))
                .args(["info", "--meet", "--json"])
                .env("RESERVOIR_MEET_TIMEOUT", "60")
                .envs(vars(rank))
                .spawn()
                .expect("a rank")
        })
        .collect();
    children
        .into_iter()
        .map(finish)
        .map(|out| {
            assert!(out.success, "a rank failed: {}", out.stderr);
            serde_json::from_str(&out.stdout).expect("one JSON object")
        })
        .collect()
}

/// Asserts that the reports are of ranks 0 to `world` − 1 of `launcher`, all met at `address`.
fn all_met(reports: &[Value], launcher: &str, address: &str) {
    let ranks: BTreeSet<u64> = reports
        .iter()
        .map(|report| {
            assert_eq!(report["launcher"], launcher, "{report}");
            assert_eq!(report["address"], address, "{report}");
            assert_eq!(report["world"], reports.len(), "{report}");
            assert!(report["seconds"].as_f64().is_some(), "{report}");
            report["rank"].as_u64().expect("a rank")
        })
        .collect();
    assert_eq!(ranks, (0..reports.len() as u64).collect(), "{reports:?}");
}

/// A port that nobody listens on, nor on the next `also` ports.
fn free_ports(also: u16) -> u16 {
    loop {
        let first = TcpListener::bind("127.0.0.1:0").expect("a port");
        let port = first.local_addr().expect("address").port();
        if (1..=also).all(|step| {
            port.checked_add(step)
                .is_some_and(|p| TcpListener::bind(("127.0.0.1", p)).is_ok())
        }) {
            return port;
        }
    }
}

#[test]
fn torchrun_ranks_meet_beside_the_store_at_master_port() {
    // torchrun's agent serves its store at MASTER_ADDR:MASTER_PORT.
    let port = free_ports(1);
    let store = TcpListener::bind(("127.0.0.1", port)).expect("the store's port");
    let reports = launch(3, |rank| {
        vec![
            ("WORLD_SIZE", "3".to_string()),
            ("RANK", rank.to_string()),
            ("LOCAL_RANK", rank.to_string()),
            ("MASTER_ADDR", "127.0.0.1".to_string()),
            ("MASTER_PORT", port.to_string()),
            ("TORCHELASTIC_RUN_ID", "fake-torchrun".to_string()),
        ]
    });
    all_met(&reports, "torchrun", &format!("127.0.0.1:{}", port + 1));
    drop(store);
}

#[test]
fn srun_ranks_meet_on_the_first_node_at_the_port_of_their_job() {
    // A job id whose port (20000 + 10 × (job id mod 1000) + step id) is free here.
    let job = (0..1000u16)
        .find(|job| TcpListener::bind(("127.0.0.1", 20000 + 10 * job + 3)).is_ok())
        .expect("a free port of the Slurm range");
    let reports = launch(2, |rank| {
        vec![
            ("SLURM_PROCID", rank.to_string()),
            ("SLURM_NTASKS", "2".to_string()),
            ("SLURM_LOCALID", rank.to_string()),
            ("SLURM_JOB_ID", format!("7{job:03}")),
            ("SLURM_STEP_ID", "3".to_string()),
            ("SLURM_STEP_NODELIST", "localhost,gpu[02-03]".to_string()),
            ("SLURM_JOB_NODELIST", "gpu[01-03],localhost".to_string()),
        ]
    });
    all_met(
        &reports,
        "srun",
        &format!("localhost:{}", 20000 + 10 * job + 3),
    );
}

#[test]
fn mpirun_ranks_meet_at_the_address_passed_to_them() {
    let port = free_ports(0);
    let reports = launch(2, |rank| {
        vec![
            ("OMPI_COMM_WORLD_RANK", rank.to_string()),
            ("OMPI_COMM_WORLD_SIZE", "2".to_string()),
            ("OMPI_COMM_WORLD_LOCAL_RANK", rank.to_string()),
            ("PMIX_NAMESPACE", "prterun-test-1@1".to_string()),
            ("MASTER_ADDR", "127.0.0.1".to_string()),
            ("MASTER_PORT", port.to_string()),
        ]
    });
    all_met(&reports, "mpirun", &format!("127.0.0.1:{port}"));
}

/// One `reservoir info --meet` with `vars` and no other launcher variable.
fn meet_alone(vars: &[(&str, &str)]) -> Finished {
    finish(
        clean(env!("CARGO_BIN_EXE_reservoir"))
            .args(["info", "--meet"])
            .envs(vars.iter().copied())
            .spawn()
            .expect("reservoir"),
    )
}

#[test]
fn without_a_launch_or_its_variables_the_meeting_says_so() {
    let none = meet_alone(&[]);
    assert!(
        none.success && none.stdout.starts_with("no launch"),
        "{}",
        none.stdout
    );
    // An sbatch script has SLURM_PROCID and SLURM_NTASKS but is no job step.
    let batch = meet_alone(&[
        ("SLURM_PROCID", "0"),
        ("SLURM_NTASKS", "4"),
        ("SLURM_JOB_ID", "9"),
    ]);
    assert!(
        batch.success && batch.stdout.starts_with("no launch"),
        "{}",
        batch.stdout
    );
    let mpi = meet_alone(&[
        ("OMPI_COMM_WORLD_RANK", "1"),
        ("OMPI_COMM_WORLD_SIZE", "2"),
        ("OMPI_COMM_WORLD_LOCAL_RANK", "1"),
        ("PMIX_NAMESPACE", "ns"),
    ]);
    assert!(!mpi.success, "{}", mpi.stdout);
    assert_eq!(mpi.stderr.lines().count(), 1, "{}", mpi.stderr);
    assert!(
        mpi.stderr.contains("MASTER_ADDR") && mpi.stderr.contains("-x"),
        "{}",
        mpi.stderr
    );
}

#[test]
fn a_rank_whose_rank_0_never_comes_gives_up_in_time_naming_the_address() {
    let port = free_ports(0);
    let started = Instant::now();
    let alone = meet_alone(&[
        ("WORLD_SIZE", "2"),
        ("RANK", "1"),
        ("LOCAL_RANK", "1"),
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", &(port - 1).to_string()),
        ("TORCHELASTIC_RUN_ID", "lonely"),
        ("RESERVOIR_MEET_TIMEOUT", "1"),
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(!alone.success);
    assert!(alone.stderr.starts_with("error: "), "{}", alone.stderr);
    assert!(
        alone.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        alone.stderr
    );
}

/// `torchrun` on the path, or `None` (saying why) where it is not and the test may skip.
fn torchrun() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("torchrun"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        let required = std::env::var("RESERVOIR_REQUIRE_TORCHRUN").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "RESERVOIR_REQUIRE_TORCHRUN=1 but torchrun is not on the path"
        );
        eprintln!("skipped: torchrun is not on the path");
    }
    found
}

/// Runs torchrun with `args` before `--no_python reservoir info --meet`.
fn start_torchrun(torchrun: &PathBuf, args: &[&str]) -> Child {
    clean(torchrun)
        .args(args)
        .args([
            "--no_python",
            env!("CARGO_BIN_EXE_reservoir"),
            "info",
            "--meet",
        ])
        .env("RESERVOIR_MEET_TIMEOUT", "60")
        .spawn()
        .expect("torchrun starts")
}

/// Asserts that `outputs` together hold the line of every rank of `world` under torchrun.
fn torchrun_met(outputs: &[Finished], world: usize) {
    let all: String = outputs.iter().map(|out| out.stdout.as_str()).collect();
    for out in outputs {
        assert!(
            out.success,
            "torchrun failed: {}\n{}",
            out.stdout, out.stderr
        );
    }
    for rank in 0..world {
        let line = format!("rank {rank} of {world} (torchrun) met at ");
        assert!(all.contains(&line), "`{line}` missing from:\n{all}");
    }
}

#[test]
fn the_real_torchrun_meets_standalone_with_c10d_and_over_two_agents() {
    let Some(torchrun) = torchrun() else { return };
    let standalone = start_torchrun(&torchrun, &["--standalone", "--nproc_per_node", "2"]);
    torchrun_met(&[finish(standalone)], 2);

    let endpoint = format!("localhost:{}", free_ports(1));
    let c10d = start_torchrun(
        &torchrun,
        &[
            "--nproc_per_node",
            "2",
            "--rdzv_backend",
            "c10d",
            "--rdzv_endpoint",
            &endpoint,
        ],
    );
    torchrun_met(&[finish(c10d)], 2);

    let port = free_ports(1).to_string();
    let agents: Vec<Child> = ["0", "1"]
        .into_iter()
        .map(|node| {
            start_torchrun(
                &torchrun,
                &[
                    "--nnodes",
                    "2",
                    "--node_rank",
                    node,
                    "--nproc_per_node",
                    "1",
                    "--master_addr",
                    "127.0.0.1",
                    "--master_port",
                    &port,
                ],
            )
        })
        .collect();
    let outputs: Vec<Finished> = agents.into_iter().map(finish).collect();
    torchrun_met(&outputs, 2);
}
