// The style network's residual blocks as one persistent kernel: the ten 128 → 128 convolutions of
// conv3x3.cu (same tile, prologue, wgmma main loop and epilogue: conv3x3_tile.cuh) run back to back
// in one grid, one CTA per output tile, all CTAs resident, with a grid-wide barrier between links.
//   * the epilogue adds each tile's statistics to fp64 per-(sample, channel) sums Σx, Σx² (atomic
//     adds of the tile's sum and M2 + sum²/count: Chan's merge written as sums, exact enough in
//     fp64), in eight copies so that 16 CTAs, not all, add to one address; no hand-off kernel runs,
//     the next link's prologue turns the sums into its affine while its halo loads are in flight;
//   * the producer thread streams the weights through the same ring across links, so the first taps
//     of link l + 1 are in shared memory while link l finishes and the CTAs wait at the barrier;
//   * a CTA computes the same tile in every link, so a tile inside the image keeps its activations
//     in shared memory between links (Params::resident): only the halo's 52 border pixels come from
//     global memory, and a link stores only the pixels other tiles read;
//   * the producer's warpgroup gives its registers to the consumers (setmaxnreg: 168 → 240), so the
//     loop over links does not spill.
// Why this form and what a link costs: docs/kernels/conv3x3.md.
// Not covered: more tiles than resident CTAs (one CTA per SM at 211 KB of shared memory: 512² and
// smaller at batch 1): conv3x3_chain_launch then runs the links as conv3x3_launch calls.
// Pure CUDA (no torch); conv3x3_binding.cpp binds it; semantics: reference/conv3x3.py: residual_chain.
#include "conv3x3_tile.cuh"

namespace styleforge {
namespace {

// The state's layout: counters, then the sums. Counter l < links − 1 counts the arrivals at grid
// barrier l; kDoneCounter the CTAs done (only where the last CTA forms out_scale/out_shift). Each
// counter goes back to zero once nobody reads it: counter l by CTA 0 at link l + 2 (every CTA has
// left barrier l once barrier l + 1 is complete), the last barrier's at the next launch's start (so
// with out_state no CTA waits at the end; that needs a barrier before link links − 1 other than the
// first, links >= 4).
constexpr size_t kStateHeaderBytes = 256;
constexpr int kDoneCounter = kChainMaxLinks;
static_assert((kDoneCounter + 1) * sizeof(unsigned) <= kStateHeaderBytes, "the counters fit the header");
constexpr int kC = 128;
using ChainCfg = Cfg<kC, kC, 1>;

struct ChainParams {
  const uint16_t* x;
  const float* scale;
  const float* shift;
  double* in_sums;        // or the first link's norm from these sums (ChainArgs::in_state) ...
  const float* in_gamma;  // ... with this weight and bias
  const float* in_beta;
  uint16_t* raw[2];
  uint16_t* act[2];
  const unsigned char* weight[kChainMaxLinks];
  const float* gamma[kChainMaxLinks];
  const float* beta[kChainMaxLinks];
  float eps;
  double* sums;        // [links][kChainSumCopies][2][N][128]: Σx, Σx² of each link's output
  unsigned* counters;  // [l] arrivals at grid barrier l, [kDoneCounter] CTAs done
  float* out_scale;    // the last link's norm as an affine (the last CTA forms it) ...
  float* out_shift;
  double* out_sums;    // ... or its sums, into the consumer's norm state (ChainArgs::out_state)
  long long* profile;  // SF_TILE_PROFILE builds: [links][CTAs][kTileProfileSlots] (conv3x3_tile_profile.cuh)
  int links, N, H, W, tiles_x, tiles;
};

// Link l's buffers (ChainArgs in conv3x3.h): its input (−1: the chain's x, else raw[i]), residual
// (−1: none, else act[i]), kept input (−1: none, else act[i]: the next block's skip), output raw[i],
// and whether a ReLU follows the norm it applies. Link 2b opens block b: it forms the block's input
// (norm + the previous block's input, no ReLU; the first block: ReLU(IN3)) and keeps it.
struct LinkRoles {
  int in_raw, residual_act, keep_act, out_raw;
  bool relu;
};
__host__ __device__ constexpr LinkRoles link_roles(int l) {
  const bool opens_block = l % 2 == 0;
  return {l == 0 ? -1 : (l - 1) & 1, opens_block && l >= 2 ? (l / 2 - 1) & 1 : -1, opens_block ? (l / 2) & 1 : -1,
          l & 1, l == 0 || !opens_block};
}

// Shared memory: a 128 → 128 tile's layout, then the current link's Params, then the tile's block
// input (Params::resident).
constexpr size_t kChainSmem = ChainCfg::kSmem + kChainParamsBytes + ChainCfg::kOutBytes;
static_assert(sizeof(Params) <= kChainParamsBytes, "the link's Params fit their slot");
static_assert(kChainSmem <= 227 * 1024, "shared memory");

#if STYLEFORGE_SM90A
__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Link l's Params: which buffers it reads and writes (link_roles).
__device__ __forceinline__ void link_params(const ChainParams& cp, int l, Params& p) {
  const int per_link = kChainSumCopies * 2 * cp.N * kC;
  const LinkRoles r = link_roles(l);
  p = Params{};
  p.H = p.Ho = cp.H;
  p.W = p.Wo = cp.W;
  p.tiles_x = cp.tiles_x;
  p.tiles = cp.tiles;
  p.eps = cp.eps;
  p.inv_count = 1.0 / (static_cast<double>(cp.H) * cp.W);
  p.sums_stride = cp.N * kC;
  p.x = r.in_raw < 0 ? cp.x : cp.raw[r.in_raw];
  p.scale = l == 0 ? cp.scale : nullptr;
  p.shift = l == 0 ? cp.shift : nullptr;
  p.in_sums = l == 0 ? cp.in_sums : cp.sums + static_cast<size_t>(l - 1) * per_link;
  p.gamma = l == 0 ? cp.in_gamma : cp.gamma[l - 1];
  p.beta = l == 0 ? cp.in_beta : cp.beta[l - 1];
  p.N = cp.N;
  p.residual = r.residual_act < 0 ? nullptr : cp.act[r.residual_act];
  p.act = r.keep_act < 0 ? nullptr : cp.act[r.keep_act];
  p.relu = r.relu;
  p.resident = l >= 1;             // tiles inside the image keep their activations in shared memory
  p.out_all = l + 1 == cp.links;   // the decoder reads the last output ...
  p.act_all = l + 2 == cp.links;   // ... and the last block's input
  p.out = cp.raw[r.out_raw];
  const bool to_state = l + 1 == cp.links && cp.out_sums != nullptr;
  p.out_sums = (to_state ? cp.out_sums : cp.sums + static_cast<size_t>(l) * per_link) +
               (blockIdx.x % kChainSumCopies) * 2 * cp.N * kC;
  p.profile = cp.profile ? cp.profile + (static_cast<size_t>(l) * gridDim.x + blockIdx.x) * kTileProfileSlots : nullptr;
}
#endif

// Block: the two consumer warpgroups and a producer warpgroup (one thread of it copies), so that the
// producer can give its registers to the consumers (setmaxnreg: 168 at launch, 24 and 240 after).
// At 168 the consumers spilled ~280 B a thread, and with the resident tiles' 211 KB of shared
// memory (28 KB of L1 left) the reloads went to L2 in the epilogue.
constexpr int kChainThreads = kConsumers + 128;
constexpr int kProducerRegs = 24, kConsumerRegs = 240;
static_assert(kConsumers * kConsumerRegs + 128 * kProducerRegs <= kChainThreads * 168, "the register file");

template <typename T>
__global__ void __launch_bounds__(kChainThreads, 1) residual_chain_kernel(const ChainParams cp) {
  extern __shared__ unsigned char smem_raw[];
#if STYLEFORGE_SM90A
  const TileSmem<ChainCfg> sm(smem_raw);
  // The link's Params live in shared memory, written by thread 0 while the grid barrier waits: held
  // in registers across the links they would spill (the main loop uses all 168).
  Params& lp = *reinterpret_cast<Params*>(sm.end);
  const int tid = threadIdx.x;
  if (tid == 0) {
    sm.init_barriers();
    link_params(cp, 0, lp);
  }
  __syncthreads();
  // Dependents are scheduled only once every CTA of this grid has issued this, so all of ours are
  // resident before the next kernel's blocks can take an SM: no deadlock at the grid barriers.
  allow_dependents_launch();
  if (tid >= kConsumers) {   // producer warpgroup: one thread streams every link's taps through one ring
    sm90::regs_dec<kProducerRegs>();
    if (tid == kConsumers) {
      for (int l = 0; l < cp.links; ++l) produce_taps<ChainCfg>(sm, cp.weight[l], l * ChainCfg::kTaps);
    }
    return;
  }
  sm90::regs_inc<kConsumerRegs>();
  const int per_link = kChainSumCopies * 2 * cp.N * kC;   // doubles of one link's sums
  grid_dependency_wait();   // x, scale and shift come from the kernels before this one
  // What the last launch on this state left for its successor to clear (the counter of its last
  // barrier, the sums its last link's prologue read): past the wait, that launch is complete. Before
  // CTA 0 counts at barrier 0, so before any CTA of this launch can reach either, as long as that
  // barrier is not barrier 0 itself: links >= 4 (with 2 links only the (scale, shift) form runs, and
  // its last CTA leaves nothing).
  if (blockIdx.x == 0 && cp.links >= 4) {
    const int L = cp.links;
    if (tid == 0) cp.counters[L - 2] = 0;
    for (int i = tid; i < per_link; i += kConsumers) cp.sums[static_cast<size_t>(L - 2) * per_link + i] = 0.0;
  }
  tile_mark_global(lp, kTileProfileGlobalStart);   // profile builds: link 0's record has the chain's start ...
#pragma unroll 1
  for (int l = 0; l < cp.links; ++l) {
    // Link l − 1 read the sums of link l − 2 in its prologue, before the last barrier: clear them
    // for the next launch.
    if (blockIdx.x == 0 && l >= 2) {
      for (int i = tid; i < per_link; i += kConsumers) cp.sums[static_cast<size_t>(l - 2) * per_link + i] = 0.0;
      if (tid == 0) cp.counters[l - 2] = 0;   // barrier l − 2's: every CTA has left it
    }
    // Likewise the producer's sums that link 0 read (its state's counter is never counted).
    if (blockIdx.x == 0 && l == 1 && cp.in_sums != nullptr) {
      for (int i = tid; i < per_link; i += kConsumers) cp.in_sums[i] = 0.0;
    }
    tile_mark(lp, 0);
    const int n = blockIdx.x / cp.tiles;
    conv_tile<T, kC, kC, 1, 1, kC, true>(lp, sm, n, blockIdx.x - n * cp.tiles, l * ChainCfg::kTaps);
    if (l + 1 == cp.links) {
      tile_mark_global(lp, kTileProfileGlobalEnd);   // ... and the last link's its end
      break;
    }
    // Grid barrier (CUTLASS's generic barrier form): CTA barrier; one thread counts with release
    // semantics (cumulative: it publishes what the CTA barrier ordered before it) and spins with
    // acquire loads until every CTA has counted; CTA barrier. Barrier l has its own counter.
    consumers_sync();
    if (tid == 0) {
      link_params(cp, l + 1, lp);   // every consumer is past its last read of link l's
      asm volatile("red.release.gpu.global.add.u32 [%0], 1;\n" ::"l"(cp.counters + l) : "memory");
      while (load_acquire(cp.counters + l) < gridDim.x) {
      }
    }
    consumers_sync();
  }
  // With out_state the consumer forms the norm from the sums and clears them: done. Else the last CTA
  // to finish turns the last link's sums into (scale, shift) for the decoder and leaves the state
  // zero for the next launch.
  if (cp.out_sums != nullptr) return;
  consumers_sync();
  unsigned* last_flag = reinterpret_cast<unsigned*>(sm.mean_s);   // free after the epilogue
  if (tid == 0) {
    __threadfence();
    const unsigned done = atomicAdd(cp.counters + kDoneCounter, 1u);
    __threadfence();
    *last_flag = done == gridDim.x - 1;
  }
  consumers_sync();
  if (*last_flag == 0) return;
  const int L = cp.links;
  const double* last = cp.sums + static_cast<size_t>(L - 1) * per_link;
  const double inv_count = 1.0 / (static_cast<double>(cp.H) * cp.W);
  for (int i = tid; i < cp.N * kC; i += kConsumers) {
    const int c = i % kC;
    double sum1 = 0.0, sum2 = 0.0;
    for (int k = 0; k < kChainSumCopies; ++k) {
      sum1 += __ldcg(last + 2 * k * cp.N * kC + i);
      sum2 += __ldcg(last + (2 * k + 1) * cp.N * kC + i);
    }
    norm_affine_from_sums(sum1, sum2, inv_count, cp.gamma[L - 1] ? cp.gamma[L - 1][c] : 1.f,
                          cp.beta[L - 1] ? cp.beta[L - 1][c] : 0.f, cp.eps, cp.out_scale[i], cp.out_shift[i]);
  }
  consumers_sync();
  for (int i = tid; i < 2 * per_link; i += kConsumers) cp.sums[static_cast<size_t>(L - 2) * per_link + i] = 0.0;
  if (tid == 0) {
    cp.counters[L - 2] = 0;
    cp.counters[kDoneCounter] = 0;
  }
#else
  __trap();   // built without sm_90a code: conv3x3_chain_fits() keeps launches away
#endif
}

using ChainKernel = void (*)(const ChainParams);
ChainKernel chain_kernel(ConvDtype dtype) {
  return dtype == ConvDtype::kBFloat16 ? residual_chain_kernel<__nv_bfloat16> : residual_chain_kernel<__half>;
}

bool valid_chain(const ChainArgs& a) {
  if (a.links < 2 || a.links > kChainMaxLinks || a.links % 2 != 0) return false;
  if (a.N < 0 || a.H < 2 || a.W < 2 || a.H >= (1 << 20) || a.W >= (1 << 20)) return false;
  if (a.N * conv3x3_tiles(a.H, a.W, kC) >= 0x7fffffff || a.N * kC * 2 * kChainSumCopies * a.links >= 0x7fffffff) return false;
  if (a.x == nullptr || (a.scale == nullptr) != (a.shift == nullptr) || (a.scale != nullptr && a.in_state != nullptr) ||
      (a.out_scale == nullptr) != (a.out_shift == nullptr) || (a.out_scale == nullptr) == (a.out_state == nullptr) ||
      (a.out_state != nullptr && a.links < 4)) {
    return false;
  }
  for (int l = 0; l < a.links; ++l) {
    if (a.weight[l] == nullptr) return false;
  }
  return a.raw[0] && a.raw[1] && a.act[0] && a.act[1];
}

// The links as separate conv3x3_norm launches (convolution + hand-off each); scratch: two (scale,
// shift) pairs in ping-pong, then the per-tile partials.
cudaError_t launch_links(const ChainArgs& a, void* workspace, cudaStream_t stream) {
  float* f = static_cast<float*>(workspace);
  const int64_t v = a.N * kC;
  float* scale[2] = {f, f + v};
  float* shift[2] = {f + 2 * v, f + 3 * v};
  void* partials = f + 4 * ((v + 63) / 64) * 64;
  const float* in_scale = a.scale;
  const float* in_shift = a.shift;
  for (int l = 0; l < a.links; ++l) {
    const bool last = l + 1 == a.links;
    const LinkRoles r = link_roles(l);
    Conv3x3Args c;
    c.dtype = a.dtype;
    c.cin = c.cout = kC;
    c.x = r.in_raw < 0 ? a.x : a.raw[r.in_raw];
    c.weight = a.weight[l];
    c.scale = in_scale;
    c.shift = in_shift;
    if (l == 0) {   // the norm before the chain from its producer's sums
      c.in_state = a.in_state;
      c.in_norm_weight = a.in_norm_weight;
      c.in_norm_bias = a.in_norm_bias;
      c.in_eps = a.eps;
    }
    c.residual = r.residual_act < 0 ? nullptr : a.act[r.residual_act];
    c.relu = r.relu;
    c.act = r.keep_act < 0 ? nullptr : a.act[r.keep_act];
    c.out = a.raw[r.out_raw];
    c.norm.weight = a.norm_weight[l];
    c.norm.bias = a.norm_bias[l];
    c.norm.eps = a.eps;
    c.norm.scale = last ? a.out_scale : scale[l & 1];   // (the last: null with out_state)
    c.norm.shift = last ? a.out_shift : shift[l & 1];
    if (last) c.norm_state = a.out_state;
    c.N = a.N;
    c.H = a.H;
    c.W = a.W;
    c.l2_bytes = a.l2_bytes;
    const cudaError_t err = conv3x3_launch(c, partials, stream);
    if (err != cudaSuccess) return err;
    in_scale = c.norm.scale;
    in_shift = c.norm.shift;
  }
  return cudaSuccess;
}

}  // namespace

size_t conv3x3_chain_state_bytes(int64_t N, int links) {
  return kStateHeaderBytes + static_cast<size_t>(links) * kChainSumCopies * 2 * N * kC * sizeof(double);
}

size_t conv3x3_chain_workspace_bytes(int64_t N, int64_t H, int64_t W) {
  return 4 * ((N * kC + 63) / 64) * 64 * sizeof(float) + conv3x3_workspace_bytes(N, H, W, kC);
}

bool conv3x3_chain_fits(ConvDtype dtype, int64_t N, int64_t H, int64_t W) {
  if (!conv3x3_supported() || N < 1 || H < 2 || W < 2) return false;
  int device = 0, sms = 0, per_sm = 0;
  const ChainKernel kernel = chain_kernel(dtype);
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      allow_smem(kernel, kChainSmem, dtype == ConvDtype::kBFloat16 ? 0 : 1) != cudaSuccess ||
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kChainThreads, kChainSmem) != cudaSuccess) {
    return false;
  }
  return N * conv3x3_tiles(H, W, kC) <= static_cast<int64_t>(per_sm) * sms;
}

cudaError_t conv3x3_chain_launch(const ChainArgs& a, void* state, void* workspace, cudaStream_t stream) {
  if (!valid_chain(a) || !conv3x3_supported()) return cudaErrorInvalidValue;
  if (a.N == 0) return cudaSuccess;
  if (!conv3x3_chain_fits(a.dtype, a.N, a.H, a.W)) return launch_links(a, workspace, stream);
  ChainParams cp{};
  cp.x = static_cast<const uint16_t*>(a.x);
  cp.scale = a.scale;
  cp.shift = a.shift;
  if (a.in_state != nullptr) {
    cp.in_sums = norm_state_sums(a.in_state);
    cp.in_gamma = a.in_norm_weight;
    cp.in_beta = a.in_norm_bias;
  }
  for (int i = 0; i < 2; ++i) {
    cp.raw[i] = static_cast<uint16_t*>(a.raw[i]);
    cp.act[i] = static_cast<uint16_t*>(a.act[i]);
  }
  for (int l = 0; l < a.links; ++l) {
    cp.weight[l] = static_cast<const unsigned char*>(a.weight[l]);
    cp.gamma[l] = a.norm_weight[l];
    cp.beta[l] = a.norm_bias[l];
  }
  cp.eps = a.eps;
  cp.counters = static_cast<unsigned*>(state);
  cp.sums = reinterpret_cast<double*>(static_cast<unsigned char*>(state) + kStateHeaderBytes);
  cp.out_scale = a.out_scale;
  cp.out_shift = a.out_shift;
  if (a.out_state != nullptr) cp.out_sums = norm_state_sums(a.out_state);
#if SF_TILE_PROFILE
  cp.profile = tile_profile_region(kTileProfileChainTag, static_cast<int>(a.N * conv3x3_tiles(a.H, a.W, kC)), a.links);
#endif
  cp.links = a.links;
  cp.N = static_cast<int>(a.N);
  cp.H = static_cast<int>(a.H);
  cp.W = static_cast<int>(a.W);
  cp.tiles_x = static_cast<int>((a.W + kTW - 1) / kTW);
  cp.tiles = static_cast<int>(conv3x3_tiles(a.H, a.W, kC));
  const cudaError_t err = launch_pdl(true, chain_kernel(a.dtype), dim3(static_cast<unsigned>(a.N * cp.tiles)),
                                     dim3(kChainThreads), kChainSmem, stream, cp);
  return err != cudaSuccess ? err : cudaPeekAtLastError();
}

}  // namespace styleforge
