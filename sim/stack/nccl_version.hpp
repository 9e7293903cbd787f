#pragma once
/// The NCCL release a stack's runs used (stack key `nccl`), which decides the collective algorithms NCCL's tuner can
/// choose (collectives/algorithms/: PAT from 2.23).
#include <string>

namespace dtsim::stack {

/// What `nccl` says: "X.Y.Z" (that release), "X.Y.Z+" (that release or a later one, where only a bound is
/// published) or "unpublished". Returns NCCL_VERSION_CODE, major * 10000 + minor * 100 + patch (2.23.4: 22304), of
/// the release or of the bound; 0 for "unpublished" (the algorithms of the releases before 2.23); -1 for anything
/// else.
int nccl_version_code(const std::string& text);

}  // namespace dtsim::stack
