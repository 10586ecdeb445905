//! Temporal pattern detection on the GPU, detection for detection the same as the CPU.

use cudarc::driver::{CudaFunction, PushKernelArg};
use ndarray::Array2;
use reservoir_core::detection::{Detection, PatternDetector};
use reservoir_core::spikes::SpikePattern;
use reservoir_core::ReservoirError;
use reservoir_kernels::detection;

use crate::driver::launch::{dim, per_item};
use crate::driver::{GpuDevice, KernelSet, LoadedModule};
use crate::error::{DriverContext, Result};

/// The kernels of `detection.cu`.
#[derive(Debug)]
struct DetectionKernels {
    filter: CudaFunction,
    scores: CudaFunction,
}

impl KernelSet for DetectionKernels {
    const MODULE: reservoir_kernels::Module = detection::MODULE;
    fn load(module: &LoadedModule) -> Result<Self> {
        Ok(Self {
            filter: module.function(detection::FILTER)?,
            scores: module.function(detection::SCORES)?,
        })
    }
}

const WHAT: &str = "GPU pattern detection";

/// [`PatternDetector::scores`] on the GPU: the stream is binned on the host, filtered with a
/// thread per channel, and every (bin, template) score is one thread, with the CPU's f64
/// operations in the CPU's order, so the matrix is bit-identical.
pub fn scores(
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
    let binned = stream.to_input_matrix(detector.options().dt_ms())?;
    let bins = binned.nrows();
    let n_templates = detector.n_templates();
    let (mut centred, mut offsets, mut lengths, mut norms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for j in 0..n_templates {
        let Some((template, norm)) = detector.template(j) else {
            return Err(ReservoirError::invalid(WHAT, format!("template {j} is missing")).into());
        };
        offsets.push(centred.len() as i64);
        lengths.push(dim(template.nrows(), WHAT)?);
        norms.push(norm);
        centred.extend(template.iter().copied());
    }
    let (bins_i, channels_i, templates_i) = (
        dim(bins, WHAT)?,
        dim(channels, WHAT)?,
        dim(n_templates, WHAT)?,
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

    let kernels = device.kernels::<DetectionKernels>()?;
    let mut launch = s.launch_builder(&kernels.filter);
    launch
        .arg(&mut filtered)
        .arg(&bins_i)
        .arg(&channels_i)
        .arg(&alpha);
    // SAFETY: filtered holds bins·channels values; the kernel guards c < channels.
    unsafe { launch.launch(per_item(channels)?) }.context("launching filter_kernel")?;

    let mut launch = s.launch_builder(&kernels.scores);
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
    unsafe { launch.launch(per_item(bins * n_templates)?) }
        .context("launching detection_scores_kernel")?;
    let host = s.clone_dtoh(&scores).context("copying the scores back")?;
    Ok(Array2::from_shape_vec((bins, n_templates), host)
        .map_err(|e| ReservoirError::invalid(WHAT, e))?)
}

/// [`PatternDetector::detect`] with the scores computed on the GPU ([`scores`]) and the
/// same peak picking and suppression as the CPU.
pub fn detect(
    device: &GpuDevice,
    detector: &PatternDetector,
    stream: &SpikePattern,
) -> Result<Vec<Detection>> {
    let scores = scores(device, detector, stream)?;
    Ok(detector.detections_from_scores(scores.view())?)
}
