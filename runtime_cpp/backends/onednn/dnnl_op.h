// The fp32 path's compiled op (DnnlOp: one oneDNN primitive, the ports that bind the
// caller's buffers to it, its consts), and the memory descriptors its builders share.
#ifndef PZ_ONEDNN_DNNL_OP_H_
#define PZ_ONEDNN_DNNL_OP_H_

#include <functional>
#include <unordered_map>

#include "backend_op.h"

namespace pz_sdk {
namespace onednn {

// Row-major fp32 of `dims`, left-padded with unit axes to `rank` (for broadcast operands).
memory::desc plain(const Dims& dims, std::size_t rank = 0);

// An activation of `dims` in channels last when `cl` (NCHW only), else row-major: the layout
// a fusion's convolutions hand over, which layout-agnostic ops adopt (DnnlOp::agnostic_).
memory::desc act(const Dims& dims, bool cl);

bool channelsLast(const memory::desc& md);

// Per-channel const (axis 1 of a rank-`rank` output), or a broadcast scalar.
memory::desc channelDesc(std::size_t channels, std::size_t rank);

// A const operand owned by the op (oneDNN keeps only the handle).
memory constMemory(const memory::desc& md, const std::vector<float>& data);

memory::dims dimsOf(const Dims& d);

// One runtime operand: the caller's dense buffer (`user`), reordered to or from the layout
// the primitive chose (`inner`) when they differ.
struct Port {
  int arg;  // kNoArg: a chain input the primitive reads through its destination
  memory user, inner;
  dnnl::reorder reorder;  // empty when user is bound directly
  bool reordered = false;
  bool linked = false;  // inner is the producer's (backendLink)
  bool kept = false;    // inner is read or written by another op too (a link, a write-over)
};
constexpr int kNoArg = -1;
// The input port of an op whose first primitive is a Stage (DnnlOp::stages_): not an
// argument of prim_.
constexpr int kStageInput = DNNL_ARG_MULTIPLE_SRC + 31;

// How an op is built: over channels-last activations (layout-agnostic heads), and which
// chain input, if any, its output overwrites (a residual add as oneDNN's sum post-op).
struct Build {
  bool cl = false;
  int over = -1;
};

class DnnlOp : public BackendOp {
 public:
  explicit DnnlOp(int threads) : threads_(threads), stream_(cpuEngine()) {}

  std::string describe() const override {
    std::string text = primitiveName(prim_);
    if (swish_tail_) text += " + SDK swish";
    if (ops_ > 1) text += " (" + std::to_string(ops_) + " ops per call)";
    return text;
  }

  // Drops its copies of the chain's weights, and gives each reordered buffer its memory:
  // in the running thread's workspace for one no other op shares (it holds a value only
  // while this op runs, so a session holds the largest op's, not every op's), its own for
  // one a link or a write-over shares.
  void settle() override { settleLeaving(false); }
  void dropRebuild() override { rebuild_ = nullptr; }

  // The same, leaving the buffers a link or a write-over shares to the fusion.
  std::vector<Held> settleInFusion() override { return settleLeaving(true); }

  void placeHeld(const void* id, void* at) override {
    for (std::vector<Port>* ports : {&ins_, &outs_})
      for (Port& p : *ports)
        if (p.inner && p.inner.get() == id) p.inner.set_data_handle(at);
  }

  std::vector<Held> settleLeaving(bool shared);

  // Gives `m` (a port's inner memory, built without one) a buffer of this op's, unless it
  // is empty or has one already (the other side of a link gave it). Buffers are given at
  // settle(), once the links are known, so that a fusion's compile never holds every
  // step's reordered buffers at once (ResNet-50 fuse-all: 108 MB of them, most transient).
  void ownBuffer(memory& m) {
    if (!m || m.get_data_handle() != nullptr) return;
    owned_.emplace_back((m.get_desc().get_size() + 3) / 4);
    m.set_data_handle(owned_.back().data());
  }

  void run(const void* const* inputs, void* const* outputs) override;

  int threads_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::unordered_map<int, memory> args_;
  std::vector<Port> ins_, outs_;
  // Ports whose inner buffer is placed in the thread's workspace at each run (settle()).
  struct Transient {
    bool input;
    std::size_t index;
    std::size_t floats;  // its share of the workspace, in whole 64-byte lines
  };
  std::vector<Transient> transient_;
  std::size_t transient_floats_ = 0;
  std::vector<AlignedBuffer> owned_;  // the shared ports' buffers (ownBuffer)
  std::vector<TensorRef> in_place_;  // consts read in the SDK's own copy (addConstInPlace)
  // The same chain built another way (backendLink, backendWriteOver), and how it was.
  std::function<std::unique_ptr<DnnlOp>(const Build&)> rebuild_;
  Build built_;
  bool agnostic_ = false;  // pooling, element-wise, concat: takes channels last as well
  bool swish_tail_ = false;  // PostOps::swish_tail, over the destination after prim_
  int ops_ = 1;            // the chain's ops (describe)
  // Arguments the primitive reads or writes through another desc of the same data (slices,
  // reshapes), `offset` bytes into it: bound at each run to the memory args_ holds for them.
  struct View {
    memory mem;
    std::size_t offset;
  };
  std::unordered_map<int, View> views_;
  // A primitive run before prim_ (a global average pool's first stage): it reads the input
  // port bound at kStageInput (as `view`, the same bytes seen with other dims) and writes
  // `out`, prim_'s source.
  struct Stage {
    dnnl::primitive prim;
    memory view, out;
  };
  std::vector<Stage> stages_;

  // Binds the caller's buffer of `user_md` to `arg`, through a reorder into `prim_md`.
  void addPort(bool input, int arg, const memory::desc& user_md, const memory::desc& prim_md) {
    Port p{arg, memory(user_md, cpuEngine(), nullptr), memory(), dnnl::reorder(), false};
    if (user_md != prim_md) {
      p.inner = memory(prim_md, cpuEngine(), nullptr);  // its buffer comes at settle()
      p.reorder = input ? dnnl::reorder(p.user, p.inner) : dnnl::reorder(p.inner, p.user);
      p.reordered = true;
    }
    args_[arg] = p.reordered ? p.inner : p.user;
    (input ? ins_ : outs_).push_back(std::move(p));
  }
  void addInput(int arg, const memory::desc& md) { addPort(true, arg, md, md); }
  // A chain input the primitive reads as its destination's prior contents (sum post-op).
  void addUnbound(const memory::desc& user_md) {
    ins_.push_back(Port{kNoArg, memory(user_md, cpuEngine(), nullptr), memory(),
                        dnnl::reorder(), false});
  }
  void addOutput(int arg, const memory::desc& md) { addPort(false, arg, md, md); }

  // A const the primitive reads in its plain layout where the SDK holds it: the op keeps
  // that copy alive instead of making one of its own.
  void addConstInPlace(int arg, const memory::desc& md, const TensorRef& t) {
    args_[arg] = memory(md, cpuEngine(), const_cast<float*>(t->data.data()));
    in_place_.push_back(t);
  }

  // A const in the primitive's layout: reordered once, here, straight from `data` (a copy
  // of its own only when no reorder is needed), so that a large filter is never held twice
  // by the backend while it builds (VGG-19's fc6: 411 MB).
  void addConst(int arg, const memory::desc& user_md, const std::vector<float>& data,
                const memory::desc& prim_md) {
    if (user_md == prim_md) {
      args_[arg] = constMemory(user_md, data);
      return;
    }
    const memory view(user_md, cpuEngine(), const_cast<float*>(data.data()));
    args_[arg] = inLayout(view, prim_md, stream_);
  }
};

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_DNNL_OP_H_
