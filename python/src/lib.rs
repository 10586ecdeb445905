//! The Python extension module `reservoir._engine`: the engine behind the `reservoir`
//! package. The package's Python code gives it scikit-learn conventions; this module takes
//! float64 arrays and dicts of config tables and releases the GIL while the engine works.

mod arrays;
mod config;
mod errors;
mod esn;
mod files;
mod lif;
mod models;
mod nvar;
mod readouts;
mod runner;
mod spikes;
mod sweep;
mod tasks;

use pyo3::prelude::*;

#[pymodule]
fn _engine(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("GpuError", m.py().get_type::<errors::GpuError>())?;
    m.add_class::<esn::EchoStateNetwork>()?;
    m.add_class::<nvar::Nvar>()?;
    m.add_class::<models::SeriesModel>()?;
    m.add_class::<models::ClassifierModel>()?;
    m.add_class::<readouts::Readout>()?;
    m.add_class::<readouts::Rls>()?;
    m.add_function(wrap_pyfunction!(models::fit_series, m)?)?;
    m.add_function(wrap_pyfunction!(models::fit_classifier, m)?)?;
    m.add_function(wrap_pyfunction!(models::load, m)?)?;
    m.add_function(wrap_pyfunction!(models::model_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(files::read_sequences, m)?)?;
    m.add_function(wrap_pyfunction!(sweep::sweep, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::narma10, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::mackey_glass, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::lorenz, m)?)?;
    m.add_function(wrap_pyfunction!(tasks::memory_capacity, m)?)?;
    m.add_class::<lif::LifReservoir>()?;
    m.add_class::<spikes::PatternDetector>()?;
    m.add_function(wrap_pyfunction!(spikes::encode_rate, m)?)?;
    m.add_function(wrap_pyfunction!(spikes::encode_latency, m)?)?;
    m.add_function(wrap_pyfunction!(spikes::encode_delta, m)?)?;
    m.add_function(wrap_pyfunction!(spikes::encode_population, m)?)?;
    m.add_function(wrap_pyfunction!(spikes::encode_poisson, m)?)?;
    m.add_function(wrap_pyfunction!(spikes::random_template, m)?)?;
    m.add_function(wrap_pyfunction!(spikes::plant_patterns, m)?)?;
    Ok(())
}
