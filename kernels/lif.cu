// The current-based LIF reservoir, a thread per neuron.
// The CPU reference is reservoir-core's lif::LifNetwork::step (see the module docs of
// reservoir_core::lif for the exact order); every operation below is the same f32 operation
// in the same order, so spike trains and features are bit-identical to the CPU's.
//
// Two ways to the recurrent input, both adding W[i, j] for the neurons j that spiked last step
// in ascending j onto I_syn[i]·α_syn, which is exactly the CPU's event-driven scatter, term for
// term:
// - gather (lif_step_kernel): neuron i scans its row of W (row i = postsynaptic neuron i,
//   columns = presynaptic neurons ascending) against last step's spike flags. Cost: every
//   synapse, every step.
// - event-driven (lif_event_step_kernel + lif_deliver_kernel): the step appends the neurons
//   that spiked to a list; the delivery walks only their outgoing synapses (Wᵀ, one row per
//   source, targets ascending) and drops the synapse's index e into its target's inbox. As Wᵀ
//   is laid out source by source, ascending e at a target is ascending j, so the next step
//   adds the inbox in ascending e, whatever order the atomics filled it in. A target that got
//   more events than its inbox holds falls back to the gather. Cost: N plus the synaptic
//   events.
//
// Batches: the gather kernel steps gridDim.y independent sequences at once, sequence b in
// blockIdx.y. Every per-neuron array (flags, state, features) then holds one row of n values
// per sequence, the input one row of k values per sequence, and each row of the window ring
// gridDim.y·n values. One sequence (gridDim.y = 1) is the layout of a single network.
#include "lif.cuh"

// One step by gather of gridDim.y sequences: the reference path, and the faster one for
// small W.
extern "C" __global__ void lif_step_kernel(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights,
    const unsigned char* __restrict__ spiked_before, unsigned char* __restrict__ spiked_now,
    const float* __restrict__ input_by_channel,  // K x N, channel-major
    const float* __restrict__ u, int k,           // this step's input, K values per sequence
    float* __restrict__ v, float* __restrict__ i_syn, unsigned int* __restrict__ refractory,
    float* __restrict__ trace, unsigned int* __restrict__ counts,
    unsigned char* __restrict__ window, int head,  // ring of the last steps' spikes
    float alpha_m, float alpha_syn, float alpha_trace, float drive_gain, float v_rest,
    float v_reset, float threshold, float bias, unsigned int refractory_steps,
    int synaptic_input, int feature, float* __restrict__ features, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long row = (long long)blockIdx.y * n;
    long long at = row + i;
    float syn = gather_recurrent(i, i_syn[at] * alpha_syn, row_ptr, col_idx, weights,
                                 spiked_before + row);
    spiked_now[at] = lif_update(i, at, syn, input_by_channel, u + (long long)blockIdx.y * k, k,
                                v, i_syn, refractory, trace, counts, window, head, alpha_m,
                                alpha_trace, drive_gain, v_rest, v_reset, threshold, bias,
                                refractory_steps, synaptic_input, feature, features, n);
}

// One event-driven step. The recurrent input comes from the inbox (the synapse indices e the
// last delivery dropped there, added in ascending e), or from the gather when the inbox
// overflowed or does not hold last step's spikes (inbox_valid = 0: the first step after
// gather steps). Every inbox is emptied. Neurons that spike are appended to spike_list, whose
// length *spike_total must be 0 on entry (one atomic per warp; the list's order varies from
// run to run, which the delivery makes irrelevant). blockDim.x must be a multiple of 32; one
// sequence only (gridDim.y = 1).
extern "C" __global__ void lif_event_step_kernel(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights,            // W (CSR), for the gather
    const float* __restrict__ out_weights,        // Wᵀ's values, indexed by synapse e
    unsigned int* __restrict__ inbox_count, const unsigned int* __restrict__ inbox,
    int capacity, int inbox_valid,
    unsigned int* __restrict__ spike_list, unsigned int* __restrict__ spike_total,
    const unsigned char* __restrict__ spiked_before, unsigned char* __restrict__ spiked_now,
    const float* __restrict__ input_by_channel, const float* __restrict__ u, int k,
    float* __restrict__ v, float* __restrict__ i_syn, unsigned int* __restrict__ refractory,
    float* __restrict__ trace, unsigned int* __restrict__ counts,
    unsigned char* __restrict__ window, int head,
    float alpha_m, float alpha_syn, float alpha_trace, float drive_gain, float v_rest,
    float v_reset, float threshold, float bias, unsigned int refractory_steps,
    int synaptic_input, int feature, float* __restrict__ features, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned char spiked = 0;
    if (i < n) {
        float syn = event_recurrent(i, i_syn[i] * alpha_syn, row_ptr, col_idx, weights,
                                    out_weights, inbox_count, inbox, capacity, inbox_valid,
                                    spiked_before);
        spiked = lif_update(i, i, syn, input_by_channel, u, k, v, i_syn, refractory, trace,
                            counts, window, head, alpha_m, alpha_trace, drive_gain, v_rest,
                            v_reset, threshold, bias, refractory_steps, synaptic_input,
                            feature, features, n);
        spiked_now[i] = spiked;
    }
    append_spike(spiked, i, spike_list, spike_total);
}

// The neurons whose flag is set among n (flags of every GPU's neurons, gathered), appended to
// list, whose length *total must be 0 on entry: the spike list a delivery walks when the
// network is split over GPUs. blockDim.x must be a multiple of 32.
extern "C" __global__ void lif_flags_to_list(const unsigned char* __restrict__ flags, int n,
                                             unsigned int* __restrict__ list,
                                             unsigned int* __restrict__ total) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    append_spike(i < n ? flags[i] : (unsigned char)0, i, list, total);
}

// Delivers the spikes of spike_list (length *spike_total): a block per spike (grid-stride),
// its threads over the neuron's outgoing synapses e (Wᵀ row j), each dropping e into its
// target's inbox (an inbox that is full only counts, and its neuron gathers instead). Also
// zeroes *next_total, the length of the list the next step appends to.
extern "C" __global__ void lif_deliver_kernel(
    const int* __restrict__ out_ptr, const int* __restrict__ out_targets,
    const unsigned int* __restrict__ spike_list, const unsigned int* __restrict__ spike_total,
    unsigned int* __restrict__ inbox_count, unsigned int* __restrict__ inbox, int capacity,
    unsigned int* __restrict__ next_total) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *next_total = 0u;
    const unsigned int spikes = *spike_total;
    for (unsigned int s = blockIdx.x; s < spikes; s += gridDim.x) {
        int j = (int)spike_list[s];
        int end = out_ptr[j + 1];
        for (int e = out_ptr[j] + (int)threadIdx.x; e < end; e += (int)blockDim.x) {
            int target = out_targets[e];
            unsigned int slot = atomicAdd(&inbox_count[target], 1u);
            if (slot < (unsigned int)capacity) {
                inbox[(long long)target * capacity + slot] = (unsigned int)e;
            }
        }
    }
}
