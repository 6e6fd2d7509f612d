// DnnlOp's run and settle, and the memory descriptors of dnnl_op.h.
#include "dnnl_op.h"

#include <algorithm>

#include "swish.h"
#include "kernels/workspace.h"

namespace pz_sdk {
namespace onednn {

memory::desc plain(const Dims& dims, std::size_t rank) {
  memory::dims d(rank > dims.size() ? rank - dims.size() : 0, 1);
  d.insert(d.end(), dims.begin(), dims.end());
  memory::dims strides(d.size(), 1);
  for (std::size_t i = d.size(); i-- > 1;) strides[i - 1] = strides[i] * d[i];
  return memory::desc(d, DT::f32, strides);
}

memory::desc act(const Dims& dims, bool cl) {
  if (!cl || dims.size() != 4) return plain(dims);
  return memory::desc(plain(dims).get_dims(), DT::f32, Tag::acdb);
}

bool channelsLast(const memory::desc& md) {
  return md.get_ndims() == 4 && md == memory::desc(md.get_dims(), DT::f32, Tag::acdb);
}

memory::desc channelDesc(std::size_t channels, std::size_t rank) {
  memory::dims d(rank, 1);
  d[1] = static_cast<memory::dim>(channels);
  return plain(Dims(d.begin(), d.end()));
}

memory constMemory(const memory::desc& md, const std::vector<float>& data) {
  memory m(md, cpuEngine());
  std::copy(data.begin(), data.end(), static_cast<float*>(m.get_data_handle()));
  return m;
}

memory::dims dimsOf(const Dims& d) { return memory::dims(d.begin(), d.end()); }

std::vector<BackendOp::Held> DnnlOp::settleLeaving(bool shared) {
  std::vector<Held> held;
  rebuild_ = nullptr;
  transient_.clear();
  transient_floats_ = 0;
  for (int input = 1; input >= 0; --input) {
    std::vector<Port>& ports = input ? ins_ : outs_;
    for (std::size_t i = 0; i < ports.size(); ++i) {
      Port& p = ports[i];
      if (!p.reordered || p.kept || p.linked || p.arg == kNoArg) {
        if (shared && (p.kept || p.linked) && p.inner && !p.inner.get_data_handle())
          held.push_back({p.inner.get(), p.inner.get_desc().get_size()});
        else
          ownBuffer(p.inner);
        continue;
      }
      const std::size_t floats = lineFloats((p.inner.get_desc().get_size() + 3) / 4);
      transient_.push_back({input == 1, i, floats});
      transient_floats_ += floats;
    }
  }
  return held;
}

void DnnlOp::run(const void* const* inputs, void* const* outputs) {
  ThreadScope scope(threads_);
  if (!transient_.empty()) {
    float* at = threadWorkspace(transient_floats_);
    for (const Transient& t : transient_) {
      (t.input ? ins_ : outs_)[t.index].inner.set_data_handle(at);
      at += t.floats;
    }
  }
  for (std::size_t i = 0; i < ins_.size(); ++i) {
    Port& p = ins_[i];
    p.user.set_data_handle(const_cast<void*>(inputs[i]));
    if (p.reordered) p.reorder.execute(stream_, p.user, p.inner);
  }
  for (std::size_t i = 0; i < outs_.size(); ++i) outs_[i].user.set_data_handle(outputs[i]);
  if (!stages_.empty()) {
    std::unordered_map<int, memory> args = args_;
    memory from = args.at(kStageInput);
    args.erase(kStageInput);
    for (Stage& stage : stages_) {
      stage.view.set_data_handle(from.get_data_handle());
      stage.prim.execute(stream_, {{DNNL_ARG_SRC, stage.view}, {DNNL_ARG_DST, stage.out}});
      from = stage.out;
    }
    args[DNNL_ARG_SRC] = from;
    prim_.execute(stream_, args);
  } else if (views_.empty()) {
    prim_.execute(stream_, args_);
  } else {
    std::unordered_map<int, memory> args = args_;
    for (auto& [arg, view] : views_) {
      view.mem.set_data_handle(static_cast<char*>(args.at(arg).get_data_handle()) +
                               view.offset);
      args[arg] = view.mem;
    }
    prim_.execute(stream_, args);
  }
  if (swish_tail_) {
    const memory dst = args_.at(DNNL_ARG_DST);
    swishInPlace(static_cast<float*>(dst.get_data_handle()),
                         dst.get_desc().get_size() / sizeof(float), threads_);
  }
  for (Port& p : outs_)
    if (p.reordered) p.reorder.execute(stream_, p.inner, p.user);
  stream_.wait();
}

}  // namespace onednn
}  // namespace pz_sdk
