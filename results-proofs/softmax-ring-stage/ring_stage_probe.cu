// softmax-cuda with each ring stage rounded up to whole vectors a thread (the layout before the stage became a
// block's slice): ring_stage_probe.py builds it in softmax.cu's place (build.extension(softmax=this file)) and
// times it against the shipped stage. The kernels are the shipped ones; only the launch's shared memory differs.
#include "softmax_launch.cuh"

struct SoftmaxRoundedStage : SoftmaxShipped {
    static constexpr bool ring_stage_rounded = true;
};

cudaError_t launch_softmax(const void* x, void* y, int rows, int cols, bool bf16, int strategy, int threads,
                           int cluster, cudaStream_t stream) {
    return launch_softmax_as<SoftmaxRoundedStage>(x, y, rows, cols, bf16, strategy, threads, cluster, stream);
}

cudaError_t softmax_loop_resident_clusters(bool bf16, int threads, int cluster, int* clusters) {
    return softmax_loop_resident_clusters_as<SoftmaxRoundedStage>(bf16, threads, cluster, clusters);
}
