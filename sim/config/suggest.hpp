#pragma once
/// "Did you mean" suggestions for misspelt keys and values.
#include <string>
#include <vector>

namespace dtsim::config {

/// The closest candidate by edit distance, or "" when none is close enough to be a likely typo.
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

/// A value quoted for a message: 'text', cut to its first 60 characters (with its length) when longer, so that a
/// whole file read as one value is not copied into the message.
std::string excerpt(const std::string& text);

/// The candidate one edit away from `word`, or two for words of 12 characters or more ("" when none is): a stricter
/// test than closest(), for keys that may legitimately be unknown, where a suggestion must be almost certainly right.
std::string near_miss(const std::string& word, const std::vector<std::string>& candidates);

/// "a, b, c" for messages.
std::string join_list(const std::vector<std::string>& items);

}  // namespace dtsim::config
