#pragma once
/// "Did you mean" suggestions for misspelt keys and values.
#include <string>
#include <vector>

namespace dtsim::config {

/// The closest candidate by edit distance, or "" when none is close enough to be a likely typo.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

/// "a, b, c" for messages.
std::string join_list(const std::vector<std::string>& items);

}  // namespace dtsim::config
