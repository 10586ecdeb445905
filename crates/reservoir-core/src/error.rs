//! Typed errors for everything a caller or the numbers can get wrong.

/// A configuration value broke one of its rules.
///
/// `field` is the dotted path of the key as it appears in a TOML file
/// (for example `reservoir.leak_rate`), `rule` says what the value must satisfy.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid value for `{field}`: {rule} (got {value})")]
pub struct ConfigError {
    /// Dotted key path, e.g. `reservoir.spectral_radius`.
    pub field: String,
    /// The rule the value must satisfy, e.g. `must be in (0, 1]`.
    pub rule: String,
    /// The offending value, formatted for the message.
    pub value: String,
}

impl ConfigError {
    /// Builds an error for `field` that broke `rule` with `value`.
    pub fn new(field: impl Into<String>, rule: impl Into<String>, value: impl ToString) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
            value: value.to_string(),
        }
    }

    /// Adds a table prefix to the field path: `leak_rate` → `reservoir.leak_rate`.
    pub fn prefixed(mut self, table: &str) -> Self {
        self.field = format!("{table}.{}", self.field);
        self
    }
}

/// Every error the core library returns.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReservoirError {
    /// A configuration value is out of range or inconsistent.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// Array shapes do not fit together.
    #[error("shape mismatch in {context}: expected {expected}, got {actual}")]
    Shape {
        /// What was being checked, e.g. `run inputs`.
        context: String,
        /// The expected shape or length.
        expected: String,
        /// The shape or length that was passed.
        actual: String,
    },

    /// An input holds a value the computation cannot use (NaN, infinity, empty data, ...).
    #[error("invalid input to {context}: {message}")]
    InvalidInput {
        /// What was being checked.
        context: String,
        /// What is wrong with it.
        message: String,
    },

    /// A numerical method failed (singular system, no convergence, zero spectral radius, ...).
    #[error("numerical failure in {context}: {message}")]
    Numerical {
        /// The method that failed.
        context: String,
        /// Why, and what to change.
        message: String,
    },

    /// A buffer does not fit in the machine's memory (estimated before allocating, or refused
    /// by the allocator).
    #[error("not enough memory for {what}: needs {}, {}", crate::bytes::Bytes(*needed), match available { Some(a) => format!("{} available", crate::bytes::Bytes(*a)), None => "more than can be allocated".to_string() })]
    OutOfMemory {
        /// The buffer or job, e.g. `the reservoir's weights (30000 units, 900000000 non-zeros)`.
        what: String,
        /// Bytes it needs.
        needed: u64,
        /// Bytes the machine has available, when known.
        available: Option<u64>,
    },

    /// An error met elsewhere and reported here with its message: by another process of the
    /// same job (a rank of a launch over several machines), or by a sweep lane's run, once
    /// for each of its ridge values.
    #[error("{message}")]
    Reported {
        /// The other process's message.
        message: String,
    },

    /// A compute backend (e.g. CUDA) failed; the backend's own error is kept as the source, so
    /// this crate does not depend on the driver crate.
    #[error("{backend} backend: {source}")]
    Backend {
        /// The backend, e.g. `cuda`.
        backend: &'static str,
        /// The backend's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl ReservoirError {
    /// Shorthand for a [`ReservoirError::Shape`] error.
    pub fn shape(context: &str, expected: impl ToString, actual: impl ToString) -> Self {
        Self::Shape {
            context: context.to_string(),
            expected: expected.to_string(),
            actual: actual.to_string(),
        }
    }

    /// Shorthand for a [`ReservoirError::InvalidInput`] error.
    pub fn invalid(context: &str, message: impl ToString) -> Self {
        Self::InvalidInput {
            context: context.to_string(),
            message: message.to_string(),
        }
    }

    /// Shorthand for a [`ReservoirError::Numerical`] error.
    pub fn numerical(context: &str, message: impl ToString) -> Self {
        Self::Numerical {
            context: context.to_string(),
            message: message.to_string(),
        }
    }
}

/// Result type of the core library.
pub type Result<T, E = ReservoirError> = std::result::Result<T, E>;
