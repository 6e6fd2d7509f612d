// Fusion ops: base ops deep-copied at cnmlFuseOp (the caller may destroy them right after),
// validated as a dataflow graph at compile, and run op by op at forward with intermediates
// in one scratch arena the fusion owns, where values not alive at the same step share bytes.
// One launch, so one device-model time for the whole.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include <cnml_mock.h>

#include "call_log.h"
#include "aligned_buffer.h"
#include "compile_check.h"
#include "executor.h"
#include "op_cost.h"
#include "workspace.h"

using namespace pz_mock;
using namespace pz_mock::call_log;  // logged(), destroyLogged(), Call

namespace {

// Where an operand's data lives at forward time.
struct Slot {
  enum Kind { kInput, kOutput, kScratch } kind;
  int index;  // into the forward's inputs / outputs, or the fusion's scratch values
};

}  // namespace

struct cnmlFusionOp {
  std::vector<OpDesc> ops;
  bool io_set = false;
  // The I/O as the ops see it: after compile, an MLU-priority input or output (data-
  // preprocess strategy) is its host form here, converted by a cast the SDK adds.
  std::vector<Operand> inputs, outputs;
  // The I/O as cnmlSetFusionIO was given it, each tensor's strategy then (-1: none) and the
  // dtype of the buffer a forward passes for it (TensorImpl::transferType).
  std::vector<Operand> io_inputs, io_outputs;
  std::vector<int> in_strategy, out_strategy;
  std::vector<cnmlDataType_t> in_transfer, out_transfer;
  // Once compiled: ops[input_casts, input_casts + fused_ops) are the caller's (fuse order),
  // the others the casts of MLU-priority I/O (addEdgeCasts).
  std::size_t input_casts = 0, fused_ops = 0;
  bool compiled = false;
  // One step per op, or per chain of ops the backend merges (backend.h).
  std::vector<std::unique_ptr<PreparedOp>> prepared;
  std::vector<std::vector<Slot>> in_slots, out_slots;  // per op, then per step
  // Scratch values: sizes in floats (enough for any dtype), then each one's offset in the
  // arena once the steps are known.
  std::vector<std::size_t> scratch_sizes, scratch_offsets;
  // Per scratch value: 1 when it passes between backend steps in the producer's own memory
  // only (backendSkipDense): its dense buffer takes no bytes, and the steps get null for it.
  std::vector<char> scratch_unused;
  // Per step: the backend's buffers it shares with other steps (BackendOp::Held), placed
  // in the arena beside the scratch values.
  std::vector<std::vector<BackendOp::Held>> held;
  AlignedBuffer arena;
  OpTiming timing;  // as cnmlBaseOp's
  // Per step: 1 when it runs beside the next one (two independent recurrent ops, the two
  // directions of a layer, each on one of the fusion's threads).
  std::vector<char> beside_next;
  std::vector<std::size_t> step_of;  // per op (fuse order): the step that runs it
  // Per op (fuse order): what computes it once compiled (implementationOf its step).
  std::shared_ptr<std::vector<std::string>> implementations =
      std::make_shared<std::vector<std::string>>();
  // Held while a forward runs: the arena and the steps' buffers (a backend's links between
  // them) serve one forward at a time, so sessions sharing the op take turns on it.
  std::mutex running;
};

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
  for (std::size_t k = 0; k < f.inputs.size(); ++k) {
    if (f.in_transfer[k] == f.inputs[k].dtype) continue;
    Operand converted = f.inputs[k];
    converted.id = newTensorId();
    rename(f.inputs[k].id, converted.id);
    f.inputs[k].dtype = f.in_transfer[k];
    front.push_back(cast(f.inputs[k], converted));
  }
  for (std::size_t k = 0; k < f.outputs.size(); ++k) {
    if (f.out_transfer[k] == f.outputs[k].dtype) continue;
    Operand produced = f.outputs[k];
    produced.id = newTensorId();
    rename(f.outputs[k].id, produced.id);
    f.outputs[k].dtype = f.out_transfer[k];
    back.push_back(cast(produced, f.outputs[k]));
  }
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

// How many op inputs read the scratch buffer `slot`.
int readers(const cnmlFusionOp& f, const Slot& slot) {
  int n = 0;
  for (const std::vector<Slot>& ins : f.in_slots)
    for (const Slot& s : ins) n += s.kind == slot.kind && s.index == slot.index;
  return n;
}

bool reads(const cnmlFusionOp& f, std::size_t op, const Slot& slot) {
  for (const Slot& s : f.in_slots[op])
    if (s.kind == slot.kind && s.index == slot.index) return true;
  return false;
}

// Whether op `op`'s inputs are computed by the time a step starting at op `first` and made
// of `members` runs: fusion inputs, values of ops before `first` or already run (`taken`),
// or of the step's own members.
bool readyAt(const cnmlFusionOp& f, std::size_t op, std::size_t first,
             const std::vector<std::size_t>& members, const std::vector<bool>& taken) {
  for (const Slot& in : f.in_slots[op]) {
    if (in.kind == Slot::kInput) continue;
    for (std::size_t p = 0; p < f.ops.size(); ++p) {
      bool writes = false;
      for (const Slot& o : f.out_slots[p]) writes |= o.kind == in.kind && o.index == in.index;
      if (!writes) continue;
      if (p >= first && !taken[p] &&
          std::find(members.begin(), members.end(), p) == members.end())
        return false;
    }
  }
  return true;
}

// A gate x * g(x) over `value` (SiLU: Sigmoid then Mul; HardSwish: three ops then Mul)
// whose g starts at op j: op j reads `value`, each of g's ops reads the only output of the
// one before, which nothing else reads, and the Mul reading `value` and g's output follows,
// next to g or later (TVM binds some Muls after another branch's ops; the step then runs
// it early, which its inputs allow). `length` 0: none.
struct Gate {
  std::size_t length = 0;  // g's ops
  std::size_t mul = 0;     // the Mul's index
};

Gate gateAt(const cnmlFusionOp& f, std::size_t j, const Slot& value) {
  if (!reads(f, j, value)) return {};
  for (std::size_t last = j; last < j + 3 && last < f.ops.size(); ++last) {
    const std::vector<Slot>& out = f.out_slots[last];
    if (out.size() != 1 || out[0].kind != Slot::kScratch || readers(f, out[0]) != 1) return {};
    for (std::size_t m = last + 1; m < f.ops.size(); ++m)
      if (reads(f, m, out[0])) {
        if (reads(f, m, value)) return {last + 1 - j, m};
        if (m != last + 1) return {};  // g's next op must follow it
        break;
      }
  }
  return {};
}

// Links the backend steps of a fusion as they are prepared, and frees the weights each
// step read once nothing will rebuild it. A value passed between backend steps only may stay
// in the backend's own layout: each reader links to the producer's inner memory
// (backendLink) when it is prepared, and once the last reader is (every op reading the value
// has its step), the producer skips the dense copy (backendSkipDense) and a last reader
// reading it once may overwrite it (backendWriteOver). Links and write-overs rebuild the
// reader, the step just prepared; skipping the dense copy may rebuild the producer (an int8
// one requantising for its readers: BackendOp::rebuiltAsProducer). So a step is final, and
// the consts bound with free_aftercompile that only final steps read are freed
// (releaseGiven), once its own inputs are linked and, if it may be rebuilt as a producer,
// every value it passes on has its last reader: a fusion of a whole network never holds
// the callers' plain weights beside all of its compiled ones.
class StepLinker {
 public:
  StepLinker(const cnmlFusionOp& f, const std::vector<std::unique_ptr<PreparedOp>>& steps,
             const std::vector<std::vector<Slot>>& in_slots,
             const std::vector<std::vector<Slot>>& out_slots, const std::vector<bool>& taken)
      : steps_(steps), in_slots_(in_slots), out_slots_(out_slots), taken_(taken),
        values_(f.scratch_sizes.size()), op_readers_(f.scratch_sizes.size()),
        dense_unused_(f.scratch_sizes.size(), 0), given_of_(f.ops.size()) {
    for (std::size_t op = 0; op < f.ops.size(); ++op) {
      for (const Slot& s : f.in_slots[op])
        if (s.kind == Slot::kScratch) op_readers_[s.index].push_back(op);
      // The callers' consts, before preparing the op replaces them by copies.
      for (const TensorRef& t : f.ops[op].consts)
        if (t && t->given) {
          given_of_[op].push_back(t);
          ++readers_left_[t];
        }
    }
  }

  // After the step at the back of `steps` (ops `members`, the first `used` of them) is
  // prepared.
  // Per scratch value: 1 when no step touches its dense buffer (backendSkipDense).
  const std::vector<char>& denseUnused() const { return dense_unused_; }

  void stepPrepared(const std::vector<std::size_t>& members, std::size_t used) {
    const std::size_t m = steps_.size() - 1;
    step_ops_.emplace_back(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(used));
    open_values_.push_back(0);
    linkInputs(m);
    for (std::size_t o = 0; o < out_slots_[m].size(); ++o) {
      const Slot& slot = out_slots_[m][o];
      if (slot.kind != Slot::kScratch || !steps_[m]->backend) continue;
      values_[slot.index] = {m, static_cast<int>(o), true, true};
      if (steps_[m]->backend->rebuiltAsProducer()) ++open_values_[m];
      if (readersTaken(slot.index)) close(slot.index, 0, 0);  // nothing reads it
    }
    finish(m);
  }

 private:
  struct Value {
    std::size_t producer = 0;
    int output = 0;
    bool tracked = false;     // a backend step's scratch output
    bool all_linked = true;   // every reader so far linked to it
  };

  // The step's inputs from earlier backend steps, in the producers' order (steps, then
  // outputs), as they were linked when the whole fusion was linked at once.
  void linkInputs(std::size_t m) {
    std::vector<std::pair<int, int>> reads;  // (scratch value, input)
    for (std::size_t i = 0; i < in_slots_[m].size(); ++i) {
      const Slot& in = in_slots_[m][i];
      if (in.kind == Slot::kScratch && values_[in.index].tracked)
        reads.emplace_back(in.index, static_cast<int>(i));
    }
    std::stable_sort(reads.begin(), reads.end(), [&](const auto& a, const auto& b) {
      const Value& x = values_[a.first];
      const Value& y = values_[b.first];
      return std::make_pair(x.producer, x.output) < std::make_pair(y.producer, y.output);
    });
    for (std::size_t r = 0; r < reads.size();) {
      const int value = reads[r].first;
      Value& v = values_[value];
      int count = 0, input = -1;
      for (; r < reads.size() && reads[r].first == value; ++r, ++count) {
        input = reads[r].second;
        v.all_linked = steps_[m]->backend &&
                       backendLink(*steps_[v.producer]->backend, v.output, *steps_[m]->backend,
                                   input) &&
                       v.all_linked;
      }
      if (readersTaken(value)) close(value, count, input);
    }
  }

  bool readersTaken(int value) const {
    for (std::size_t op : op_readers_[value])
      if (!taken_[op]) return false;
    return true;
  }

  // The value's last reader is prepared (the step just prepared, reading it `count` times,
  // the last at `input`).
  void close(int value, int count, int input) {
    Value& v = values_[value];
    BackendOp& producer = *steps_[v.producer]->backend;
    if (v.all_linked) {
      dense_unused_[value] = backendSkipDense(producer, v.output);
      // Steps run in order: the last one to read the value may overwrite it.
      if (count == 1)
        backendWriteOver(producer, v.output, *steps_.back()->backend, input);
    }
    v.tracked = false;
    if (producer.rebuiltAsProducer()) {
      --open_values_[v.producer];
      finish(v.producer);
    }
  }

  // Frees what only rebuilding step `k` needed, once it is final.
  void finish(std::size_t k) {
    if (open_values_[k] != 0 || done_.count(k)) return;
    done_.insert(k);
    if (steps_[k]->backend) steps_[k]->backend->dropRebuild();
    for (std::size_t op : step_ops_[k])
      for (const TensorRef& t : given_of_[op]) {
        auto left = readers_left_.find(t);
        if (left != readers_left_.end() && --left->second == 0) {
          releaseGiven(*t);
          readers_left_.erase(left);
        }
      }
  }

  const std::vector<std::unique_ptr<PreparedOp>>& steps_;
  const std::vector<std::vector<Slot>>& in_slots_;
  const std::vector<std::vector<Slot>>& out_slots_;
  const std::vector<bool>& taken_;
  std::vector<Value> values_;                          // per scratch value
  std::vector<std::vector<std::size_t>> op_readers_;   // per scratch value: ops reading it
  std::vector<char> dense_unused_;                     // per scratch value
  std::vector<std::vector<std::size_t>> step_ops_;     // per step: its ops
  std::vector<int> open_values_;                       // per step: outputs awaiting readers
  std::vector<std::vector<TensorRef>> given_of_;       // per op: its given consts
  std::map<TensorRef, int> readers_left_;              // per given const: ops not final
  std::set<std::size_t> done_;
};

// Prepares the steps: runs of ops that the backend merges (each reading the previous one's
// only output, a scratch buffer nothing else reads; or ops that gate it, x * g(x), where
// g's first op and the Mul read it) become one step, whose inputs are the first op's and
// then each later op's inputs that the step does not compute itself.
void prepareSteps(cnmlFusionOp& f, int threads) {
  std::vector<std::unique_ptr<PreparedOp>> steps;
  std::vector<std::vector<Slot>> in_slots, out_slots;
  std::vector<bool> taken(f.ops.size(), false);  // ops an earlier step ran ahead of order
  std::vector<std::size_t> step_of(f.ops.size(), 0);
  StepLinker links(f, steps, in_slots, out_slots, taken);
  for (std::size_t i = 0; i < f.ops.size(); ++i) {
    if (taken[i]) continue;
    // The weights of the ops this step may merge are read from the caller's buffers here
    // and dropped once prepared (the prepared step holds them as it computes with them), so
    // that a fusion of a whole network never holds a second plain copy of all its weights.
    ownBorrowedConsts(f.ops[i]);
    std::vector<std::size_t> members{i};
    std::vector<const OpDesc*> chain{&f.ops[i]};
    std::vector<Slot> ins = f.in_slots[i];
    std::vector<Slot> inside;  // values the chain computes and reads itself
    auto append = [&](std::size_t op) {
      members.push_back(op);
      chain.push_back(&f.ops[op]);
      for (const Slot& s : f.in_slots[op]) {
        bool computed = false;
        for (const Slot& v : inside) computed |= s.kind == v.kind && s.index == v.index;
        if (!computed) ins.push_back(s);
      }
    };
    // Where the chain may end (after an op, or after a whole gate): members and inputs.
    std::vector<std::pair<std::size_t, std::vector<Slot>>> ends;
    for (std::size_t j = i + 1; j < f.ops.size(); ++j) {
      if (taken[j]) continue;  // an earlier step ran it ahead of order
      const std::vector<Slot>& prev = f.out_slots[members.back()];
      if (prev.size() != 1 || prev[0].kind != Slot::kScratch) break;
      const int n = readers(f, prev[0]);
      const Gate gate = n == 2 ? gateAt(f, j, prev[0]) : Gate{};
      if (n != 1 && !gate.length) break;
      if (!gate.length) {
        // The value's one reader may come later: TVM's order puts another branch's ops
        // between a convolution and its ReLU (ShuffleNetV2). The step runs it early when
        // its other inputs are ready by then.
        std::size_t reader = j;
        while (reader < f.ops.size() && !reads(f, reader, prev[0])) ++reader;
        if (reader == f.ops.size() || taken[reader] ||
            !readyAt(f, reader, i, members, taken))
          break;
        j = reader;
      }
      ownBorrowedConsts(f.ops[j]);
      if (!backendCanAppend(chain, f.ops[j])) break;
      if (gate.length) {
        std::vector<const OpDesc*> longer = chain;
        bool merged = true;
        for (std::size_t k = j; k < j + gate.length && merged; ++k) {
          ownBorrowedConsts(f.ops[k + 1 < j + gate.length ? k + 1 : gate.mul]);
          longer.push_back(&f.ops[k]);
          merged = backendCanAppend(longer, f.ops[k + 1 < j + gate.length ? k + 1 : gate.mul]);
        }
        if (!merged) break;
      }
      inside.push_back(prev[0]);
      append(j);
      if (gate.length) {
        for (std::size_t k = 1; k < gate.length; ++k) {  // g's other ops
          inside.push_back(f.out_slots[j][0]);
          append(++j);
        }
        inside.push_back(f.out_slots[j][0]);
        append(gate.mul);
      }
      ends.emplace_back(members.size(), ins);
      if (gate.length && gate.mul != j + 1) break;  // a Mul run early ends the step
      j = members.back();
    }
    // The backend may decline a chain after all (a slow kernel for that set of post-ops):
    // then shorter ones, down to op i alone.
    std::unique_ptr<PreparedOp> step;
    std::size_t used = 1;
    for (auto end = ends.rbegin(); end != ends.rend() && !step; ++end) {
      const std::vector<const OpDesc*> prefix(chain.begin(), chain.begin() + end->first);
      step = prepareChain(prefix, threads);
      if (step) {
        used = end->first;
        ins = end->second;
      }
    }
    if (!step) {
      ins = f.in_slots[i];
      step = prepare(f.ops[i], threads);
    }
    for (std::size_t k = 0; k < used; ++k) {
      taken[members[k]] = true;
      step_of[members[k]] = steps.size();
      stripConstData(f.ops[members[k]]);
    }
    steps.push_back(std::move(step));
    in_slots.push_back(std::move(ins));
    out_slots.push_back(f.out_slots[members[used - 1]]);
    links.stepPrepared(members, used);
  }
  f.scratch_unused = links.denseUnused();
  f.step_of = std::move(step_of);
  f.prepared = std::move(steps);
  f.in_slots = std::move(in_slots);
  f.out_slots = std::move(out_slots);
  f.held.assign(f.prepared.size(), {});
  for (std::size_t k = 0; k < f.prepared.size(); ++k)
    if (f.prepared[k]->backend) f.held[k] = f.prepared[k]->backend->settleInFusion();
}

// Also fills what computes each op (cnmlMockOpImplementation).
// A recurrent op runs on one thread at small sizes (executor.cpp: a barrier per time step
// costs more than the step); two of them that do not read each other, the directions of a
// bidirectional layer, then run side by side when the fusion has two threads or more, as
// onnxruntime runs its directions (the LSTM export: two oneDNN primitives of 0.14 ms each).
void pairRecurrentSteps(cnmlFusionOp& f, int threads) {
  f.beside_next.assign(f.prepared.size(), 0);
  if (threads < 2) return;
  auto alone = [&f](std::size_t k) {
    const PreparedOp& op = *f.prepared[k];
    return op.backend && op.threads == 1 && op.desc.kind == OpKind::kRnn;
  };
  for (std::size_t k = 0; k + 1 < f.prepared.size(); ++k) {
    if (!alone(k) || !alone(k + 1)) continue;
    bool reads = false;
    for (const Slot& out : f.out_slots[k])
      for (const Slot& in : f.in_slots[k + 1])
        reads = reads || (out.kind == in.kind && out.index == in.index);
    if (reads) continue;
    f.beside_next[k] = 1;
    ++k;
  }
  f.implementations->clear();
  // The caller's ops only (fuse order, cnmlBaseOp::fused_index), after the input casts.
  for (std::size_t i = f.input_casts; i < f.input_casts + f.fused_ops; ++i) {
    const std::size_t k = f.step_of[i];
    std::string text = implementationOf(*f.prepared[k]);
    if (f.beside_next[k] || (k > 0 && f.beside_next[k - 1])) text += ", two ops side by side";
    f.implementations->push_back(text);
  }
}

// Places the scratch values the steps pass in one arena, with the backend's buffers that
// steps share (BackendOp::Held): a value lives from the step that writes it to the last step
// that reads it, a held buffer from the first step using it to the last (two steps run side
// by side count as one), and what is alive at the same time never shares bytes; largest
// first, each at the lowest offset that fits (greedy by size, as the session's own plan).
// Values a merged step computes and reads itself take no bytes, nor those the steps pass in
// the backend's buffers only.
void placeScratch(cnmlFusionOp& f) {
  const std::size_t n = f.scratch_sizes.size();
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  // Scratch values, then held buffers: sizes in floats, each on whole 64-byte lines
  // (kernels load them so).
  std::vector<std::size_t> size(n), first(n, kNone), last(n, 0);
  for (std::size_t i = 0; i < n; ++i) size[i] = lineFloats(f.scratch_sizes[i]);
  std::map<const void*, std::size_t> held_index;
  std::vector<std::pair<const void*, std::vector<std::size_t>>> held;  // id, steps using it
  auto lives = [&](std::size_t i, std::size_t time) {
    first[i] = std::min(first[i], time);
    last[i] = std::max(last[i], time);
  };
  std::size_t time = 0;
  for (std::size_t k = 0; k < f.prepared.size(); ++k) {
    for (const Slot& s : f.in_slots[k])
      if (s.kind == Slot::kScratch) last[s.index] = std::max(last[s.index], time);
    for (const Slot& s : f.out_slots[k])
      if (s.kind == Slot::kScratch) lives(s.index, time);
    for (const BackendOp::Held& h : f.held[k]) {
      auto [it, added] = held_index.emplace(h.id, size.size());
      if (added) {
        size.push_back(0);
        first.push_back(kNone);
        last.push_back(0);
        held.emplace_back(h.id, std::vector<std::size_t>{});
      }
      size[it->second] = std::max(size[it->second], lineFloats((h.bytes + 3) / 4));
      lives(it->second, time);
      held[it->second - n].second.push_back(k);
    }
    if (!f.beside_next[k]) ++time;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (f.scratch_unused[i]) first[i] = kNone;
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < size.size(); ++i)
    if (first[i] != kNone) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return size[a] > size[b]; });
  std::vector<std::size_t> offsets(size.size(), 0), placed;
  std::size_t end = 0;
  for (std::size_t i : order) {
    std::vector<std::pair<std::size_t, std::size_t>> busy;
    for (std::size_t j : placed)
      if (first[j] <= last[i] && first[i] <= last[j])
        busy.emplace_back(offsets[j], offsets[j] + size[j]);
    std::sort(busy.begin(), busy.end());
    std::size_t offset = 0;
    for (const auto& [start, stop] : busy) {
      if (start >= offset + size[i]) break;
      offset = std::max(offset, stop);
    }
    offsets[i] = offset;
    end = std::max(end, offset + size[i]);
    placed.push_back(i);
  }
  f.scratch_offsets.assign(offsets.begin(), offsets.begin() + static_cast<std::ptrdiff_t>(n));
  f.arena.resize(end);
  for (std::size_t h = 0; h < held.size(); ++h)
    for (std::size_t k : held[h].second)
      f.prepared[k]->backend->placeHeld(held[h].first, f.arena.data() + offsets[n + h]);
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
    int threads = threadsFor(core_limit);
    prepareSteps(f, threads);
    pairRecurrentSteps(f, threads);
    placeScratch(f);
    std::vector<const OpDesc*> ops;
    for (const OpDesc& op : f.ops) ops.push_back(&op);
    std::vector<std::uint64_t> out_ids;
    for (const Operand& o : f.outputs) out_ids.push_back(o.id);
    f.timing = fusionOpTiming(ops, out_ids, core_limit);
    // The prepared steps hold the weights as they compute with them (shared, packed or the
    // backend's): the fused ops' list keeps their metadata only.
    for (OpDesc& op : f.ops) stripConstData(op);
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
    const std::size_t steps = call_log::skipsCompute() ? 0 : f.prepared.size();
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
    c.handle(fusion_op).tensors("inputs", input_tensors, input_num)
        .buffers("in_data", inputs, input_tensors, input_num).value(input_num)
        .tensors("outputs", output_tensors, output_num)
        .buffers("out_data", outputs, output_tensors, output_num).value(output_num).queue()
        .invoke(extra);
  });
}

cnmlStatus_t cnmlMockFusionScratchBytes(cnmlFusionOp_t fusion_op, size_t* bytes) {
  if (!fusion_op || !bytes) return CNML_STATUS_INVALIDPARAM;
  if (!fusion_op->compiled) return CNML_STATUS_INVALIDARG;
  *bytes = fusion_op->arena.size() * sizeof(float);
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlDestroyFusionOp(cnmlFusionOp_t* fusion_op) {
  return destroyLogged("cnmlDestroyFusionOp", fusion_op);
}

}  // extern "C"
