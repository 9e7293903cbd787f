#include "app/compare_verdict.hpp"

#include <string>

#include "core/format_number.hpp"

namespace dtsim::app {

const char* term_name(int term)
{
  static const char* names[kTerms] = {"compute",   "exposed communication", "exposed weight streaming",
                                      "pipeline bubble / idle", "optimizer", "stack overhead",
                                      "waiting for slower devices"};
  return term >= 0 && term < kTerms ? names[term] : "?";
}

const char* term_key(int term)
{
  static const char* keys[kTerms] = {"compute_s",  "exposed_communication_s", "exposed_weight_streaming_s",
                                     "bubble_s",   "optimizer_s",             "stack_overhead_s",
                                     "straggler_s"};
  return term >= 0 && term < kTerms ? keys[term] : "?";
}

std::vector<double> compare_terms(const nlohmann::ordered_json& breakdown)
{
  auto term = [&](const char* key) { return breakdown.value(key, 0.0); };
  std::vector<double> t(kTerms, 0.0);
  t[kTermCompute] = term("compute_s");
  // On a wafer the DP term is the gradients streaming out, the PP term the hand-offs between regions, and the
  // fabric term the activations crossing the mesh: all communication left exposed.
  t[kTermCommunication] = term("exposed_tp_comm_s") + term("exposed_pp_comm_s") + term("exposed_dp_comm_s") +
                          term("exposed_ep_comm_s") + term("exposed_cp_comm_s") + term("exposed_fabric_s") +
                          term("step_collectives_s");
  t[kTermStreaming] = term("exposed_weight_streaming_s");
  t[kTermBubble] = term("bubble_s");
  t[kTermOptimizer] = term("optimizer_s");
  t[kTermOverhead] = term("stack_overhead_s");
  t[kTermStraggler] = term("straggler_s");
  return t;
}

namespace {

// How much longer `slow` takes than `fast`, and the term that makes most of the difference.
std::string against(const CompareSide& fast, const CompareSide& slow)
{
  const double ratio = slow.step_s / fast.step_s;
  if (slow.step_s <= fast.step_s)
    return slow.name + " takes as long (" + format_number("%.3f s", slow.step_s) + ").";
  // Below 10% a percentage reads better than a ratio such as 1.04 times.
  std::string s =
      slow.name + " takes " +
      (ratio >= 1.1 ? format_number("%.2f times as long", ratio) : format_number("%.1f%% longer", 100 * (ratio - 1))) +
      " (" + format_number("%.3f s", slow.step_s) + ")";
  int decisive = 0;
  double most = -1;
  for (int k = 0; k < kTerms; ++k) {
    const double d = slow.terms[size_t(k)] - fast.terms[size_t(k)];
    if (d > most)
      most = d, decisive = k;
  }
  const double gap = slow.step_s - fast.step_s;
  s += std::string("; the term that decides it is ") + term_name(decisive) + ": " +
       format_number("%.3f s", slow.terms[size_t(decisive)]) + " against " +
       format_number("%.3f s", fast.terms[size_t(decisive)]) + " (" + format_number("%.0f%%", 100 * most / gap) +
       " of the difference).";
  return s;
}

}  // namespace

std::vector<std::string> verdict(const std::vector<CompareSide>& sides)
{
  std::vector<std::string> out;
  const CompareSide* fastest = nullptr;
  for (const auto& s : sides)
    if (s.simulated && s.step_s > 0 && s.terms.size() == size_t(kTerms) && (!fastest || s.step_s < fastest->step_s))
      fastest = &s;
  if (!fastest) {
    out.push_back("No scenario could be simulated.");
    return out;
  }
  out.push_back("Fastest: " + fastest->name + ", " + format_number("%.3f s", fastest->step_s) + " per step.");
  for (const auto& s : sides) {
    if (&s == fastest)
      continue;
    if (!s.simulated || s.step_s <= 0 || s.terms.size() != size_t(kTerms))
      out.push_back(s.name + " was not simulated" + (s.why_not.empty() ? "." : " (" + s.why_not + ")."));
    else
      out.push_back(against(*fastest, s));
  }
  return out;
}

}  // namespace dtsim::app
