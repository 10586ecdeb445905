//! The device out of memory in the middle of the work: a typed error naming the buffer and
//! its size, the objects' state untouched, and the device usable again once memory is back.
//! It fills the device, so it runs alone, in a test executable of its own.

mod common;

use common::faults::{assert_same_bits, esn_config, limit, sanitizing, within};
use common::{fresh_seed, gpu, random_inputs, relative_error, run_many, views};
use cudarc::driver::CudaSlice;
use gpu_reservoir::{GemmMath, GpuDevice, GpuError, GpuReservoirComputer, ManySequences};
use ndarray::Array2;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use reservoir_core::{EchoStateNetwork, Reservoir, ReservoirError, ReservoirWeights};

/// The GPU error inside a reservoir error, if it is one.
fn gpu_error(error: &ReservoirError) -> Option<&GpuError> {
    match error {
        ReservoirError::Backend { source, .. } => source.downcast_ref::<GpuError>(),
        _ => None,
    }
}

/// Asserts that `result` failed with [`GpuError::OutOfMemory`] naming `context` (and, when
/// `bytes`, the size asked for), and returns the message.
fn assert_out_of_memory<T>(
    what: &str,
    result: Result<T, ReservoirError>,
    context: &str,
    bytes: bool,
) -> String {
    let error = match result {
        Ok(_) => panic!("{what}: expected the device to be out of memory, but it succeeded"),
        Err(error) => error,
    };
    let message = error.to_string();
    match gpu_error(&error) {
        Some(GpuError::OutOfMemory {
            context: named,
            bytes: asked,
            free,
        }) => {
            assert!(named.contains(context), "{what}: {message}");
            assert!(!bytes || asked.is_some(), "{what}: no size in {message}");
            assert!(free.is_some(), "{what}: no free memory in {message}");
        }
        _ => panic!("{what}: expected GpuError::OutOfMemory, got {error:?}"),
    }
    eprintln!("{what}: {message}");
    message
}

/// Device memory taken by the test (through cudarc, on the shared device's stream) to leave
/// the rest of the work little room.
struct Ballast {
    pieces: Vec<CudaSlice<u8>>,
}

impl Ballast {
    /// Allocates until the device has at most `headroom` bytes free (within 1 MiB), in pieces
    /// of at most 1 GiB, and then until no buffer of `largest` bytes can be had. Returns the
    /// ballast and the bytes left free.
    fn fill(device: &GpuDevice, headroom: usize, largest: usize) -> (Self, usize) {
        let stream = device.stream();
        // Earlier frees go back to the driver at a synchronisation.
        stream.synchronize().expect("synchronize");
        let free = || {
            cudarc::driver::result::mem_get_info()
                .expect("memory info")
                .0
        };
        let mut pieces = Vec::new();
        let mut piece = 1usize << 30;
        loop {
            let left = free();
            let want = piece.min(left.saturating_sub(headroom));
            if want < 1 << 20 {
                break;
            }
            // SAFETY: the ballast is never read or written.
            match unsafe { stream.alloc::<u8>(want) } {
                Ok(slice) => pieces.push(slice),
                Err(_) => piece = want / 2,
            }
        }
        // The stream's memory pool can keep memory the driver does not count as free; a buffer
        // of `largest` bytes taken from it goes to the ballast too.
        // SAFETY: the ballast is never read or written.
        while let Ok(slice) = unsafe { stream.alloc::<u8>(largest) } {
            pieces.push(slice);
        }
        stream.synchronize().expect("synchronize");
        (Self { pieces }, free())
    }

    fn bytes(&self) -> usize {
        self.pieces.iter().map(CudaSlice::len).sum()
    }
}

const MIB: usize = 1 << 20;

#[test]
fn out_of_device_memory_mid_run_is_a_typed_error_and_the_device_recovers() {
    let Some(device) = gpu() else { return };
    if sanitizing() {
        // compute-sanitizer allocates device memory of its own at every launch: with the
        // device full, its failures would be the tool's, not the library's.
        eprintln!("skipping under compute-sanitizer: the tool needs device memory");
        return;
    }
    let seed = fresh_seed("out_of_memory");
    within("out of memory", limit(180), move || {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // A run of 4000 steps of 1000 units needs 16 MB for its drive and 16 for its states;
        // a batch of 32 sequences of 400 steps of 300 units 15 MB for each; a W of 2000 units
        // at 50 % 16 MB in CSR. The ballast leaves 8 MiB.
        let config = esn_config(&mut rng, 1000, 2, 0.1);
        let (long, short) = (
            random_inputs(&mut rng, 4000, 2),
            random_inputs(&mut rng, 50, 2),
        );
        let batch_config = esn_config(&mut rng, 300, 2, 0.1);
        let batch: Vec<Array2<f64>> = (0..32).map(|_| random_inputs(&mut rng, 400, 2)).collect();
        let big_config = esn_config(&mut rng, 2000, 1, 0.5);
        let (big_weights, _) = ReservoirWeights::generate(&big_config).expect("weights");

        // Made before the ballast: kernels loaded, the cuBLAS handle made, buffers for 50 steps.
        let mut survivor = GpuReservoirComputer::new_shared(&config, &device).expect("gpu");
        let short_alone = survivor.run(short.view()).expect("short run");
        survivor.reset().expect("reset");
        let mut batched = GpuReservoirComputer::new_shared(&batch_config, &device)
            .expect("gpu")
            .with_many_sequences(ManySequences::Batched(GemmMath::F32))
            .expect("batched");
        run_many(&mut batched, &views(&batch[..2])).expect("a small batch");

        // No buffer the size of the runs below (16 MiB) can be had while the ballast holds.
        let (ballast, free) = Ballast::fill(&device, 8 * MIB, 16 * MIB);
        eprintln!(
            "ballast {:.1} GiB, {:.1} MiB left free",
            ballast.bytes() as f64 / (1u64 << 30) as f64,
            free as f64 / MIB as f64
        );

        // A run too large for what is left: a typed error naming the buffer and its size,
        // and the reservoir's state untouched.
        let before = survivor.state().expect("state");
        let message = assert_out_of_memory(
            "a 4000-step run",
            survivor.run(long.view()),
            "chunk buffers",
            true,
        );
        assert!(message.contains("MiB asked for"), "{message}");
        assert_eq!(
            survivor.state().expect("state"),
            before,
            "a failed run changed the state"
        );
        // A run whose buffers exist still runs, with the numbers it gives alone.
        let short_again = survivor
            .run(short.view())
            .expect("a run that needs no memory");
        assert_eq!(
            short_again, short_alone,
            "a run on a full device changed its numbers"
        );
        survivor.reset().expect("reset");

        // A batched run too large for what is left.
        assert_out_of_memory(
            "a batch of 32 x 400 steps",
            run_many(&mut batched, &views(&batch)),
            "batch",
            true,
        );
        // A reservoir too large to upload.
        let refused = GpuReservoirComputer::from_weights(&big_config, big_weights.clone(), &device);
        assert_out_of_memory(
            "uploading a W of 10^6 synapses",
            refused.map_err(ReservoirError::from),
            "uploading",
            true,
        );

        drop(ballast);
        device.stream().synchronize().expect("synchronize");

        // With the memory back, the same objects run, with the CPU's numbers.
        let got = survivor
            .run(long.view())
            .expect("the long run once memory is free");
        let expected = EchoStateNetwork::<f32>::new(&config)
            .expect("cpu")
            .run(long.view())
            .expect("cpu run");
        let (relative, _) = relative_error(&got, &expected);
        eprintln!("4000 steps after the ballast: relative {relative:.2e} to the CPU");
        assert!(relative < 1e-4, "{relative:.2e}");
        let fresh = GpuReservoirComputer::new_shared(&config, &device)
            .expect("gpu")
            .with_step_path(survivor.step_path())
            .expect("path")
            .run(long.view())
            .expect("fresh run");
        assert_same_bits(
            "the survivor against a fresh reservoir",
            got.as_slice().expect("standard layout"),
            fresh.as_slice().expect("standard layout"),
        );
        let states = run_many(&mut batched, &views(&batch)).expect("the batch once memory is free");
        let mut worst: f64 = 0.0;
        for (sequence, states) in batch.iter().zip(&states) {
            let expected = EchoStateNetwork::<f32>::new(&batch_config)
                .expect("cpu")
                .run(sequence.view())
                .expect("cpu run");
            worst = worst.max(relative_error(states, &expected).0);
        }
        eprintln!("batch after the ballast: worst relative {worst:.2e} to the CPU");
        assert!(worst < 1e-4, "{worst:.2e}");
        let mut big = GpuReservoirComputer::from_weights(&big_config, big_weights, &device)
            .expect("the large W once memory is free");
        let inputs = random_inputs(&mut rng, 20, 1);
        big.run(inputs.view()).expect("a run of the large W");
    });
}
