//! The LIF benchmark network written out for other simulators (`cpu_lif_bench --export`,
//! `gpu_lif_bench --export`; read by `benches/python/lif_vs_brian2.py` and
//! `benches/python/lif_vs_gpu_simulators.py`), per size N in one folder:
//!
//! - `nN.json`: the parameters, and what a simulator that draws its own synapses needs to
//!   draw them alike (in-degree, excitatory count, inhibitory gain, the largest excitatory
//!   weight: a synapse is `±scale · m` with m uniform on (0, 1]);
//! - `nN_w_in.f64` (W_in, N × K row-major) and `nN_u.f64` (the input levels, K per level,
//!   one per `hold_steps` steps from rest for `(warmup_runs + runs) · steps` steps: the
//!   benchmarks replay one run's rows every run, so the levels repeat with period `steps`);
//! - with the synapses (`synapses_written` in the JSON): `nN_pre.u32` / `nN_post.u32` /
//!   `nN_w.f64` (each synapse's source j, target i and weight W[i, j], raw little-endian, W's
//!   row order) and `nN_spikes.u32` (the spikes of the first 1000 steps from rest, as
//!   (step, neuron) pairs).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use ndarray::{Array2, ArrayView1};
use reservoir_core::lif::{LifConfig, LifNetwork, LifWeights};
use reservoir_core::{Reservoir, ReservoirError, Result};

/// Steps the input level is held: 10 ms at dt = 0.1 ms.
pub const HOLD_STEPS: usize = 100;

/// Steps from rest whose spikes the export writes, for a simulator to check its model against.
pub const CHECK_STEPS: usize = 1000;

fn io_error(path: &Path) -> impl Fn(std::io::Error) -> ReservoirError + '_ {
    move |e| ReservoirError::invalid("LIF export", format!("{}: {e}", path.display()))
}

/// Writes `values` as raw little-endian bytes to `dir/name`.
fn write_raw<T: Copy, const B: usize>(
    dir: &Path,
    name: &str,
    values: impl IntoIterator<Item = T>,
    to_bytes: impl Fn(T) -> [u8; B],
) -> Result<()> {
    let path = dir.join(name);
    let mut out = BufWriter::new(File::create(&path).map_err(io_error(&path))?);
    for v in values {
        out.write_all(&to_bytes(v)).map_err(io_error(&path))?;
    }
    out.flush().map_err(io_error(&path))
}

/// The input row of step `t` from rest when every run replays `run_inputs`.
fn replayed(run_inputs: &Array2<f64>, t: usize) -> ArrayView1<'_, f64> {
    run_inputs.row(t % run_inputs.nrows())
}

/// The greatest common divisor: the hold that both [`HOLD_STEPS`] and a run's length keep.
fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Writes the parameters, W_in and the input levels of `warmup_runs + runs` runs that each
/// replay `run_inputs` (one run's rows, levels held for [`HOLD_STEPS`]).
pub fn export_network(
    dir: &Path,
    config: &LifConfig,
    weights: &LifWeights,
    run_inputs: &Array2<f64>,
    warmup_runs: usize,
    runs: usize,
    synapses_written: bool,
) -> Result<()> {
    let steps = run_inputs.nrows();
    let hold = gcd(HOLD_STEPS, steps);
    std::fs::create_dir_all(dir).map_err(io_error(dir))?;
    let n = config.size();
    let w = weights.recurrent();
    let n_exc = weights.excitatory().iter().filter(|&&e| e).count();
    let (w_exc_max, w_inh_min) = w
        .values()
        .iter()
        .fold((0f64, 0f64), |(hi, lo), &v| (hi.max(v), lo.min(v)));
    let in_degree = w.row_ptr().get(1).map_or(0, |&end| end as usize);
    write_raw(
        dir,
        &format!("n{n}_w_in.f64"),
        weights.input().iter().copied(),
        f64::to_le_bytes,
    )?;
    let total = (warmup_runs + runs) * steps;
    let levels = (0..total)
        .step_by(hold)
        .flat_map(|t| replayed(run_inputs, t).to_vec());
    write_raw(dir, &format!("n{n}_u.f64"), levels, f64::to_le_bytes)?;
    let meta = format!(
        "{{\"n\": {n}, \"input_size\": {}, \"synapses\": {}, \"connection_prob\": {}, \
         \"in_degree\": {in_degree}, \"excitatory\": {n_exc}, \"w_exc_max\": {w_exc_max:e}, \
         \"w_inh_min\": {w_inh_min:e}, \"dt_ms\": {}, \"tau_m_ms\": {}, \"tau_syn_ms\": {}, \
         \"threshold\": {}, \"v_rest\": {}, \"v_reset\": {}, \"refractory_steps\": {}, \
         \"resistance\": {}, \"bias\": {}, \"hold_steps\": {hold}, \"steps\": {steps}, \
         \"warmup_runs\": {warmup_runs}, \"runs\": {runs}, \"check_steps\": {CHECK_STEPS}, \
         \"synapses_written\": {synapses_written}}}\n",
        config.input_size(),
        w.nnz(),
        config.connection_prob(),
        config.dt_ms(),
        config.tau_m_ms(),
        config.tau_syn_ms(),
        config.threshold(),
        config.v_rest(),
        config.v_reset(),
        config.refractory_steps(),
        config.resistance(),
        config.bias_current(),
    );
    let path = dir.join(format!("n{n}.json"));
    std::fs::write(&path, meta).map_err(io_error(&path))
}

/// Writes every synapse and the spikes of the first [`CHECK_STEPS`] steps from rest, runs
/// replaying `run_inputs`; `network` is at rest and is left so.
pub fn export_synapses(
    dir: &Path,
    network: &mut LifNetwork,
    run_inputs: &Array2<f64>,
) -> Result<()> {
    let n = network.config().size();
    let w = network.weights().recurrent();
    let posts = w
        .row_ptr()
        .windows(2)
        .enumerate()
        .flat_map(|(i, r)| std::iter::repeat_n(i as u32, (r[1] - r[0]) as usize));
    write_raw(dir, &format!("n{n}_post.u32"), posts, u32::to_le_bytes)?;
    let pres = w.col_idx().iter().copied();
    write_raw(dir, &format!("n{n}_pre.u32"), pres, u32::to_le_bytes)?;
    let values = w.values().iter().copied();
    write_raw(dir, &format!("n{n}_w.f64"), values, f64::to_le_bytes)?;
    let mut first = Vec::new();
    for t in 0..CHECK_STEPS {
        let spikes = network.step(replayed(run_inputs, t))?;
        first.extend(spikes.iter().flat_map(|&j| [t as u32, j]));
    }
    network.reset()?;
    write_raw(dir, &format!("n{n}_spikes.u32"), first, u32::to_le_bytes)
}
