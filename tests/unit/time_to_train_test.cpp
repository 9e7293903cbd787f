// The time to train of a whole run (report/time_to_train.hpp), against Daly's exact expectation worked out by hand
// and against a direct simulation of the failures, and its scenario keys.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "hardware/hardware_yaml.hpp"
#include "model/transformer.hpp"
#include "parallel/memory.hpp"
#include "report/time_to_train.hpp"
#include "systems/gpu_cluster/failure_assumptions.hpp"
#include "test_paths.hpp"

namespace {

using dtsim::report::FailureAssumptions;
using dtsim::report::time_to_train;

// 1,000 devices in 125 hosts; 10^9 parameters in bf16 (2 + 12 bytes each: 14 GB per checkpoint).
dtsim::scenario::ScenarioSpec run_of(double tokens)
{
  dtsim::scenario::ScenarioSpec s;
  s.hardware.kind = "gpu-cluster";
  s.devices = 1000;
  s.training.global_batch = 1000;
  s.training.seq_len = 1000;
  s.training.precision = "bf16";
  s.training.tokens = tokens;
  return s;
}

FailureAssumptions assumptions()
{
  FailureAssumptions f;
  f.device_mtbf_s = 1000 * 36000.0;  // the devices alone: one failure in 36,000 s
  f.host_mtbf_s = 125 * 36000.0;     // the hosts alone: another in 36,000 s; the job: one in 18,000 s
  f.hosts = 125;
  f.checkpoint_bandwidth_per_host = 1e9;  // 125 GB/s in all: 14 GB in 0.112 s
  f.restart_s = 600;
  f.basis = "test";
  return f;
}

TEST(TimeToTrain, SynchronousCheckpointsAtTheYoungDalyInterval)
{
  // 10^12 tokens: 10^6 steps of 10^6 tokens, 1 s each.
  const auto t = time_to_train(run_of(1e12), 1.0, 1e9, assumptions());
  EXPECT_EQ(t.steps, 1000000);
  EXPECT_DOUBLE_EQ(t.compute_s, 1e6);
  EXPECT_NEAR(t.mtbf_s, 18000, 1e-6);
  EXPECT_NEAR(t.checkpoint_bytes, 14e9, 1);
  EXPECT_NEAR(t.checkpoint_write_s, 0.112, 1e-9);
  const double tau = std::sqrt(2 * 0.112 * 18000);  // 63.5 s
  EXPECT_NEAR(t.checkpoint_interval_s, tau, 1e-9);
  EXPECT_EQ(t.checkpoint_interval_basis, "Young-Daly");
  // T = (W / tau) M e^{R/M} (e^{(tau + write)/M} - 1) (Daly 2006)
  const double wall = 1e6 / tau * 18000 * std::exp(600 / 18000.0) * std::expm1((tau + 0.112) / 18000);
  EXPECT_NEAR(t.wall_s, wall, 1e-6 * wall);
  EXPECT_NEAR(t.goodput, 1e6 / wall, 1e-12);
  EXPECT_NEAR(t.expected_failures, wall / 18000, 1e-9);
  // The terms add up to the wall time.
  EXPECT_NEAR(t.compute_s + t.checkpoint_stall_s + t.restarts_s + t.lost_work_s, t.wall_s, 1e-6 * wall);
}

TEST(TimeToTrain, AsynchronousCheckpointsStallNothingButLoseTheWriteInFlight)
{
  auto s = run_of(1e12);
  s.resilience.checkpoint_async = true;
  s.resilience.checkpoint_interval_s = 300;  // given: no Young-Daly
  const auto t = time_to_train(s, 1.0, 1e9, assumptions());
  EXPECT_EQ(t.checkpoint_interval_basis, "scenario");
  EXPECT_DOUBLE_EQ(t.checkpoint_stall_s, 0);
  // T = (W / tau) M e^{(R + write)/M} (e^{tau/M} - 1): a retry also redoes the write in flight
  const double wall = 1e6 / 300 * 18000 * std::exp((600 + 0.112) / 18000) * std::expm1(300 / 18000.0);
  EXPECT_NEAR(t.wall_s, wall, 1e-6 * wall);
  EXPECT_NEAR(t.compute_s + t.checkpoint_stall_s + t.restarts_s + t.lost_work_s, t.wall_s, 1e-6 * wall);
}

TEST(TimeToTrain, TheScenarioOverridesTheSystemsAssumptions)
{
  auto s = run_of(1e12);
  s.resilience.device_mtbf_s = 1000 * 1e9;  // devices that never fail: the hosts alone, one failure in 36,000 s
  s.resilience.restart_s = 60;
  s.resilience.checkpoint_bandwidth = 14e9 / 125;  // a write of one second
  const auto t = time_to_train(s, 1.0, 1e9, assumptions());
  EXPECT_NEAR(t.mtbf_s, 1 / (1 / 1e9 + 1 / 36000.0), 1e-6);
  EXPECT_DOUBLE_EQ(t.restart_s, 60);
  EXPECT_NEAR(t.checkpoint_write_s, 1.0, 1e-12);
}

// Half an interval lost per failure, over 1 - (R + tau/2) / M, once called this run one that never finishes (a
// restart longer than the MTBF); failures that come at random still let a restart and a segment through now and
// then (one try in e^{(R + tau + write)/M}, 3.1 here): the expectation is finite, and large.
TEST(TimeToTrain, ARunThatFailsFasterThanItRecoversFinishesLate)
{
  auto f = assumptions();
  f.restart_s = 20000;  // longer than the job's MTBF of 18,000 s
  const auto t = time_to_train(run_of(1e12), 1.0, 1e9, f);
  EXPECT_TRUE(t.why_not.empty()) << t.why_not;
  const double tau = std::sqrt(2 * 0.112 * 18000);
  const double wall = 1e6 / tau * 18000 * std::exp(20000 / 18000.0) * std::expm1((tau + 0.112) / 18000);
  EXPECT_NEAR(t.wall_s, wall, 1e-6 * wall);
  EXPECT_LT(t.goodput, 0.33);  // 0.328
}

// Only an expectation beyond what a double holds is a run that never finishes: a restart of 1.3 x 10^7 s against an
// MTBF of 18,000 s (one chance in 10^314 per segment, and the wall time past 10^308 s) says so and why.
TEST(TimeToTrain, ARunWhoseExpectationOverflowsNeverFinishes)
{
  auto f = assumptions();
  f.restart_s = 1.3e7;
  const auto t = time_to_train(run_of(1e12), 1.0, 1e9, f);
  EXPECT_EQ(t.wall_s, 0);
  EXPECT_NE(t.why_not.find("never finishes"), std::string::npos) << t.why_not;
  EXPECT_NE(t.why_not.find("one chance in 10^314"), std::string::npos) << t.why_not;
}

// The expectation against the process itself: exponential failures drawn one by one, a failure during a restart
// restarting it, synchronous writes stalling, an asynchronous segment safe only a write after it ends. With an
// interval near the MTBF (where the first-order model is far off), 20,000 runs of 40 segments each.
double simulated_wall_s(double work_s, double tau, double write, double restart, double mtbf, bool async)
{
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> next_failure(1 / mtbf);
  const int runs = 20000;
  double total = 0;
  for (int run = 0; run < runs; ++run) {
    double wall = 0, done = 0;
    bool after_failure = false;
    while (done < work_s - 1e-9) {
      const double segment = async ? tau : tau + write;
      // A first try needs the segment; a retry the restart, the segment and (async) the write lost with it.
      const double need = after_failure ? restart + segment + (async ? write : 0) : segment;
      const double failure = next_failure(rng);
      if (failure >= need) {
        wall += need;
        done += tau;
        after_failure = false;
      } else {
        wall += failure;
        after_failure = true;
      }
    }
    total += wall;
  }
  return total / runs;
}

TEST(TimeToTrain, DalysExpectationMatchesTheFailuresDrawnOneByOne)
{
  for (const bool async : {false, true}) {
    SCOPED_TRACE(async ? "asynchronous" : "synchronous");
    auto s = run_of(40e6);  // 40 steps of 1 s: 40 segments of one step
    s.resilience.checkpoint_async = async;
    s.resilience.checkpoint_interval_s = 1;
    auto f = assumptions();
    f.device_mtbf_s = 1000 * 1.5;  // the job's MTBF: 1 / (1/1.5 + 1/36000 x 125 / 125) s, about an interval
    f.restart_s = 0.5;
    f.checkpoint_bandwidth_per_host = 14e9 / 125 / 0.25;  // a write of 0.25 s
    const auto t = time_to_train(s, 1.0, 1e9, f);
    ASSERT_TRUE(t.why_not.empty()) << t.why_not;
    const double simulated = simulated_wall_s(40, 1, 0.25, 0.5, t.mtbf_s, async);
    EXPECT_NEAR(t.wall_s, simulated, 0.02 * simulated);  // 20,000 runs: a standard error well under 1%
    // The first-order model, W (1 + write / tau) / (1 - (R + tau/2 [+ write]) / M), overstates it by far here:
    // 1 / (1 - r) grows faster than e^r.
    const double first_order = 40 * (1 + (async ? 0 : 0.25)) / (1 - (0.5 + 0.5 + (async ? 0.25 : 0)) / t.mtbf_s);
    EXPECT_GT(first_order, 1.2 * t.wall_s);
  }
}

TEST(TimeToTrain, MoreDevicesFailMoreOften)
{
  auto small = run_of(1e12), large = run_of(1e12);
  large.devices = 16000;
  auto f = assumptions(), g = assumptions();
  g.hosts = 2000;
  const auto a = time_to_train(small, 1.0, 1e9, f), b = time_to_train(large, 1.0, 1e9, g);
  EXPECT_NEAR(b.mtbf_s, a.mtbf_s / 16, 1e-6);
  EXPECT_LT(b.goodput, a.goodput);
}

// The checkpoint holds the weights and the optimizer's states as the memory check holds them
// (training.optimizer_state): bf16 moments and no main copy 2 + 4 bytes per parameter, fp32 moments and the main
// copy's low 16 bits 2 + 10, fp32 training 4 + 8 (or 4 + 4 with bf16 moments); the same bytes per parameter as the
// memory check's weights and optimizer states without ZeRO.
TEST(TimeToTrain, TheCheckpointHoldsWhatTheOptimizerHolds)
{
  using dtsim::stack::OptimizerState;
  struct TimeToTrainCase {
    const char* precision;
    OptimizerState state;
    double bytes_per_param;
  };
  for (const TimeToTrainCase c :
       {TimeToTrainCase{"bf16", OptimizerState::Fp32, 14}, TimeToTrainCase{"bf16", OptimizerState::Fp32Remainders, 12},
        TimeToTrainCase{"bf16", OptimizerState::Bf16, 6}, TimeToTrainCase{"fp32", OptimizerState::Fp32, 12},
        TimeToTrainCase{"fp32", OptimizerState::Bf16, 8}}) {
    SCOPED_TRACE(std::string(c.precision) + ", optimizer_state " + dtsim::stack::to_string(c.state));
    auto s = run_of(1e12);
    s.model = dtsim::test::load_model_or_throw("models/gpt3-175b.yaml");
    s.parallel.tp = 8;
    s.parallel.dp = 125;
    s.training.micro_batch = 1;
    s.training.seq_len = 2048;
    s.microbatches = 8;
    s.training.global_batch = s.microbatches * s.parallel.dp;
    s.hardware.device.memory_bytes = 80.0 * 1073741824.0;
    s.training.precision = c.precision;
    s.training.optimizer_state = c.state;
    const auto t = time_to_train(s, 1.0, 1e9, assumptions());
    EXPECT_NEAR(t.checkpoint_bytes, c.bytes_per_param * 1e9, 1) << t.checkpoint_bytes;
    dtsim::model::Transformer tr(s.model);
    const auto memory = dtsim::parallel::estimate_memory(s, dtsim::parallel::derive_plan(s), tr);
    const auto& stage = memory.stages.at(0);
    EXPECT_DOUBLE_EQ((stage.weights_bytes + stage.optimizer_bytes) / stage.params, t.checkpoint_bytes / 1e9);
  }
}

// The host figures were measured on the Llama 3 job's hosts of 8 H100: a host of another size takes them per GPU
// (systems/gpu_cluster/failure_assumptions.cpp). 144 GPUs on DGX H100 (18 hosts of 8), GB200 and GB300 NVL72 (36
// trays of 4 each) fail as often per GPU and write their checkpoints at the same bandwidth per GPU; only the trays
// say that they take the figures per GPU, an assumption.
TEST(TimeToTrain, HostFiguresAreTakenPerGpuOnHostsOfAnySize)
{
  struct Case {
    const char* hardware;
    int64_t hosts;
  };
  const double hour = 3600;
  const double gpu_mtbf_h = 16384 * 54 * 24 / (0.587 * 419);        // 86,300 h: Llama 3's GPU failures
  const double host_mtbf_h = 2048 * 54 * 24 / (419 - 0.587 * 419);  // 15,300 h per host of 8 GPUs
  const double failures_per_gpu_hour = 1 / gpu_mtbf_h + 1 / (8 * host_mtbf_h);
  for (const Case c : {Case{"hardware/dgx-h100.yaml", 18}, Case{"hardware/gb200-nvl72.yaml", 36},
                       Case{"hardware/gb300-nvl72.yaml", 36}}) {
    SCOPED_TRACE(c.hardware);
    dtsim::Diagnostics diag;
    auto s = run_of(1e12);
    s.hardware = dtsim::hardware::load_hardware(dtsim::test::source_path(c.hardware), diag);
    diag.throw_if_any();
    s.devices = 144;
    const auto f = dtsim::systems::gpu_failure_assumptions(s);
    EXPECT_EQ(f.hosts, c.hosts);
    const double per_gpu_hour = (144 / f.device_mtbf_s + double(f.hosts) / f.host_mtbf_s) * hour / 144;
    EXPECT_NEAR(per_gpu_hour, failures_per_gpu_hour, 1e-9 * failures_per_gpu_hour);
    EXPECT_NEAR(f.checkpoint_bandwidth_per_host * double(f.hosts), 144 * 2e12 / 16384, 1);
    const bool trays = c.hosts == 36;
    EXPECT_EQ(f.basis.find("taken per GPU (assumed): host MTBF 30,700 h and 0.488 GB/s per host of 4") !=
                  std::string::npos,
              trays)
        << f.basis;
    const auto t = time_to_train(s, 1.0, 1e9, f);
    EXPECT_NEAR(t.mtbf_s, hour / (144 * failures_per_gpu_hour), 1e-6);
  }
}

}  // namespace
