//! Spikes from Python: the encoders (analog inputs to spike trains), seeded test patterns and
//! the template detector. Spike trains are matrices (steps × channels) binned at `dt_ms`, the
//! layout the encoders produce and a reservoir runs.

use ndarray::ArrayView2;
use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use reservoir_core::detection::{self, Detection};
use reservoir_core::encoding::EncoderParams;
use reservoir_core::spikes::SpikePattern;
use reservoir_core::Result;

use crate::config::experiment_config;
use crate::errors::IntoPy;

/// `x` (rows × features) encoded by `encoder` once checked, without the GIL.
fn encode<'py>(
    py: Python<'py>,
    encoder: EncoderParams,
    x: PyReadonlyArray2<'py, f64>,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let encoder = encoder.check().py_err()?;
    let x = x.as_array();
    let spikes = py.detach(|| encoder.encode_sequence(x, seed)).py_err()?;
    Ok(spikes.into_pyarray(py))
}

/// Rate code: each row held for `steps` steps, a spike with probability
/// `clamp(x·gain + offset, 0, 1)` per step; (rows·steps) × features.
#[pyfunction]
#[pyo3(signature = (x, steps = 1, gain = 1.0, offset = 0.0, seed = 0))]
pub fn encode_rate<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    steps: usize,
    gain: f64,
    offset: f64,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let encoder = EncoderParams::Rate {
        steps,
        gain,
        offset,
    };
    encode(py, encoder, x, seed)
}

/// Latency code: one spike per feature and row within the row's `steps` steps, strong inputs
/// first; (rows·steps) × features. Deterministic.
#[pyfunction]
#[pyo3(signature = (x, steps = 1, threshold = 0.01, tau = 1.0, linear = false, normalize = false, clip = false))]
#[allow(clippy::too_many_arguments)]
pub fn encode_latency<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    steps: usize,
    threshold: f64,
    tau: f64,
    linear: bool,
    normalize: bool,
    clip: bool,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let encoder = EncoderParams::Latency {
        steps,
        threshold,
        tau,
        linear,
        normalize,
        clip,
    };
    encode(py, encoder, x, 0)
}

/// Delta code of the whole sequence: 1 where a feature rose by at least `threshold` since
/// the last row (−1 where it fell, with `off_spike`); rows × features. Deterministic.
#[pyfunction]
#[pyo3(signature = (x, threshold = 0.1, padding = false, off_spike = false))]
pub fn encode_delta<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    threshold: f64,
    padding: bool,
    off_spike: bool,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let encoder = EncoderParams::Delta {
        threshold,
        padding,
        off_spike,
    };
    encode(py, encoder, x, 0)
}

/// Population code: `neurons_per_feature` Gaussian receptive fields per feature, each row held
/// for `steps` steps; (rows·steps) × (features·neurons_per_feature), feature-major.
#[pyfunction]
#[pyo3(signature = (x, neurons_per_feature = 10, min = 0.0, max = 1.0, sigma = None, steps = 1, max_probability = 1.0, seed = 0))]
#[allow(clippy::too_many_arguments)]
pub fn encode_population<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    neurons_per_feature: usize,
    min: f64,
    max: f64,
    sigma: Option<f64>,
    steps: usize,
    max_probability: f64,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let encoder = EncoderParams::Population {
        neurons_per_feature,
        min,
        max,
        sigma,
        steps,
        max_probability,
    };
    encode(py, encoder, x, seed)
}

/// Poisson code: each row a rate of `x · max_rate_hz` over `steps` bins of `dt_ms`; a bin
/// holds its spike count (possibly above 1); (rows·steps) × features.
#[pyfunction]
#[pyo3(signature = (x, max_rate_hz = 100.0, dt_ms = 1.0, steps = 1, seed = 0))]
pub fn encode_poisson<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    max_rate_hz: f64,
    dt_ms: f64,
    steps: usize,
    seed: u64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let encoder = EncoderParams::Poisson {
        max_rate_hz,
        dt_ms,
        steps,
    };
    encode(py, encoder, x, seed)
}

/// A spike-train matrix (steps × channels, binned at `dt_ms`) as a pattern: each non-zero
/// entry a spike of that amplitude at the start of its step.
fn pattern(trains: ArrayView2<f64>, dt_ms: f64) -> Result<SpikePattern> {
    SpikePattern::from_matrix(&trains.to_owned(), dt_ms)
}

/// A random template: `spikes` spikes on `n_channels` channels within `duration_ms`, seeded,
/// binned at `dt_ms` (ceil(duration_ms / dt_ms) × n_channels).
#[pyfunction]
#[pyo3(signature = (n_channels, duration_ms, spikes, seed = 0, dt_ms = 1.0))]
pub fn random_template<'py>(
    py: Python<'py>,
    n_channels: usize,
    duration_ms: f64,
    spikes: usize,
    seed: u64,
    dt_ms: f64,
) -> PyResult<Bound<'py, PyArray2<f64>>> {
    let trains = py
        .detach(|| {
            detection::random_template(n_channels, duration_ms, spikes, seed)?
                .to_input_matrix(dt_ms)
        })
        .py_err()?;
    Ok(trains.into_pyarray(py))
}

/// A stream of `duration_ms` on `n_channels` channels: Poisson background at `background_hz`
/// plus `occurrences` jittered copies of every template (each binned at `dt_ms`), binned at
/// `dt_ms`; with the onsets (ms) and template index of each copy, by onset.
#[pyfunction]
#[pyo3(signature = (templates, n_channels, duration_ms, background_hz = 10.0, occurrences = 1, jitter_ms = 0.0, seed = 0, dt_ms = 1.0))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub fn plant_patterns<'py>(
    py: Python<'py>,
    templates: Vec<PyReadonlyArray2<'py, f64>>,
    n_channels: usize,
    duration_ms: f64,
    background_hz: f64,
    occurrences: usize,
    jitter_ms: f64,
    seed: u64,
    dt_ms: f64,
) -> PyResult<(
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<usize>>,
)> {
    let views: Vec<_> = templates.iter().map(|t| t.as_array()).collect();
    let (stream, planted) = py
        .detach(|| {
            let patterns = views
                .iter()
                .map(|t| pattern(*t, dt_ms))
                .collect::<Result<Vec<_>>>()?;
            let (stream, planted) = detection::plant_patterns(
                &patterns,
                n_channels,
                duration_ms,
                background_hz,
                occurrences,
                jitter_ms,
                seed,
            )?;
            Ok::<_, reservoir_core::ReservoirError>((stream.to_input_matrix(dt_ms)?, planted))
        })
        .py_err()?;
    let (onsets, which): (Vec<f64>, Vec<usize>) = planted.into_iter().unzip();
    Ok((
        stream.into_pyarray(py),
        onsets.into_pyarray(py),
        which.into_pyarray(py),
    ))
}

/// Finds fixed spike templates in streams by the windowed correlation of their filtered
/// trains; templates and streams are spike-train matrices binned at the detector's `dt_ms`.
#[pyclass(module = "reservoir._engine", frozen)]
pub struct PatternDetector {
    detector: detection::PatternDetector,
}

impl PatternDetector {
    /// `stream` as a pattern on the detector's bins, without the GIL.
    fn with_stream<T: Send>(
        &self,
        py: Python<'_>,
        stream: PyReadonlyArray2<'_, f64>,
        body: impl FnOnce(&SpikePattern) -> Result<T> + Send,
    ) -> PyResult<T> {
        let stream = stream.as_array();
        let dt_ms = self.detector.options().dt_ms();
        py.detach(|| body(&pattern(stream, dt_ms)?)).py_err()
    }
}

#[pymethods]
impl PatternDetector {
    /// The detector of `templates` (each bins × channels) with the options of `params` (the
    /// `detector` table).
    #[new]
    fn new(
        py: Python<'_>,
        params: &Bound<'_, PyDict>,
        templates: Vec<PyReadonlyArray2<'_, f64>>,
    ) -> PyResult<Self> {
        let options = *experiment_config(params)?.detector();
        let views: Vec<_> = templates.iter().map(|t| t.as_array()).collect();
        let detector = py
            .detach(|| {
                let patterns = views
                    .iter()
                    .map(|t| pattern(*t, options.dt_ms()))
                    .collect::<Result<Vec<_>>>()?;
                detection::PatternDetector::new(patterns, options)
            })
            .py_err()?;
        Ok(Self { detector })
    }

    /// The score in [0, 1] of every template at every bin of `stream` (bins × templates; 0
    /// before a template's first complete window).
    fn scores<'py>(
        &self,
        py: Python<'py>,
        stream: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let scores = self.with_stream(py, stream, |s| self.detector.scores(s))?;
        Ok(scores.into_pyarray(py))
    }

    /// The detections in `stream`, by time then template: their window ends (ms), template
    /// indices and scores, as three arrays of equal length.
    #[allow(clippy::type_complexity)]
    fn detect<'py>(
        &self,
        py: Python<'py>,
        stream: PyReadonlyArray2<'py, f64>,
    ) -> PyResult<(
        Bound<'py, PyArray1<f64>>,
        Bound<'py, PyArray1<usize>>,
        Bound<'py, PyArray1<f64>>,
    )> {
        let found: Vec<Detection> = self.with_stream(py, stream, |s| self.detector.detect(s))?;
        let times: Vec<f64> = found.iter().map(|d| d.time_ms).collect();
        let templates: Vec<usize> = found.iter().map(|d| d.template).collect();
        let scores: Vec<f64> = found.iter().map(|d| d.score).collect();
        Ok((
            times.into_pyarray(py),
            templates.into_pyarray(py),
            scores.into_pyarray(py),
        ))
    }

    /// Channels every template and stream has.
    #[getter]
    fn n_channels(&self) -> usize {
        self.detector.n_channels()
    }

    /// Number of templates.
    #[getter]
    fn n_templates(&self) -> usize {
        self.detector.n_templates()
    }
}
