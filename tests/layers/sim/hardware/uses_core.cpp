// A hardware file that includes a core header: allowed.
#include "core/diagnostics.hpp"
