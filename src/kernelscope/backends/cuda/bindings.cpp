// Torch bindings for the kernels in the .cu files beside this one. This part
// needs torch headers; load_inline compiles it with the host compiler.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

cudaError_t launch_square_lecture(const float* x, float* y, int rows, int cols, cudaStream_t stream);
cudaError_t launch_square_vec4(const float* x, float* y, int64_t n, int sm_count, cudaStream_t stream);
cudaError_t launch_gelu_lecture(const float* x, float* y, int n, cudaStream_t stream);
int mean_partial_count(int64_t n, int sm_count);
cudaError_t launch_mean(const float* x, float* partials, float* out, int64_t n, int sm_count, cudaStream_t stream);

// Python validates every call first (kernelscope.validation); these checks
// only keep a direct caller from crashing the GPU.
static void check_f32_cuda(const torch::Tensor& t, const char* what) {
    TORCH_CHECK(t.is_cuda(), what, " must be a CUDA tensor");
    TORCH_CHECK(t.scalar_type() == torch::kFloat32, what, " must be float32");
    TORCH_CHECK(t.is_contiguous(), what, " must be contiguous");
}

static void check_launch(cudaError_t err, const char* kernel) {
    TORCH_CHECK(err == cudaSuccess, kernel, " launch failed: ", cudaGetErrorString(err));
}

static int sm_count(const torch::Tensor& t) {
    int count = 0;
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, t.get_device());
    return count;
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

torch::Tensor square_vec4(torch::Tensor x, torch::Tensor out) {
    check_f32_cuda(x, "x");
    check_f32_cuda(out, "out");
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_square_vec4(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), sm_count(x), stream),
                 "square_vec4");
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

torch::Tensor mean(torch::Tensor x, torch::Tensor out) {
    check_f32_cuda(x, "x");
    check_f32_cuda(out, "out");
    int sms = sm_count(x);
    auto partials = torch::empty({mean_partial_count(x.numel(), sms)}, x.options());
    auto stream = c10::cuda::getCurrentCUDAStream(x.get_device()).stream();
    check_launch(launch_mean(x.data_ptr<float>(), partials.data_ptr<float>(), out.data_ptr<float>(), x.numel(), sms,
                             stream), "mean");
    return out;
}
