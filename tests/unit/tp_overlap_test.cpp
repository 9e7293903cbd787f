// parallel.tp_overlap: sequence-parallel all-gathers and reduce-scatters beside the GEMMs next to them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_json.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::test::rel_diff;

nlohmann::json run_tiny(const std::string& extra)
{
  return dtsim::test::run_json("scenarios/tiny.yaml", " --set parallel.sp=true" + extra);
}

double part(const nlohmann::json& j, const char* key) { return j.at("breakdown").at(key).get<double>(); }

// One stage, no data parallelism (tp 8 in one node, pp 1, dp 1, as many nodes as needed: 8 devices): nothing
// but compute and TP collectives on the critical path, so whatever the overlap hides comes off the step time,
// and the compute itself is unchanged.
TEST(TpOverlap, HiddenCommunicationComesOffTheStep)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  const std::string plan = " --set devices=8 --set parallel.tp=8 --set parallel.pp=1 --set parallel.dp=1";
  auto off = run_tiny(plan), on = run_tiny(plan + " --set parallel.tp_overlap=true");
  const double hidden = part(off, "exposed_tp_comm_s") - part(on, "exposed_tp_comm_s");
  const double saved = off.at("step_time_s").get<double>() - on.at("step_time_s").get<double>();
  std::printf("[tp overlap] exposed TP %.6g -> %.6g s, step %.6g -> %.6g s\n", part(off, "exposed_tp_comm_s"),
              part(on, "exposed_tp_comm_s"), off.at("step_time_s").get<double>(), on.at("step_time_s").get<double>());
  EXPECT_GT(hidden, 0.0);
  EXPECT_LT(rel_diff(saved, hidden), 1e-6);
  EXPECT_LT(rel_diff(part(on, "compute_s"), part(off, "compute_s")), 1e-9);
}

// Folded and full fidelity agree with overlap on, with TP collectives as flows (tp 2: the NVLink links are shared
// with pipeline traffic) and in closed form (tp 8 fills a node).
TEST(TpOverlap, FoldedAndFullFidelityAgree)
{
  if (dtsim::test::dtsim_binary().empty())
    GTEST_SKIP() << "DTSIM_BINARY is not set or not an executable";
  for (const std::string& plan :
       {std::string(""), std::string(" --set devices=32 --set parallel.tp=8 --set parallel.pp=2 --set parallel.dp=2")}) {
    const std::string o = plan + " --set parallel.tp_overlap=true";
    auto folded = run_tiny(o), full = run_tiny(o + " --set simulation.fidelity=full");
    const double a = folded.at("step_time_s").get<double>(), b = full.at("step_time_s").get<double>();
    std::printf("[tp overlap]%s folded %.12g s, full %.12g s\n", plan.c_str(), a, b);
    EXPECT_LT(rel_diff(a, b), 0.01);
  }
}

}  // namespace
