// fp16 and int8 ops on the oneDNN SDK, with the mock's arithmetic (mock/numerics.h) kept
// wherever oneDNN allows it (README "oneDNN SDK" states what differs).
//
// int8 Conv/ConvGroup/Mlp: oneDNN's int8 convolution / inner product (s8 x s8, exact s32
// sums) with per-output-channel weight scales f_c = numerics::rescaleFactor (so the
// primitive's rescale is float(acc) * f_c + bias_c, as the mock's), f32 dst and the chain's
// post-ops. The input is quantised here with the mock's rule (numerics.h 3: product in
// double, rint half to even, clamp to +-127, NaN -> 0), not by a oneDNN reorder, which
// multiplies in fp32 and saturates to -128. The f32 result is rounded to binary16 here.
// Only VNNI/AMX kernels are used: without them oneDNN pre-scales int8 weights by 1/2 (to
// avoid vpmaddubsw saturation), which changes the sums; such CPUs keep the mock's kernels.
//
// fp16 ops: oneDNN 3.2 has f16 primitives only on AVX512-FP16/AMX-FP16 CPUs, and its
// f16<->f32 reorders are the generic C++ ones, so a chain of fp16 ops is the fp32 path's
// primitive(s) between binary16 decoding and encoding done here (exact, round to nearest
// even: the mock's "fp32 kernel on decoded values, rounded once"); a conv head converts
// straight into and out of its f32 primitive's channels-last layout, as int8 ones do.
//
// In a fused chain the intermediate values stay fp32: the mock rounds each op's output to
// binary16, this rounds the chain's output once (bit-equal when the ops after the head are
// relu/clip, which commute with rounding).
#include "quantized.h"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>

#include "aligned_buffer.h"
#include "common.h"
#include "numerics.h"
#include "workspace.h"

namespace pz_mock {
namespace onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using DT = memory::data_type;

memory::desc dense(const Dims& dims, DT dt) {
  memory::dims d(dims.begin(), dims.end());
  memory::dims strides(d.size(), 1);
  for (std::size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, dt, strides);
}

// ---- binary16 and int8 conversions (numerics.h 1 and 3), vectorised ---------------------

// GCC 12 warns that the intrinsics' internal _mm512_undefined_*() values are uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// One contiguous row each (vectorised where the ISA allows), and with AVX-512 sixteen
// values at a time in a register (`put`), for the transposing conversions below.
// vcvtps2ph with round to nearest even gives numerics::floatToHalf's bits (subnormals kept,
// overflow to inf, NaN quieted with its top payload bits), vcvtph2ps halfToFloat's.
#if defined(__AVX512F__)
inline __m512 loadHalf16(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
#endif

struct EncodeRow {
  void operator()(const float* in, std::uint16_t* out, long long n) const {
    long long i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) put(_mm512_loadu_ps(in + i), out + i);
#endif
    for (; i < n; ++i) out[i] = numerics::floatToHalf(in[i]);
  }
#if defined(__AVX512F__)
  void put(__m512 x, std::uint16_t* out) const {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
};

struct DecodeRow {
  void operator()(const std::uint16_t* in, float* out, long long n) const {
    long long i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) put(loadHalf16(in + i), out + i);
#endif
    for (; i < n; ++i) out[i] = numerics::halfToFloat(in[i]);
  }
#if defined(__AVX512F__)
  void put(__m512 x, float* out) const { _mm512_storeu_ps(out, x); }
#endif
};

// numerics::quantize of the decoded binary16 input: x * k in double (exact), rint half to
// even, NaN -> 0, clamp to +-127.
struct QuantizeRow {
  double k;
  void operator()(const std::uint16_t* in, std::int8_t* out, long long n) const {
    long long i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) put(loadHalf16(in + i), out + i);
#endif
    for (; i < n; ++i) out[i] = numerics::quantize(numerics::halfToFloat(in[i]), k);
  }
#if defined(__AVX512F__)
  __m256i eight(__m256 x) const {
    __m512d t = _mm512_mul_pd(_mm512_cvtps_pd(x), _mm512_set1_pd(k));
    t = _mm512_roundscale_pd(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    t = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(t, t, _CMP_ORD_Q), t);  // NaN -> 0
    t = _mm512_min_pd(_mm512_max_pd(t, _mm512_set1_pd(-127.0)), _mm512_set1_pd(127.0));
    return _mm512_cvtpd_epi32(t);
  }
  void put(__m512 x, std::int8_t* out) const {
    const __m256i a = eight(_mm512_castps512_ps256(x));
    const __m256i c = eight(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(a), c, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q));
  }
#endif
};

// numerics::quantize of a linked producer's fp32 result (backendLink), as QuantizeRow of
// the binary16 value but without that rounding in between.
struct QuantizeFloatRow {
  QuantizeRow q;
  void operator()(const float* in, std::int8_t* out, long long n) const {
    long long i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) q.put(_mm512_loadu_ps(in + i), out + i);
#endif
    for (; i < n; ++i) out[i] = numerics::quantize(in[i], q.k);
  }
};

constexpr long long kChunk = 4096;  // elements per parallel task

// A dense buffer converted element by element, in chunks on `threads` threads.
template <typename In, typename Out, typename Row>
void convertDense(const In* in, Out* out, std::size_t n, int threads, Row row) {
  const long long count = static_cast<long long>(n);
  const long long chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(threads) if (chunks > 4)
  for (long long c = 0; c < chunks; ++c)
    row(in + c * kChunk, out + c * kChunk, std::min(count, (c + 1) * kChunk) - c * kChunk);
}

void encode(const float* in, std::uint16_t* out, std::size_t n, int threads) {
  convertDense(in, out, n, threads, EncodeRow());
}
void decode(const std::uint16_t* in, float* out, std::size_t n, int threads) {
  convertDense(in, out, n, threads, DecodeRow());
}

// int8 convolutions want channels-last (nhwc) operands: the conversions write or read that
// layout directly, in tiles of kTileC channels x kTileS positions (16 x 16 blocks
// transposed in registers), instead of a oneDNN reorder pass on top (which cost more than
// the convolutions themselves on ResNet-50).
constexpr int kTileC = 16, kTileS = 64;

struct Planes {
  long long n, c, s;  // batch, channels, positions per channel
  long long tiles() const {
    return n * ((c + kTileC - 1) / kTileC) * ((s + kTileS - 1) / kTileS);
  }
};

#if defined(__AVX512F__)
// r[i] = row i of a 16 x 16 block; afterwards r[j] = column j.
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + m]: columns m, m+4, m+8, m+12 of rows i..i+3
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
    const __m512 w0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
    r[m] = _mm512_shuffle_f32x4(v0, v1, 0x88);
    r[m + 8] = _mm512_shuffle_f32x4(v0, v1, 0xdd);
    r[m + 4] = _mm512_shuffle_f32x4(w0, w1, 0x88);
    r[m + 12] = _mm512_shuffle_f32x4(w0, w1, 0xdd);
  }
}
#endif

// Dense [n][c][s] binary16 -> [n][s][c] Out.
template <typename Out, typename Row>
void toChannelsLast(const std::uint16_t* in, Out* out, const Planes& p, int threads, Row row) {
  const long long cb = (p.c + kTileC - 1) / kTileC, sb = (p.s + kTileS - 1) / kTileS;
#pragma omp parallel for schedule(static) num_threads(threads) if (p.tiles() > 4)
  for (long long t = 0; t < p.tiles(); ++t) {
    const long long n = t / (cb * sb), c0 = (t / sb) % cb * kTileC, s0 = t % sb * kTileS;
    const long long cw = std::min<long long>(kTileC, p.c - c0);
    const long long sw = std::min<long long>(kTileS, p.s - s0);
    const std::uint16_t* src = in + (n * p.c + c0) * p.s + s0;
    Out* dst = out + (n * p.s + s0) * p.c + c0;
    long long j0 = 0;
#if defined(__AVX512F__)
    for (; cw == 16 && j0 + 16 <= sw; j0 += 16) {
      __m512 r[16];
      for (int k = 0; k < 16; ++k) r[k] = loadHalf16(src + k * p.s + j0);
      transpose16(r);
      for (int j = 0; j < 16; ++j) row.put(r[j], dst + (j0 + j) * p.c);
    }
#endif
    if (j0 == sw) continue;
    Out tile[kTileS][kTileC], line[kTileS];
    for (long long k = 0; k < cw; ++k) {
      row(src + k * p.s + j0, line, sw - j0);
      for (long long j = j0; j < sw; ++j) tile[j][k] = line[j - j0];
    }
    for (long long j = j0; j < sw; ++j) std::memcpy(dst + j * p.c, tile[j], sizeof(Out) * cw);
  }
}

// Dense [n][s][c] fp32 -> [n][c][s] binary16.
void fromChannelsLast(const float* in, std::uint16_t* out, const Planes& p, int threads) {
  const EncodeRow row;
  const long long cb = (p.c + kTileC - 1) / kTileC, sb = (p.s + kTileS - 1) / kTileS;
#pragma omp parallel for schedule(static) num_threads(threads) if (p.tiles() > 4)
  for (long long t = 0; t < p.tiles(); ++t) {
    const long long n = t / (cb * sb), c0 = (t / sb) % cb * kTileC, s0 = t % sb * kTileS;
    const long long cw = std::min<long long>(kTileC, p.c - c0);
    const long long sw = std::min<long long>(kTileS, p.s - s0);
    const float* src = in + (n * p.s + s0) * p.c + c0;
    std::uint16_t* dst = out + (n * p.c + c0) * p.s + s0;
    long long j0 = 0;
#if defined(__AVX512F__)
    for (; cw == 16 && j0 + 16 <= sw; j0 += 16) {
      __m512 r[16];
      for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(src + (j0 + j) * p.c);
      transpose16(r);
      for (int k = 0; k < 16; ++k) row.put(r[k], dst + k * p.s + j0);
    }
#endif
    if (j0 == sw) continue;
    float tile[kTileS][kTileC], line[kTileS];
    for (long long j = j0; j < sw; ++j) std::memcpy(tile[j], src + j * p.c, sizeof(float) * cw);
    for (long long k = 0; k < cw; ++k) {
      for (long long j = j0; j < sw; ++j) line[j - j0] = tile[j][k];
      row(line, dst + k * p.s + j0, sw - j0);
    }
  }
}

#pragma GCC diagnostic pop

// Whether the chain's last op leaves no negative value (relu and its clipped forms).
bool endsNonNegative(const std::vector<const OpDesc*>& chain) {
  const OpDesc& d = *chain.back();
  return d.kind == OpKind::kActive &&
         (d.active == CNML_ACTIVE_RELU || d.active == CNML_ACTIVE_RELU6 ||
          d.active == CNML_ACTIVE_RELU1);
}

bool allOf(const std::vector<Operand>& v, cnmlDataType_t dtype) {
  for (const Operand& o : v)
    if (o.dtype != dtype) return false;
  return true;
}

// The chain as FLOAT32 ops for the fp32 path (consts already hold their decoded values).
std::vector<OpDesc> asFloat(const std::vector<const OpDesc*>& chain) {
  std::vector<OpDesc> ops;
  for (const OpDesc* d : chain) {
    ops.push_back(*d);
    for (Operand& o : ops.back().inputs) o.dtype = CNML_DATA_FLOAT32;
    for (Operand& o : ops.back().outputs) o.dtype = CNML_DATA_FLOAT32;
  }
  return ops;
}

std::vector<const OpDesc*> pointers(const std::vector<OpDesc>& ops) {
  std::vector<const OpDesc*> p;
  for (const OpDesc& d : ops) p.push_back(&d);
  return p;
}

// ---- fp16: the fp32 path between binary16 conversions -----------------------------------

// Its decoded inputs, and its fp32 result unless a link reads that, are staged in the
// thread's workspace at each run (level 1: inner_ takes level 0 for its own buffers), so that
// a session holds the largest op's instead of every op's.
class HalfOp : public BackendOp {
 public:
  HalfOp(std::unique_ptr<BackendOp> inner, const std::vector<std::size_t>& in_sizes,
         std::size_t out_size, int threads)
      : inner_(std::move(inner)),
        in_sizes_(in_sizes),
        out_size_(out_size),
        out_own_(out_size),
        threads_(threads) {
    from_.assign(in_sizes_.size(), nullptr);
    from_id_.assign(in_sizes_.size(), nullptr);
  }

  std::string describe() const override { return "fp16 via " + inner_->describe(); }
  // The chain's records (its consts in fp32) only serve a rebuild that reads channels-last.
  void settle() override {
    chain_.reset();
    inner_->settle();
    if (!result_read_) out_own_ = AlignedBuffer();
  }
  // In a fusion, the values it reads from a converting producer (from_, or its inner op's
  // link) are placed in the fusion's arena with that producer's result.
  std::vector<Held> settleInFusion() override {
    chain_.reset();
    std::vector<Held> held = inner_->settleInFusion();
    if (!result_read_) out_own_ = AlignedBuffer();
    for (std::size_t i = 0; i < from_id_.size(); ++i)
      if (from_id_[i]) held.push_back({from_id_[i], in_sizes_[i] * sizeof(float)});
    return held;
  }
  void placeHeld(const void* id, void* at) override {
    inner_->placeHeld(id, at);
    for (std::size_t i = 0; i < from_id_.size(); ++i)
      if (from_id_[i] == id) from_[i] = static_cast<const float*>(at);
  }
  void dropRebuild() override {
    chain_.reset();
    inner_->dropRebuild();
  }

  void run(const void* const* inputs, void* const* outputs) override {
    std::size_t floats = out_own_.empty() ? lineFloats(out_size_) : 0;
    for (std::size_t i = 0; i < in_sizes_.size(); ++i)
      if (!from_[i]) floats += lineFloats(in_sizes_[i]);
    float* at = threadWorkspace(floats, 1);
    std::vector<const void*> in(in_sizes_.size());
    for (std::size_t i = 0; i < in_sizes_.size(); ++i) {
      if (from_[i]) {
        in[i] = from_[i];
        continue;
      }
      decode(static_cast<const std::uint16_t*>(inputs[i]), at, in_sizes_[i], threads_);
      in[i] = at;
      at += lineFloats(in_sizes_[i]);
    }
    float* out32 = out_own_.empty() ? at : out_own_.data();
    void* out = out32;
    inner_->run(in.data(), &out);
    if (!skip_dense_)
      encode(out32, static_cast<std::uint16_t*>(outputs[0]), out_size_, threads_);
  }

  // The fp32 result before its rounding to binary16 (linkReduced): dense, or channels
  // last when the op was rebuilt over its producer's channels last.
  memory result() {
    if (cl_) {
      const memory inner = fp32_.inner_output(*inner_, 0, false);
      if (inner) return inner;
    }
    const memory::desc md({static_cast<memory::dim>(out_size_)}, DT::f32, Tag::a);
    return memory(md, cpuEngine(), out_own_.data());
  }

  // A one-input layout-agnostic chain (pooling, element-wise, ...) whose producer hands
  // over channels last: rebuilt over channels last, it reads that value in place (no
  // transposing encode and decode around it). False, unchanged, otherwise.
  bool readChannelsLast(const memory& value) {
    if (cl_ || in_sizes_.size() != 1 || !chain_) return false;
    ThreadScope scope(threads_);
    std::unique_ptr<BackendOp> re;
    try {
      re = fp32_.make(pointers(*chain_), threads_, true);
    } catch (const dnnl::error&) {
      return false;
    }
    if (!re || !fp32_.read_input(*re, 0, value)) return false;
    inner_ = std::move(re);
    cl_ = true;
    from_[0] = static_cast<const float*>(value.get_data_handle());
    return true;
  }

  void skipDense() {
    skip_dense_ = true;
    if (cl_) fp32_.inner_output(*inner_, 0, true);
  }

  std::unique_ptr<BackendOp> inner_;
  std::vector<std::size_t> in_sizes_;
  std::size_t out_size_;
  AlignedBuffer out_own_;  // the fp32 result while a link may read it (result())
  int threads_;
  // Inputs read from a linked producer's dense fp32 result (null: the caller's binary16),
  // whether the binary16 output is skipped (backendSkipDense), and whether a link reads the
  // fp32 result.
  std::vector<const float*> from_;
  std::vector<const void*> from_id_;  // per input: a converting producer's result (Held id)
  bool skip_dense_ = false;
  bool result_read_ = false;
  // The chain (FLOAT32 copies) and the fp32 path, to rebuild it over channels last.
  std::shared_ptr<const std::vector<OpDesc>> chain_;
  FloatPath fp32_;
  bool cl_ = false;
};

// The chain's inputs as backend.h orders them: the head's, then each later op's inputs that
// the chain does not compute itself.
std::vector<std::size_t> chainInputSizes(const std::vector<const OpDesc*>& chain) {
  std::vector<std::size_t> sizes;
  for (const Operand& o : chain.front()->inputs) sizes.push_back(o.elements());
  for (std::size_t k = 1; k < chain.size(); ++k)
    for (const Operand& o : chain[k]->inputs) {
      bool inside = false;
      for (std::size_t m = 0; m < k; ++m) inside |= o.id == chain[m]->outputs[0].id;
      if (!inside) sizes.push_back(o.elements());
    }
  return sizes;
}


// ---- int8 ----------------------------------------------------------------------------------

// A dense user buffer (the caller's, converted) bound to a primitive argument: directly
// when the primitive took the dense layout, converted straight into channels-last, or
// through a oneDNN reorder for any other layout.
struct Staged {
  enum Route { kDirect, kChannelsLast, kReorder };
  memory user, inner;
  dnnl::reorder reorder;
  Route route = kDirect;
  Planes planes{};
  // A linked producer's fp32 result in the layout of `inner` (backendLink): read in place
  // of the caller's binary16 buffer. Empty when not linked.
  memory from;
  // `inner` is a linked producer's result as this argument takes it (its fp32 value, or
  // the int8 codes a requantising producer writes): nothing to convert.
  bool shared = false;
  // What `from` or `inner` share: a converting producer's result, whose memory's identity
  // names it in a fusion's arena (BackendOp::Held). Null otherwise.
  const void* producer = nullptr;
  // Its buffers come from the thread's workspace at each run (place()): no other op reads
  // them.
  bool transient = false;
  int arg = DNNL_ARG_SRC;
  // A null `handle`: transient.
  void bind(const memory::desc& user_md, void* handle, const memory::desc& prim_md,
            bool input) {
    transient = handle == nullptr;
    user = memory(user_md, cpuEngine(), handle);
    inner = user;
    if (user_md == prim_md) return;
    inner = transient ? memory(prim_md, cpuEngine(), nullptr) : memory(prim_md, cpuEngine());
    const memory::dims d = user_md.get_dims();
    if (d.size() == 4 && prim_md == memory::desc(d, prim_md.get_data_type(), Tag::acdb)) {
      route = kChannelsLast;
      planes = {d[0], d[1], d[2] * d[3]};
      return;
    }
    route = kReorder;
    reorder = input ? dnnl::reorder(user, inner) : dnnl::reorder(inner, user);
  }
  template <typename T>
  T* innerData() const {
    return static_cast<T*>(inner.get_data_handle());
  }

  // Makes its own buffers transient (the op's result, once no link reads it).
  void release() {
    transient = true;
    const bool same = inner.get() == user.get();
    user = memory(user.get_desc(), cpuEngine(), nullptr);
    inner = same ? user : memory(inner.get_desc(), cpuEngine(), nullptr);
  }
  // What place() takes: the dense buffer unless the route converts straight into the
  // primitive's channels-last layout, and the primitive's when it is another.
  std::size_t transientFloats() const {
    if (!transient || shared) return 0;
    std::size_t n = 0;
    if (route != kChannelsLast) n += lineFloats(floatsOf(user));
    if (route != kDirect) n += lineFloats(floatsOf(inner));
    return n;
  }
  float* place(float* at) {
    if (!transient || shared) return at;
    if (route != kChannelsLast) {
      user.set_data_handle(at);  // and inner, the same memory, on the direct route
      at += lineFloats(floatsOf(user));
    }
    if (route != kDirect) {
      inner.set_data_handle(at);
      at += lineFloats(floatsOf(inner));
    }
    return at;
  }
  static std::size_t floatsOf(const memory& m) { return (m.get_desc().get_size() + 3) / 4; }
};

// How an int8 conv is built for its links: writing the int8 codes of readers that quantise
// with step inverse `requant` (0: its fp32 result), from an unsigned source (`u8`: a value
// that is never negative).
struct Variant {
  double requant = 0.0;
  bool u8 = false;
};

// A convolution or inner product between binary16 buffers: an int8 op's input quantised
// (s8 source), an fp16 op's decoded (f32 source), both straight into the primitive's
// layout when it is channels-last; the f32 result rounded to binary16.
class ConvertingOp : public BackendOp {
 public:
  ConvertingOp(int threads, bool int8) : threads_(threads), int8_(int8), stream_(cpuEngine()) {}

  std::string describe() const override {
    return (int8_ ? "int8 " : "fp16 ") + primitiveName(prim_);
  }
  // Drops its copies of the chain's weights, and stages the result in the thread's workspace
  // unless a link reads it.
  void settle() override {
    rebuild_ = nullptr;
    if (readers_.empty() && !operand_reader_) stageResult();
  }
  // In a fusion, a result that links read lives in the fusion's arena (from this step to
  // its last reader), as do the values it reads from converting producers.
  std::vector<Held> settleInFusion() override {
    rebuild_ = nullptr;
    std::vector<Held> held;
    if (readers_.empty() && !operand_reader_) {
      stageResult();
    } else {
      held.push_back({dst_.inner.get(), dst_.inner.get_desc().get_size()});
      dst_.inner.set_data_handle(nullptr);  // frees what oneDNN allocated for it
      dst_own_ = AlignedBuffer();
    }
    for (const Staged* s : staged())
      if (s->producer)
        held.push_back({s->producer, (s->from ? s->from : s->inner).get_desc().get_size()});
    return held;
  }
  void placeHeld(const void* id, void* at) override {
    if (dst_.inner.get() == id) dst_.inner.set_data_handle(at);
    for (Staged* s : staged())
      if (s->shared && s->producer == id) s->inner.set_data_handle(at);
  }
  bool rebuiltAsProducer() const override { return int8_; }  // requantize()
  void dropRebuild() override { rebuild_ = nullptr; }

  void run(const void* const* inputs, void* const* outputs) override {
    ThreadScope scope(threads_);
    placeStaging();
    const auto* x = static_cast<const std::uint16_t*>(inputs[0]);
    if (int8_ && src_.from)
      convertDense(static_cast<const float*>(src_.from.get_data_handle()),
                   src_.innerData<std::int8_t>(), src_.inner.get_desc().get_size(), threads_,
                   QuantizeFloatRow{{step_inverse_}});
    else if (int8_)
      stage<std::int8_t>(src_, x, QuantizeRow{step_inverse_});
    else
      stage<float>(src_, x, DecodeRow());
    for (std::size_t i = 0; i < extra_.size(); ++i)
      stage<float>(extra_[i], static_cast<const std::uint16_t*>(inputs[i + 1]), DecodeRow());
    prim_.execute(stream_, args_);
    if (skip_dense_) {
      stream_.wait();
      return;
    }
    if (dst_.route == Staged::kReorder) dst_.reorder.execute(stream_, dst_.inner, dst_.user);
    stream_.wait();
    auto* y = static_cast<std::uint16_t*>(outputs[0]);
    if (dst_.route == Staged::kChannelsLast)
      fromChannelsLast(dst_.innerData<float>(), y, dst_.planes, threads_);
    else
      encode(static_cast<const float*>(dst_.user.get_data_handle()), y, dst_floats_, threads_);
  }

  void stageResult() {
    if (dst_.transient) return;
    dst_.release();
    args_[DNNL_ARG_DST] = dst_.inner;
    dst_own_ = AlignedBuffer();
  }
  std::vector<Staged*> staged() {
    std::vector<Staged*> all{&src_};
    for (Staged& s : extra_) all.push_back(&s);
    return all;
  }

  // The staging buffers no link reads, one after another in the thread's workspace.
  void placeStaging() {
    std::size_t floats = src_.transientFloats() + dst_.transientFloats();
    for (const Staged& s : extra_) floats += s.transientFloats();
    if (floats == 0) return;
    float* at = src_.place(threadWorkspace(floats));
    for (Staged& s : extra_) at = s.place(at);
    dst_.place(at);
  }

  int threads_;
  bool int8_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  double step_inverse_ = 1.0;
  AlignedBuffer dst_own_;  // the dense fp32 result while a link may read it
  std::size_t dst_floats_ = 0;
  Staged src_, dst_;
  std::vector<Staged> extra_;
  // Every reader of the result was linked and nothing outside the fusion reads it
  // (backendSkipDense): the binary16 output is not written.
  bool skip_dense_ = false;
  // The ops whose input 0 reads the result through a link (linkReduced), and whether an op
  // reads it as another input (a post-op operand: it needs the fp32 result).
  std::vector<ConvertingOp*> readers_;
  bool operand_reader_ = false;
  // How it was built (int8 convolutions), whether its chain ends in a relu (no negative
  // result), and the same chain built another way (null when it cannot be).
  Variant variant_;
  bool nonneg_ = false;
  std::function<std::unique_ptr<ConvertingOp>(const Variant&)> rebuild_;

  // Rebuilt as `v` says, keeping its links; false, unchanged, when oneDNN has no kernel.
  bool become(const Variant& v) {
    if (!rebuild_) return false;
    std::unique_ptr<ConvertingOp> re = rebuild_(v);
    if (!re) return false;
    re->adoptLinks(*this);
    *this = std::move(*re);
    return true;
  }

  // When every reader is an int8 op quantising the value with the same step, the op writes
  // their int8 codes itself (oneDNN's output scale and saturation, a clip to -127 as the
  // mock's): no fp32 result, no conversion pass. The codes skip the binary16 rounding in
  // between, so they may differ from the mock's by one where the fp32 value lies within
  // half a binary16 step of a rounding tie (README "oneDNN SDK").
  void requantize() {
    if (!int8_ || readers_.empty() || operand_reader_) return;
    const double k = readers_.front()->step_inverse_;
    for (const ConvertingOp* r : readers_)
      if (!r->int8_ || r->step_inverse_ != k || r->src_.route != Staged::kChannelsLast) return;
    Variant v = variant_;
    v.requant = k;
    if (!become(v)) return;
    for (ConvertingOp* r : readers_) r->share(r->src_, dst_.inner, dst_.inner.get());
    if (nonneg_)
      for (ConvertingOp* r : readers_) r->unsignedSource();
  }

  // Codes of a value that is never negative are the same bytes as u8 (0..127): oneDNN's
  // u8 x s8 kernels skip the shift and compensation that signed sources need.
  void unsignedSource() {
    if (variant_.u8) return;
    Variant v = variant_;
    v.u8 = true;
    become(v);
  }

  // Keeps the links `old` (this op built another way) had.
  void adoptLinks(const ConvertingOp& old) {
    if (old.src_.shared) share(src_, old.src_.inner, old.src_.producer);
    src_.from = old.src_.from;
    if (!old.src_.shared) src_.producer = old.src_.producer;
    for (std::size_t i = 0; i < extra_.size() && i < old.extra_.size(); ++i)
      if (old.extra_[i].shared) share(extra_[i], old.extra_[i].inner, old.extra_[i].producer);
    readers_ = old.readers_;
    operand_reader_ = old.operand_reader_;
    rebuild_ = old.rebuild_;
    skip_dense_ = skip_dense_ || old.skip_dense_;
  }

  // The argument reads `value`'s bytes (a linked producer's), seen with its own desc (s8
  // or u8 codes; fp32).
  // `producer`: the value's Held id when a converting producer's result.
  void share(Staged& s, const memory& value, const void* producer) {
    s.inner = memory(s.inner.get_desc(), cpuEngine(), value.get_data_handle());
    s.from = memory();
    s.shared = true;
    s.producer = producer;
    args_[s.arg] = s.inner;
  }

  // Converts the binary16 input `in` into the argument's memory (unless it is shared).
  template <typename Out, typename Row>
  void stage(Staged& s, const std::uint16_t* in, Row row) {
    if (s.shared) return;
    Out* dense_buf = static_cast<Out*>(s.user.get_data_handle());
    if (s.route == Staged::kChannelsLast) {
      toChannelsLast(in, s.innerData<Out>(), s.planes, threads_, row);
      return;
    }
    convertDense(in, dense_buf, s.user.get_desc().get_size() / sizeof(Out), threads_, row);
    if (s.route == Staged::kReorder) s.reorder.execute(stream_, s.user, s.inner);
  }

  void setConst(int arg, const memory::desc& user_md, const void* data,
                const memory::desc& prim_md) {
    memory user(user_md, cpuEngine());
    std::memcpy(user.get_data_handle(), data, user_md.get_size());
    args_[arg] = inLayout(user, prim_md, stream_);
  }

  // The head's input, output and weights (`weights_user`: s8 from the filter's q values, or
  // f32), bias (int8: always, 0 without one, as the mock's rescale adds it), int8's
  // per-channel rescale factors, and the post-ops' operands.
  template <typename PD>
  void bind(const OpDesc& d, const PD& pd, const memory::desc& src_user,
            const memory::desc& dst_user, const memory::desc& weights_user,
            const ChainPostOps& post) {
    src_.bind(src_user, nullptr, pd.src_desc(), true);
    args_[DNNL_ARG_SRC] = src_.inner;
    const int channels = d.consts[0]->dims[0];
    const memory::desc vec({channels}, DT::f32, Tag::a);
    const bool has_bias = d.consts.size() > 1 && d.consts[1];
    if (int8_) {
      step_inverse_ = numerics::stepInverse(d.in_position, d.in_scale);
      setConst(DNNL_ARG_WEIGHTS, weights_user, d.consts[0]->q.data(), pd.weights_desc());
      const TensorQuant& q = d.consts[0]->quant;
      std::vector<float> factors(channels), bias(channels, 0.0f);
      for (int c = 0; c < channels; ++c)
        factors[c] = numerics::rescaleFactor(d.in_position, d.in_scale,
                                             q.positions.empty() ? q.position : q.positions[c],
                                             q.scales.empty() ? q.scale : q.scales[c]);
      setConst(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, vec, factors.data(), vec);
      if (has_bias) bias = d.consts[1]->data;
      setConst(DNNL_ARG_BIAS, vec, bias.data(), vec);
    } else {
      setConst(DNNL_ARG_WEIGHTS, weights_user, d.consts[0]->data.data(), pd.weights_desc());
      if (has_bias) setConst(DNNL_ARG_BIAS, vec, d.consts[1]->data.data(), vec);
    }
    for (const ChainPostOps::Operand& o : post.operands) {
      const int arg = DNNL_ARG_ATTR_MULTIPLE_POST_OP(o.index) | DNNL_ARG_SRC_1;
      if (o.data) {
        setConst(arg, o.md, o.data->data(), o.md);
        continue;
      }
      extra_.emplace_back();
      extra_.back().bind(o.user, nullptr, o.md, true);
      extra_.back().arg = arg;
      args_[arg] = extra_.back().inner;
    }
    dst_floats_ = (dst_user.get_size() + sizeof(float) - 1) / sizeof(float);
    dst_own_ = AlignedBuffer(dst_floats_);
    dst_.bind(dst_user, dst_own_.data(), pd.dst_desc(), false);
    args_[DNNL_ARG_DST] = dst_.inner;
  }
};

dnnl::primitive_attr attrOf(bool int8, int scale_mask, const ChainPostOps& post,
                           bool dst_scale = false) {
  dnnl::primitive_attr attr;
  if (int8) attr.set_scales_mask(DNNL_ARG_WEIGHTS, scale_mask);
  if (dst_scale) attr.set_scales_mask(DNNL_ARG_DST, 0);
  attr.set_post_ops(post.ops);
  return attr;
}

// VNNI/AMX kernels sum int8 products exactly; others pre-scale the weights (see the top).
bool exactKernel(const char* impl) {
  const std::string name(impl);
  return name.find("vnni") != std::string::npos || name.find("amx") != std::string::npos;
}

// An int8 conv, or an fp16 one (f32 primitive) whose primitive takes channels-last
// operands; null otherwise (an fp16 conv then runs as HalfOp). `v`: an int8 conv built
// for its links (ConvertingOp::requantize).
std::unique_ptr<ConvertingOp> makeConvertingConv(const OpDesc& d,
                                                 const std::vector<const OpDesc*>& chain,
                                                 int threads, const FloatPath& fp32, bool int8,
                                                 const Variant& v = Variant()) {
  const double requant = v.requant;
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;
  if (in.size() != 4 || f.size() != 4) return nullptr;
  const int g = d.group;
  const DT dt = int8 ? DT::s8 : DT::f32, src_dt = int8 && v.u8 ? DT::u8 : dt;
  const memory::dims w_dims = g == 1 ? memory::dims{f[0], f[1], f[2], f[3]}
                                     : memory::dims{g, f[0] / g, f[1], f[2], f[3]};
  const memory::desc weights_user(w_dims, dt, g == 1 ? Tag::oihw : Tag::goihw);
  const int mask = g == 1 ? 1 : 3;  // per output channel: o, or g and o
  const bool bias = int8 || (d.consts.size() > 1 && d.consts[1]);
  const ConvParams& c = d.conv;
  const memory::desc src_user = dense(in, src_dt), dst_user = dense(out, DT::f32);
  auto any = [](const memory::desc& md) {
    return memory::desc(md.get_dims(), md.get_data_type(), Tag::any);
  };
  auto convPd = [&](const memory::desc& dst, const ChainPostOps& p) {
    return dnnl::convolution_forward::primitive_desc(
        cpuEngine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        any(src_user), any(weights_user),
        bias ? memory::desc({out[1]}, DT::f32, Tag::a) : memory::desc(), dst, {c.sh, c.sw},
        {c.dh - 1, c.dw - 1}, {c.pt, c.pl}, {c.pb, c.pr}, attrOf(int8, mask, p, requant != 0));
  };
  // Chain inputs of the output's shape get the convolution's own layout (as makeConv's).
  const memory::desc layout = convPd(any(dst_user), ChainPostOps()).dst_desc();
  const std::vector<OpDesc> ops = asFloat(chain);
  ChainPostOps post = fp32.post_ops(pointers(ops), &layout);
  memory::desc dst = post.operands.empty() ? any(dst_user) : layout;
  memory::desc codes;  // requant: the int8 output, channels last as the readers take it
  if (requant != 0) {
    codes = memory::desc(memory::dims(out.begin(), out.end()), DT::s8, Tag::acdb);
    dst = codes;
    if (!endsNonNegative(chain))  // the mock clamps to -127, a conversion to s8 to -128
      post.ops.append_eltwise(dnnl::algorithm::eltwise_clip_v2,
                              static_cast<float>(-127.0 / requant),
                              std::numeric_limits<float>::max());
  }
  const auto pd = convPd(dst, post);
  if (int8 && !exactKernel(pd.impl_info_str())) return nullptr;
  const memory::desc channels_last(memory::dims(in.begin(), in.end()), src_dt, Tag::acdb);
  if (!int8 && pd.src_desc() != channels_last) return nullptr;
  auto op = std::make_unique<ConvertingOp>(threads, int8);
  op->prim_ = dnnl::convolution_forward(pd);
  op->bind(d, pd, src_user, requant != 0 ? codes : dst_user, weights_user, post);
  op->variant_ = v;
  op->nonneg_ = endsNonNegative(chain);
  if (requant != 0) {
    const float scale = static_cast<float>(1.0 / requant);
    const memory::desc one({1}, DT::f32, Tag::a);
    op->setConst(DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, one, &scale, one);
    op->skip_dense_ = true;
  }
  if (int8) {
    // Copies: the chain's records are the fusion's, and the links come later.
    auto copies = std::make_shared<std::vector<OpDesc>>();
    for (const OpDesc* o : chain) copies->push_back(*o);
    op->rebuild_ = [copies, threads, fp32](const Variant& w) -> std::unique_ptr<ConvertingOp> {
      ThreadScope scope(threads);
      try {
        return makeConvertingConv(copies->front(), pointers(*copies), threads, fp32, true, w);
      } catch (const dnnl::error&) {
        return nullptr;
      }
    };
  }
  return op;
}

// A conv head converts its own operands (channels-last, below); other chains are the fp32
// path's primitive(s) between dense conversions.
std::unique_ptr<BackendOp> makeHalf(const std::vector<const OpDesc*>& chain, int threads,
                                    const FloatPath& fp32) {
  for (const OpDesc* d : chain)
    if (d->int8 || d->kind == OpKind::kCast || d->outputs.size() != 1 ||
        !allOf(d->inputs, CNML_DATA_FLOAT16) || !allOf(d->outputs, CNML_DATA_FLOAT16))
      return nullptr;
  const OpDesc& head = *chain.front();
  if ((head.kind == OpKind::kConv || head.kind == OpKind::kConvGroup) && head.inputs.size() == 1)
    if (std::unique_ptr<BackendOp> op = makeConvertingConv(head, chain, threads, fp32, false))
      return op;
  auto ops = std::make_shared<const std::vector<OpDesc>>(asFloat(chain));
  std::unique_ptr<BackendOp> inner = fp32.make(pointers(*ops), threads, false);
  if (!inner) return nullptr;
  auto op = std::make_unique<HalfOp>(std::move(inner), chainInputSizes(chain),
                                     chain.back()->outputs[0].elements(), threads);
  op->chain_ = std::move(ops);
  op->fp32_ = fp32;
  return op;
}

std::unique_ptr<BackendOp> makeInt8Mlp(const OpDesc& d, const std::vector<const OpDesc*>& chain,
                                       int threads, const FloatPath& fp32) {
  if (d.outputs[0].dims.size() != 2 && chain.size() > 1) return nullptr;
  const int n = d.inputs[0].dims[0];
  const int k = static_cast<int>(d.inputs[0].elements() / n);
  const int co = d.consts[0]->dims[0];
  const memory::desc src_user = dense({n, k}, DT::s8), dst_user = dense({n, co}, DT::f32);
  const memory::desc weights_user({co, k}, DT::s8, Tag::oi);
  const std::vector<OpDesc> ops = asFloat(chain);
  const ChainPostOps post = fp32.post_ops(pointers(ops), nullptr);
  const dnnl::inner_product_forward::primitive_desc pd(
      cpuEngine(), dnnl::prop_kind::forward_inference, src_user,
      memory::desc({co, k}, DT::s8, Tag::any), memory::desc({co}, DT::f32, Tag::a), dst_user,
      attrOf(true, 1, post));
  if (!exactKernel(pd.impl_info_str())) return nullptr;
  auto op = std::make_unique<ConvertingOp>(threads, true);
  op->prim_ = dnnl::inner_product_forward(pd);
  op->bind(d, pd, src_user, dst_user, weights_user, post);
  return op;
}

std::unique_ptr<BackendOp> makeInt8(const std::vector<const OpDesc*>& chain, int threads,
                                    const FloatPath& fp32) {
  const OpDesc& d = *chain.front();
  if (d.inputs.size() != 1 || d.inputs[0].dtype != CNML_DATA_FLOAT16 ||
      d.outputs[0].dtype != CNML_DATA_FLOAT16 || d.consts.empty() || !d.consts[0] ||
      d.consts[0]->q.empty())
    return nullptr;
  for (std::size_t k = 1; k < chain.size(); ++k)
    if (chain[k]->int8 || !allOf(chain[k]->inputs, CNML_DATA_FLOAT16) ||
        !allOf(chain[k]->outputs, CNML_DATA_FLOAT16))
      return nullptr;
  switch (d.kind) {
    case OpKind::kConv:
    case OpKind::kConvGroup: return makeConvertingConv(d, chain, threads, fp32, true);
    case OpKind::kMlp: return makeInt8Mlp(d, chain, threads, fp32);
    default: return nullptr;
  }
}

}  // namespace

// Dense row-major (every dim longer than 1 strided as in the plain layout).
bool isDense(const memory::desc& md) {
  if (md.get_inner_nblks() != 0) return false;
  const memory::dims dims = md.get_dims(), strides = md.get_strides();
  memory::dim expect = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    if (dims[i] > 1 && strides[i] != expect) return false;
    expect *= dims[i];
  }
  return true;
}

memory::desc plainF32(std::size_t n) {
  return memory::desc({static_cast<memory::dim>(n)}, DT::f32, Tag::a);
}

// The same fp32 values at the same places: equal descs, or both dense of one size.
bool sameBytes(const memory::desc& a, const memory::desc& b) {
  if (a == b) return true;
  return a.get_data_type() == b.get_data_type() && isDense(a) && isDense(b) &&
         a.get_size() == b.get_size();
}

// The consumer's staging reads the producer's fp32 result where the layouts agree (both
// channels last, or both dense): one flat pass that rounds to binary16 (and quantises),
// instead of the producer's transposing encode and the consumer's transposing decode.
bool linkReduced(BackendOp& producer, int output, BackendOp& consumer, int input) {
  auto* conv = dynamic_cast<ConvertingOp*>(&producer);
  auto* half = dynamic_cast<HalfOp*>(&producer);
  if ((!conv && !half) || output != 0 || input < 0 ||
      (conv && (conv->dst_.route == Staged::kReorder || conv->variant_.requant != 0)))
    return false;
  const memory result = conv ? conv->dst_.inner : half->result();
  if (auto* to = dynamic_cast<HalfOp*>(&consumer)) {
    const std::size_t i = static_cast<std::size_t>(input);
    if (i >= to->in_sizes_.size() || to->from_[i]) return false;
    if (sameBytes(result.get_desc(), plainF32(to->in_sizes_[i]))) {
      to->from_[i] = static_cast<const float*>(result.get_data_handle());
      to->from_id_[i] = conv ? result.get() : nullptr;
    } else if (!to->readChannelsLast(result))
      return false;
    if (conv)
      conv->operand_reader_ = true;  // it reads the fp32 result
    else
      half->result_read_ = true;
    return true;
  }
  auto* to = dynamic_cast<ConvertingOp*>(&consumer);
  if (!to || static_cast<std::size_t>(input) > to->extra_.size()) return false;
  Staged& s = input == 0 ? to->src_ : to->extra_[input - 1];
  if (s.route == Staged::kReorder || s.from || s.shared) return false;
  const memory::desc want = s.inner.get_desc();
  if (!sameBytes(result.get_desc(), memory::desc(want.get_dims(), DT::f32, want.get_strides())))
    return false;
  if (input == 0 && to->int8_) {
    s.from = result;  // quantised in one flat pass at each run
    s.producer = conv ? result.get() : nullptr;
  } else {
    to->share(s, result, conv ? result.get() : nullptr);
  }
  if (!conv) {
    half->result_read_ = true;
    return true;
  }
  ConvertingOp* from = conv;
  if (input != 0) {
    from->operand_reader_ = true;
    return true;
  }
  from->readers_.push_back(to);
  if (from->nonneg_ && to->int8_ && s.route == Staged::kChannelsLast) to->unsignedSource();
  return true;
}

bool skipReducedDense(BackendOp& producer, int output) {
  if (output != 0) return false;
  if (auto* half = dynamic_cast<HalfOp*>(&producer)) {
    half->skipDense();
    return true;
  }
  auto* from = dynamic_cast<ConvertingOp*>(&producer);
  if (!from) return false;
  from->skip_dense_ = true;
  from->requantize();
  return true;
}

namespace {

// A binary16 <-> fp32 Cast (a reduced-precision block's edge): the vectorised conversions
// above, the mock's exact rounding (numerics.h 1).
class CastOp : public BackendOp {
 public:
  CastOp(bool encode, std::size_t n, int threads) : encode_(encode), n_(n), threads_(threads) {}
  std::string describe() const override {
    return encode_ ? "cast fp32 -> binary16 (vcvtps2ph)" : "cast binary16 -> fp32 (vcvtph2ps)";
  }
  void run(const void* const* inputs, void* const* outputs) override {
    if (encode_)
      encode(static_cast<const float*>(inputs[0]), static_cast<std::uint16_t*>(outputs[0]), n_,
             threads_);
    else
      decode(static_cast<const std::uint16_t*>(inputs[0]), static_cast<float*>(outputs[0]), n_,
             threads_);
  }

 private:
  bool encode_;
  std::size_t n_;
  int threads_;
};

std::unique_ptr<BackendOp> makeCast(const OpDesc& d, int threads) {
  if (d.cast != CNML_CAST_FLOAT32_TO_FLOAT16 && d.cast != CNML_CAST_FLOAT16_TO_FLOAT32)
    return nullptr;
  return std::make_unique<CastOp>(d.cast == CNML_CAST_FLOAT32_TO_FLOAT16,
                                  d.inputs[0].elements(), threads);
}

}  // namespace

std::unique_ptr<BackendOp> makeReducedOp(const std::vector<const OpDesc*>& chain, int threads,
                                         const FloatPath& fp32) {
  ThreadScope scope(threads);
  if (chain.size() == 1 && chain.front()->kind == OpKind::kCast)
    return makeCast(*chain.front(), threads);
  try {
    return chain.front()->int8 ? makeInt8(chain, threads, fp32) : makeHalf(chain, threads, fp32);
  } catch (const dnnl::error&) {
    return nullptr;  // no oneDNN implementation for this shape: the mock's kernels
  }
}

}  // namespace onednn
}  // namespace pz_mock
