// The closing sentences of `dtsim compare` (app/compare_verdict.hpp) on hand-made sides: which side is fastest, by
// how much each other side is slower, and the term that decides it. No simulation runs here.
#include <gtest/gtest.h>

#include "app/compare_verdict.hpp"

namespace {

using dtsim::app::CompareSide;
using dtsim::app::verdict;

// A side with the given terms: compute, exposed communication, weight streaming, bubble, optimizer, overhead,
// waiting for slower devices (those left out are 0).
CompareSide side(const std::string& name, std::vector<double> terms)
{
  CompareSide s;
  s.name = name;
  s.simulated = true;
  terms.resize(dtsim::app::kTerms, 0.0);
  s.terms = terms;
  for (double t : terms)
    s.step_s += t;
  return s;
}

TEST(CompareVerdict, TermsGroupTheBreakdown)
{
  // A wafer's breakdown as its record holds it (no EP or CP term: it counts 0).
  const nlohmann::ordered_json b{{"compute_s", 1.0},         {"exposed_tp_comm_s", 0.1},
                                 {"exposed_pp_comm_s", 0.2}, {"exposed_dp_comm_s", 0.3},
                                 {"exposed_fabric_s", 0.4},  {"exposed_weight_streaming_s", 0.5},
                                 {"bubble_s", 0.6},          {"optimizer_s", 0.7},
                                 {"stack_overhead_s", 0.8},  {"straggler_s", 0.9}};
  auto t = dtsim::app::compare_terms(b);
  ASSERT_EQ(t.size(), size_t(dtsim::app::kTerms));
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermCompute], 1);
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermCommunication], 0.1 + 0.2 + 0.3 + 0.4);
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermStreaming], 0.5);
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermBubble], 0.6);
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermOptimizer], 0.7);
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermOverhead], 0.8);
  // With variability, the wait for slower devices is a term of its own: the terms still add up to the step (they
  // fell short of it by that wait, 1.13 s of 47.05 s on llama3-70b-h100 with device_spread 0.015).
  EXPECT_DOUBLE_EQ(t[dtsim::app::kTermStraggler], 0.9);
  double sum = 0;
  for (double x : t)
    sum += x;
  EXPECT_DOUBLE_EQ(sum, 1 + 0.1 + 0.2 + 0.3 + 0.4 + 0.5 + 0.6 + 0.7 + 0.8 + 0.9);
}

TEST(CompareVerdict, FastestAndDecidingTerm)
{
  // GPU: 2 s (1.5 compute, 0.3 communication, 0.2 bubble). Wafer: 10 s (9 compute, 0.5 streaming, 0.5 optimizer).
  // The wafer takes 5 times as long; compute differs by 7.5 s of the 8 s gap (94%).
  auto v = verdict({side("wafer", {9, 0, 0.5, 0, 0.5, 0}), side("gpu", {1.5, 0.3, 0, 0.2, 0, 0})});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], "Fastest: gpu, 2.000 s per step.");
  EXPECT_EQ(v[1], "wafer takes 5.00 times as long (10.000 s); the term that decides it is compute: 9.000 s against "
                  "1.500 s (94% of the difference).");
}

TEST(CompareVerdict, CommunicationCanDecide)
{
  // Equal compute; b waits 0.9 s longer on communication: 1.45 times as long, decided by exposed communication.
  auto v = verdict({side("a", {1, 0.1, 0, 0.9, 0, 0}), side("b", {1, 1.0, 0, 0.9, 0, 0})});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0], "Fastest: a, 2.000 s per step.");
  EXPECT_EQ(v[1], "b takes 1.45 times as long (2.900 s); the term that decides it is exposed communication: 1.000 s "
                  "against 0.100 s (100% of the difference).");
}

TEST(CompareVerdict, WaitingForSlowerDevicesCanDecide)
{
  // Equal work; b's devices vary (a larger cluster waits longer for its slowest): 0.5 s of waiting decides it.
  auto v = verdict({side("a", {2, 0.1, 0, 0.4, 0, 0, 0.1}), side("b", {2, 0.1, 0, 0.4, 0, 0, 0.6})});
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1], "b takes 1.19 times as long (3.100 s); the term that decides it is waiting for slower devices: "
                  "0.600 s against 0.100 s (100% of the difference).");
}

TEST(CompareVerdict, SmallGapsReadAsPercentages)
{
  // 1.05 times as long reads "5.0% longer"; 1.10 times reads "1.10 times as long".
  auto v = verdict({side("a", {1, 0, 0, 0, 0, 0}), side("b", {1.05, 0, 0, 0, 0, 0}), side("c", {1.1, 0, 0, 0, 0, 0})});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_NE(v[1].find("b takes 5.0% longer (1.050 s)"), std::string::npos) << v[1];
  EXPECT_NE(v[2].find("c takes 1.10 times as long (1.100 s)"), std::string::npos) << v[2];
}

TEST(CompareVerdict, TiesAndSidesNotSimulated)
{
  CompareSide big;
  big.name = "big";
  big.why_not = "it does not fit in memory";
  auto v = verdict({side("a", {2, 0, 0, 0, 0, 0}), big, side("b", {2, 0, 0, 0, 0, 0})});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0], "Fastest: a, 2.000 s per step.");  // the first of equals
  EXPECT_EQ(v[1], "big was not simulated (it does not fit in memory).");
  EXPECT_EQ(v[2], "b takes as long (2.000 s).");
  EXPECT_EQ(verdict({big}), std::vector<std::string>{"No scenario could be simulated."});
}

}  // namespace
