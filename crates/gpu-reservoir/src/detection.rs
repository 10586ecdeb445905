//! Temporal pattern detection on the GPU, detection for detection the same as the CPU.

use cudarc::driver::{LaunchConfig, PushKernelArg};
use ndarray::Array2;
use reservoir_core::detection::{Detection, PatternDetector};
use reservoir_core::spikes::SpikePattern;
use reservoir_core::ReservoirError;

use crate::device::GpuDevice;
use crate::error::{DriverContext, Result};
use crate::kernels;

fn launch_config(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (threads.div_ceil(256) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn to_i32(value: usize, what: &str) -> Result<i32> {
    i32::try_from(value).map_err(|_| {
        ReservoirError::invalid("GPU pattern detection", format!("{what} exceeds 2^31 - 1")).into()
    })
}

/// [`PatternDetector::scores`] on the GPU: the stream is binned on the host, filtered with a
/// thread per channel, and every (bin, template) score is one thread, with the CPU's f64
/// operations in the CPU's order, so the matrix is bit-identical.
pub fn gpu_scores(
    device: &GpuDevice,
    detector: &PatternDetector,
    stream: &SpikePattern,
) -> Result<Array2<f64>> {
    let channels = detector.n_channels();
    if stream.n_neurons() != channels {
        return Err(ReservoirError::shape(
            "pattern detector: stream channel count",
            channels,
            stream.n_neurons(),
        )
        .into());
    }
    let binned = stream.to_input_matrix(detector.options().dt_ms)?;
    let bins = binned.nrows();
    let n_templates = detector.n_templates();
    let (mut centred, mut offsets, mut lengths, mut norms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for j in 0..n_templates {
        let Some((template, norm)) = detector.template(j) else {
            return Err(ReservoirError::invalid(
                "GPU pattern detection",
                format!("template {j} is missing"),
            )
            .into());
        };
        offsets.push(centred.len() as i64);
        lengths.push(to_i32(template.nrows(), "a template length")?);
        norms.push(norm);
        centred.extend(template.iter().copied());
    }
    let (bins_i, channels_i, templates_i) = (
        to_i32(bins, "bins")?,
        to_i32(channels, "channels")?,
        to_i32(n_templates, "templates")?,
    );
    let s = device.stream();
    let mut filtered = s
        .clone_htod(&binned.iter().copied().collect::<Vec<f64>>())
        .context("uploading the binned stream")?;
    let templates = s.clone_htod(&centred).context("uploading the templates")?;
    let offsets = s.clone_htod(&offsets).context("uploading the templates")?;
    let lengths = s.clone_htod(&lengths).context("uploading the templates")?;
    let norms = s.clone_htod(&norms).context("uploading the templates")?;
    let mut scores = s
        .alloc_zeros::<f64>(bins * n_templates)
        .context("allocating the scores")?;
    let alpha = detector.alpha();

    let filter = device.nvrtc_function(&kernels::DETECTION, kernels::detection::FILTER)?;
    let mut launch = s.launch_builder(&filter);
    launch
        .arg(&mut filtered)
        .arg(&bins_i)
        .arg(&channels_i)
        .arg(&alpha);
    // SAFETY: filtered holds bins·channels values; the kernel guards c < channels.
    unsafe { launch.launch(launch_config(channels)) }.context("launching filter_kernel")?;

    let score = device.nvrtc_function(&kernels::DETECTION, kernels::detection::SCORES)?;
    let mut launch = s.launch_builder(&score);
    launch
        .arg(&filtered)
        .arg(&bins_i)
        .arg(&channels_i)
        .arg(&templates)
        .arg(&offsets)
        .arg(&lengths)
        .arg(&norms)
        .arg(&templates_i)
        .arg(&mut scores);
    // SAFETY: template j occupies templates[offsets[j] .. offsets[j] + lengths[j]·channels];
    // windows are read only for t >= lengths[j] − 1 and lengths[j] <= bins; scores holds
    // bins·templates values and the kernel guards idx < bins·templates.
    unsafe { launch.launch(launch_config(bins * n_templates)) }
        .context("launching detection_scores_kernel")?;
    let host = s.clone_dtoh(&scores).context("copying the scores back")?;
    Ok(Array2::from_shape_vec((bins, n_templates), host)
        .map_err(|e| ReservoirError::invalid("GPU pattern detection", e))?)
}

/// [`PatternDetector::detect`] with the scores computed on the GPU ([`gpu_scores`]) and the
/// same peak picking and suppression as the CPU.
pub fn gpu_detect(
    device: &GpuDevice,
    detector: &PatternDetector,
    stream: &SpikePattern,
) -> Result<Vec<Detection>> {
    let scores = gpu_scores(device, detector, stream)?;
    Ok(detector.detections_from_scores(scores.view())?)
}
