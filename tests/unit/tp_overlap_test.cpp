// parallel.tp_overlap: sequence-parallel all-gathers and reduce-scatters beside the GEMMs next to them.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::rel_diff;

nlohmann::json run_tiny_tp_overlap(const std::string& extra)
{
  return dtsim::test::run_json("scenarios/tiny.yaml", " --set parallel.sp=true" + extra);
}

double part(const nlohmann::json& j, const char* key) { return j.at("breakdown").at(key).get<double>(); }

// One stage, no data parallelism (tp 8 in one node, pp 1, dp 1: 8 devices): nothing but compute and TP
// collectives on the critical path, so whatever the overlap hides comes off the step time, less what the compute
// loses to the communication kernels beside it (next test), which makes it a little longer.
TEST(TpOverlap, HiddenCommunicationComesOffTheStep)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set devices=8 --set parallel.tp=8 --set parallel.pp=1 --set parallel.dp=1";
  auto off = run_tiny_tp_overlap(plan), on = run_tiny_tp_overlap(plan + " --set parallel.tp_overlap=true");
  const double hidden = part(off, "exposed_tp_comm_s") - part(on, "exposed_tp_comm_s");
  const double slower = part(on, "compute_s") - part(off, "compute_s");
  const double saved = off.at("step_time_s").get<double>() - on.at("step_time_s").get<double>();
  std::printf("[tp overlap] exposed TP %.6g -> %.6g s, compute %.6g -> %.6g s, step %.6g -> %.6g s\n",
              part(off, "exposed_tp_comm_s"), part(on, "exposed_tp_comm_s"), part(off, "compute_s"),
              part(on, "compute_s"), off.at("step_time_s").get<double>(), on.at("step_time_s").get<double>());
  EXPECT_GT(hidden, 0.0);
  EXPECT_GT(slower, 0.0);
  EXPECT_LT(slower, hidden);
  EXPECT_LT(rel_diff(saved, hidden - slower), 1e-6);
}

// The slices of one device's timeline (tid 0: compute, 1: communication) in a Chrome trace, in time order.
std::vector<nlohmann::json> slices(const std::string& trace, int tid)
{
  std::ifstream in(trace);
  auto t = nlohmann::json::parse(in);
  std::vector<nlohmann::json> out;
  for (const auto& e : t.at("traceEvents"))
    if (e.value("pid", -1) == 0 && e.value("tid", -1) == tid && e.contains("dur"))
      out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a["ts"] < b["ts"]; });
  return out;
}

// Runs tests/unit/data/tp_overlap/wide-tp8.yaml once per (name, --set arguments) and writes each run's Chrome trace
// to the temporary directory as PREFIX-NAME.json; returns that directory.
std::string write_wide_tp8_traces(const std::string& prefix,
                                  const std::vector<std::pair<std::string, std::string>>& runs)
{
  const std::string dir = ::testing::TempDir();
  const std::string scenario = dtsim::test::source_path("tests/unit/data/tp_overlap/wide-tp8.yaml");
  for (const auto& [name, set] : runs) {
    const std::string cmd = "'" + dtsim::test::dtsim_binary() + "' run '" + scenario + "' --trace '" + dir + prefix +
                            "-" + name + ".json'" + set;
    EXPECT_EQ(dtsim::test::run_capture(cmd).rc, 0) << cmd;
  }
  return dir;
}

// While an overlapped collective runs, the GEMMs beside it run on the SMs its kernels leave: Transformer Engine's
// defaults give 1 SM to an all-gather and 16 to a reduce-scatter, of the A100's 108. wide-gpt's first forward group
// is [all-gather R] qkv ... proj [reduce-scatter R], the two collectives one after the other and both shorter than
// the compute T: it ends at T + R (1 + 16) / 108. The embedding's compute T is shorter than its reduce-scatter: it
// runs at 92/108 of its speed throughout, T * 108 / 92.
TEST(TpOverlap, ComputeGivesUpTheSmsOfTheCommunicationKernels)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string dir = write_wide_tp8_traces("tp", {{"off", ""}, {"on", " --set parallel.tp_overlap=true"}});
  ASSERT_FALSE(HasFailure());
  auto off = slices(dir + "tp-off.json", 0), on = slices(dir + "tp-on.json", 0);
  auto comm = slices(dir + "tp-off.json", 1);
  // Only the first slices are compared: in backward, without overlap, each column-parallel layer's collectives run
  // beside its GEMMs (more slices), with it around its compute steps.
  ASSERT_GE(off.size(), 4u);
  ASSERT_GE(on.size(), 4u);
  ASSERT_EQ(comm.at(0)["name"], "forward embedding reduce-scatter");
  ASSERT_EQ(comm.at(1)["name"], "forward layer 0 all-gather");
  ASSERT_EQ(comm.at(2)["name"], "forward layer 0 reduce-scatter");
  const double embedding = off[0]["dur"], rs = comm[0]["dur"];
  ASSERT_LT(embedding, rs);
  EXPECT_LT(rel_diff(on[0]["dur"].get<double>(), embedding * 108.0 / 92.0), 1e-9);
  const double t = off[3]["dur"], ag = comm[1]["dur"], rs0 = comm[2]["dur"];
  ASSERT_EQ(off[3]["name"], "forward layer 0");
  ASSERT_GT(t, ag + rs0);
  EXPECT_LT(rel_diff(on[3]["dur"].get<double>(), t + ag / 108.0 + rs0 * 16.0 / 108.0), 1e-9);
}

// Transformer Engine's userbuffers pipeline a row-parallel layer's forward reduce-scatter with its GEMM in 4 chunks
// of rows (comm_gemm_overlap.h split_overlap_rs): the last chunk is reduce-scattered after the GEMM. wide-gpt's first
// layer group [all-gather] qkv ... proj [reduce-scatter] outlasts its compute by a quarter of the reduce-scatter;
// the embedding's reduce-scatter follows no linear layer and is not pipelined: its group is the collective's length.
TEST(TpOverlap, PipelinedReduceScatterSendsItsLastChunkAfterTheGemm)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string dir =
      write_wide_tp8_traces("tp-drain", {{"off", ""}, {"on", " --set parallel.tp_overlap=true"}});
  ASSERT_FALSE(HasFailure());
  auto comm_off = slices(dir + "tp-drain-off.json", 1);
  auto compute_on = slices(dir + "tp-drain-on.json", 0), comm_on = slices(dir + "tp-drain-on.json", 1);
  ASSERT_GE(comm_off.size(), 3u);
  ASSERT_GE(comm_on.size(), 3u);
  ASSERT_GE(compute_on.size(), 4u);
  ASSERT_EQ(comm_off.at(2)["name"], "forward layer 0 reduce-scatter");
  ASSERT_EQ(comm_on.at(0)["name"], "forward embedding reduce-scatter (overlapped)");
  ASSERT_EQ(comm_on.at(2)["name"], "forward layer 0 reduce-scatter (overlapped)");
  const double rs = comm_off[2]["dur"], embedding_rs = comm_off[0]["dur"];
  EXPECT_LT(rel_diff(comm_on[0]["dur"].get<double>(), embedding_rs), 1e-9);
  const double group = comm_on[2]["dur"], compute = compute_on[3]["dur"];
  ASSERT_EQ(compute_on[3]["ts"].get<double>(), comm_on[2]["ts"].get<double>());
  EXPECT_LT(rel_diff(group - compute, rs / 4), 1e-9);
}

// Userbuffers' set_sm_margin (NeMo-Framework-Launcher 24.07's proj_fprop and fc2_fprop): every chunk GEMM of the
// attention projection runs on sm_count - num_sm SMs for its whole length (comm_gemm_overlap.h, UbufCommOverlap's
// _math_sms), the reduce-scatter on the SMs it leaves. wide-gpt's first layer group [all-gather] qkv ... proj
// [reduce-scatter]: without the margin its kernels run T + AG/108 + RS num_sm/108 (the SMs given up only while the
// reduce-scatter runs); with it T + AG/108 + G num_sm/(108 - num_sm), G the projection GEMM's time, so the excess
// over T + AG/108 at 24 SMs is (24/84)/(16/92) times that at 16.
TEST(TpOverlap, SmMarginSlowsTheWholeProjectionGemm)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string dir = write_wide_tp8_traces(
      "tp-margin", {{"off", ""},
                    {"rs24", " --set parallel.tp_overlap=true --set parallel.ub_proj_fprop_sms=24"},
                    {"m16", " --set parallel.tp_overlap=true --set parallel.ub_proj_fprop_sm_margin=true"},
                    {"m24", " --set parallel.tp_overlap=true --set parallel.ub_proj_fprop_sm_margin=true"
                            " --set parallel.ub_proj_fprop_sms=24"}});
  ASSERT_FALSE(HasFailure());
  auto off = slices(dir + "tp-margin-off.json", 0), comm = slices(dir + "tp-margin-off.json", 1);
  auto rs24 = slices(dir + "tp-margin-rs24.json", 0);
  auto m16 = slices(dir + "tp-margin-m16.json", 0), m24 = slices(dir + "tp-margin-m24.json", 0);
  ASSERT_GE(comm.size(), 3u);
  for (const auto* v : {&off, &rs24, &m16, &m24})
    ASSERT_GE(v->size(), 4u);
  ASSERT_EQ(off[3]["name"], "forward layer 0");
  ASSERT_EQ(comm.at(1)["name"], "forward layer 0 all-gather");
  ASSERT_EQ(comm.at(2)["name"], "forward layer 0 reduce-scatter");
  const double t = off[3]["dur"], ag = comm[1]["dur"], rs = comm[2]["dur"];
  const double base = t + ag / 108.0;
  EXPECT_LT(rel_diff(rs24[3]["dur"].get<double>(), base + rs * 24.0 / 108.0), 1e-9);
  const double g16 = m16[3]["dur"].get<double>() - base, g24 = m24[3]["dur"].get<double>() - base;
  std::printf("[tp overlap] sm margin: T %.6g us, RS %.6g us, excess at 16 SMs %.6g us, at 24 %.6g us\n", t, rs,
              g16, g24);
  ASSERT_GT(g16, 0.0);
  EXPECT_LT(rel_diff(g24 / g16, (24.0 / 84.0) / (16.0 / 92.0)), 1e-6);
  // The projection GEMM is one of the layer's kernels: it adds less than the whole compute step would.
  EXPECT_LT(g24, t * 24.0 / 84.0);
}

// Userbuffers' `ring_exchange` reduce-scatter (CommOverlapP2PBase::split_overlap_rs, TE v2.9 comm_gemm_overlap.cpp):
// the GEMM in tp chunks, each chunk's partial sent by copy engine while the next chunk runs, the rank's own chunk
// last. The first layer group [all-gather] qkv ... proj [reduce-scatter], tp 8, the projection's reduce-scatter as a
// ring exchange: its kernels take no SM (T + AG/108, where `pipeline` takes 16), and the group outlasts its compute
// by the last send less the last GEMM chunk, max(0, RS/7 - G/8); G, the projection GEMM's time, from the run with
// the margin, whose kernels take G/107 more (1 SM). wide-gpt's last GEMM chunk hides the last send; narrow-gpt's
// (a quarter of the width: RS / 4, G / 16) does not. The reduction kernel after the last chunk lengthens the
// compute step after the reduce-scatter.
TEST(TpOverlap, RingExchangeReduceScatterSendsByCopyEngineAndHidesAllButItsLastSend)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string model : {"wide-gpt", "narrow-gpt"}) {
    const std::string m = " --set model=" + model + ".yaml", p = "tp-rx-" + model;
    const std::string rx = m + " --set parallel.tp_overlap=true --set parallel.ub_proj_fprop_method=ring_exchange";
    const std::string dir =
        write_wide_tp8_traces(p, {{"off", m},
                                  {"pipeline", m + " --set parallel.tp_overlap=true"},
                                  {"rx", rx},
                                  {"rxm", rx + " --set parallel.ub_proj_fprop_sm_margin=true"}});
    ASSERT_FALSE(HasFailure());
    auto off = slices(dir + p + "-off.json", 0), comm = slices(dir + p + "-off.json", 1);
    auto pipeline = slices(dir + p + "-pipeline.json", 0), ring = slices(dir + p + "-rx.json", 0);
    auto ring_comm = slices(dir + p + "-rx.json", 1), margin = slices(dir + p + "-rxm.json", 0);
    ASSERT_GE(comm.size(), 3u);
    ASSERT_GE(ring_comm.size(), 3u);
    for (const auto* v : {&off, &pipeline, &ring, &margin})
      ASSERT_GE(v->size(), 5u);
    ASSERT_EQ(off[3]["name"], "forward layer 0");
    ASSERT_EQ(comm.at(1)["name"], "forward layer 0 all-gather");
    ASSERT_EQ(comm.at(2)["name"], "forward layer 0 reduce-scatter");
    ASSERT_EQ(ring_comm.at(2)["name"], "forward layer 0 reduce-scatter (overlapped)");
    const double t = off[3]["dur"], ag = comm[1]["dur"], rs = comm[2]["dur"];
    const double base = t + ag / 108.0;
    EXPECT_LT(rel_diff(pipeline[3]["dur"].get<double>(), base + rs * 16.0 / 108.0), 1e-9);
    EXPECT_LT(rel_diff(ring[3]["dur"].get<double>(), base), 1e-9);
    const double gemm = (margin[3]["dur"].get<double>() - base) * 107.0;
    const double drain = ring_comm[2]["dur"].get<double>() - ring[3]["dur"].get<double>();
    std::printf("[tp overlap] %s ring exchange: T %.6g us, RS %.6g us, G %.6g us, after the GEMM %.6g us\n",
                model.c_str(), t, rs, gemm, drain);
    ASSERT_GT(gemm, 0.0);
    ASSERT_EQ(ring[3]["ts"].get<double>(), ring_comm[2]["ts"].get<double>());
    EXPECT_NEAR(drain, std::max(0.0, rs / 7.0 - gemm / 8.0), 1e-6 * rs);
    if (model == "narrow-gpt") {
      EXPECT_GT(drain, 0.0);
    }
    EXPECT_LT(drain, rs / 4.0);  // the pipeline's last quarter
    // The compute step after the reduce-scatter holds the reduction kernel.
    EXPECT_GT(ring[4]["dur"].get<double>(), pipeline[4]["dur"].get<double>());
  }
}

// Folded and full fidelity agree with overlap on, with TP collectives as flows (tp 2: the NVLink links are shared
// with pipeline traffic) and in closed form (tp 8 fills a node).
TEST(TpOverlap, FoldedAndFullFidelityAgree)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string& plan :
       {std::string(""),
        std::string(" --set devices=32 --set parallel.tp=8 --set parallel.pp=2 --set parallel.dp=2")}) {
    for (const std::string& margin :
         {std::string(""),
          std::string(" --set parallel.ub_fc2_fprop_sm_margin=true --set parallel.ub_proj_fprop_sm_margin=true"),
          std::string(" --set parallel.ub_fc2_fprop_method=ring_exchange --set parallel.ub_proj_fprop_method="
                      "ring_exchange --set parallel.ub_proj_fprop_sm_margin=true")}) {
    const std::string o = plan + " --set parallel.tp_overlap=true" + margin;
    auto folded = run_tiny_tp_overlap(o), full = run_tiny_tp_overlap(o + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[tp overlap]%s%s folded %.12g s, full %.12g s\n", plan.c_str(), margin.c_str(), a, b);
    EXPECT_LT(rel_diff(a, b), 0.01);
    }
  }
}

}  // namespace
