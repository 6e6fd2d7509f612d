// Fusion ops: base ops deep-copied at cnmlFuseOp (the caller may destroy them right after),
// validated as a dataflow graph at compile, and run op by op at forward with intermediates
// in one scratch arena the fusion owns, where values not alive at the same step share bytes.
// One launch, so one device-model time for the whole.
#include <omp.h>

#include <chrono>
#include <exception>
#include <map>
#include <mutex>
#include <set>

#include <cnml_mock.h>

#include "call_log.h"
#include "compile_check.h"
#include "executor.h"
#include "fusion_op.h"
#include "device_model/op_cost.h"
#include "kernels/workspace.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), destroyLogged(), Call


namespace {

int indexOf(const std::vector<Operand>& v, std::uint64_t id) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (v[i].id == id) return static_cast<int>(i);
  return -1;
}

bool validIoList(cnmlTensor_t* tensors, int num) {
  if (!tensors || num < 1) return false;
  std::set<std::uint64_t> seen;
  for (int i = 0; i < num; ++i) {
    if (!tensors[i] || !tensors[i]->impl->shape_set || tensors[i]->impl->type != CNML_TENSOR)
      return false;
    if (!seen.insert(tensors[i]->impl->id).second) return false;
  }
  return true;
}

// The casts MLU-priority I/O needs (cnml.h, cnmlSetDataPreprocessStrategy): an input whose
// buffer holds the twin's dtype is read by a cast into a value of the tensor's own, which the
// ops read instead; an output the ops write in its dtype is cast into the buffer's. The
// casts run in the fusion op, so the device model prices them with the block. Input casts
// go first, output casts last; fused_ops marks where the caller's ops are.
void addEdgeCasts(cnmlFusionOp& f) {
  std::vector<OpDesc> front, back;
  const auto rename = [&f](std::uint64_t from, std::uint64_t to) {
    for (OpDesc& op : f.ops) {
      for (Operand& o : op.inputs)
        if (o.id == from) o.id = to;
      for (Operand& o : op.outputs)
        if (o.id == from) o.id = to;
    }
  };
  const auto cast = [](const Operand& from, const Operand& to) {
    OpDesc d;
    d.kind = OpKind::kCast;
    d.cast = from.dtype == CNML_DATA_FLOAT32 ? CNML_CAST_FLOAT32_TO_FLOAT16
                                              : CNML_CAST_FLOAT16_TO_FLOAT32;
    d.inputs = {from};
    d.outputs = {to};
    d.fused = true;
    return d;
  };
  // One side's edges: the ops keep the value in its own dtype under a new id, and the edge,
  // now of the buffer's dtype, is cast from (inputs) or into (outputs) that value.
  const auto castEdges = [&](std::vector<Operand>& edges,
                             const std::vector<cnmlDataType_t>& transfer, bool inputs,
                             std::vector<OpDesc>& casts) {
    for (std::size_t k = 0; k < edges.size(); ++k) {
      if (transfer[k] == edges[k].dtype) continue;
      Operand value = edges[k];
      value.id = newTensorId();
      rename(edges[k].id, value.id);
      edges[k].dtype = transfer[k];
      casts.push_back(inputs ? cast(edges[k], value) : cast(value, edges[k]));
    }
  };
  castEdges(f.inputs, f.in_transfer, true, front);
  castEdges(f.outputs, f.out_transfer, false, back);
  f.fused_ops = f.ops.size();
  f.input_casts = front.size();
  f.ops.insert(f.ops.begin(), std::make_move_iterator(front.begin()),
               std::make_move_iterator(front.end()));
  f.ops.insert(f.ops.end(), std::make_move_iterator(back.begin()),
               std::make_move_iterator(back.end()));
}

std::vector<cnmlDataType_t> dtypesOf(const std::vector<Operand>& operands) {
  std::vector<cnmlDataType_t> dtypes;
  for (const Operand& o : operands) dtypes.push_back(o.dtype);
  return dtypes;
}

// Graph checks of cnmlCompileFusionOp (all INVALIDPARAM) and the buffer plan.
cnmlStatus_t plan(cnmlFusionOp& f) {
  std::map<std::uint64_t, const Operand*> produced;
  std::set<std::uint64_t> read;
  for (const OpDesc& op : f.ops) {
    for (const Operand& o : op.inputs) read.insert(o.id);
    for (const Operand& o : op.outputs) produced[o.id] = &o;
  }
  for (const Operand& in : f.inputs)
    if (!read.count(in.id) || produced.count(in.id)) return CNML_STATUS_INVALIDPARAM;
  for (const Operand& out : f.outputs) {
    auto it = produced.find(out.id);
    if (it == produced.end() || it->second->dims != out.dims || it->second->dtype != out.dtype)
      return CNML_STATUS_INVALIDPARAM;
  }
  std::map<std::uint64_t, int> scratch_of;
  std::vector<std::size_t>& scratch_sizes = f.scratch_sizes;
  scratch_sizes.clear();
  f.in_slots.assign(f.ops.size(), {});
  f.out_slots.assign(f.ops.size(), {});
  for (std::size_t i = 0; i < f.ops.size(); ++i) {
    for (const Operand& o : f.ops[i].inputs) {
      int k = indexOf(f.inputs, o.id);
      if (k >= 0) {
        if (f.inputs[k].dims != o.dims || f.inputs[k].dtype != o.dtype)
          return CNML_STATUS_INVALIDPARAM;
        f.in_slots[i].push_back({Slot::kInput, k});
      } else if ((k = indexOf(f.outputs, o.id)) >= 0) {
        f.in_slots[i].push_back({Slot::kOutput, k});
      } else if (scratch_of.count(o.id)) {
        f.in_slots[i].push_back({Slot::kScratch, scratch_of[o.id]});
      } else {
        return CNML_STATUS_INVALIDPARAM;  // neither a fusion input nor produced inside
      }
    }
    for (const Operand& o : f.ops[i].outputs) {
      int k = indexOf(f.outputs, o.id);
      if (k >= 0) {
        f.out_slots[i].push_back({Slot::kOutput, k});
      } else {
        scratch_of[o.id] = static_cast<int>(scratch_sizes.size());
        f.out_slots[i].push_back({Slot::kScratch, static_cast<int>(scratch_sizes.size())});
        scratch_sizes.push_back(o.elements());
      }
    }
  }
  return CNML_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlCreateFusionOp(cnmlFusionOp_t* fusion_op) {
  if (!fusion_op) return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    *fusion_op = new cnmlFusionOp();
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCreateFusionOp", [&](Call& c) { c.created(fusion_op); });
}

cnmlStatus_t cnmlFuseOp(cnmlBaseOp_t op, cnmlFusionOp_t fusion_op) {
  if (!op || !fusion_op) return CNML_STATUS_INVALIDPARAM;
  if (fusion_op->compiled || op->compiled || op->fused) return CNML_STATUS_INVALIDARG;
  if (op->desc.kind == OpKind::kHostTransfer) return CNML_STATUS_INVALIDPARAM;  // host work
  // Topological order: no op fused earlier may read (or also write) what this op writes.
  for (const Operand& out : op->desc.outputs)
    for (const OpDesc& earlier : fusion_op->ops) {
      if (indexOf(earlier.inputs, out.id) >= 0 || indexOf(earlier.outputs, out.id) >= 0)
        return CNML_STATUS_INVALIDARG;
    }
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    op->fused_implementations = fusion_op->implementations;
    op->fused_index = fusion_op->ops.size();
    fusion_op->ops.push_back(compiledCopy(op->desc));
    fusion_op->ops.back().fused = true;
    stripConstData(op->desc);  // the fusion op holds the weights now
    op->fused = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlFuseOp", [&](Call& c) { c.handle(op).handle(fusion_op); });
}

cnmlStatus_t cnmlSetFusionIO(cnmlFusionOp_t fusion_op, cnmlTensor_t* inputs, int input_num,
                             cnmlTensor_t* outputs, int output_num) {
  if (!fusion_op) return CNML_STATUS_INVALIDPARAM;
  if (fusion_op->compiled) return CNML_STATUS_INVALIDARG;
  if (!validIoList(inputs, input_num) || !validIoList(outputs, output_num))
    return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    cnmlFusionOp& f = *fusion_op;
    f.io_inputs.clear();
    f.io_outputs.clear();
    f.in_strategy.clear();
    f.out_strategy.clear();
    f.in_transfer.clear();
    f.out_transfer.clear();
    for (int i = 0; i < input_num; ++i) {
      const TensorImpl& t = *inputs[i]->impl;
      f.io_inputs.push_back({t.id, t.dims, t.dtype});
      f.in_strategy.push_back(t.preprocess);
      f.in_transfer.push_back(t.transferType());
    }
    for (int i = 0; i < output_num; ++i) {
      const TensorImpl& t = *outputs[i]->impl;
      f.io_outputs.push_back({t.id, t.dims, t.dtype});
      f.out_strategy.push_back(t.preprocess);
      f.out_transfer.push_back(t.transferType());
    }
    f.inputs = f.io_inputs;
    f.outputs = f.io_outputs;
    f.io_set = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlSetFusionIO", [&](Call& c) {
    c.handle(fusion_op).tensors("inputs", inputs, input_num).value(input_num)
        .tensors("outputs", outputs, output_num).value(output_num);
  });
}

cnmlStatus_t cnmlCompileFusionOp(cnmlFusionOp_t fusion_op, cnmlCoreVersion_t version,
                                 int core_limit) {
  if (!fusion_op) return CNML_STATUS_INVALIDPARAM;
  cnmlStatus_t s = checkTarget(version, core_limit);
  if (s != CNML_STATUS_SUCCESS) return s;
  cnmlFusionOp& f = *fusion_op;
  if (f.compiled || !f.io_set || f.ops.empty()) return CNML_STATUS_INVALIDARG;
  for (const OpDesc& op : f.ops) {
    if (!constsBound(op)) return CNML_STATUS_INVALIDARG;
    s = checkPrecision(op);
    if (s != CNML_STATUS_SUCCESS) return s;
  }
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    // What a failed compile leaves, to retry: the ops as fused, before any cast renamed them.
    const bool casts = f.in_transfer != dtypesOf(f.inputs) || f.out_transfer != dtypesOf(f.outputs);
    std::vector<OpDesc> as_fused = casts ? f.ops : std::vector<OpDesc>();
    addEdgeCasts(f);
    cnmlStatus_t st = plan(f);
    if (st != CNML_STATUS_SUCCESS) {
      if (casts) f.ops = std::move(as_fused);
      f.inputs = f.io_inputs;
      f.outputs = f.io_outputs;
      return st;
    }
    f.threads = threadsFor(core_limit);
    f.deferred = preparationDeferred();
    if (f.deferred) {
      // What the caller lent may be freed once the compile returns.
      for (OpDesc& op : f.ops) ownBorrowedConsts(op);
    }
    std::vector<const OpDesc*> ops;
    for (const OpDesc& op : f.ops) ops.push_back(&op);
    std::vector<std::uint64_t> out_ids;
    for (const Operand& o : f.outputs) out_ids.push_back(o.id);
    f.timing = fusionOpTiming(ops, out_ids, core_limit);
    if (!f.deferred) prepareFusion(f);
    f.compiled = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCompileFusionOp", [&](Call& c) {
    c.handle(fusion_op).value(version).value(core_limit, "core_limit");
  });
}

cnmlStatus_t cnmlComputeFusionOpForward_V4(cnmlFusionOp_t fusion_op, cnmlTensor_t input_tensors[],
                                           void* inputs[], int input_num,
                                           cnmlTensor_t output_tensors[], void* outputs[],
                                           int output_num, cnrtQueue_t queue, void* extra) {
  if (!fusion_op) return CNML_STATUS_INVALIDPARAM;
  cnmlFusionOp& f = *fusion_op;
  if (!f.compiled) return CNML_STATUS_INVALIDARG;
  if (!queueAlive(queue)) return CNML_STATUS_INVALIDPARAM;
  cnmlStatus_t s = checkOperands(f.io_inputs, input_tensors, inputs, input_num, &f.in_strategy,
                                 &f.in_transfer);
  if (s != CNML_STATUS_SUCCESS) return s;
  s = checkOperands(f.io_outputs, output_tensors, outputs, output_num, &f.out_strategy,
                    &f.out_transfer);
  if (s != CNML_STATUS_SUCCESS) return s;
  Launch launch;
  s = checkInvokeParam(extra, f.timing, f.inputs, &launch);
  if (s != CNML_STATUS_SUCCESS) return s;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    auto resolve = [&](const Slot& slot) -> void* {
      switch (slot.kind) {
        case Slot::kInput: return inputs[slot.index];
        case Slot::kOutput: return outputs[slot.index];
        case Slot::kScratch: break;
      }
      if (f.scratch_unused[slot.index]) return nullptr;
      return f.arena.data() + f.scratch_offsets[slot.index];
    };
    std::vector<const void*> in;
    std::vector<void*> out;
    const std::lock_guard<std::mutex> turn(f.running);
    // A recording that skips compute only needs the calls, not the arithmetic.
    const bool computes = !call_log::skipsCompute();
    if (computes && f.deferred) prepareFusion(f);
    const std::size_t steps = computes ? f.prepared.size() : 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < steps; ++i) {
      in.clear();
      out.clear();
      for (const Slot& slot : f.in_slots[i]) in.push_back(resolve(slot));
      for (const Slot& slot : f.out_slots[i]) out.push_back(resolve(slot));
      if (!f.beside_next[i]) {
        execute(*f.prepared[i], in.data(), out.data());
        continue;
      }
      std::vector<const void*> in2;
      std::vector<void*> out2;
      for (const Slot& slot : f.in_slots[i + 1]) in2.push_back(resolve(slot));
      for (const Slot& slot : f.out_slots[i + 1]) out2.push_back(resolve(slot));
      std::exception_ptr failed[2];  // an exception must not leave the parallel region
#pragma omp parallel num_threads(2)
      {
        const int t = omp_get_thread_num();
        try {
          if (t == 0)
            execute(*f.prepared[i], in.data(), out.data());
          else
            execute(*f.prepared[i + 1], in2.data(), out2.data());
        } catch (...) {
          failed[t] = std::current_exception();
        }
      }
      for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
      ++i;
    }
    const std::chrono::duration<double, std::micro> wall =
        std::chrono::steady_clock::now() - start;
    advanceQueue(queue, backendTimesWallClock() ? wall.count() : f.timing.us(launch));
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlComputeFusionOpForward_V4", [&](Call& c) {
    c.handle(fusion_op)
        .forwardLists(input_tensors, inputs, input_num, output_tensors, outputs, output_num)
        .queue().invoke(extra);
  });
}

cnmlStatus_t cnmlMockFusionScratchBytes(cnmlFusionOp_t fusion_op, size_t* bytes) {
  if (!fusion_op || !bytes) return CNML_STATUS_INVALIDPARAM;
  if (!fusion_op->compiled) return CNML_STATUS_INVALIDARG;
  cnmlFusionOp& f = *fusion_op;
  return guarded(CNML_STATUS_BADALLOC, [&] {
    const std::lock_guard<std::mutex> turn(f.running);
    if (f.deferred) prepareFusion(f);
    *bytes = f.arena.size() * sizeof(float);
    return CNML_STATUS_SUCCESS;
  });
}

cnmlStatus_t cnmlDestroyFusionOp(cnmlFusionOp_t* fusion_op) {
  return destroyLogged("cnmlDestroyFusionOp", fusion_op);
}

}  // extern "C"
