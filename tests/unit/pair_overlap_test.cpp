// Paired chunks (parallel.ep_overlap; replay/driver_pairs.cpp): a forward and a backward chunk run as one pair, the
// GPU computing one while the other's all-to-alls are in flight. Replayed on tiny-moe (tp 2, pp 2, dp 4, ep 4 on 16
// A100) under DualPipe (4 microbatches, 2 each way) and interleaved 1F1B (vpp 2, 8 microbatches), with and without
// the pairs, each run its own process.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::dtsim_binary;
using dtsim::test::rel_diff;

const std::string kDualPipe = " --set parallel.pp=2 --set schedule=dualpipe --set parallel.pp_overlap=true";

double part_sum(const nlohmann::json& b)
{
  double sum = 0;
  for (const char* k : {"compute_s", "exposed_tp_comm_s", "exposed_pp_comm_s", "exposed_dp_comm_s", "exposed_ep_comm_s",
                        "exposed_cp_comm_s", "bubble_s", "optimizer_s"})
    sum += b.at(k).get<double>();
  // present where the stack has one, and where the step's small all-reduces cost anything
  return sum + b.value("stack_overhead_s", 0.0) + b.value("step_collectives_s", 0.0);
}

// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): interleaved 1F1B's steady-state pairs, with
// Megatron-LM's blocking pipeline exchanges; off unless asked for.
const std::string kInterleaved = " --set parallel.pp=2 --set schedule=interleaved-1f1b --set parallel.vpp=2"
                                 " --set training.global_batch=128";

void check_pairs_hide_all_to_alls(const std::string& schedule, const std::string& on, const std::string& off)
{
  auto paired = dtsim::test::run_json("scenarios/tiny-moe.yaml", schedule + on);
  auto apart = dtsim::test::run_json("scenarios/tiny-moe.yaml", schedule + off);
  ASSERT_TRUE(paired.contains("breakdown") && apart.contains("breakdown"));
  const double tp = paired.at("step_time_s"), ta = apart.at("step_time_s");
  const auto &bp = paired.at("breakdown"), &ba = apart.at("breakdown");
  std::printf("[pairs] tiny-moe%s: paired %.9g s (exposed TP %.3g, EP %.3g), apart %.9g s (TP %.3g, EP %.3g)\n",
              schedule.c_str(), tp,
              bp.at("exposed_tp_comm_s").get<double>(), bp.at("exposed_ep_comm_s").get<double>(), ta,
              ba.at("exposed_tp_comm_s").get<double>(), ba.at("exposed_ep_comm_s").get<double>());
  // The parts of the step still add up to it, once the collectives hidden under the other lane are not booked.
  EXPECT_LT(rel_diff(part_sum(bp), tp), 1e-9);
  EXPECT_LT(rel_diff(part_sum(ba), ta), 1e-9);
  // Hidden all-to-alls: less of them exposed, a shorter step; the TP collectives stay in their chunk's compute
  // stream, exposed as much as apart.
  EXPECT_LT(bp.at("exposed_ep_comm_s").get<double>(), 0.8 * ba.at("exposed_ep_comm_s").get<double>());
  EXPECT_LT(rel_diff(bp.at("exposed_tp_comm_s").get<double>(), ba.at("exposed_tp_comm_s").get<double>()), 0.05);
  EXPECT_LT(tp, ta);
  // It cannot hide more than was exposed (all-to-alls and the pair's waits), and the all-to-all's 20 SMs (of the
  // A100's 108) slow the kernels beside it by at most 108 / 88: compute grows, by no more than that.
  const double exposed_comm = ba.at("exposed_ep_comm_s").get<double>() + ba.at("exposed_pp_comm_s").get<double>() +
                              ba.at("bubble_s").get<double>();
  EXPECT_GT(tp, ta - exposed_comm);
  const double ca = ba.at("compute_s").get<double>(), cp = bp.at("compute_s").get<double>();
  EXPECT_GE(cp, ca * (1 - 1e-12));
  EXPECT_LE(cp, ca * 108.0 / 88.0);
  // Memory is the schedule's: the pairs change when work runs, not what is held.
  EXPECT_EQ(paired.at("memory").dump(), apart.at("memory").dump());
}

TEST(PairedChunks, DualPipeHidesAllToAlls)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  check_pairs_hide_all_to_alls(kDualPipe, "", " --set parallel.ep_overlap=false");
}

TEST(PairedChunks, MegatronCombinedOneFOneBHidesAllToAlls)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  check_pairs_hide_all_to_alls(kInterleaved, " --set parallel.ep_overlap=true", "");
}

// The pairs replay the same with every device as folded, with ZeRO-3's parameter gathers (each lane waits for its own)
// as without, and under interleaved 1F1B with blocking and with asynchronous pipeline transfers.
TEST(PairedChunks, FoldedEqualsFull)
{
  if (dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string& more : {kDualPipe, kDualPipe + " --set parallel.zero=3",
                                  kInterleaved + " --set parallel.ep_overlap=true",
                                  kInterleaved + " --set parallel.ep_overlap=true --set parallel.pp_overlap=true"}) {
    auto folded = dtsim::test::run_json("scenarios/tiny-moe.yaml", more);
    auto full = dtsim::test::run_json("scenarios/tiny-moe.yaml", more + " --set simulation.fidelity=full");
    auto apart = dtsim::test::run_json("scenarios/tiny-moe.yaml", more + " --set parallel.ep_overlap=false");
    const double a = folded.at("step_time_s"), b = full.at("step_time_s"), c = apart.at("step_time_s");
    std::printf("[pairs]%s folded %.12g s, full %.12g s; apart %.12g s\n", more.c_str(), a, b, c);
    EXPECT_LT(rel_diff(a, b), 1e-9) << more;
    EXPECT_LT(rel_diff(part_sum(folded.at("breakdown")), a), 1e-9) << more;
    EXPECT_LT(a, c) << more;
  }
}

}  // namespace
