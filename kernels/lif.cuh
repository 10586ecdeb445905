// The LIF step's device functions, shared by the kernels of lif.cu (a launch per step) and
// lif_cluster.cu (a whole run in one launch). Pointers that one phase of a run writes and
// another reads (flags, inboxes, spike lists) carry no __restrict__ here, so that a kernel
// running both phases never reads them through the non-coherent cache.
#pragma once
#include "common.cuh"

// 1. Recurrent input by gather: syn plus W[i, j] for every j that spiked, ascending j.
__device__ __forceinline__ float gather_recurrent(
    int i, float syn, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights, const unsigned char* spiked_before) {
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

// 1. Recurrent input of the event-driven step for neuron i: syn (= I_syn·α_syn) plus its
// inbox's synapses in ascending e, or the gather when the inbox overflowed or does not hold
// last step's spikes (inbox_valid = 0). Empties the inbox.
__device__ __forceinline__ float event_recurrent(
    int i, float syn, const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights, const float* __restrict__ out_weights,
    unsigned int* inbox_count, const unsigned int* inbox, int capacity, int inbox_valid,
    const unsigned char* spiked_before) {
    unsigned int received = inbox_count[i];
    if (received != 0u) inbox_count[i] = 0u;
    if (!inbox_valid || received > (unsigned int)capacity) {
        return gather_recurrent(i, syn, row_ptr, col_idx, weights, spiked_before);
    }
    // Selection in ascending e: inboxes hold a few entries (their mean is the in-degree times
    // the fraction of neurons spiking per step).
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
    return syn;
}

// Delivery of the spikes of spike_list (length *spike_total) by `blocks` blocks, this one
// `block` of them: a block per spike (block-stride), its threads over the neuron's outgoing
// synapses e (Wᵀ row j), each dropping e into its target's inbox (an inbox that is full only
// counts, and its neuron gathers instead).
__device__ __forceinline__ void deliver_spikes(
    unsigned int block, unsigned int blocks, const int* __restrict__ out_ptr,
    const int* __restrict__ out_targets, const unsigned int* spike_list, unsigned int spikes,
    unsigned int* inbox_count, unsigned int* inbox, int capacity) {
    for (unsigned int s = block; s < spikes; s += blocks) {
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
