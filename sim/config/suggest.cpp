#include "config/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace dtsim::config {

static size_t edit_distance(const std::string& a, const std::string& b)
{
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower((unsigned char)a[i - 1]) == std::tolower((unsigned char)b[j - 1]);
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates)
{
  // A value cut short ("interleaved" for "interleaved-1f1b") is a likely mistake however far it is.
  if (word.size() >= 3)
    for (const auto& c : candidates)
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0)
        return c;
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;  // farther than this is not a typo
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string near_miss(const std::string& word, const std::vector<std::string>& candidates)
{
  // One edit, or two in a long key: two edits in a short key often make another real key (v_head_dim, head_dim).
  std::string best;
  size_t best_d = word.size() >= 12 ? 3 : 2;
  for (const auto& c : candidates)
    if (size_t d = edit_distance(word, c); d > 0 && d < best_d) {
      best_d = d;
      best = c;
    }
  return best;
}

std::string excerpt(const std::string& text)
{
  const size_t kMax = 60;
  std::string s = text.substr(0, kMax);
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  if (text.size() > kMax)
    return "'" + s + "...' (" + std::to_string(text.size()) + " characters)";
  return "'" + s + "'";
}

std::string join_list(const std::vector<std::string>& items)
{
  std::string s;
  for (const auto& i : items)
    s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace dtsim::config
