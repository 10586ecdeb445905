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
#include "common.cuh"

// 1. Recurrent input by gather: syn plus W[i, j] for every j that spiked, ascending j.
__device__ __forceinline__ float gather_recurrent(
    int i, float syn, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights, const unsigned char* __restrict__ spiked_before) {
    for (int e = row_ptr[i]; e < row_ptr[i + 1]; ++e) {
        if (spiked_before[col_idx[e]]) syn = syn + weights[e];
    }
    return syn;
}

// 2–4 of the step for neuron i, after the recurrent input `syn` (= I_syn·α_syn + W·s):
// input, membrane, threshold, refractory period, trace, window counts and the feature.
// `at` is the neuron's place in the batch's arrays (b·n + i), `u` this sequence's input.
// Returns whether the neuron spiked.
__device__ __forceinline__ unsigned char lif_update(
    int i, long long at, float syn, const float* __restrict__ input_by_channel,
    const float* __restrict__ u, int k, float* __restrict__ v, float* __restrict__ i_syn,
    unsigned int* __restrict__ refractory, float* __restrict__ trace,
    unsigned int* __restrict__ counts, unsigned char* __restrict__ window, int head,
    float alpha_m, float alpha_trace, float drive_gain, float v_rest, float v_reset,
    float threshold, float bias, unsigned int refractory_steps, int synaptic_input,
    int feature, float* __restrict__ features, int n) {
    // 2. Input, channel by channel, into this step's current or into the synapse.
    float ext = bias;
    for (int c = 0; c < k; ++c) {
        float uc = u[c];
        if (uc != 0.0f) {
            float term = input_by_channel[(long long)c * n + i] * uc;
            if (synaptic_input) syn = syn + term; else ext = ext + term;
        }
    }
    i_syn[at] = syn;
    // 3. Membrane, threshold, refractory period, trace.
    unsigned char spiked = 0;
    if (refractory[at] > 0u) {
        refractory[at] -= 1u;
        v[at] = v_reset;
    } else {
        float current = syn + ext;
        float next = (v_rest + (v[at] - v_rest) * alpha_m) + current * drive_gain;
        if (next >= threshold) {
            v[at] = v_reset;
            refractory[at] = refractory_steps;
            spiked = 1;
        } else {
            v[at] = next;
        }
    }
    trace[at] = trace[at] * alpha_trace + (spiked ? 1.0f : 0.0f);
    // 4. Spike counts over the window: the ring row `head` holds the oldest step.
    long long slot = (long long)head * gridDim.y * n + at;
    counts[at] = counts[at] - window[slot] + spiked;
    window[slot] = spiked;
    features[at] = feature == LIF_FEATURE_TRACE
                       ? trace[at]
                       : (feature == LIF_FEATURE_MEMBRANE ? v[at] : (float)counts[at]);
    return spiked;
}

// Compaction of a warp's spikes: one atomic per warp reserves the warp's slots in list (length
// *total), lanes fill them in order. Every lane of the warp must call it.
__device__ __forceinline__ void append_spike(unsigned char spiked, int i,
                                             unsigned int* __restrict__ list,
                                             unsigned int* __restrict__ total) {
    unsigned int mask = __ballot_sync(0xffffffffu, spiked);
    if (mask != 0u) {
        int lane = threadIdx.x & 31;
        unsigned int base = 0u;
        if (lane == 0) base = atomicAdd(total, (unsigned int)__popc(mask));
        base = __shfl_sync(0xffffffffu, base, 0);
        if (spiked) list[base + __popc(mask & ((1u << lane) - 1u))] = (unsigned int)i;
    }
}

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
        float syn = i_syn[i] * alpha_syn;
        unsigned int received = inbox_count[i];
        if (received != 0u) inbox_count[i] = 0u;
        if (!inbox_valid || received > (unsigned int)capacity) {
            syn = gather_recurrent(i, syn, row_ptr, col_idx, weights, spiked_before);
        } else {
            // Selection in ascending e: inboxes hold a few entries (their mean is the
            // in-degree times the fraction of neurons spiking per step).
            const unsigned int* mine = inbox + (long long)i * capacity;
            long long last = -1;
            for (unsigned int r = 0; r < received; ++r) {
                unsigned int best = 0xffffffffu;
                for (unsigned int q = 0; q < received; ++q) {
                    unsigned int e = mine[q];
                    if ((long long)e > last && e < best) best = e;
                }
                syn = syn + out_weights[best];
                last = best;
            }
        }
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
    unsigned int spikes = *spike_total;
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
