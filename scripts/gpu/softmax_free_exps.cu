// softmax-cuda with every exp a subtract: scripts/gpu/floors.py --kernels builds it in softmax.cu's place
// (build.extension(softmax=this file)) and times each wide-row plan in it beside the same plan as shipped. The
// kernels move their bytes, reduce and exchange their pairs as they do, with no exp math, so the time says how far
// a design's memory, reductions and barriers alone go (results-proofs/softmax-floors). Its output is no softmax.
#include "softmax_launch.cuh"

struct FreeExps {
    __device__ __forceinline__ static float exp(float x, float m) { return x - m; }
};

struct SoftmaxFreeExps : SoftmaxShipped {
    using Exp = FreeExps;
};

cudaError_t launch_softmax(const void* x, void* y, int rows, int cols, bool bf16, int strategy, int threads,
                           int cluster, cudaStream_t stream) {
    return launch_softmax_as<SoftmaxFreeExps>(x, y, rows, cols, bf16, strategy, threads, cluster, stream);
}

cudaError_t softmax_loop_resident_clusters(bool bf16, int threads, int cluster, int* clusters) {
    return softmax_loop_resident_clusters_as<SoftmaxFreeExps>(bf16, threads, cluster, clusters);
}
