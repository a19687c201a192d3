// Torch bindings for the kernels in the .cu files beside this one. This part
// needs torch headers; load_inline compiles it with the host compiler.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <string>

cudaError_t launch_square_lecture(const float* x, float* y, int rows, int cols, cudaStream_t stream);
cudaError_t launch_square_vec4(const void* x, void* y, int64_t n, bool bf16, int threads, int blocks_per_sm, int unroll,
                               int sm_count, cudaStream_t stream);
cudaError_t launch_gelu_lecture(const float* x, float* y, int n, cudaStream_t stream);
cudaError_t launch_gelu_vec4(const void* x, void* y, int64_t n, bool bf16, int threads, int blocks_per_sm, int unroll,
                             int sm_count, cudaStream_t stream);
cudaError_t launch_softmax(const void* x, void* y, int rows, int cols, bool bf16, int strategy, int threads, int cluster,
                           cudaStream_t stream);
cudaError_t softmax_loop_resident_clusters(bool bf16, int threads, int cluster, int* clusters);
int mean_partial_count(int64_t n, int sm_count, int blocks_per_sm);
cudaError_t launch_mean(const float* x, float* partials, float* out, int64_t n, int sm_count, bool streaming,
                        int blocks_per_sm, int unroll, cudaStream_t stream);

// Python validates every call first (kernelscope.validation); these checks
// only keep a direct caller from crashing the GPU.
static void check_f32_cuda(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda(), what, " must be a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, what, " must be float32");
    TORCH_CHECK(t.is_contiguous(), what, " must be contiguous");
}

// float32 or bfloat16, the same for x and out, same shape: the tuned kernels' inputs.
static bool check_f32_bf16_pair(const torch::Tensor& x, const torch::Tensor& out) {
    TORCH_CHECK(x.is_cuda() && out.is_cuda(), "x and out must be CUDA tensors");
    TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "x and out must be contiguous");
    auto dtype = x.scalar_type();
    TORCH_CHECK(dtype == torch::kFloat32 || dtype == torch::kBFloat16, "x must be float32 or bfloat16");
    TORCH_CHECK(out.scalar_type() == dtype, "out must have x's dtype");
    TORCH_CHECK(out.sizes() == x.sizes(), "out must have x's shape");
    return dtype == torch::kBFloat16;
}

static void check_threads(int64_t threads) {
    TORCH_CHECK(threads >= 32 && threads <= 1024 && threads % 32 == 0, "threads must be a multiple of 32 in [32, 1024]");
}

static void check_launch(cudaError_t err, const char* kernel) {
    TORCH_CHECK(err == cudaSuccess, kernel, " launch failed: ", cudaGetErrorString(err));
}

static int sm_count(const torch::Tensor& t) {
    int count = 0;
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, t.get_device());
    return count;
}

// The DRAM's peak bandwidth in GB/s from the device's attributes (two transfers a memory clock), 0 where the driver
// does not say: softmax_plan keeps more bytes in flight an SM on a GPU whose memory asks for them (the H200).
double dram_peak_gbps(int64_t device) {
    int khz = 0, bits = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, (int)device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, (int)device) != cudaSuccess) {
        return 0.0;
    }
    return 2.0 * khz * 1e3 * (bits / 8) / 1e9;
}

torch::Tensor square_lecture(torch::Tensor x, torch::Tensor out) {
    check_f32_cuda(x, "x");
    check_f32_cuda(out, "out");
    TORCH_CHECK(x.dim() == 2, "x must be 2-D");
    TORCH_CHECK((x.size(0) + 15) / 16 <= 65535, "square_lecture: more rows than a 2-D grid of 16x16 blocks covers");
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_square_lecture(x.data_ptr<float>(), out.data_ptr<float>(),
                                       (int)x.size(0), (int)x.size(1), stream), "square_lecture");
    return out;
}

// threads, blocks_per_sm (0: one lap of tiles, a block a tile; -k: the tiles
// strided over by k blocks an SM; k > 0: the grid-stride loop, SMs x k blocks at
// most) and unroll (16-byte loads a thread before its first store: 1, 2, 4 or 8)
// come from kernels.py.
torch::Tensor square_vec4(torch::Tensor x, torch::Tensor out, int64_t threads, int64_t blocks_per_sm, int64_t unroll) {
    bool bf16 = check_f32_bf16_pair(x, out);
    check_threads(threads);
    TORCH_CHECK(blocks_per_sm >= -64 && blocks_per_sm <= 64, "blocks_per_sm must be in [-64, 64]");
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_square_vec4(x.data_ptr(), out.data_ptr(), x.numel(), bf16, (int)threads, (int)blocks_per_sm,
                                    (int)unroll, sm_count(x), stream), "square_vec4");
    return out;
}

torch::Tensor gelu_lecture(torch::Tensor x, torch::Tensor out) {
    check_f32_cuda(x, "x");
    check_f32_cuda(out, "out");
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_gelu_lecture(x.data_ptr<float>(), out.data_ptr<float>(), (int)x.numel(), stream),
                 "gelu_lecture");
    return out;
}

torch::Tensor gelu_vec4(torch::Tensor x, torch::Tensor out, int64_t threads, int64_t blocks_per_sm, int64_t unroll) {
    bool bf16 = check_f32_bf16_pair(x, out);
    check_threads(threads);
    TORCH_CHECK(blocks_per_sm >= -64 && blocks_per_sm <= 64, "blocks_per_sm must be in [-64, 64]");
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_gelu_vec4(x.data_ptr(), out.data_ptr(), x.numel(), bf16, (int)threads, (int)blocks_per_sm,
                                  (int)unroll, sm_count(x), stream), "gelu_vec4");
    return out;
}

// strategy (a code of softmax_strategies.def), threads and cluster come from
// kernels.softmax_plan (sm_90 for cluster > 1).
torch::Tensor softmax(torch::Tensor x, torch::Tensor out, int64_t strategy, int64_t threads, int64_t cluster) {
    bool bf16 = check_f32_bf16_pair(x, out);
    TORCH_CHECK(x.dim() == 2, "x must be 2-D");
    TORCH_CHECK(x.size(0) <= INT32_MAX && x.size(1) <= INT32_MAX, "softmax: rows and columns must fit in int32");
    check_threads(threads);
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    cudaError_t err = launch_softmax(x.data_ptr(), out.data_ptr(), (int)x.size(0), (int)x.size(1), bf16, (int)strategy,
                                     (int)threads, (int)cluster, stream);
    // Through check_launch, with the plan in the name: a TORCH_CHECK of many arguments here crashed the process on
    // the H100 and the H200 (torch 2.11, a segmentation fault where check_launch's refusal of gelu_vec4 raised;
    // results-proofs/softmax-grid-kernel).
    if (err != cudaSuccess) {
        const std::string what = "softmax (strategy " + std::to_string(strategy) + ", threads " + std::to_string(threads) +
                                 ", cluster " + std::to_string(cluster) + ", rows " + std::to_string(x.size(0)) +
                                 ", cols " + std::to_string(x.size(1)) + ")";
        check_launch(err, what.c_str());
    }
    return out;
}

// Clusters of softmax's loop kernel that fit on `device` at once (0 where none does).
int64_t softmax_loop_resident_clusters_on(int64_t device, bool bf16, int64_t threads, int64_t cluster) {
    check_threads(threads);
    int previous = 0, clusters = 0;
    cudaGetDevice(&previous);
    cudaSetDevice((int)device);
    const cudaError_t err = softmax_loop_resident_clusters(bf16, (int)threads, (int)cluster, &clusters);
    cudaSetDevice(previous);
    check_launch(err, "softmax_loop_resident_clusters");
    return clusters;
}

torch::Tensor mean(torch::Tensor x, torch::Tensor out, bool streaming, int64_t blocks_per_sm, int64_t unroll) {
    check_f32_cuda(x, "x");
    check_f32_cuda(out, "out");
    TORCH_CHECK(blocks_per_sm >= 1 && blocks_per_sm <= 32, "mean: blocks_per_sm must be 1 to 32, not ", blocks_per_sm);
    int sms = sm_count(x);
    const int count = mean_partial_count(x.numel(), sms, (int)blocks_per_sm);
    // One block (a small input) writes no partials: none allocated, where the allocation was a part of the call
    // that matters at that size.
    torch::Tensor partials = count > 1 ? torch::empty({count}, x.options()) : torch::Tensor();
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_mean(x.data_ptr<float>(), partials.defined() ? partials.data_ptr<float>() : nullptr,
                             out.data_ptr<float>(), x.numel(), sms, streaming, (int)blocks_per_sm, (int)unroll, stream),
                 "mean");
    return out;
}
