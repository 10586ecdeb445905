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

// The update's constants (reservoir_core::lif::LifConstants) and what it reports.
struct LifUpdate {
    float alpha_m, alpha_trace, drive_gain, v_rest, v_reset, threshold, bias;
    unsigned int refractory_steps;
    int synaptic_input, feature;
};

// One neuron's state, wherever it is kept (global memory, or registers for a whole run).
struct LifNeuron {
    float v, i_syn, trace;
    unsigned int refractory, counts;
};

// 2–4 of the step for neuron i of n, after the recurrent input `syn` (= I_syn·α_syn + W·s):
// input (`u` this sequence's step, k channels), membrane, threshold, refractory period, trace,
// the window count (`oldest`: the ring's oldest step, which the caller replaces by the
// returned spike) and the feature. Returns whether the neuron spiked.
__device__ __forceinline__ unsigned char lif_advance(
    LifNeuron& s, int i, float syn, const float* __restrict__ input_by_channel,
    const float* __restrict__ u, int k, const LifUpdate& p, unsigned char oldest,
    float* feature_out, int n) {
    // 2. Input, channel by channel, into this step's current or into the synapse.
    float ext = p.bias;
    for (int c = 0; c < k; ++c) {
        float uc = u[c];
        if (uc != 0.0f) {
            float term = input_by_channel[(long long)c * n + i] * uc;
            if (p.synaptic_input) syn = syn + term; else ext = ext + term;
        }
    }
    s.i_syn = syn;
    // 3. Membrane, threshold, refractory period, trace.
    unsigned char spiked = 0;
    if (s.refractory > 0u) {
        s.refractory -= 1u;
        s.v = p.v_reset;
    } else {
        float current = syn + ext;
        float next = (p.v_rest + (s.v - p.v_rest) * p.alpha_m) + current * p.drive_gain;
        if (next >= p.threshold) {
            s.v = p.v_reset;
            s.refractory = p.refractory_steps;
            spiked = 1;
        } else {
            s.v = next;
        }
    }
    s.trace = s.trace * p.alpha_trace + (spiked ? 1.0f : 0.0f);
    // 4. Spike counts over the window.
    s.counts = s.counts - oldest + spiked;
    *feature_out = p.feature == LIF_FEATURE_TRACE
                       ? s.trace
                       : (p.feature == LIF_FEATURE_MEMBRANE ? s.v : (float)s.counts);
    return spiked;
}

// lif_advance on state kept in global memory: `at` is the neuron's place in the batch's
// arrays (b·n + i), and the window's ring row `head` (gridDim.y·n values) holds the oldest
// step.
__device__ __forceinline__ unsigned char lif_update(
    int i, long long at, float syn, const float* __restrict__ input_by_channel,
    const float* __restrict__ u, int k, float* __restrict__ v, float* __restrict__ i_syn,
    unsigned int* __restrict__ refractory, float* __restrict__ trace,
    unsigned int* __restrict__ counts, unsigned char* __restrict__ window, int head,
    float alpha_m, float alpha_trace, float drive_gain, float v_rest, float v_reset,
    float threshold, float bias, unsigned int refractory_steps, int synaptic_input,
    int feature, float* __restrict__ features, int n) {
    const LifUpdate p = {alpha_m, alpha_trace, drive_gain, v_rest, v_reset, threshold,
                         bias, refractory_steps, synaptic_input, feature};
    LifNeuron s = {v[at], i_syn[at], trace[at], refractory[at], counts[at]};
    unsigned char* slot = window + (long long)head * gridDim.y * n + at;
    unsigned char spiked = lif_advance(s, i, syn, input_by_channel, u, k, p, *slot,
                                       features + at, n);
    *slot = spiked;
    v[at] = s.v;
    i_syn[at] = s.i_syn;
    refractory[at] = s.refractory;
    trace[at] = s.trace;
    counts[at] = s.counts;
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

// syn plus the weights of the `received` synapse indices in `mine`, added in ascending e
// (selection: inboxes hold a few entries, their mean being the in-degree times the fraction
// of neurons spiking per step); weight(q, e) is the weight of entry q, synapse e.
template <typename Weight>
__device__ __forceinline__ float inbox_sum(float syn, const unsigned int* mine,
                                           unsigned int received, Weight weight) {
    long long last = -1;
    for (unsigned int r = 0; r < received; ++r) {
        unsigned int best = 0xffffffffu, at = 0u;
        for (unsigned int q = 0; q < received; ++q) {
            unsigned int e = mine[q];
            if ((long long)e > last && e < best) {
                best = e;
                at = q;
            }
        }
        syn = syn + weight(at, best);
        last = best;
    }
    return syn;
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
    return inbox_sum(syn, inbox + (long long)i * capacity, received,
                     [&](unsigned int, unsigned int e) { return out_weights[e]; });
}
