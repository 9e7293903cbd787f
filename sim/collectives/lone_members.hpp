#pragma once
/// The members of a group each alone in its scale-up domain, in ascending device order, so that node k of the group
/// holds member k: listed, or every `stride` devices from `first` (a data-parallel group, stride tp). The algorithms
/// that lay one member's flows (AlgorithmDef::lay_member_flows) read only the member's neighbours in the ring or the
/// trees, so a frontier job's data-parallel group of a thousand ranks need not be listed for them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtsim::collectives {

class LoneMembers {
 public:
  /// `listed` ascending, one member per node; it must outlive this view.
  explicit LoneMembers(const std::vector<int64_t>& listed) : listed_(&listed), count_(int64_t(listed.size())) {}
  /// first + k * stride for k < count (stride > 0).
  LoneMembers(int64_t first, int64_t stride, int64_t count) : first_(first), stride_(stride), count_(count) {}

  int64_t size() const { return count_; }
  /// Node k's member.
  int64_t operator[](int64_t k) const { return listed_ ? (*listed_)[std::size_t(k)] : first_ + k * stride_; }
  /// The node `member` sits on, -1 where it is not a member.
  int64_t node_of(int64_t member) const
  {
    if (listed_ != nullptr) {
      const auto at = std::lower_bound(listed_->begin(), listed_->end(), member);
      return at != listed_->end() && *at == member ? int64_t(at - listed_->begin()) : -1;
    }
    const int64_t k = stride_ > 0 ? (member - first_) / stride_ : -1;
    return k >= 0 && k < count_ && first_ + k * stride_ == member ? k : -1;
  }

 private:
  const std::vector<int64_t>* listed_ = nullptr;
  int64_t first_ = 0, stride_ = 1, count_ = 0;
};

}  // namespace dtsim::collectives
