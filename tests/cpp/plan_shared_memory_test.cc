// SPDX-License-Identifier: Apache-2.0
/// \file cuda-plan-shared-memory with cuda-insert-barriers: buffers never live together
/// share bytes, buffers live together never do, and every reuse of bytes is ordered by a
/// barrier (or, for cp.async targets, by a wait for all copies and a barrier).
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "tl/ir/functor.h"
#include "tl/ir/printer.h"
#include "tl/transform/passes.h"

namespace {

using namespace tl::ir;  // NOLINT
using tl::transform::PassContext;
using tl::transform::RunPass;

constexpr int64_t kThreads = 128;
const std::map<std::string, Expr> kPartitioned = {{"tl.thread_partitioned", MakeInt(1)}};

class PlanTest : public ::testing::Test {
 protected:
  VarRef tx = Var::Make("tx");
  Buffer global = BufferNode::Make("G", DType::Float(32), {MakeInt(1 << 16)}, Scope::kGlobal);

  static Buffer Shared(const std::string& name, int64_t floats) {
    return BufferNode::Make(name, DType::Float(32), {MakeInt(floats)}, Scope::kShared);
  }

  /// One thread-partitioned loop: dst[i] = sum of srcs[i] (dst or srcs may be global).
  Stmt Step(const Buffer& dst, const std::vector<Buffer>& srcs, int64_t n = 1024) {
    VarRef it = Var::Make("it");
    Expr i = it * MakeInt(kThreads) + tx;
    Expr value = MakeFloat(1.0);
    for (const Buffer& s : srcs) value = value + BufferLoad::Make(s, {i});
    return For::Make(it, MakeInt(0), MakeInt(n / kThreads), ForKind::kUnrolled, BufferStore::Make(dst, {i}, value),
                     kPartitioned);
  }
  /// cp.async of 4 floats per thread into `dst`.
  Stmt AsyncCopy(const Buffer& dst) {
    auto addr = [&](const Buffer& b) {
      return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, {tx * MakeInt(4)})});
    };
    return Evaluate::Make(
        Call::Make(DType::Void(), "cp_async", {addr(dst), addr(global), MakeInt(16), MakeBool(true)}));
  }
  static Stmt Intrinsic(const std::string& name, std::vector<Expr> args = {}) {
    return Evaluate::Make(Call::Make(DType::Void(), name, std::move(args)));
  }
  Stmt Loop(std::vector<Stmt> body, int64_t n = 4) {
    return For::Make(Var::Make("k"), MakeInt(0), MakeInt(n), ForKind::kSerial, Seq::Make(std::move(body)));
  }

  /// Plans and inserts barriers in a kernel allocating `buffers`, then running `body`.
  PrimFunc Lower(const std::vector<Buffer>& buffers, const std::vector<Stmt>& body) {
    std::vector<Stmt> stmts;
    for (const Buffer& b : buffers) stmts.push_back(Allocate::Make(b));
    stmts.insert(stmts.end(), body.begin(), body.end());
    Stmt bound = For::Make(tx, MakeInt(0), MakeInt(kThreads), ForKind::kThreadBinding, Seq::Make(stmts));
    Stmt kernel = KernelLaunch::Make({MakeInt(1)}, {Var::Make("bx")}, {kThreads}, bound);
    PrimFunc f = PrimFuncNode::Make("k", {Param{global, nullptr}}, kernel);
    f = RunPass("cuda-plan-shared-memory", f, ctx);
    return RunPass("cuda-insert-barriers", f, ctx);
  }

  PassContext ctx;
};

/// Planned offsets by buffer name (from the tl.shared_offset attributes).
std::map<std::string, int64_t> Offsets(const PrimFunc& f) {
  std::map<std::string, int64_t> out;
  struct V : IRVisitor {
    std::map<std::string, int64_t>* out;
    void Visit_(const Seq* op) override {
      for (size_t i = 0; i + 1 < op->stmts.size(); ++i) {
        const auto* attr = As<AttrStmt>(op->stmts[i]);
        const auto* alloc = As<Allocate>(op->stmts[i + 1]);
        int64_t v = 0;
        if (attr && attr->key == "tl.shared_offset" && alloc && AsConstInt(attr->values[0], &v)) {
          (*out)[alloc->buffer->name] = v;
        }
      }
      IRVisitor::Visit_(op);
    }
  } v;
  v.out = &out;
  v.Visit(f->body);
  return out;
}

/// The kernel's top-level statements as tags: "|" for a barrier, "wait" for
/// cp_async_wait(0), else the shared accesses ("w:X r:Y a:Z", a = cp.async write).
std::vector<std::string> Tags(const PrimFunc& f) {
  const auto* launch = As<KernelLaunch>(f->body);
  const auto* bound = As<For>(launch->body);
  std::vector<Stmt> stmts = As<Seq>(bound->body)->stmts;
  std::vector<std::string> tags;
  for (const Stmt& s : stmts) {
    if (As<Allocate>(s) || As<AttrStmt>(s)) continue;
    const auto* ev = As<Evaluate>(s);
    const auto* call = ev ? As<Call>(ev->value) : nullptr;
    if (call && call->op == "syncthreads") {
      tags.push_back("|");
      continue;
    }
    if (call && call->op == "cp_async_wait") {
      tags.push_back("wait");
      continue;
    }
    struct Acc : IRVisitor {
      std::set<std::string> seen;
      void Visit_(const BufferStore* op) override {
        if (op->buffer->scope == Scope::kShared) seen.insert("w:" + op->buffer->name);
        IRVisitor::Visit_(op);
      }
      void Visit_(const BufferLoad* op) override {
        if (op->buffer->scope == Scope::kShared) seen.insert("r:" + op->buffer->name);
        IRVisitor::Visit_(op);
      }
      void Visit_(const Call* op) override {
        if (op->op == "cp_async") {
          seen.insert("a:" + As<BufferLoad>(As<Call>(op->args[0])->args[0])->buffer->name);
          return;
        }
        IRVisitor::Visit_(op);
      }
    } acc;
    acc.Visit(s);
    std::string tag;
    for (const std::string& a : acc.seen) tag += (tag.empty() ? "" : " ") + a;
    tags.push_back(tag.empty() ? "-" : tag);
  }
  return tags;
}

std::string Join(const std::vector<std::string>& tags) {
  std::string s;
  for (const std::string& t : tags) s += (s.empty() ? "" : ", ") + t;
  return s;
}

TEST_F(PlanTest, DisjointPhasesShareBytesWithABarrierBetween) {
  Buffer x = Shared("X", 4096), y = Shared("Y", 4096);
  PrimFunc f = Lower({x, y}, {Step(x, {}), Step(global, {x}), Step(y, {}), Step(global, {y})});
  auto off = Offsets(f);
  EXPECT_EQ(off["X"], 0);
  EXPECT_EQ(off["Y"], 0);
  // The barrier after the last read of X orders it before the first write of Y.
  EXPECT_EQ(Join(Tags(f)), "w:X, |, r:X, |, w:Y, |, r:Y");
  ASSERT_EQ(ctx.remarks.size(), 1u);
  EXPECT_EQ(ctx.remarks[0],
            "shared memory: 16384 bytes instead of 32768 (16384 saved by reusing the bytes of dead buffers: Y over X)");
}

TEST_F(PlanTest, BuffersLiveTogetherNeverOverlap) {
  Buffer x = Shared("X", 1024), y = Shared("Y", 2048), z = Shared("Z", 2048);
  PrimFunc f = Lower({x, y, z}, {Step(x, {}), Step(y, {}), Step(global, {x, y}), Step(z, {}), Step(global, {z})});
  auto off = Offsets(f);
  // X (4 KiB) and Y (8 KiB) are read together; Z comes after both and takes Y's bytes.
  EXPECT_TRUE(off["X"] >= off["Y"] + 8192 || off["Y"] >= off["X"] + 4096) << off["X"] << " " << off["Y"];
  EXPECT_EQ(off["Z"], off["Y"]);
  EXPECT_EQ(Join(Tags(f)), "w:X, w:Y, |, r:X r:Y, |, w:Z, |, r:Z");
}

TEST_F(PlanTest, NoReuseKeepsTheDeclarationOrderLayout) {
  Buffer x = Shared("X", 1000), y = Shared("Y", 4096);
  PrimFunc f = Lower({x, y}, {Step(x, {}, 896), Step(y, {}), Step(global, {x, y})});
  auto off = Offsets(f);
  EXPECT_EQ(off["X"], 0);
  EXPECT_EQ(off["Y"], 4096);  // 4000 bytes, rounded up to 128
  EXPECT_TRUE(ctx.remarks.empty());
}

TEST_F(PlanTest, ATouchInALoopKeepsTheBufferLiveForTheWholeLoop) {
  Buffer x = Shared("X", 4096), y = Shared("Y", 4096);
  // Y's bytes would be X's again in the next iteration: no reuse inside one loop.
  PrimFunc f = Lower({x, y}, {Loop({Step(x, {}), Step(global, {x}), Step(y, {}), Step(global, {y})})});
  auto off = Offsets(f);
  EXPECT_NE(off["X"], off["Y"]);
  EXPECT_TRUE(ctx.remarks.empty());
}

TEST_F(PlanTest, CpAsyncTargetIsLiveUntilAWaitForAllCopies) {
  Buffer x = Shared("X", 4096), y = Shared("Y", 4096);
  auto pipeline = [&] {
    return Loop({Intrinsic("cp_async_wait", {MakeInt(0)}), Intrinsic("syncthreads"), AsyncCopy(x),
                 Intrinsic("cp_async_commit"), Step(global, {x})});
  };
  // Without a wait for all copies after the loop, X may still be written: Y keeps apart.
  PrimFunc apart = Lower({x, y}, {pipeline(), Step(y, {}), Step(global, {y})});
  EXPECT_NE(Offsets(apart)["X"], Offsets(apart)["Y"]);
  // After cp_async_wait(0), Y reuses X's bytes, behind a barrier (other threads' copies).
  PrimFunc reused =
      Lower({x, y}, {pipeline(), Intrinsic("cp_async_wait", {MakeInt(0)}), Step(y, {}), Step(global, {y})});
  EXPECT_EQ(Offsets(reused)["X"], Offsets(reused)["Y"]);
  EXPECT_EQ(Join(Tags(reused)), "a:X r:X, wait, |, w:Y, |, r:Y");
}

TEST_F(PlanTest, AsyncCopyIntoReusedBytesWaitsForTheLastReads) {
  Buffer x = Shared("X", 4096), y = Shared("Y", 4096);
  PrimFunc f = Lower({y, x}, {Step(y, {}), Step(global, {y}), AsyncCopy(x), Intrinsic("cp_async_commit"),
                              Intrinsic("cp_async_wait", {MakeInt(0)}), Intrinsic("syncthreads"), Step(global, {x})});
  EXPECT_EQ(Offsets(f)["X"], Offsets(f)["Y"]);
  // cp.async into X is not ordered by the pipeline against Y: the barrier goes in front.
  EXPECT_EQ(Join(Tags(f)), "w:Y, |, r:Y, |, a:X, -, wait, |, r:X");
}

TEST_F(PlanTest, ABranchOnTheThreadIndexIsOneUnit) {
  Buffer x = Shared("X", 128), y = Shared("Y", 128);
  // No barrier can go between the two stores under `tx < 64`, so X and Y stay apart.
  Stmt branch = IfThenElse::Make(LT(tx, MakeInt(64)),
                                 Seq::Make({BufferStore::Make(global, {tx}, BufferLoad::Make(x, {tx})),
                                            BufferStore::Make(y, {tx}, MakeFloat(0.0))}));
  PrimFunc f = Lower({x, y}, {Step(x, {}, 128), branch, Step(global, {y}, 128)});
  EXPECT_NE(Offsets(f)["X"], Offsets(f)["Y"]);
}

// Random straight-line kernels: overlapping bytes imply disjoint lifetimes, every write
// into reused bytes is behind a barrier, and the arena is never larger than without reuse.
TEST_F(PlanTest, RandomKernelsReuseSafely) {
  std::mt19937 rng(7);
  int reused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    int nbuf = 2 + static_cast<int>(rng() % 5);
    std::vector<Buffer> bufs;
    int64_t in_order = 0;  // sizes are multiples of 512 bytes: no alignment padding
    for (int i = 0; i < nbuf; ++i) {
      int64_t n = 128 * (1 + static_cast<int64_t>(rng() % 8));
      bufs.push_back(Shared("B" + std::to_string(i), n));
      in_order += n * 4;
    }
    std::vector<Stmt> body;
    int nsteps = 3 + static_cast<int>(rng() % 8);
    for (int s = 0; s < nsteps; ++s) {
      const Buffer& dst = bufs[rng() % nbuf];
      std::vector<Buffer> srcs;
      for (const Buffer& b : bufs) {
        if (rng() % 3 == 0) srcs.push_back(b);
      }
      body.push_back(Step(rng() % 4 == 0 ? global : dst, srcs, 128));
    }
    ctx = PassContext{};
    PrimFunc f = Lower(bufs, body);
    reused += !ctx.remarks.empty();
    auto off = Offsets(f);
    auto tags = Tags(f);
    // Lifetimes in tag positions.
    std::map<std::string, std::pair<int, int>> live;
    for (int p = 0; p < static_cast<int>(tags.size()); ++p) {
      for (const Buffer& b : bufs) {
        if (tags[p].find(":" + b->name) == std::string::npos) continue;
        auto it = live.emplace(b->name, std::make_pair(p, p)).first;
        it->second.second = p;
      }
    }
    int64_t peak = 0;
    for (const Buffer& a : bufs) {
      int64_t na = 0;
      AsConstInt(a->shape[0], &na);
      peak = std::max(peak, off[a->name] + na * 4);
      for (const Buffer& b : bufs) {
        int64_t nb = 0;
        AsConstInt(b->shape[0], &nb);
        bool bytes = a != b && off[a->name] < off[b->name] + nb * 4 && off[b->name] < off[a->name] + na * 4;
        if (!bytes || !live.count(a->name) || !live.count(b->name)) continue;
        auto la = live[a->name], lb = live[b->name];
        ASSERT_TRUE(la.second < lb.first || lb.second < la.first)
            << a->name << " and " << b->name << " overlap while live";
        if (la.second > lb.first) continue;
        // Reading bytes another buffer left is harmless; writing them needs every
        // thread's accesses to the old owner done first.
        bool barrier = false;
        for (int p = la.second + 1; p < static_cast<int>(tags.size()); ++p) {
          if (tags[p].find("w:" + b->name) != std::string::npos) {
            ASSERT_TRUE(barrier) << "no barrier between " << a->name << " and " << b->name << ": "
                                 << Join(tags);
            break;
          }
          barrier |= tags[p] == "|";
        }
      }
    }
    EXPECT_LE(peak, in_order);
  }
  EXPECT_GT(reused, 50);  // the property is not checked vacuously
}

}  // namespace
