// lif_cluster: a whole event-driven LIF run of one sequence in one thread-block cluster
// (sm_90+): the steps of lif_event_step_kernel and lif_deliver_kernel (lif.cu), the same
// device functions in the same order, so spike trains and features are bit-identical to the
// CPU's (reservoir_core::lif::LifNetwork::step) and to the two launches per step. The grid is
// one cluster; its threads cover the neurons (each thread every gridDim.x·blockDim.x-th), and
// two cluster barriers per step replace the launches: after the update (every spike listed)
// and after the delivery (every inbox filled, the next list's length zeroed).
//
// State, inboxes, spike lists and flags live in global memory (L2); only the barriers are the
// cluster's. Step t reads the input row t of u (steps x k), writes its features and flags to
// row t of features and flags (steps x n), and reads last step's flags (initial_flags at
// t = 0). parity picks the list step 0 appends to (list_a at 0); inbox_valid says whether the
// inboxes hold the spikes of the step before step 0; head is the window's ring row at step 0.
// *total of step 0's list must be 0 on entry; on exit the list after the last step's is
// zeroed, as after a delivery. blockDim.x must be a multiple of 32.
#include "lif.cuh"
#include "cluster.cuh"

extern "C" __global__ void lif_event_cluster_run(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights,            // W (CSR), for the gather
    const int* __restrict__ out_ptr, const int* __restrict__ out_targets,
    const float* __restrict__ out_weights,        // Wᵀ (CSR)
    unsigned int* inbox_count, unsigned int* inbox, int capacity, int inbox_valid,
    unsigned int* list_a, unsigned int* list_b, unsigned int* total_a, unsigned int* total_b,
    int parity, const unsigned char* initial_flags, unsigned char* flags,
    const float* __restrict__ input_by_channel, const float* __restrict__ u, int k,
    float* __restrict__ v, float* __restrict__ i_syn, unsigned int* __restrict__ refractory,
    float* __restrict__ trace, unsigned int* __restrict__ counts,
    unsigned char* __restrict__ window, int head, int window_steps,
    float alpha_m, float alpha_syn, float alpha_trace, float drive_gain, float v_rest,
    float v_reset, float threshold, float bias, unsigned int refractory_steps,
    int synaptic_input, int feature, float* __restrict__ features, int n, int steps) {
    const int stride = (int)(gridDim.x * blockDim.x);
    const int first = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    for (int t = 0; t < steps; ++t) {
        const unsigned char* before = t == 0 ? initial_flags : flags + (long long)(t - 1) * n;
        unsigned char* now = flags + (long long)t * n;
        unsigned int* list = parity ? list_b : list_a;
        unsigned int* total = parity ? total_b : total_a;
        unsigned int* next_total = parity ? total_a : total_b;
        // Every thread takes the same number of turns, so whole warps reach the ballot.
        for (int base = 0; base < n; base += stride) {
            int i = base + first;
            unsigned char spiked = 0;
            if (i < n) {
                float syn = event_recurrent(i, i_syn[i] * alpha_syn, row_ptr, col_idx, weights,
                                            out_weights, inbox_count, inbox, capacity,
                                            inbox_valid, before);
                spiked = lif_update(i, i, syn, input_by_channel, u + (long long)t * k, k, v,
                                    i_syn, refractory, trace, counts, window, head, alpha_m,
                                    alpha_trace, drive_gain, v_rest, v_reset, threshold, bias,
                                    refractory_steps, synaptic_input, feature,
                                    features + (long long)t * n, n);
                now[i] = spiked;
            }
            append_spike(spiked, i, list, total);
        }
        cluster_sync_all();
        if (blockIdx.x == 0 && threadIdx.x == 0) *next_total = 0u;
        deliver_spikes(blockIdx.x, gridDim.x, out_ptr, out_targets, list, *total, inbox_count,
                       inbox, capacity);
        cluster_sync_all();
        parity = 1 - parity;
        inbox_valid = 1;
        head = head + 1 == window_steps ? 0 : head + 1;
    }
}
