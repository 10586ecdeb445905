// One step of the current-based LIF reservoir (NVRTC, --fmad=false), a thread per neuron.
// The CPU reference is reservoir-core's lif::LifNetwork::step (see the module docs of
// reservoir_core::lif for the exact order); every operation below is the same f32 operation
// in the same order, so spike trains and features are bit-identical to the CPU's.
//
// The recurrent input is a gather over W's rows (row i = postsynaptic neuron i, columns =
// presynaptic neurons ascending): adding W[i, j] for the neurons j that spiked last step in
// ascending j is exactly the CPU's event-driven scatter, term for term.

extern "C" __global__ void lif_step_kernel(
    const int* __restrict__ row_ptr, const int* __restrict__ col_idx,
    const float* __restrict__ weights,
    const unsigned char* __restrict__ spiked_before, unsigned char* __restrict__ spiked_now,
    const float* __restrict__ input_by_channel,  // K x N, channel-major
    const float* __restrict__ u, int k,           // this step's input, K values (f32)
    float* __restrict__ v, float* __restrict__ i_syn, unsigned int* __restrict__ refractory,
    float* __restrict__ trace, unsigned int* __restrict__ counts,
    unsigned char* __restrict__ window, int head,  // ring of the last steps' spikes, W x N
    float alpha_m, float alpha_syn, float alpha_trace, float drive_gain, float v_rest,
    float v_reset, float threshold, float bias, unsigned int refractory_steps,
    int synaptic_input, int feature, float* __restrict__ features, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    // 1. Synaptic decay, then last step's spikes in ascending presynaptic order.
    float syn = i_syn[i] * alpha_syn;
    for (int e = row_ptr[i]; e < row_ptr[i + 1]; ++e) {
        if (spiked_before[col_idx[e]]) syn = syn + weights[e];
    }
    // 2. Input, channel by channel, into this step's current or into the synapse.
    float ext = bias;
    for (int c = 0; c < k; ++c) {
        float uc = u[c];
        if (uc != 0.0f) {
            float term = input_by_channel[(long long)c * n + i] * uc;
            if (synaptic_input) syn = syn + term; else ext = ext + term;
        }
    }
    i_syn[i] = syn;
    // 3. Membrane, threshold, refractory period, trace.
    unsigned char spiked = 0;
    if (refractory[i] > 0u) {
        refractory[i] -= 1u;
        v[i] = v_reset;
    } else {
        float current = syn + ext;
        float next = (v_rest + (v[i] - v_rest) * alpha_m) + current * drive_gain;
        if (next >= threshold) {
            v[i] = v_reset;
            refractory[i] = refractory_steps;
            spiked = 1;
        } else {
            v[i] = next;
        }
    }
    trace[i] = trace[i] * alpha_trace + (spiked ? 1.0f : 0.0f);
    spiked_now[i] = spiked;
    // 4. Spike counts over the window: the ring slot `head` holds the oldest step.
    long long slot = (long long)head * n + i;
    counts[i] = counts[i] - window[slot] + spiked;
    window[slot] = spiked;
    features[i] = feature == 0 ? trace[i] : (feature == 1 ? v[i] : (float)counts[i]);
}
