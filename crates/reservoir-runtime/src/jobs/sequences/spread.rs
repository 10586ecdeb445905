//! A many-sequence classifier spread over GPUs: each GPU (of this process, or of every rank
//! of a launch) runs its share of the sequences, adds the ridge sums of their features on
//! the device, and one all-reduce (NCCL, f64) adds every GPU's sums together; every rank
//! then solves the same readout from the same sums.

use ndarray::{Array2, ArrayView2};
use reservoir_core::features::SequenceFeatures;
use reservoir_core::readout::LinearReadout;
use reservoir_core::{Reservoir, ReservoirError};

use gpu_reservoir::collective::share;
use gpu_reservoir::{DeviceRidgeSums, GpuReservoirComputer};

use crate::device::Spread;
use crate::error::Result;
use crate::model::predict_classes;

/// The one-hot rows of `labels` over `classes` classes.
fn one_hot(labels: &[usize], classes: usize) -> Array2<f64> {
    Array2::from_shape_fn((labels.len(), classes), |(i, c)| {
        f64::from(u8::from(labels[i] == c))
    })
}

/// The features of each local GPU's share of `inputs`, computed on all of them at once, each
/// GPU's then handed to `then` (in the GPU's thread) with its reservoir and global rank. One
/// GPU of this process runs in this thread and reports `progress(done, share)` as it goes.
fn shares_features<T: Send>(
    spread: &mut Spread,
    inputs: &[ArrayView2<'_, f64>],
    features: &SequenceFeatures,
    progress: &mut dyn FnMut(usize, usize),
    then: impl Fn(&GpuReservoirComputer, usize, Array2<f64>) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let (ranks, world) = (spread.collective.ranks(), spread.collective.world());
    if let [reservoir] = spread.reservoirs.as_mut_slice() {
        let rank = ranks.start;
        let mine = &inputs[share(inputs.len(), world, rank)];
        let rows = reservoir.sequence_features(mine, features, progress)?;
        return Ok(vec![then(reservoir, rank, rows)?]);
    }
    let then = &then;
    std::thread::scope(|scope| {
        let threads: Vec<_> = spread
            .reservoirs
            .iter_mut()
            .zip(ranks)
            .map(|(reservoir, rank)| {
                let mine = &inputs[share(inputs.len(), world, rank)];
                scope.spawn(move || {
                    let rows = reservoir.sequence_features(mine, features, &mut |_, _| {})?;
                    then(reservoir, rank, rows)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|thread| {
                thread.join().map_err(|_| {
                    ReservoirError::invalid("spread fit", "the thread of a GPU panicked")
                })?
            })
            .collect()
    })
}

/// The classes `readout` predicts for `rows` (one row of features per sequence).
fn classes_of(readout: &LinearReadout, rows: &Array2<f64>) -> Result<Vec<u32>> {
    Ok(predict_classes(readout, rows.view())?
        .into_iter()
        .map(|c| c as u32)
        .collect())
}

/// Every rank's `parts` (each local GPU's share's classes) gathered in the order of the
/// `total` sequences.
fn gathered(spread: &mut Spread, parts: &[Vec<u32>], total: usize) -> Result<Vec<usize>> {
    let world = spread.collective.world();
    let width = total.div_ceil(world);
    let views: Vec<&[u32]> = parts.iter().map(Vec::as_slice).collect();
    let gathered = spread.collective.gather_to_host(&views, width)?;
    Ok((0..world)
        .flat_map(|rank| {
            let count = share(total, world, rank).len();
            gathered[rank * width..rank * width + count].to_vec()
        })
        .map(|c| c as usize)
        .collect())
}

/// Fits the one-hot ridge readout of `labels` on the features of `inputs`, spread over
/// `spread`'s GPUs; returns it with the class it predicts for each training sequence.
///
/// # Errors
/// Any error of the runs, of the sums, of the collectives or of the solve.
pub(super) fn fit_spread(
    spread: &mut Spread,
    inputs: &[ArrayView2<'_, f64>],
    labels: &[usize],
    classes: usize,
    features: &SequenceFeatures,
    ridge: f64,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(LinearReadout, Vec<usize>)> {
    let Some(&first_label) = labels.first() else {
        return Err(ReservoirError::invalid("spread fit", "no training sequences").into());
    };
    let world = spread.collective.world();
    let shift = one_hot(&[first_label], classes).into_raw_vec_and_offset().0;
    let (shares, mut sums): (Vec<Array2<f64>>, Vec<DeviceRidgeSums>) = shares_features(
        spread,
        inputs,
        features,
        progress,
        |reservoir, rank, rows| {
            let mut sums = DeviceRidgeSums::new(reservoir.device(), rows.ncols(), classes, 1)?
                .with_target_shift(&shift)?;
            let mine = &labels[share(labels.len(), world, rank)];
            sums.add_host(rows.view(), one_hot(mine, classes).view())?;
            Ok((rows, sums))
        },
    )?
    .into_iter()
    .unzip();
    let mut refs: Vec<&mut DeviceRidgeSums> = sums.iter_mut().collect();
    DeviceRidgeSums::all_reduce(&mut refs, &mut spread.collective)?;
    let accumulator = sums
        .first()
        .map(DeviceRidgeSums::download)
        .transpose()?
        .and_then(|mut blocks| blocks.pop())
        .ok_or_else(|| ReservoirError::invalid("spread fit", "no GPU in the spread"))?;
    let readout = accumulator.solve(ridge)?.readout;
    // Each share's classes on a thread of its own: a product of its rows with the readout.
    let parts = std::thread::scope(|scope| {
        let threads: Vec<_> = shares
            .iter()
            .map(|rows| scope.spawn(|| classes_of(&readout, rows)))
            .collect();
        threads
            .into_iter()
            .map(|thread| {
                thread.join().map_err(|_| {
                    ReservoirError::invalid("spread fit", "a thread of predictions panicked")
                })?
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let predicted = gathered(spread, &parts, inputs.len())?;
    Ok((readout, predicted))
}

/// The class `readout` predicts for each of `inputs`, spread over `spread`'s GPUs.
///
/// # Errors
/// Any error of the runs or of the collectives.
pub(super) fn classify_spread(
    spread: &mut Spread,
    readout: &LinearReadout,
    inputs: &[ArrayView2<'_, f64>],
    features: &SequenceFeatures,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Vec<usize>> {
    let parts = shares_features(spread, inputs, features, progress, |_, _, rows| {
        classes_of(readout, &rows)
    })?;
    gathered(spread, &parts, inputs.len())
}
