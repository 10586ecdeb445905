//! Config files: a top-level `device` key and the `[task]`, `[reservoir]`, `[readout]`,
//! `[features]`, `[lif]`, `[detector]` and `[sweep]` tables, as [`ExperimentParams`] (what the
//! file says) and [`ExperimentConfig`] (what `check()` made of it). One file serves `reservoir
//! run`, `fit` and `sweep`, so a task's reservoir can be refitted on exported data unchanged.

use reservoir_core::architecture::Architecture;
use reservoir_core::detection::{DetectorOptions, DetectorParams};
use reservoir_core::features::{FeatureParams, SequenceFeatures};
use reservoir_core::lif::{LifConfig, LifParams};
use reservoir_core::{ConfigError, ReadoutConfig, ReadoutParams, ReservoirConfig, ReservoirParams};
use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};

use gpu_reservoir::GemmMath;

use crate::device::{Device, Devices};
use crate::error::{Result, RuntimeError};

mod folds;
mod model;
mod spikes;
mod sweep;
mod task;

pub use folds::Validation;
pub use model::{ModelConfig, ModelParams, NvarTable, ReservoirChoice};
pub use spikes::{SpikeClassificationOptions, SpikeClassificationParams};
use sweep::check_gpu_matmul;
pub use sweep::{SweepConfig, SweepParams, DEFAULT_FOLDS};
pub use task::{Task, TaskConfig, TaskParams};

/// A config file as written. Every table is optional and defaults as documented on its type.
///
/// `device` (`auto`, `cpu`, `cuda`, `cuda:N`) says where to run; configs written before it
/// said so with `backend` in `[reservoir]`, which is still read. Where a job ran is never part
/// of a trained model.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExperimentParams {
    /// Where to run (default `auto`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<Device>,
    /// The GPUs a sweep's lanes spread over when it runs on a GPU (`"all"` or `[0, 1]`;
    /// default: the one GPU of `device`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<Devices>,
    /// The arithmetic of the product W·X when a GPU steps a batch of sequences together
    /// (`"f32"`, `"tf32"` or `"f16"`; default f32). Like `device`, not part of a trained model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_matmul: Option<GemmMath>,
    /// The `[task]` table (what `reservoir run` and `reservoir sweep` do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskParams>,
    /// The `[reservoir]` table.
    pub reservoir: ReservoirParams,
    /// The `[model]` table: the reservoir kind, links and plasticity.
    pub model: ModelParams,
    /// The `[readout]` table.
    pub readout: ReadoutParams,
    /// The `[features]` table: what a sequence classifier's readout sees of each sequence.
    pub features: FeatureParams,
    /// The `[lif]` table: a LIF reservoir for the spike task (optional).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lif: Option<LifParams>,
    /// The `[detector]` table: the template detector of the spike task.
    pub detector: DetectorParams,
    /// The `[sweep]` table: the hyper-parameter grid of `reservoir sweep`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweep: Option<SweepParams>,
}

/// A checked config (from [`ExperimentParams::check`]): every table obeys its rules and the
/// tables agree with each other (a washout shorter than the training rows, a LIF stepping at
/// the spike task's bin width, ...).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(into = "ExperimentParams")]
pub struct ExperimentConfig {
    device: Device,
    devices: Option<Devices>,
    gpu_matmul: GemmMath,
    task: Option<TaskConfig>,
    reservoir: ReservoirConfig,
    model: ModelConfig,
    readout: ReadoutConfig,
    features: SequenceFeatures,
    lif: Option<LifConfig>,
    detector: DetectorOptions,
    sweep: Option<SweepConfig>,
}

impl From<ExperimentConfig> for ExperimentParams {
    fn from(config: ExperimentConfig) -> Self {
        Self {
            device: Some(config.device),
            devices: config.devices,
            gpu_matmul: (config.gpu_matmul != GemmMath::F32).then_some(config.gpu_matmul),
            task: config.task.map(Into::into),
            reservoir: config.reservoir.into(),
            model: config.model.into(),
            readout: config.readout.into(),
            features: config.features.into(),
            lif: config.lif.map(Into::into),
            detector: config.detector.into(),
            sweep: config.sweep.map(Into::into),
        }
    }
}

/// Dotted parts of a key from which the TOML parser refuses it ("recursion limit", with no
/// place given).
const KEY_PARTS_LIMIT: usize = 80;

/// A parse error of `text` as one line: the origin, the line and column, the parser's message.
/// The parser's "recursion limit" for a key of too many dotted parts comes without a place:
/// the line of the first such key is found here.
fn parse_error(text: &str, origin: &str, error: &toml::de::Error) -> RuntimeError {
    if error.span().is_none() && error.message().trim() == "recursion limit" {
        if let Some((line, parts)) = deepest_key(text) {
            return RuntimeError::ConfigParse {
                origin: origin.to_string(),
                message: format!(
                    "line {line}: a key of {parts} dotted parts (tables nested {parts} deep); \
                     the TOML parser reads fewer than {KEY_PARTS_LIMIT}"
                ),
            };
        }
    }
    located_error(text, origin, error.span(), error.message())
}

/// The first line (1-based) whose key, in a table header or before `=`, has at least
/// [`KEY_PARTS_LIMIT`] dotted parts, with their count (dots inside quotes are counted too: a
/// key that long is refused either way).
fn deepest_key(text: &str) -> Option<(usize, usize)> {
    text.lines().enumerate().find_map(|(i, line)| {
        let line = line.trim_start();
        let key = match line.strip_prefix('[') {
            Some(header) => header.split(']').next().unwrap_or(header),
            None => line.split('=').next().unwrap_or(line),
        };
        let parts = key.matches('.').count() + 1;
        (parts >= KEY_PARTS_LIMIT).then_some((i + 1, parts))
    })
}

/// `message` about the part `span` of `text`, as one line naming `origin`, the line and column.
fn located_error(
    text: &str,
    origin: &str,
    span: Option<std::ops::Range<usize>>,
    message: &str,
) -> RuntimeError {
    let place = span
        .map(|span| {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {column}: ")
        })
        .unwrap_or_default();
    RuntimeError::ConfigParse {
        origin: origin.to_string(),
        message: format!("{place}{}", message.trim_end().replace('\n', " ")),
    }
}

/// The task kinds, as `kind` names them.
const TASK_KINDS: &str = "`narma10`, `mackey_glass`, `spike_classification` or `memory_capacity`";

/// The `[task]` table as read on its own ([`take_task`]): the variants of [`TaskParams`], tagged
/// by a key instead of by the `kind` field, so that serde reads the table's values in place and
/// an error keeps the line and column of the value at fault (an internally tagged enum is
/// buffered first, and its errors point at the table's first line).
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum TaskTable {
    Narma10 {
        train: usize,
        test: usize,
        seed: u64,
    },
    MackeyGlass {
        train: usize,
        test: usize,
        forecast: usize,
    },
    SpikeClassification(SpikeClassificationParams),
    MemoryCapacity {
        max_delay: usize,
        train: usize,
        test: usize,
    },
}

impl From<TaskTable> for TaskParams {
    fn from(table: TaskTable) -> Self {
        match table {
            TaskTable::Narma10 { train, test, seed } => Task::Narma10 { train, test, seed },
            TaskTable::MackeyGlass {
                train,
                test,
                forecast,
            } => Task::MackeyGlass {
                train,
                test,
                forecast,
            },
            TaskTable::SpikeClassification(params) => Task::SpikeClassification(params),
            TaskTable::MemoryCapacity {
                max_delay,
                train,
                test,
            } => Task::MemoryCapacity {
                max_delay,
                train,
                test,
            },
        }
    }
}

/// Takes the `[task]` table out of `root` and reads it on its own ([`TaskTable`]), so every
/// error in it names the line and column of the key or value at fault and the field with its
/// table (`task.seed`). `None` when there is no `[task]` table.
fn take_task(root: &mut DeTable<'_>, text: &str, origin: &str) -> Result<Option<TaskParams>> {
    match root.get("task") {
        None => return Ok(None),
        Some(task) if !matches!(task.get_ref(), DeValue::Table(_)) => {
            return Err(located_error(
                text,
                origin,
                Some(task.span()),
                "`task` must be a table (`[task]` with a `kind` and its fields)",
            ))
        }
        Some(_) => {}
    }
    let Some(task) = root.remove("task") else {
        return Ok(None);
    };
    let span = task.span();
    let DeValue::Table(mut table) = task.into_inner() else {
        return Ok(None);
    };
    let Some(kind) = table.remove("kind") else {
        return Err(located_error(
            text,
            origin,
            Some(span),
            &format!("missing field `task.kind`: {TASK_KINDS}"),
        ));
    };
    let kind_span = kind.span();
    let DeValue::String(name) = kind.into_inner() else {
        return Err(located_error(
            text,
            origin,
            Some(kind_span),
            &format!("`task.kind` must be a string: {TASK_KINDS}"),
        ));
    };
    let mut tagged = DeTable::new();
    tagged.insert(
        toml::Spanned::new(kind_span, name),
        toml::Spanned::new(span.clone(), DeValue::Table(table)),
    );
    let tagged = toml::Spanned::new(span, tagged);
    TaskTable::deserialize(toml::de::Deserializer::from(tagged))
        .map(|table| Some(table.into()))
        .map_err(|e| {
            // The task's fields, named with their table as every other message names them.
            let message = match e
                .message()
                .strip_prefix("unexpected keys in table: ")
                .and_then(|rest| rest.split_once(", available keys: "))
            {
                Some((keys, available)) => {
                    format!("unknown field `task.{keys}`, expected one of: {available}")
                }
                None => e
                    .message()
                    .replacen("missing field `", "missing field `task.", 1)
                    .replacen("unknown field `", "unknown field `task.", 1),
            };
            located_error(text, origin, e.span(), &message)
        })
}

/// Takes the old `backend` key out of the `[reservoir]` table of `root`: the device it names.
fn take_legacy_backend(root: &mut DeTable<'_>, text: &str, origin: &str) -> Result<Option<Device>> {
    let Some(DeValue::Table(reservoir)) = root.get_mut("reservoir").map(|v| v.get_mut()) else {
        return Ok(None);
    };
    let Some(value) = reservoir.remove("backend") else {
        return Ok(None);
    };
    let span = value.span();
    let device = match value.get_ref().as_str() {
        Some(name) => name.parse::<Device>(),
        None => Err("expected a string: auto, cpu, cuda or cuda:N".to_string()),
    };
    device.map(Some).map_err(|message| {
        located_error(
            text,
            origin,
            Some(span),
            &format!("reservoir.backend: {message}"),
        )
    })
}

impl ExperimentParams {
    /// Parses TOML text; `origin` (a path or `<embedded>`) starts every message, which names
    /// the line, the column and the key.
    ///
    /// # Errors
    /// [`RuntimeError::ConfigParse`] for bad syntax, an unknown key, a value of the wrong
    /// type, or a `device` and an old `[reservoir] backend` that disagree.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        let mut root = DeTable::parse(text).map_err(|e| parse_error(text, origin, &e))?;
        let legacy = take_legacy_backend(root.get_mut(), text, origin)?;
        let task = take_task(root.get_mut(), text, origin)?;
        let mut params = Self::deserialize(toml::de::Deserializer::from(root))
            .map_err(|e| parse_error(text, origin, &e))?;
        if task.is_some() {
            params.task = task;
        }
        if let Some(backend) = legacy {
            match params.device {
                Some(device) if device != backend => {
                    return Err(RuntimeError::ConfigParse {
                        origin: origin.to_string(),
                        message: format!(
                            "`device = \"{device}\"` and `[reservoir] backend = \"{backend}\"` \
                             disagree; keep `device` only"
                        ),
                    })
                }
                _ => params.device = Some(backend),
            }
        }
        Ok(params)
    }

    /// Checks every table and that they agree; field names carry their table
    /// (`reservoir.leak_rate`, `task.train`, `sweep.ridge[1]`).
    pub fn check(self) -> Result<ExperimentConfig, ConfigError> {
        let reservoir = self
            .reservoir
            .check()
            .map_err(|e| e.prefixed("reservoir"))?;
        let model = self.model.check(&reservoir)?;
        let readout = self.readout.check().map_err(|e| e.prefixed("readout"))?;
        let features = self.features.check().map_err(|e| e.prefixed("features"))?;
        let lif = self
            .lif
            .map(|lif| lif.check().map_err(|e| e.prefixed("lif")))
            .transpose()?;
        let detector = self.detector.check().map_err(|e| e.prefixed("detector"))?;
        let sweep = self
            .sweep
            .map(|sweep| {
                sweep
                    .check(&reservoir, &readout)
                    .map_err(|e| e.prefixed("sweep"))
            })
            .transpose()?;
        let task = self
            .task
            .map(|task| task.check(&readout, lif.as_ref()))
            .transpose()?;
        if let Some(devices @ Devices::List(list)) = &self.devices {
            devices
                .ordinals(0)
                .map_err(|rule| ConfigError::new("devices", rule, format!("{list:?}")))?;
        }
        let gpu_matmul = self.gpu_matmul.unwrap_or_default();
        check_gpu_matmul(gpu_matmul, &reservoir)?;
        Ok(ExperimentConfig {
            device: self.device.unwrap_or_default(),
            devices: self.devices,
            gpu_matmul,
            task,
            reservoir,
            model,
            readout,
            features,
            lif,
            detector,
            sweep,
        })
    }
}

impl ExperimentConfig {
    /// Parses and checks TOML text (see [`ExperimentParams::from_toml`]); a rule broken is a
    /// config error naming the table and field.
    pub fn from_toml(text: &str, origin: &str) -> Result<Self> {
        Ok(ExperimentParams::from_toml(text, origin)?.check()?)
    }

    /// These values as parameters, to change some and check again.
    pub fn to_params(&self) -> ExperimentParams {
        self.clone().into()
    }

    /// Where to run.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The GPUs a sweep's lanes spread over (`None`: the one GPU of [`Self::device`]).
    pub fn devices(&self) -> Option<&Devices> {
        self.devices.as_ref()
    }

    /// The arithmetic of the product W·X of the batches of sequences a GPU steps together
    /// (`gpu_matmul`).
    pub fn gpu_matmul(&self) -> GemmMath {
        self.gpu_matmul
    }

    /// This config with the batches of sequences on a GPU stepped in `math`.
    ///
    /// # Errors
    /// `f16` for a reservoir whose activation is not `tanh` (field `gpu_matmul`).
    pub fn with_gpu_matmul(mut self, math: GemmMath) -> Result<Self, ConfigError> {
        check_gpu_matmul(math, &self.reservoir)?;
        self.gpu_matmul = math;
        Ok(self)
    }

    /// This config on another device (where a job runs is not part of what it computes).
    pub fn with_device(mut self, device: Device) -> Self {
        self.device = device;
        self
    }

    /// The `[task]` table.
    pub fn task(&self) -> Option<&TaskConfig> {
        self.task.as_ref()
    }

    /// The `[reservoir]` table.
    pub fn reservoir(&self) -> &ReservoirConfig {
        &self.reservoir
    }

    /// The `[model]` table.
    pub fn model(&self) -> &ModelConfig {
        &self.model
    }

    /// The description of this config's model on `k` input channels: the `[model]` table's
    /// reservoir kind and links, around the `[reservoir]` table's echo-state network;
    /// `outputs` is the targets of a model of series (`None` for a classifier).
    ///
    /// # Errors
    /// A [`ConfigError`] naming the field that breaks a rule for these widths.
    pub fn architecture(
        &self,
        k: usize,
        outputs: Option<usize>,
    ) -> Result<Architecture, ConfigError> {
        self.model.architecture(&self.reservoir, k, outputs)
    }

    /// The echo-state network a sweep's lanes vary, on `k` input channels: a sweep runs one
    /// network alone, so the `[model]` table must keep its defaults.
    ///
    /// # Errors
    /// A [`ConfigError`] naming `model` when it asks for another reservoir, a link or
    /// plasticity; one naming the `[reservoir]` field that breaks a rule for `k` inputs.
    pub fn lanes_base(&self, k: usize) -> Result<ReservoirConfig, ConfigError> {
        if !self.model.is_plain() {
            return Err(ConfigError::new(
                "model",
                "a sweep varies one echo-state network: leave out the [model] table (its \
                 other reservoirs, links and plasticity)",
                self.model.reservoir().name(),
            ));
        }
        self.reservoir
            .to_params()
            .input_size(k)
            .check()
            .map_err(|e| e.prefixed("reservoir"))
    }

    /// The `[readout]` table.
    pub fn readout(&self) -> &ReadoutConfig {
        &self.readout
    }

    /// The `[features]` table.
    pub fn features(&self) -> &SequenceFeatures {
        &self.features
    }

    /// This config with another reservoir and ridge penalty: the best lane of a sweep, to fit.
    ///
    /// # Errors
    /// A ridge penalty that breaks the `[readout]` rules.
    pub fn with_lane(
        mut self,
        reservoir: ReservoirConfig,
        ridge: f64,
    ) -> Result<Self, ConfigError> {
        self.readout = self
            .readout
            .to_params()
            .ridge(ridge)
            .check()
            .map_err(|e| e.prefixed("readout"))?;
        self.reservoir = reservoir;
        Ok(self)
    }

    /// The `[lif]` table.
    pub fn lif(&self) -> Option<&LifConfig> {
        self.lif.as_ref()
    }

    /// The `[detector]` table.
    pub fn detector(&self) -> &DetectorOptions {
        &self.detector
    }

    /// The `[sweep]` table.
    pub fn sweep(&self) -> Option<&SweepConfig> {
        self.sweep.as_ref()
    }

    /// This config showing the `top` best results of a sweep (a `[sweep]` table of the base
    /// config's single lane when there was none).
    ///
    /// # Errors
    /// `top` of 0.
    pub fn with_sweep_top(mut self, top: usize) -> Result<Self, ConfigError> {
        let sweep = self.sweep.take().unwrap_or_default();
        self.sweep = Some(sweep.with_top(top).map_err(|e| e.prefixed("sweep"))?);
        Ok(self)
    }

    /// This config with a sweep's lanes stepped on GPUs in `math` (a `[sweep]` table of the
    /// base config's single lane when there was none).
    ///
    /// # Errors
    /// `f16` for a reservoir whose activation is not `tanh`.
    pub fn with_sweep_gpu_matmul(mut self, math: GemmMath) -> Result<Self, ConfigError> {
        let sweep = self.sweep.take().unwrap_or_default();
        let sweep = sweep
            .with_gpu_matmul(math, &self.reservoir)
            .map_err(|e| e.prefixed("sweep"))?;
        self.sweep = Some(sweep);
        Ok(self)
    }
}
