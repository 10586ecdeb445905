//! Collectives between GPUs through NCCL (cudarc's `nccl` module, `libnccl` loaded at run
//! time): the all-reduce of ridge sums and the all-gather of a sharded state.
//!
//! A [`Collective`] is the part of an NCCL communicator that this process drives: every GPU
//! of one process ([`Collective::local`]), or the one GPU of a process among several, on one
//! host or many ([`Collective::process`], its unique id made by [`new_unique_id`]). The
//! algorithms above it are written once for both: they hand one buffer per local member to
//! each collective, and the members' global ranks say which part of the work is theirs.

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use cudarc::nccl::result::NcclError;
use cudarc::nccl::{group_end, group_start, Comm, Id, NcclType, ReduceOp};
use reservoir_core::ReservoirError;

use crate::driver::{probe, GpuDevice};
use crate::error::{DriverContext, GpuError, Result};

/// The library names cudarc tries, for the message when none loads.
const NCCL_NAMES: &str = "libnccl.so, libnccl.so.12, libnccl.so.11";

/// An error unless NCCL can be loaded. cudarc looks for `libnccl.so` (and a few versioned
/// names) but not for `libnccl.so.2`, the only name some installs ship (the `nvidia-nccl-cu12`
/// and `-cu13` wheels, the `libnccl2` package without `libnccl-dev`); the error says how to
/// make such a library visible.
///
/// # Errors
/// [`GpuError::Unavailable`] naming the libraries tried.
pub fn nccl_loadable() -> Result<()> {
    // SAFETY: only tries to load the library (dlopen) under each of cudarc's names.
    if unsafe { cudarc::nccl::sys::is_culib_present() } {
        return Ok(());
    }
    Err(GpuError::Unavailable {
        reason: format!(
            "NCCL, which work over several GPUs needs, could not be loaded (tried {NCCL_NAMES} \
             on the library path); where only libnccl.so.2 is installed, link it as \
             libnccl.so in a directory on LD_LIBRARY_PATH"
        ),
    })
}

/// An NCCL failure while doing `context`.
fn nccl_error(context: &'static str, error: NcclError) -> GpuError {
    GpuError::Collective {
        context,
        code: format!("{:?}", error.0),
    }
}

/// The GPUs `ordinals`, checked: at least one, none twice, every one listed by the driver.
///
/// # Errors
/// An invalid-input error for an empty list or a repeated GPU; [`GpuError::Unavailable`] for
/// a GPU the driver does not list.
pub(crate) fn check_ordinals(ordinals: &[usize]) -> Result<()> {
    if ordinals.is_empty() {
        return Err(ReservoirError::invalid("devices", "list at least one GPU").into());
    }
    let mut sorted = ordinals.to_vec();
    sorted.sort_unstable();
    if let Some(pair) = sorted.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err(
            ReservoirError::invalid("devices", format!("GPU {} is listed twice", pair[0])).into(),
        );
    }
    let listed = probe().devices;
    if let Some(&missing) = ordinals
        .iter()
        .find(|&&o| !listed.iter().any(|d| d.ordinal == o))
    {
        return Err(GpuError::Unavailable {
            reason: format!(
                "there is no GPU {missing}: the driver lists {}",
                listed.len()
            ),
        });
    }
    Ok(())
}

/// One GPU of a collective: its device and its rank's communicator, on the device's stream,
/// so a collective is ordered with the kernels around it without any other synchronisation.
#[derive(Debug)]
struct Member {
    device: GpuDevice,
    /// `None` for a collective of one GPU ([`Collective::solo`]), which needs no NCCL.
    comm: Option<Comm>,
}

/// The members of an NCCL communicator that this process drives, from one host thread.
///
/// Creating the communicator of a process's GPUs costs a start-up, as opening a GPU does;
/// when a [`Collective::local`] is dropped its communicator goes back to a per-process pool,
/// and the next `Collective::local` of the same GPUs takes it from there.
#[derive(Debug)]
pub struct Collective {
    members: Vec<Member>,
    /// The global rank of the first member; the others follow it.
    first_rank: usize,
    world: usize,
    /// Whether the members are this process's whole communicator (pooled when dropped).
    local: bool,
}

// SAFETY: an NCCL communicator may be used from any thread as long as no two threads use it
// at once. A `Collective` is only used through `&mut self` (no method takes `&self` to call
// NCCL), so moving it to another thread is sound; it is deliberately not `Sync`.
unsafe impl Send for Collective {}

/// The members of a local communicator no `Collective` holds now.
struct Idle(Vec<Member>);

// SAFETY: as for `Collective`: an idle communicator is used by no thread at all.
unsafe impl Send for Idle {}

/// Idle local communicators, by their GPUs.
static POOL: std::sync::Mutex<Vec<Idle>> = std::sync::Mutex::new(Vec::new());

impl Drop for Collective {
    fn drop(&mut self) {
        if self.local {
            let members = std::mem::take(&mut self.members);
            // A poisoned pool only loses the communicator, which NCCL then aborts.
            if let Ok(mut pool) = POOL.lock() {
                pool.push(Idle(members));
            }
        }
    }
}

/// A pooled communicator of exactly the GPUs `ordinals`, in this order.
fn pooled(ordinals: &[usize]) -> Option<Vec<Member>> {
    let mut pool = POOL.lock().ok()?;
    let index = pool.iter().position(|idle| {
        idle.0.len() == ordinals.len()
            && idle
                .0
                .iter()
                .zip(ordinals)
                .all(|(m, &o)| m.device.info().ordinal == o)
    })?;
    Some(pool.swap_remove(index).0)
}

impl Collective {
    /// One communicator over the GPUs `ordinals` of this process: rank i is `ordinals[i]`
    /// (from the pool when one of these GPUs is idle there).
    ///
    /// # Errors
    /// An invalid-input error for an empty list or a repeated GPU; [`GpuError::Unavailable`]
    /// for a GPU the driver does not list; NCCL not loadable ([`nccl_loadable`]); any error of opening a
    /// GPU or of `ncclCommInitAll`.
    pub fn local(ordinals: &[usize]) -> Result<Self> {
        if let Some(members) = pooled(ordinals) {
            return Ok(Self {
                members,
                first_rank: 0,
                world: ordinals.len(),
                local: true,
            });
        }
        check_ordinals(ordinals)?;
        nccl_loadable()?;
        let devices = ordinals
            .iter()
            .map(|&o| GpuDevice::shared(o))
            .collect::<Result<Vec<_>>>()?;
        let streams = devices.iter().map(|d| d.stream().clone()).collect();
        let comms = Comm::from_devices(streams)
            .map_err(|e| nccl_error("creating the communicator of the listed GPUs", e))?;
        Ok(Self {
            members: devices
                .into_iter()
                .zip(comms)
                .map(|(device, comm)| Member {
                    device,
                    comm: Some(comm),
                })
                .collect(),
            first_rank: 0,
            world: ordinals.len(),
            local: true,
        })
    }

    /// This process's rank `rank` of `world` processes, on `device`, joined through `id`
    /// (the same on every rank: [`new_unique_id`] of rank 0). Blocks until every rank has
    /// joined.
    ///
    /// # Errors
    /// An invalid-input error for a rank not below `world`; NCCL not loadable; any error of
    /// `ncclCommInitRank`.
    pub fn process(
        device: &GpuDevice,
        rank: usize,
        world: usize,
        id: [u8; UNIQUE_ID_BYTES],
    ) -> Result<Self> {
        if rank >= world {
            return Err(ReservoirError::invalid(
                "rank",
                format!("rank {rank} is not below the world size {world}"),
            )
            .into());
        }
        nccl_loadable()?;
        let id = Id::uninit(id.map(|b| b as std::ffi::c_char));
        let comm = Comm::from_rank(device.stream().clone(), rank, world, id)
            .map_err(|e| nccl_error("joining the communicator of the processes", e))?;
        Ok(Self {
            members: vec![Member {
                device: device.clone(),
                comm: Some(comm),
            }],
            first_rank: rank,
            world,
            local: false,
        })
    }

    /// A collective of one rank on `device` alone, without NCCL: its all-reduce leaves the
    /// sums as they are and its all-gather copies. The algorithms written for several GPUs
    /// then run on one GPU of a machine without NCCL.
    pub fn solo(device: &GpuDevice) -> Self {
        Self {
            members: vec![Member {
                device: device.clone(),
                comm: None,
            }],
            first_rank: 0,
            world: 1,
            local: false,
        }
    }

    /// The ranks of the whole communicator.
    pub fn world(&self) -> usize {
        self.world
    }

    /// The global rank of each local member, in order.
    pub fn ranks(&self) -> std::ops::Range<usize> {
        self.first_rank..self.first_rank + self.members.len()
    }

    /// The device of each local member, in order.
    pub fn devices(&self) -> Vec<GpuDevice> {
        self.members.iter().map(|m| m.device.clone()).collect()
    }

    /// Opens an NCCL group for the calls of all members, where any has a communicator (a
    /// solo collective calls no NCCL, so it runs where NCCL is not installed); says whether
    /// it opened one.
    fn start_group(&self, what: &'static str) -> Result<bool> {
        let grouped = self.members.iter().any(|m| m.comm.is_some());
        if grouped {
            group_start().map_err(|e| nccl_error(what, e))?;
        }
        Ok(grouped)
    }

    /// Closes the group [`Collective::start_group`] opened, if it opened one.
    fn end_group(&self, grouped: bool, what: &'static str) -> Result<()> {
        if grouped {
            group_end().map_err(|e| nccl_error(what, e))?;
        }
        Ok(())
    }

    /// An error unless there is one of `what` per local member.
    fn check_members(&self, count: usize, what: &str) -> Result<()> {
        if count == self.members.len() {
            return Ok(());
        }
        Err(ReservoirError::shape(
            "collective",
            format!(
                "one {what} per GPU of this process ({})",
                self.members.len()
            ),
            format!("{count}"),
        )
        .into())
    }

    /// Sums `buffers` (one per local member, on its GPU, the same length on every rank)
    /// element by element over all ranks, in place: afterwards every rank holds the same sums.
    ///
    /// # Errors
    /// A count of buffers other than the local members'; any NCCL error.
    pub fn all_reduce_sum<T: NcclType>(&mut self, buffers: &mut [&mut CudaSlice<T>]) -> Result<()> {
        self.check_members(buffers.len(), "buffer")?;
        const WHAT: &str = "summing over the GPUs (all-reduce)";
        let grouped = self.start_group(WHAT)?;
        let mut outcome = Ok(());
        for (member, buffer) in self.members.iter().zip(buffers.iter_mut()) {
            // One rank alone (no communicator) already holds the sums.
            let Some(comm) = &member.comm else { continue };
            if let Err(e) = comm.all_reduce_in_place(*buffer, &ReduceOp::Sum) {
                outcome = Err(nccl_error(WHAT, e));
                break;
            }
        }
        outcome.and(self.end_group(grouped, WHAT))
    }

    /// Gathers every rank's `sends` (one per local member, the same length L on every rank)
    /// into each member's `receives` (world · L values, rank r's at r·L).
    ///
    /// # Errors
    /// Counts of buffers other than the local members', a receive buffer of another length
    /// than world · L; any NCCL error.
    pub fn all_gather<T: NcclType>(
        &mut self,
        sends: &[CudaView<'_, T>],
        receives: &mut [CudaViewMut<'_, T>],
    ) -> Result<()> {
        self.check_members(sends.len(), "send buffer")?;
        self.check_members(receives.len(), "receive buffer")?;
        for (send, receive) in sends.iter().zip(receives.iter()) {
            if receive.len() != send.len() * self.world {
                return Err(ReservoirError::shape(
                    "all-gather",
                    format!(
                        "{} values ({} ranks × {})",
                        send.len() * self.world,
                        self.world,
                        send.len()
                    ),
                    format!("{}", receive.len()),
                )
                .into());
            }
        }
        const WHAT: &str = "gathering from the GPUs (all-gather)";
        let grouped = self.start_group(WHAT)?;
        let mut outcome = Ok(());
        for ((member, send), receive) in self.members.iter().zip(sends).zip(receives.iter_mut()) {
            let result = match &member.comm {
                Some(comm) => comm
                    .all_gather(send, receive)
                    .map_err(|e| nccl_error(WHAT, e)),
                // One rank alone gathers its own part.
                None => member
                    .device
                    .stream()
                    .memcpy_dtod(send, receive)
                    .map(|_| cudarc::nccl::result::NcclStatus::Success)
                    .context("copying the only rank's part"),
            };
            if let Err(e) = result {
                outcome = Err(e);
                break;
            }
        }
        outcome.and(self.end_group(grouped, WHAT))
    }

    /// Gathers every rank's `parts` (one per local member, at most `width` values each; the
    /// same `width` on every rank) onto the host: world · `width` values, rank r's part at
    /// r·`width`, padded with `T::default()`. For small results (labels, counts) that every
    /// rank needs.
    ///
    /// # Errors
    /// The wrong number of parts or a part longer than `width`; any driver or NCCL error.
    pub fn gather_to_host<T>(&mut self, parts: &[&[T]], width: usize) -> Result<Vec<T>>
    where
        T: NcclType + cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy + Default,
    {
        self.check_members(parts.len(), "part")?;
        if let Some(long) = parts.iter().find(|p| p.len() > width) {
            return Err(ReservoirError::shape(
                "gather",
                format!("parts of at most {width} values"),
                format!("{}", long.len()),
            )
            .into());
        }
        let width = width.max(1);
        let mut sends = Vec::with_capacity(parts.len());
        let mut receives = Vec::with_capacity(parts.len());
        for (member, part) in self.members.iter().zip(parts) {
            let mut padded = part.to_vec();
            padded.resize(width, T::default());
            let stream = member.device.stream();
            sends.push(
                stream
                    .clone_htod(&padded)
                    .alloc_context::<T>("uploading a part to gather", width)?,
            );
            receives.push(
                stream
                    .alloc_zeros::<T>(width * self.world)
                    .alloc_context::<T>("allocating the gathered parts", width * self.world)?,
            );
        }
        {
            let send_views: Vec<_> = sends.iter().map(|s| s.slice(..)).collect();
            let mut receive_views: Vec<_> = receives.iter_mut().map(|r| r.slice_mut(..)).collect();
            self.all_gather(&send_views, &mut receive_views)?;
        }
        let (Some(member), Some(gathered)) = (self.members.first(), receives.first()) else {
            return Err(ReservoirError::invalid("gather", "the collective has no GPU").into());
        };
        member
            .device
            .stream()
            .clone_dtoh(gathered)
            .context("copying the gathered parts back")
    }
}

/// The range of `total` items that rank `rank` of `world` takes: contiguous, in rank order,
/// sizes differing by at most one.
pub fn share(total: usize, world: usize, rank: usize) -> std::ops::Range<usize> {
    let world = world.max(1);
    total * rank / world..total * (rank + 1) / world
}

/// The size of NCCL's unique id, which rank 0 of a launch hands to the other ranks.
pub const UNIQUE_ID_BYTES: usize = 128;

/// A new NCCL unique id, for [`Collective::process`] on every rank of a launch: rank 0 makes
/// it and hands its bytes to the others (the runtime's meeting of the ranks).
///
/// # Errors
/// NCCL not loadable ([`nccl_loadable`]); any error of `ncclGetUniqueId`.
pub fn new_unique_id() -> Result<[u8; UNIQUE_ID_BYTES]> {
    nccl_loadable()?;
    let id = Id::new().map_err(|e| nccl_error("making the NCCL unique id", e))?;
    Ok(id.internal().map(|c| c as u8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_every_item_once_in_rank_order() {
        for (total, world) in [(10, 3), (2, 4), (0, 2), (7, 1)] {
            let covered: Vec<usize> = (0..world).flat_map(|r| share(total, world, r)).collect();
            assert_eq!(
                covered,
                (0..total).collect::<Vec<_>>(),
                "{total} over {world}"
            );
        }
    }
}
