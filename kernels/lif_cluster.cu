// lif_cluster: a whole event-driven LIF run of one sequence in one thread-block cluster
// (sm_90+), one cluster barrier per step. The same device functions as lif_event_step_kernel
// and lif_deliver_kernel (lif.cu) in the same order, so spike trains and features are
// bit-identical to the CPU's (reservoir_core::lif::LifNetwork::step) and to the launched steps.
//
// Block b of the cluster owns neurons [b·per_block, (b+1)·per_block); thread t keeps the state
// of its neurons t, t + blockDim.x, … (at most LIF_CLUSTER_PER_THREAD) in registers for the
// whole run. The inboxes of a block's neurons live in its shared memory, each entry a synapse
// e with its weight (fetched by the delivery, beside the target), twice: step t's
// deliveries fill buffer t & 1 while the neurons read (and empty) the other, filled by step
// t − 1, so one barrier per step orders everything: after it every inbox a step reads is
// complete, and every inbox it delivers into was emptied before it. The warp of a neuron that
// spikes delivers it right away, through distributed shared memory (an atomic per synapse on
// the target's inbox count, as in lif_deliver_kernel).
//
// Shared inboxes hold shared_capacity (≤ capacity) entries; a fuller one only counts, and its
// neuron gathers, as a full global inbox does. On entry the global inboxes (capacity entries
// a neuron) are loaded when inbox_valid says they hold the spikes of the step before step 0;
// on exit the inboxes of the last step's spikes are stored back (a shared inbox that overflowed
// as a count above capacity) with the state, so launched steps can follow.
//
// Step t reads row t of u (steps × k), writes row t of features and flags (steps × n) and
// reads last step's flags (initial_flags at t = 0) where it gathers. head is the window's ring
// row at step 0 (one row of n bytes per step). Dynamic shared memory: per_block·(2 + 4 ·
// shared_capacity) words. The grid is one cluster; blockDim.x is a multiple of 32 and
// blockDim.x · LIF_CLUSTER_PER_THREAD ≥ per_block.
#include "lif.cuh"
#include "cluster.cuh"

#define LIF_CLUSTER_PER_THREAD 2

// The recurrent input of a neuron that received events or must gather, out of line: inlined
// into each of a thread's neurons, its loops multiply the compile time. syn plus the inbox
// (`received` synapses `mine` with their weights `mine_weights`), or the gather when the inbox
// overflowed (received > cap) or does not hold last step's spikes (valid = 0).
__device__ __noinline__ float cluster_recurrent(
    int i, float syn, const unsigned int* mine, const float* mine_weights,
    unsigned int received, unsigned int cap, int valid, const int* __restrict__ row_ptr,
    const int* __restrict__ col_idx, const float* __restrict__ weights,
    const unsigned char* spiked_before) {
    if (!valid || received > cap) {
        return gather_recurrent(i, syn, row_ptr, col_idx, weights, spiked_before);
    }
    return inbox_sum(syn, mine, received,
                     [&](unsigned int q, unsigned int) { return mine_weights[q]; });
}

// The warp's delivery of neuron j's spike into buffer `written` of its targets' inboxes (the
// block of m neurons that owns each target): a lane per synapse, four synapses a lane at a
// time so that their loads and atomics overlap.
__device__ __forceinline__ void warp_deliver(
    int j, int written, int m, unsigned int cap, const int* __restrict__ out_ptr,
    const int* __restrict__ out_targets, const float* __restrict__ out_weights,
    unsigned int* box_count, unsigned int* box_slots, float* box_weights) {
    const int lane = (int)(threadIdx.x & 31);
    const int end = out_ptr[j + 1];
    for (int base = out_ptr[j]; base < end; base += 4 * 32) {
        int target[4];
        float weight[4];
        unsigned int slot[4], at[4], owner[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            const int e = base + x * 32 + lane;
            target[x] = e < end ? out_targets[e] : -1;
            weight[x] = e < end ? out_weights[e] : 0.0f;
        }
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            if (target[x] < 0) continue;
            owner[x] = (unsigned int)(target[x] / m);
            at[x] = (unsigned int)(written * m + (target[x] - (int)owner[x] * m));
            slot[x] = peer_atomic_add(peer_address(shared_address(box_count + at[x]), owner[x]), 1u);
        }
#pragma unroll
        for (int x = 0; x < 4; ++x) {
            if (target[x] < 0 || slot[x] >= cap) continue;
            const unsigned int entry = at[x] * cap + slot[x];
            peer_store(peer_address(shared_address(box_slots + entry), owner[x]),
                       (unsigned int)(base + x * 32 + lane));
            peer_store(peer_address(shared_address(box_weights + entry), owner[x]),
                       __float_as_uint(weight[x]));
        }
    }
}

extern "C" __global__ void __launch_bounds__(1024, 1) lif_event_cluster_run(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights,            // W (CSR), for the gather
    const int* __restrict__ out_ptr, const int* __restrict__ out_targets,
    const float* __restrict__ out_weights,        // Wᵀ (CSR)
    unsigned int* __restrict__ inbox_count, unsigned int* __restrict__ inbox, int capacity,
    int inbox_valid, int shared_capacity, int per_block,
    const unsigned char* initial_flags, unsigned char* flags,
    const float* __restrict__ input_by_channel, const float* __restrict__ u, int k,
    float* __restrict__ v, float* __restrict__ i_syn, unsigned int* __restrict__ refractory,
    float* __restrict__ trace, unsigned int* __restrict__ counts,
    unsigned char* __restrict__ window, int head, int window_steps,
    float alpha_m, float alpha_syn, float alpha_trace, float drive_gain, float v_rest,
    float v_reset, float threshold, float bias, unsigned int refractory_steps,
    int synaptic_input, int feature, float* __restrict__ features, int n, int steps) {
    extern __shared__ unsigned int shared[];
    const int m = per_block;
    const unsigned int cap = (unsigned int)shared_capacity;
    unsigned int* box_count = shared;                  // [2][m]
    unsigned int* box_slots = shared + 2 * m;          // [2][m][cap]: synapses e
    float* box_weights = (float*)(box_slots + 2 * m * cap);  // [2][m][cap]: their weights
    const int lo = (int)blockIdx.x * m;
    const int tid = (int)threadIdx.x;
    const LifUpdate p = {alpha_m, alpha_trace, drive_gain, v_rest, v_reset, threshold,
                         bias, refractory_steps, synaptic_input, feature};

    // The state into registers with each neuron's oldest window value, and the global inboxes
    // into buffer 1, which step 0 reads (buffer 0 empty): each neuron's by its own thread.
    LifNeuron state[LIF_CLUSTER_PER_THREAD];
    unsigned char oldest[LIF_CLUSTER_PER_THREAD];
#pragma unroll
    for (int q = 0; q < LIF_CLUSTER_PER_THREAD; ++q) {
        const int r = tid + q * (int)blockDim.x, i = lo + r;
        if (r >= m) continue;
        unsigned int received = 0u;
        if (i < n) {
            state[q] = LifNeuron{v[i], i_syn[i], trace[i], refractory[i], counts[i]};
            oldest[q] = window[(long long)head * n + i];
            if (inbox_valid) received = inbox_count[i];
            for (unsigned int x = 0; x < received && x < cap; ++x) {
                const unsigned int e = inbox[(long long)i * capacity + x];
                box_slots[(m + r) * cap + x] = e;
                box_weights[(m + r) * cap + x] = out_weights[e];
            }
        }
        box_count[r] = 0u;
        box_count[m + r] = received > cap ? 0xffffffffu : received;
    }
    cluster_sync_all();

    int valid = inbox_valid;
    for (int t = 0; t < steps; ++t) {
        const unsigned char* before = t == 0 ? initial_flags : flags + (long long)(t - 1) * n;
        unsigned char* now = flags + (long long)t * n;
        const int read = (t + 1) & 1, written = t & 1;
        const int next_head = head + 1 == window_steps ? 0 : head + 1;
        // The next step's input row, early: every thread reads it.
        if (t + 1 < steps) asm volatile("prefetch.global.L1 [%0];" ::"l"(u + (long long)(t + 1) * k));
        // Every thread takes every turn, so whole warps reach the ballot.
#pragma unroll
        for (int q = 0; q < LIF_CLUSTER_PER_THREAD; ++q) {
            const int r = tid + q * (int)blockDim.x, i = lo + r;
            unsigned char spiked = 0;
            if (r < m && i < n) {
                float syn = state[q].i_syn * alpha_syn;
                const unsigned int received = box_count[read * m + r];
                if (received != 0u || !valid) {
                    box_count[read * m + r] = 0u;
                    const int at = (read * m + r) * (int)cap;
                    if (valid && received == 1u) {
                        syn = syn + box_weights[at];  // the common case, inline
                    } else {
                        syn = cluster_recurrent(i, syn, box_slots + at, box_weights + at,
                                                received, cap, valid, row_ptr, col_idx,
                                                weights, before);
                    }
                }
                spiked = lif_advance(state[q], i, syn, input_by_channel, u + (long long)t * k,
                                     k, p, oldest[q], features + (long long)t * n + i, n);
                window[(long long)head * n + i] = spiked;
                now[i] = spiked;
                // The next step's oldest value (this one's spike when the window is one step).
                oldest[q] = next_head == head ? spiked : window[(long long)next_head * n + i];
            }
            unsigned int spiking = __ballot_sync(0xffffffffu, spiked);
            while (spiking != 0u) {
                const int lane = __ffs(spiking) - 1;
                spiking &= spiking - 1u;
                warp_deliver(__shfl_sync(0xffffffffu, i, lane), written, m, cap, out_ptr,
                             out_targets, out_weights, box_count, box_slots, box_weights);
            }
        }
        cluster_sync_all();
        valid = 1;
        head = next_head;
    }

    // The state, and the inboxes of the last step's spikes, back to global memory.
    const int last = (steps + 1) & 1;
#pragma unroll
    for (int q = 0; q < LIF_CLUSTER_PER_THREAD; ++q) {
        const int r = tid + q * (int)blockDim.x, i = lo + r;
        if (r < m && i < n) {
            v[i] = state[q].v;
            i_syn[i] = state[q].i_syn;
            trace[i] = state[q].trace;
            refractory[i] = state[q].refractory;
            counts[i] = state[q].counts;
            const unsigned int received = box_count[last * m + r];
            inbox_count[i] = received > cap ? (unsigned int)capacity + 1u : received;
            for (unsigned int e = 0; e < received && e < cap; ++e) {
                inbox[(long long)i * capacity + e] = box_slots[(last * m + r) * cap + e];
            }
        }
    }
}
