//! The probe and device creation never panic, with or without a GPU.

use crate::common;

use gpu_reservoir::{probe, GpuDevice, GpuError};

#[test]
fn probe_reports_consistently() {
    let support = probe();
    if support.usable() {
        assert!(support.driver_version.is_some() && !support.devices.is_empty());
        let d = &support.devices[0];
        assert!(
            d.total_memory > 0 && d.compute_capability.0 >= 3 && d.multiprocessors > 0,
            "{d:?}"
        );
    } else {
        let problem = support.problem.clone().unwrap_or_default();
        assert!(!problem.is_empty());
        match GpuDevice::shared(0) {
            Err(GpuError::Unavailable { reason }) => assert_eq!(reason, problem),
            other => panic!("expected Unavailable without a GPU, got {other:?}"),
        }
        eprintln!("no GPU here: {problem}");
    }
}

#[test]
fn a_missing_device_ordinal_is_an_error() {
    if let Some(_device) = common::gpu() {
        assert!(matches!(
            GpuDevice::shared(999),
            Err(GpuError::Unavailable { .. })
        ));
    }
}

#[test]
fn shared_returns_the_same_device() {
    if let Some(device) = common::gpu() {
        let again = GpuDevice::shared(0).expect("device 0");
        assert!(std::sync::Arc::ptr_eq(device.context(), again.context()));
        assert_eq!(device, again, "one shared handle per ordinal");
    }
}

#[test]
fn the_device_has_a_cublas_handle() {
    if let Some(device) = common::gpu() {
        let first = device.blas().expect("cuBLAS handle") as *const _;
        let again = device.blas().expect("cuBLAS handle") as *const _;
        assert_eq!(first, again, "one handle per device");
    }
}
