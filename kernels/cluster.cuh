// Thread-block cluster helpers (compute capability 9.0 and later), for the kernels that run a
// whole sequence in one cluster launch.
#pragma once

// Every thread of every block of the cluster waits here; what each wrote before is visible to
// all after (release/acquire at cluster scope, global and shared memory alike).
__device__ __forceinline__ void cluster_sync_all() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;"
                 ::: "memory");
}
