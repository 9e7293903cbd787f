// Device check (needs an H100-class GPU; not part of the build): how fast Transformer Engine's userbuffers
// ring-exchange GEMMs run when a tensor-parallel GEMM is split into tp chunks of M/tp rows, against the whole GEMM.
//
// Why: dtsim times a TP-overlap GEMM whole (docs/parallelism.md). Transformer Engine's ring exchange (the fp8 H100
// userbuffers configs of Megatron-Bridge and NeMo) runs tp chunk GEMMs instead, issued round-robin on 3 compute
// streams (comm_gemm_overlap.cpp, `_stream_compute[i % _stream_compute.size()]`, NVTE_COMM_OVERLAP_MAX_STREAMS = 3).
// The chunks are 512 rows for Bridge's Llama 3.1 405B (TP 8, CP 2) and NeMo's GPT3-175B at micro batch 1, 2048 for
// Bridge's Llama 3 70B: the lead on the Megatron-Bridge set's residuals (docs/validation.md, section 0). No
// published measurement of per-tensor-scaled fp8 cuBLASLt GEMMs at these shapes was found.
//
// What it measures, per GEMM (fp8 E4M3 inputs, bf16 output, fp32 compute, per-tensor scales, the heuristic's first
// algorithm with a 32 MiB workspace, as Transformer Engine 1.x/2.x calls cuBLASLt on Hopper; fast accumulation in
// forward GEMMs only, as TE's default split-accumulator settings):
//   whole     one GEMM of M rows
//   alone     tp GEMMs of M/tp rows one after the other on one stream
//   streams3  the same tp GEMMs round-robin on 3 streams (no communication: the most the chunks can overlap)
// Output: CSV on stdout, one line per (case, gemm, mode): seconds per GEMM set and TFLOP/s.
//
// Build and run (one command, well under a minute on an H100):
//   nvcc -O2 -std=c++17 -o fp8_chunk_gemm scripts/device/fp8_chunk_gemm.cu -lcublasLt && ./fp8_chunk_gemm
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what)
{
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

void check(cublasStatus_t s, const char* what)
{
  if (s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "%s: cuBLAS status %d\n", what, int(s));
    std::exit(1);
  }
}

struct Gemm {
  const char* name;
  long m, n, k;   // D (m x n) = A (m x k) . B (k x n)
  bool forward;   // fast accumulation, as TE's fprop
};

struct Case {
  const char* name;
  int tp;  // chunks: the ring exchange splits M into tp pieces
  std::vector<Gemm> gemms;
};

// The GEMMs each plan runs through userbuffers ring exchange (Megatron-Bridge comm_overlap.py, fp8 H100 configs:
// qkv/fc1 fprop, proj/fc2 fprop with ring-exchange reduce-scatter, proj/fc2 dgrad); M is the rank's tokens after the
// gather (sequence / cp x micro batch), N and K the rank's shard of the layer.
std::vector<Case> cases()
{
  return {
      {"bridge-llama31-405b-tp8-cp2", 8,
       {{"qkv_fprop", 4096, 2304, 16384, true},
        {"fc1_fprop", 4096, 13312, 16384, true},
        {"proj_fprop", 4096, 16384, 2048, true},
        {"fc2_fprop", 4096, 16384, 6656, true},
        {"proj_dgrad", 4096, 2048, 16384, false},
        {"fc2_dgrad", 4096, 6656, 16384, false}}},
      {"bridge-llama3-70b-tp4", 4,
       {{"qkv_fprop", 8192, 2560, 8192, true},
        {"fc1_fprop", 8192, 14336, 8192, true},
        {"proj_fprop", 8192, 8192, 2048, true},
        {"fc2_fprop", 8192, 8192, 7168, true},
        {"proj_dgrad", 8192, 2048, 8192, false},
        {"fc2_dgrad", 8192, 7168, 8192, false}}},
      {"nemo-gpt3-175b-tp4-mb1", 4,
       {{"qkv_fprop", 2048, 9216, 12288, true},
        {"fc1_fprop", 2048, 12288, 12288, true},
        {"proj_fprop", 2048, 12288, 3072, true},
        {"fc2_fprop", 2048, 12288, 12288, true},
        {"proj_dgrad", 2048, 3072, 12288, false},
        {"fc2_dgrad", 2048, 12288, 12288, false}}},
      {"nemo-gpt3-175b-tp4-mb2", 4,
       {{"qkv_fprop", 4096, 9216, 12288, true},
        {"fc1_fprop", 4096, 12288, 12288, true},
        {"proj_fprop", 4096, 12288, 3072, true},
        {"fc2_fprop", 4096, 12288, 12288, true},
        {"proj_dgrad", 4096, 3072, 12288, false},
        {"fc2_dgrad", 4096, 12288, 12288, false}}},
      // DGX Cloud NeMo 25.04 on GB200 (docs/validation.md, section 7c): the fp8 B200 userbuffers configs
      // (NeMo userbuffers.py, *_fp8_b200_*) ring-exchange the same six GEMMs.
      {"dgxc-nemotron4-340b-tp8", 8,
       {{"qkv_fprop", 4096, 2688, 18432, true},
        {"fc1_fprop", 4096, 9216, 18432, true},
        {"proj_fprop", 4096, 18432, 2304, true},
        {"fc2_fprop", 4096, 18432, 9216, true},
        {"proj_dgrad", 4096, 2304, 18432, false},
        {"fc2_dgrad", 4096, 9216, 18432, false}}},
      {"dgxc-llama31-405b-tp4-cp2", 4,
       {{"qkv_fprop", 4096, 4608, 16384, true},
        {"fc1_fprop", 4096, 26624, 16384, true},
        {"proj_fprop", 4096, 16384, 4096, true},
        {"fc2_fprop", 4096, 16384, 13312, true},
        {"proj_dgrad", 4096, 4096, 16384, false},
        {"fc2_dgrad", 4096, 13312, 16384, false}}},
  };
}

constexpr size_t kWorkspace = 32u << 20;  // TE's cuBLASLt workspace on Hopper
constexpr int kWarmup = 10, kIterations = 50;

// One fp8 GEMM of m x n x k on `stream`, its plan (descriptors and algorithm) made once.
class Fp8Gemm {
 public:
  Fp8Gemm(cublasLtHandle_t lt, long m, long n, long k, bool fast_accum, const float* scale, void* workspace)
      : lt_(lt), workspace_(workspace)
  {
    check(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc");
    // cuBLASLt's fp8 GEMMs take A transposed ("TN"): column-major A is k x m, B is k x n, D is m x n.
    const cublasOperation_t t = CUBLAS_OP_T, nop = CUBLAS_OP_N;
    check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t), "transa");
    check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &nop, sizeof nop), "transb");
    const int8_t fast = fast_accum ? 1 : 0;
    check(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast), "fast");
    for (auto attr : {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER})
      check(cublasLtMatmulDescSetAttribute(desc_, attr, &scale, sizeof scale), "scale");
    check(cublasLtMatrixLayoutCreate(&a_, CUDA_R_8F_E4M3, k, m, k), "layout a");
    check(cublasLtMatrixLayoutCreate(&b_, CUDA_R_8F_E4M3, k, n, k), "layout b");
    check(cublasLtMatrixLayoutCreate(&d_, CUDA_R_16BF, m, n, m), "layout d");
    cublasLtMatmulPreference_t pref;
    check(cublasLtMatmulPreferenceCreate(&pref), "pref");
    check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspace,
                                               sizeof kWorkspace),
          "pref workspace");
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    check(cublasLtMatmulAlgoGetHeuristic(lt_, desc_, a_, b_, d_, d_, pref, 1, &result, &found), "heuristic");
    if (found == 0) {
      std::fprintf(stderr, "no cuBLASLt algorithm for %ld x %ld x %ld\n", m, n, k);
      std::exit(1);
    }
    algo_ = result.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  ~Fp8Gemm()
  {
    cublasLtMatrixLayoutDestroy(a_);
    cublasLtMatrixLayoutDestroy(b_);
    cublasLtMatrixLayoutDestroy(d_);
    cublasLtMatmulDescDestroy(desc_);
  }
  void run(const void* a, const void* b, void* d, cudaStream_t stream) const
  {
    const float one = 1.0f, zero = 0.0f;
    check(cublasLtMatmul(lt_, desc_, &one, a, a_, b, b_, &zero, d, d_, d, d_, &algo_, workspace_, kWorkspace,
                         stream),
          "matmul");
  }

 private:
  cublasLtHandle_t lt_;
  void* workspace_;
  cublasLtMatmulDesc_t desc_{};
  cublasLtMatrixLayout_t a_{}, b_{}, d_{};
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace

int main()
{
  cublasLtHandle_t lt;
  check(cublasLtCreate(&lt), "cublasLtCreate");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  std::printf("# device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::printf("case,gemm,m,n,k,chunks,mode,seconds,tflops\n");

  float* scale = nullptr;
  const float one = 1.0f;
  check(cudaMalloc(&scale, sizeof(float)), "malloc scale");
  check(cudaMemcpy(scale, &one, sizeof one, cudaMemcpyHostToDevice), "scale");
  constexpr int kStreams = 3;
  std::vector<cudaStream_t> streams(kStreams);
  std::vector<void*> workspaces(kStreams);
  for (int s = 0; s < kStreams; ++s) {
    check(cudaStreamCreateWithFlags(&streams[size_t(s)], cudaStreamNonBlocking), "stream");
    check(cudaMalloc(&workspaces[size_t(s)], kWorkspace), "workspace");
  }
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "event");
  check(cudaEventCreate(&stop), "event");
  std::vector<cudaEvent_t> joined(kStreams);
  for (auto& e : joined)
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");

  for (const Case& c : cases()) {
    for (const Gemm& g : c.gemms) {
      const long rows = g.m / c.tp;
      void *a = nullptr, *b = nullptr, *d = nullptr;
      check(cudaMalloc(&a, size_t(g.m * g.k)), "malloc a");
      check(cudaMalloc(&b, size_t(g.k * g.n)), "malloc b");
      check(cudaMalloc(&d, size_t(g.m * g.n) * 2), "malloc d");
      check(cudaMemset(a, 0x3c, size_t(g.m * g.k)), "memset a");  // 0x3c: a finite E4M3 value
      check(cudaMemset(b, 0x3c, size_t(g.k * g.n)), "memset b");
      const Fp8Gemm whole(lt, g.m, g.n, g.k, g.forward, scale, workspaces[0]);
      std::vector<Fp8Gemm*> chunk;  // one plan per stream (its own workspace)
      for (int s = 0; s < kStreams; ++s)
        chunk.push_back(new Fp8Gemm(lt, rows, g.n, g.k, g.forward, scale, workspaces[size_t(s)]));
      auto chunk_a = [&](int i) { return static_cast<const char*>(a) + size_t(i) * size_t(rows * g.k); };
      // Chunk i's rows are columns i*rows.. of column-major A (k x m); its output a block of its own in D.
      auto chunk_d = [&](int i) { return static_cast<char*>(d) + size_t(i) * size_t(rows * g.n) * 2; };

      for (const char* mode : {"whole", "alone", "streams3"}) {
        const std::string m = mode;
        auto one_set = [&]() {
          if (m == "whole") {
            whole.run(a, b, d, streams[0]);
          } else if (m == "alone") {
            for (int i = 0; i < c.tp; ++i)
              chunk[0]->run(chunk_a(i), b, chunk_d(i), streams[0]);
          } else {
            // Every stream starts after the set's start and the set ends when all have finished.
            check(cudaEventRecord(joined[0], streams[0]), "record");
            for (int s = 1; s < kStreams; ++s)
              check(cudaStreamWaitEvent(streams[size_t(s)], joined[0], 0), "wait");
            for (int i = 0; i < c.tp; ++i)
              chunk[size_t(i % kStreams)]->run(chunk_a(i), b, chunk_d(i), streams[size_t(i % kStreams)]);
            for (int s = 1; s < kStreams; ++s) {
              check(cudaEventRecord(joined[size_t(s)], streams[size_t(s)]), "record");
              check(cudaStreamWaitEvent(streams[0], joined[size_t(s)], 0), "wait");
            }
          }
        };
        for (int w = 0; w < kWarmup; ++w)
          one_set();
        check(cudaEventRecord(start, streams[0]), "record");
        for (int it = 0; it < kIterations; ++it)
          one_set();
        check(cudaEventRecord(stop, streams[0]), "record");
        check(cudaEventSynchronize(stop), "sync");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "elapsed");
        const double seconds = double(ms) / 1e3 / kIterations;
        const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k);
        std::printf("%s,%s,%ld,%ld,%ld,%d,%s,%.9f,%.1f\n", c.name, g.name, g.m, g.n, g.k, c.tp, mode, seconds,
                    flops / seconds / 1e12);
      }
      for (Fp8Gemm* p : chunk)
        delete p;
      cudaFree(a);
      cudaFree(b);
      cudaFree(d);
    }
  }
  return 0;
}
