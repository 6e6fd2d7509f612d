// The fusion compile's steps: which ops the backend merges into one step, which run side by
// side, and where the values they pass live in the fusion's scratch arena.
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include "fusion_op.h"

namespace pz_sdk {
namespace {

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

}  // namespace

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

void prepareFusion(cnmlFusionOp& f) {
  prepareSteps(f, f.threads);
  pairRecurrentSteps(f, f.threads);
  placeScratch(f);
  // The prepared steps hold the weights as they compute with them (shared, packed or the
  // backend's): the fused ops' list keeps their metadata only.
  for (OpDesc& op : f.ops) stripConstData(op);
  f.deferred = false;
}

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

}  // namespace pz_sdk
