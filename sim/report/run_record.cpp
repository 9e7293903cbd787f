#include "report/run_record.hpp"

#include <functional>
#include <utility>

#include "core/version.hpp"
#include "report/system_sections.hpp"
#include "report/time_to_train.hpp"
#include "stack/interval.hpp"

namespace dtsim::report {

using json = nlohmann::ordered_json;

namespace {

json memory_json(const parallel::StageMemory& m)
{
  return json{{"stage", m.stage},
              {"params", m.params},
              {"weights_bytes", m.weights_bytes},
              {"gradients_bytes", m.gradients_bytes},
              {"optimizer_bytes", m.optimizer_bytes},
              {"activations_bytes", m.activations_bytes},
              {"framework_bytes", m.framework_bytes},
              {"microbatches_in_flight", m.microbatches_in_flight},
              {"total_bytes", m.total_bytes()}};
}

// The whole run: `time_to_train_s` and `goodput` at the top (null when the run never finishes), the model's terms
// under `time_to_train`.
void add_time_to_train(json& j, const TimeToTrain& t)
{
  const bool finishes = t.why_not.empty();
  j["time_to_train_s"] = finishes ? json(t.wall_s) : json(nullptr);
  j["goodput"] = finishes ? json(t.goodput) : json(nullptr);
  json d{{"tokens", t.tokens},
         {"steps", t.steps},
         {"compute_s", t.compute_s},
         {"job_mtbf_s", t.mtbf_s},
         {"checkpoint_bytes", t.checkpoint_bytes},
         {"checkpoint_write_s", t.checkpoint_write_s},
         {"checkpoint", t.checkpoint_async ? "async" : "sync"},
         {"checkpoint_interval_s", t.checkpoint_interval_s},
         {"checkpoint_interval_basis", t.checkpoint_interval_basis},
         {"restart_s", t.restart_s}};
  if (finishes) {
    d["expected_failures"] = t.expected_failures;
    d["checkpoint_stall_s"] = t.checkpoint_stall_s;
    d["restarts_s"] = t.restarts_s;
    d["lost_work_s"] = t.lost_work_s;
  } else {
    d["why_not"] = t.why_not;
  }
  d["basis"] = t.basis;
  j["time_to_train"] = d;
}

// The rows the kind phrases, collected in order.
std::vector<TableRow> rows_of(const std::function<void(const Row&)>& give)
{
  std::vector<TableRow> rows;
  give([&](const char* key, const std::string& value) { rows.push_back({key, value}); });
  return rows;
}

// What the table prints beside the document's figures. The breakdown's terms are those the document holds (the
// tensor-parallel term where the kind has one, the expert and context terms where those groups exist, the stack's
// overhead where it has one), in the table's order.
RunTable table_of(const RunReport& r, const json& document)
{
  const auto& s = *r.scenario;
  const SystemSections& k = *r.sections;
  RunTable t;
  t.placement = rows_of([&](const Row& row) { k.placement_rows(r, row); });
  t.recompute = scenario::describe_recompute(s.training);
  t.software = rows_of([&](const Row& row) { k.software_rows(r, row); });
  t.memory_heading = k.memory_heading(r);
  t.memory = rows_of([&](const Row& row) { k.memory_rows(r, row); });
  if (!document.contains("breakdown"))
    return t;
  t.breakdown = {{"compute", "compute_s"}, {"  of which recomputation", "recompute_s"}};
  if (const char* tp = k.tp_label())
    t.breakdown.push_back({tp, "exposed_tp_comm_s"});
  t.breakdown.push_back({k.pp_label(), "exposed_pp_comm_s"});
  t.breakdown.push_back({k.dp_label(), "exposed_dp_comm_s"});
  if (s.parallel.ep > 1)
    t.breakdown.push_back({"exposed expert all-to-all", "exposed_ep_comm_s"});
  if (s.parallel.cp > 1)
    t.breakdown.push_back({"exposed context-parallel ring", "exposed_cp_comm_s"});
  t.breakdown.push_back({"pipeline bubble / idle", "bubble_s"});
  t.breakdown.push_back({"optimizer", "optimizer_s"});
  if (document.at("breakdown").contains("step_collectives_s"))
    t.breakdown.push_back({"step all-reduces", "step_collectives_s"});
  if (document.at("breakdown").contains("stack_overhead_s"))
    t.breakdown.push_back({"stack overhead per step", "stack_overhead_s"});
  if (document.at("breakdown").contains("straggler_s"))
    t.breakdown.push_back({"waiting for slower devices", "straggler_s"});
  for (const ExtraTerm& e : k.extra_terms())
    t.breakdown.push_back({e.label, e.key});
  return t;
}

// The timeline with the kind's names of its tracks and of every device it shows.
RunTrace trace_of(const RunReport& r)
{
  RunTrace t;
  t.events = r.replay.trace;
  for (int k = 0; k < 4; ++k)
    t.tracks[size_t(k)] = r.sections->track_name(k);
  for (const auto& e : t.events)
    if (!t.processes.count(e.device))
      t.processes[e.device] = r.sections->process_name(r, e.device);
  return t;
}

json rows_json(const std::vector<TableRow>& rows)
{
  json a = json::array();
  for (const auto& row : rows)
    a.push_back({row.key, row.value});
  return a;
}

std::vector<TableRow> rows_from(const json& a)
{
  std::vector<TableRow> rows;
  for (const auto& row : a)
    rows.push_back({row.at(0).get<std::string>(), row.at(1).get<std::string>()});
  return rows;
}

json table_json(const RunTable& t)
{
  json terms = json::array();
  for (const auto& term : t.breakdown)
    terms.push_back({term.label, term.key});
  return {{"placement", rows_json(t.placement)}, {"recompute", t.recompute},
          {"software", rows_json(t.software)},   {"memory_heading", t.memory_heading},
          {"memory", rows_json(t.memory)},       {"breakdown", terms}};
}

RunTable table_from(const json& j)
{
  RunTable t;
  t.placement = rows_from(j.at("placement"));
  t.recompute = j.at("recompute").get<std::string>();
  t.software = rows_from(j.at("software"));
  t.memory_heading = j.at("memory_heading").get<std::string>();
  t.memory = rows_from(j.at("memory"));
  for (const auto& term : j.at("breakdown"))
    t.breakdown.push_back({term.at(0).get<std::string>(), term.at(1).get<std::string>()});
  return t;
}

json trace_json(const RunTrace& t)
{
  json events = json::array(), processes = json::array();
  for (const auto& e : t.events)
    events.push_back({e.device, e.track, e.name, e.start, e.end});
  for (const auto& [device, name] : t.processes)
    processes.push_back({device, name});
  return {{"events", events}, {"tracks", t.tracks}, {"processes", processes}};
}

RunTrace trace_from(const json& j)
{
  RunTrace t;
  for (const auto& e : j.at("events"))
    t.events.push_back({e.at(0).get<int64_t>(), e.at(1).get<int>(), e.at(2).get<std::string>(),
                        e.at(3).get<double>(), e.at(4).get<double>()});
  t.tracks = j.at("tracks").get<std::array<std::string, 4>>();
  for (const auto& p : j.at("processes"))
    t.processes[p.at(0).get<int64_t>()] = p.at(1).get<std::string>();
  return t;
}

}  // namespace

json breakdown_json(const replay::Breakdown& b, const SystemSections& sections)
{
  json j{{"compute_s", b.compute_s},
         {"recompute_s", b.recompute_s},
         {"exposed_tp_comm_s", b.exposed_tp_comm_s},
         {"exposed_pp_comm_s", b.exposed_pp_comm_s},
         {"exposed_dp_comm_s", b.exposed_dp_comm_s},
         {"exposed_ep_comm_s", b.exposed_ep_comm_s},
         {"exposed_cp_comm_s", b.exposed_cp_comm_s},
         {"bubble_s", b.bubble_s},
         {"optimizer_s", b.optimizer_s}};
  if (b.stack_overhead_s > 0)
    j["stack_overhead_s"] = b.stack_overhead_s;
  if (b.step_collectives_s > 0)
    j["step_collectives_s"] = b.step_collectives_s;
  if (b.straggler_s > 0)
    j["straggler_s"] = b.straggler_s;
  for (const ExtraTerm& t : sections.extra_terms())
    j[t.key] = b.*t.seconds;
  return j;
}

json scenario_identity_json(const scenario::ScenarioSpec& s)
{
  json j;
  j["dtsim_version"] = kVersion;
  j["scenario"] = s.name;
  j["model"] = s.model.name;
  j["hardware"] = s.hardware.name;
  j["devices"] = s.devices;
  return j;
}

RunRecord make_record(const RunReport& r)
{
  const auto& s = *r.scenario;
  Derived d = derive(r);
  json j = scenario_identity_json(s);
  j["plan"] = {{"dp", s.parallel.dp},          {"tp", s.parallel.tp},
               {"pp", s.parallel.pp},          {"vpp", s.parallel.vpp},
               {"sp", s.parallel.sp},          {"zero", s.parallel.zero},
               {"ep", s.parallel.ep},          {"cp", s.parallel.cp},
               {"schedule", s.schedule},
               {"micro_batch", s.training.micro_batch}, {"microbatches", s.microbatches},
               {"global_batch", s.training.global_batch}, {"seq_len", s.training.seq_len},
               {"precision", s.training.precision}, {"recompute", scenario::to_string(s.training.recompute)},
               {"fidelity", scenario::to_string(s.fidelity)}};
  if (s.model.experts > 0)
    j["plan"]["expert_tp"] = s.parallel.etp();
  r.sections->plan_json(j["plan"], r);
  if (s.training.recompute_layers > 0)
    j["plan"]["recompute_layers"] = s.training.recompute_layers;
  if (s.training.micro_batch_auto)
    j["plan"]["micro_batch_reason"] = s.training.micro_batch_reason;
  j["params"] = r.total_params;
  j["fits"] = r.fits();
  if (!r.fits())
    j["why_not_fitting"] = r.why_not_fitting;
  j["power_w"] = d.power_W;
  j["memory"] = {{"peak_bytes_per_device", r.memory.peak_bytes()},
                 {"capacity_bytes_per_device", r.memory.capacity_bytes},
                 {"allocator_reserve_bytes_per_device", r.memory.allocator_reserve_bytes},
                 {"usable_bytes_per_device", r.memory.usable_bytes()},
                 {"communicators", r.memory.communicators},
                 {"peak_stage", r.memory.peak_stage},
                 {"stages", json::array()}};
  for (const auto& m : r.memory.stages)
    j["memory"]["stages"].push_back(memory_json(m));
  r.sections->json_section(j, r);
  if (s.stack.given())
    j["stack"] = {{"file", s.stack.file},
                  {"name", s.stack.name},
                  {"calibration_runs", s.stack.calibration.runs},
                  {"heldout_runs", s.stack.calibration.heldout_errors.size()}};
  if (r.simulated) {
    j["step_time_s"] = d.step;
    const auto iv = r.sections->step_interval(r, d.step);
    j["step_time_interval_s"] = iv.known ? json::array({iv.low_s, iv.high_s}) : json(nullptr);
    j["step_time_interval_basis"] = iv.basis;
    if (const StepSpread sp = step_spread(r); sp.known)
      j["step_time_spread_s"] = {{"p5", sp.p5}, {"p50", sp.p50}, {"p95", sp.p95}};
    if (s.variability.on() || s.variability.samples > 1)
      j["variability"] = {{"device_spread", s.variability.device_spread},
                          {"kernel_jitter", s.variability.kernel_jitter},
                          {"samples", s.variability.samples},
                          {"seed", s.variability.seed}};
    // A trace of a sampled run is one step: the first sample's (replay.cpp records only sample 0), not the mean.
    if (!r.replay.trace.empty() && s.variability.samples > 1 && !r.replay.sample_steps.empty())
      j["trace_sample"] = {{"sample", 1},
                           {"samples", s.variability.samples},
                           {"seed", s.variability.seed},
                           {"step_time_s", r.replay.sample_steps.front()}};
    j["samples_per_s"] = d.samples_per_s;
    j["tokens_per_s"] = d.tokens_per_s;
    j["model_tflops_per_device"] = d.model_tflops;
    j["hardware_tflops_per_device"] = d.hw_tflops;
    j["mfu"] = d.mfu;
    j["hfu"] = d.hfu;
    j["energy_per_step_j"] = d.energy_J;
    j["breakdown"] = breakdown_json(r.replay.average, *r.sections);
    j["breakdown_per_stage"] = json::array();
    for (const auto& b : r.replay.per_stage)
      j["breakdown_per_stage"].push_back(breakdown_json(b, *r.sections));
    j["simulation"] = {{"simulated_devices", r.replay.simulated_devices},
                       {"activities", r.replay.activities},
                       {"links", r.replay.links},
                       {"folding_exact", r.replay.folding_note.empty()}};
    if (!r.replay.folding_note.empty())
      j["simulation"]["folding_note"] = r.replay.folding_note;
    if (s.training.tokens > 0)
      add_time_to_train(j, time_to_train(s, d.step, r.total_params, r.sections->failure_assumptions(r)));
  }
  RunRecord record;
  record.table = table_of(r, j);
  record.trace = trace_of(r);
  record.execution = r.sections->execution(r);
  record.document = std::move(j);
  return record;
}

std::vector<uint8_t> record_to_cbor(const RunRecord& record)
{
  return json::to_cbor(json{{"document", record.document},
                            {"execution", record.execution},
                            {"table", table_json(record.table)},
                            {"trace", trace_json(record.trace)}});
}

RunRecord record_from_cbor(const std::vector<uint8_t>& bytes)
{
  json j = json::from_cbor(bytes);
  RunRecord record;
  record.document = std::move(j.at("document"));
  record.execution = j.at("execution").get<std::string>();
  record.table = table_from(j.at("table"));
  record.trace = trace_from(j.at("trace"));
  return record;
}

}  // namespace dtsim::report
