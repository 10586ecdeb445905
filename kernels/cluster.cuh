// Hopper helpers (compute capability 9.0 and later): thread-block clusters, for the kernels that
// run a whole sequence in one cluster launch, and transaction barriers (mbarrier), which count
// the bytes of asynchronous copies and stores.
#pragma once

// Every thread of every block of the cluster waits here; what each wrote before is visible to
// all after (release/acquire at cluster scope, global and shared memory alike).
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
                 ::: "memory");
}

// The 32-bit shared-memory address of `p`, a pointer into this block's shared memory.
__device__ __forceinline__ unsigned int shared_address(const void* p) {
    return (unsigned int)__cvta_generic_to_shared(p);
}

// The address of this block's shared `address` in block `rank`'s shared memory.
__device__ __forceinline__ unsigned int peer_address(unsigned int address, unsigned int rank) {
    unsigned int theirs;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(address), "r"(rank));
    return theirs;
}

// Atomically adds `value` to the u32 at a peer's shared `address`; returns the old value.
__device__ __forceinline__ unsigned int peer_atomic_add(unsigned int address, unsigned int value) {
    unsigned int old;
    asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;"
                 : "=r"(old) : "r"(address), "r"(value) : "memory");
    return old;
}

// Stores `value` to the u32 at a peer's shared `address`.
__device__ __forceinline__ void peer_store(unsigned int address, unsigned int value) {
    asm volatile("st.shared::cluster.u32 [%0], %1;" ::"r"(address), "r"(value) : "memory");
}

// The next phase of `barrier` completes once `bytes` more bytes have arrived.
__device__ __forceinline__ void expect_bytes(unsigned int barrier, unsigned int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                 ::"r"(barrier), "r"(bytes) : "memory");
}

// Waits until the phase of `barrier` with this parity has completed.
__device__ __forceinline__ void wait_phase(unsigned int barrier, unsigned int parity) {
    unsigned int done = 0;
    while (!done) {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done) : "r"(barrier), "r"(parity) : "memory");
    }
}
